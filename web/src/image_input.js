// Images in OpenAI chat requests: `{"type": "image_url", "image_url": {"url": "data:..."}}`
// content parts, as the Python server takes them (mlcx/server, docs/serving.md). The parts
// become `{"type": "image"}` for the chat template; each data: URL is decoded by the browser
// (PNG, JPEG, WebP) into RGB pixels for image_preprocess.js.

import { InvalidRequestError } from "./errors.js";

export const MAX_IMAGE_BYTES = 20 * 2 ** 20; // as the server's --max-image-bytes default
const TYPES = ["image/png", "image/jpeg", "image/webp"];

const urlOf = (part) => (typeof part.image_url === "string" ? part.image_url : part.image_url?.url);

// -> {messages (image parts as {type: "image"}), images: [{url, where}]} in prompt order.
export function splitImages(messages) {
  const images = [];
  const plain = messages.map((message, m) => {
    if (!Array.isArray(message.content)) return message;
    const content = message.content.map((part, p) => {
      if (part?.type !== "image_url") return part;
      const where = `messages.${m}.content.${p}`;
      const url = urlOf(part);
      if (typeof url !== "string") throw new InvalidRequestError(`${where}: an image_url part needs image_url.url`, where);
      images.push({ url, where });
      return { type: "image" };
    });
    return { ...message, content };
  });
  return { messages: plain, images };
}

function dataBytes(url, where) {
  const match = /^data:([^;,]+)(;base64)?,(.*)$/s.exec(url);
  if (!match) {
    throw new InvalidRequestError(`${where}: only data: URLs are taken here (data:image/png;base64,...), not ${url.slice(0, 40)}`, where);
  }
  const [, type, base64, body] = match;
  if (!TYPES.includes(type)) throw new InvalidRequestError(`${where}: ${type} is not an image type taken here (${TYPES.join(", ")})`, where);
  let bytes;
  try {
    bytes = base64 ? Uint8Array.from(atob(body), (c) => c.charCodeAt(0)) : new TextEncoder().encode(decodeURIComponent(body));
  } catch {
    throw new InvalidRequestError(`${where}: the data: URL is not valid base64`, where);
  }
  if (!bytes.length) throw new InvalidRequestError(`${where}: the image is empty`, where);
  if (bytes.length > MAX_IMAGE_BYTES) {
    throw new InvalidRequestError(`${where}: the image has ${bytes.length} bytes, more than ${MAX_IMAGE_BYTES}`, where);
  }
  return new Blob([bytes], { type });
}

// A data: URL -> {width, height, rgb: Uint8Array}: decoded as stored (no color management, no
// premultiplied alpha), alpha dropped as Pillow's convert("RGB") drops it.
export async function decodeImage({ url, where }) {
  const blob = dataBytes(url, where);
  let bitmap;
  try {
    bitmap = await createImageBitmap(blob, { colorSpaceConversion: "none", premultiplyAlpha: "none" });
  } catch (err) {
    throw new InvalidRequestError(`${where}: the image cannot be decoded (${err.message})`, where);
  }
  const { width, height } = bitmap;
  const context = new OffscreenCanvas(width, height).getContext("2d", { colorSpace: "srgb" });
  context.drawImage(bitmap, 0, 0);
  bitmap.close();
  const rgba = context.getImageData(0, 0, width, height, { colorSpace: "srgb" }).data;
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; i < rgba.length; i += 4, j += 3) rgb.set(rgba.subarray(i, i + 3), j);
  return { width, height, rgb };
}
