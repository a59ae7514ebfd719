// Evaluated by tests/webgpu/test_web_service_worker.py in a page on `mlcx web`'s origin, once
// before and once after a reload: the engine in the package's service worker answers, also
// under a grammar (XGrammar imported by the service worker itself).
async ({ PROMPT, MAX_TOKENS, GRAMMAR }) => {
  const { CreateServiceWorkerMLCEngine } = await import("/mlcx-web/index.js");
  await navigator.serviceWorker.register("/mlcx-web/service_worker.js", { type: "module", scope: "/" });
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) {
    await new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", resolve));
  }
  const reports = [];
  const engine = await CreateServiceWorkerMLCEngine("/artifact/", { initProgressCallback: (r) => reports.push(r.text) });
  const ask = (extra) => engine.chat.completions.create({
    messages: [{ role: "user", content: PROMPT }], temperature: 0, max_tokens: MAX_TOKENS, return_token_ids: true, ...extra });
  const reply = await ask({});
  const constrained = await ask({ response_format: { type: "grammar", grammar: GRAMMAR } });
  return { reply, constrained, lastReport: reports.at(-1) };
}
