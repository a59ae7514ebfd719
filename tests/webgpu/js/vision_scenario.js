// Evaluated by tests/vision/test_web_vision.py in the demo page (after its image picker sent
// the same image once) on `mlcx web`'s origin, against the page's engine: an image+text
// request with the image as a data: URL, a text-only one, a bad image refused by name, and
// the RGB pixels the browser decodes from each of DECODE_URLS (base64).
async ({ QUESTION, IMAGE_URL, MAX_TOKENS, DECODE_URLS }) => {
  const { decodeImage } = await import("/mlcx-web/image_input.js");
  const engine = window.mlcx.engine;
  const ask = (content, extra = {}) => engine.chat.completions.create({
    messages: [{ role: "user", content }], temperature: 0, max_tokens: MAX_TOKENS,
    ignore_eos: true, return_token_ids: true, ...extra });
  const parts = [{ type: "text", text: QUESTION }, { type: "image_url", image_url: { url: IMAGE_URL } }];
  const out = { encodedBefore: engine.core.vision.encoded };
  out.image = await ask(parts);
  out.encodedAfter = engine.core.vision.encoded;
  out.text = await ask(QUESTION, { max_tokens: 4 });
  try {
    await ask([{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }]);
  } catch (err) {
    out.bad = { name: err.name, param: err.param, message: err.message };
  }
  out.decoded = [];
  for (const url of DECODE_URLS) {
    const { width, height, rgb } = await decodeImage({ url, where: "decode" });
    out.decoded.push({ width, height, rgb: btoa(Array.from(rgb, (b) => String.fromCharCode(b)).join("")) });
  }
  return out;
};
