// Evaluated by tests/vision/test_qwen_vl_web.py in the demo page on `mlcx web`'s origin, per
// image (a data: URL): a greedy image+text request (the question before the image, " ok" after
// it, as tests/vision/test_qwen_vl.py asks transformers), then the logits of its prompt's last
// token from a fresh prefill through the page's engine core, with the images' M-RoPE grids
// and without them (1-D positions: what the grids change).
async ({ QUESTION, IMAGE_URLS, MAX_TOKENS }) => {
  const { decodeImage } = await import("/mlcx-web/image_input.js");
  const engine = window.mlcx.engine;
  const core = engine.core;
  async function lastLogits(ids, images) {
    core.resetCache();
    const steps = core.run(ids, images);
    const { value } = await steps.next();
    await steps.return();
    return Array.from(value.logits);
  }
  const out = [];
  for (const url of IMAGE_URLS) {
    const content = [
      { type: "text", text: QUESTION },
      { type: "image_url", image_url: { url } },
      { type: "text", text: " ok" },
    ];
    const answer = await engine.chat.completions.create({
      messages: [{ role: "user", content }], temperature: 0, max_tokens: MAX_TOKENS,
      ignore_eos: true, return_token_ids: true });
    const ids = answer.prompt_token_ids;
    const pixels = [await decodeImage({ url, where: "image" })];
    const images = await core.vision.promptImages(core.vision.runs(ids, pixels), pixels);
    const logits = await lastLogits(ids, images);
    const flat = await lastLogits(ids, images.map((im) => ({ ...im, grid: null })));
    out.push({ answer, logits, flat, grids: images.map((im) => im.grid) });
  }
  return out;
};
