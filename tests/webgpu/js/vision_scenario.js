// Evaluated in a page on `mlcx web`'s origin by tests/vision/test_web_vision.py: the tiny
// vision model answers an image+text prompt (the image a data: URL), the same image again on
// the next turn (prefix cache), a text-only prompt, and refuses a bad image by name.
async ({ QUESTION, IMAGE_URL, MAX_TOKENS }) => {
  const { CreateMLCEngine } = await import("/mlcx-web/index.js");
  const engine = await CreateMLCEngine("/artifact/");
  const ask = (content, extra = {}) => engine.chat.completions.create({
    messages: [{ role: "user", content }], temperature: 0, max_tokens: MAX_TOKENS,
    ignore_eos: true, return_token_ids: true, ...extra });
  const parts = [{ type: "text", text: QUESTION }, { type: "image_url", image_url: { url: IMAGE_URL } }];
  const out = {};
  out.first = await ask(parts);
  out.encodedAfterFirst = engine.core.vision.encoded;
  out.again = await ask(parts);
  out.encodedAfterAgain = engine.core.vision.encoded;
  out.text = await ask(QUESTION, { max_tokens: 4 });
  try {
    await ask([{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }]);
  } catch (err) {
    out.bad = { name: err.name, param: err.param, message: err.message };
  }
  return out;
};
