// Evaluated by tests/webgpu/test_web_engine.py after it picked the artifact's folder in the
// file input #pick: the engine loads from those files, fetching nothing from /artifact/.
async ({ PROMPT, MAX_TOKENS }) => {
  const { CreateMLCEngine } = await import("/mlcx-web/index.js");
  const since = performance.now();
  const engine = await CreateMLCEngine(null, { files: document.querySelector("#pick").files });
  const reply = await engine.chat.completions.create({
    messages: [{ role: "user", content: PROMPT }], temperature: 0, max_tokens: MAX_TOKENS, return_token_ids: true });
  await engine.unload();
  const fetched = performance.getEntriesByType("resource")
    .filter((e) => e.startTime > since && e.name.includes("/artifact/")).map((e) => e.name);
  return { reply, fetched };
}
