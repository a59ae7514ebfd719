// Runs the examples named in ?run=a,b,c (each a module here exporting WebLLM's `main`, which
// returns what the example prints last) one after another, each within ?deadline= ms, and
// leaves window.exampleResults = {name: {ok, seconds, output | error}} and
// document.body.dataset.state = "done" for the test to read. Nothing here waits unbounded.

const params = new URLSearchParams(location.search);
const names = (params.get("run") ?? "").split(",").filter(Boolean);
const deadline = Number(params.get("deadline") ?? 300000);

function withDeadline(promise, ms, name) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${name} did not finish in ${ms} ms`), { name: "Timeout" })), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const results = {};
for (const name of names) {
  const started = performance.now();
  try {
    const { main } = await import(`./${name}.js`);
    const output = await withDeadline(main(), deadline, name);
    results[name] = { ok: true, seconds: (performance.now() - started) / 1000, output };
  } catch (err) {
    results[name] = { ok: false, seconds: (performance.now() - started) / 1000, error: `${err?.name}: ${err?.message}` };
  }
}
window.exampleResults = results;
document.body.dataset.state = "done";
