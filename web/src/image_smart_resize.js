// Qwen-VL's dynamic resolution (transformers' smart_resize), as
// mlcx/runtime/vision/smart_resize.py does it: an image keeps its aspect ratio as closely as
// whole multiples of `factor` pixels a side allow, scaled into min_pixels .. max_pixels.
// Python's round() (half to even) is part of the rule. web/test/vectors/qwen_vl.json holds
// the two equal.

import { InvalidRequestError } from "./errors.js";

const MAX_RATIO = 200; // the processor refuses images more elongated than this

// Python's round(): halves go to the even neighbour.
function roundHalfEven(x) {
  const floor = Math.floor(x);
  const rest = x - floor;
  if (rest !== 0.5) return Math.round(x);
  return floor % 2 === 0 ? floor : floor + 1;
}

// [height, width] after the resize.
export function smartResize(height, width, factor, low, high) {
  if (Math.max(height, width) / Math.min(height, width) > MAX_RATIO) {
    throw new InvalidRequestError(`a ${width}x${height} image is too elongated: the longer side may be at most ${MAX_RATIO} times the shorter`, "messages");
  }
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > high) {
    const beta = Math.sqrt((height * width) / high);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < low) {
    const beta = Math.sqrt(low / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return [h, w];
}

// [width, height] of a width x height image after the resize; p: encoder.json's preprocess.
export function smartSize([width, height], p) {
  const [h, w] = smartResize(height, width, p.size, p.min_pixels, p.max_pixels);
  return [w, h];
}

// [rows, columns] of merged tokens the image becomes.
export function mergedGrid(size, p) {
  const [width, height] = smartSize(size, p);
  return [height / p.size, width / p.size];
}
