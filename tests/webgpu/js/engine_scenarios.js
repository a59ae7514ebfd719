// Evaluated in a page on `mlcx web`'s origin by tests/webgpu/test_web_engine.py: every scenario
// against one engine, each result under its name (errors by their name).
async ({ PROMPT, MAX_TOKENS, SCHEMA }) => {
  const lib = await import("/mlcx-web/index.js");
  const { CreateMLCEngine, CreateWebWorkerMLCEngine } = lib;
  const reports = [];
  const engine = await CreateMLCEngine("/artifact/", { initProgressCallback: (r) => reports.push(r) });
  const ask = (extra) => ({ messages: [{ role: "user", content: PROMPT }], temperature: 0,
                            max_tokens: MAX_TOKENS, return_token_ids: true, ...extra });
  const drain = async (stream, onChunk = () => {}) => {
    const chunks = [];
    for await (const c of stream) { chunks.push(c); onChunk(chunks); }
    return chunks;
  };
  const out = { reports: reports.length, lastProgress: reports.at(-1).progress };
  out.whole = await engine.chat.completions.create(ask({}));
  out.chunks = await drain(await engine.chat.completions.create(
    ask({ stream: true, stream_options: { include_usage: true } })));
  const text = out.whole.choices[0].message.content;
  out.stop = text.slice(3, 6);
  out.stopped = await engine.chat.completions.create(ask({ stop: [out.stop] }));
  out.followUp = await engine.chat.completions.create(ask({ messages: [
    { role: "user", content: PROMPT }, out.whole.choices[0].message, { role: "user", content: "And Spain?" }] }));
  out.interrupted = await drain(await engine.chat.completions.create(ask({ stream: true, max_tokens: 64 })),
    (chunks) => { if (chunks.length === 3) engine.interruptGenerate(); });
  out.kvAfterInterrupt = engine.kvUsage();
  const order = [];
  const tagged = async (tag) => drain(await engine.chat.completions.create(ask({ stream: true, max_tokens: 4 })),
    () => order.push(tag));
  await Promise.all([tagged("a"), tagged("b")]);
  out.order = order.join("");
  try {
    await engine.chat.completions.create(ask({ messages: [{ role: "user", content: "Paris ".repeat(400) }] }));
  } catch (err) {
    out.tooLong = err.name;
  }
  const lost = new Promise((resolve) => engine.addEventListener("error", (e) => resolve(e.error.name)));
  engine.core.runner.device.destroy(); // as a driver reset would lose it
  out.lost = [await lost];
  await engine.chat.completions.create(ask({})).catch((err) => out.lost.push(err.name));
  await window.blockArtifact(true); // the reload must find every file in the browser's cache
  out.probe = await fetch("/artifact/mlcx-config.json").then(() => "fetched", (err) => err.name);
  await engine.reload("/artifact/");
  out.afterReload = await engine.chat.completions.create(ask({}));
  await window.blockArtifact(false);
  await engine.unload();
  out.cache = [await lib.hasModelInCache("/artifact/")];
  await lib.deleteModelInCache("/artifact/");
  out.cache.push(await lib.hasModelInCache("/artifact/"));
  const handler = `import { WebWorkerMLCEngineHandler } from "${location.origin}/mlcx-web/index.js";
    const handler = new WebWorkerMLCEngineHandler();
    self.onmessage = (event) => handler.onmessage(event);`;
  const url = URL.createObjectURL(new Blob([handler], { type: "text/javascript" }));
  const remote = await CreateWebWorkerMLCEngine(new Worker(url, { type: "module" }), "/artifact/");
  out.worker = await remote.chat.completions.create(ask({}));
  out.workerSchema = await remote.chat.completions.create(ask({ max_tokens: 60,
    response_format: { type: "json_schema", json_schema: { name: "answer", schema: SCHEMA } } }));
  out.cache.push(await lib.hasModelInCache("/artifact/")); // the worker's load cached it again
  await remote.unload();
  return out;
}
