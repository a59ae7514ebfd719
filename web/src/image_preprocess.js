// An image's RGB pixels -> the encoder's frames, as mlcx/runtime/vision/preprocess.py and
// tiles.py do it from the artifact's vision/encoder.json `preprocess`: resize (Idefics3: the
// longest edge first, then one tile, or tiles row-major plus the global image), rescale and
// normalize in float64 over the uint8 values, then float32, channels first; Qwen-VL's dynamic
// resolution: one frame of the image's smart_resize size (image_smart_resize.js). And the
// prompt text each image becomes (runtime/vision/layout.py). web/test/vectors/images.json and
// qwen_vl.json hold both.

import { mergedGrid, smartSize } from "./image_smart_resize.js";
import { resizeRGB } from "./image_resize.js";

const MAX_SIDE = 4096;

export function longestEdgeSize([width, height], longest) {
  const ratio = width / height;
  if (width >= height) {
    [width, height] = [longest, Math.trunc(longest / ratio)];
    height += height % 2;
  } else {
    [height, width] = [longest, Math.trunc(longest * ratio)];
    width += width % 2;
  }
  if (Math.max(width, height) > MAX_SIDE) {
    if (width >= height) [width, height] = [MAX_SIDE, Math.trunc(MAX_SIDE / ratio)];
    else [height, width] = [MAX_SIDE, Math.trunc(MAX_SIDE * ratio)];
  }
  return [Math.max(width, 1), Math.max(height, 1)];
}

export function tileSize([width, height], tile) {
  const ratio = width / height;
  if (width >= height) {
    width = Math.ceil(width / tile) * tile;
    height = Math.ceil(Math.trunc(width / ratio) / tile) * tile;
  } else {
    height = Math.ceil(height / tile) * tile;
    width = Math.ceil(Math.trunc(height * ratio) / tile) * tile;
  }
  return [width, height];
}

// [rows, columns] of tiles; [0, 0]: one frame.
export function tileGrid(size, tile) {
  const [width, height] = tileSize(size, tile);
  return width <= tile && height <= tile ? [0, 0] : [height / tile, width / tile];
}

const resizedSize = (size, p) => (p.longest_edge ? longestEdgeSize(size, p.longest_edge) : size);

// image: {width, height, rgb: Uint8Array}; p: encoder.json's preprocess.
export function imageGrid(image, p) {
  return p.split ? tileGrid(resizedSize([image.width, image.height], p), p.size) : [0, 0];
}

function resized(image, [width, height], p) {
  const rgb = resizeRGB(image.rgb, image.width, image.height, width, height, p.resample);
  return { width, height, rgb };
}

function crop(image, x0, y0, side) {
  const rgb = new Uint8Array(side * side * 3);
  for (let y = 0; y < side; y++) {
    const from = ((y0 + y) * image.width + x0) * 3;
    rgb.set(image.rgb.subarray(from, from + side * 3), y * side * 3);
  }
  return { width: side, height: side, rgb };
}

function normalized(image, p) {
  const n = image.width * image.height;
  const out = new Float32Array(3 * n);
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < 3; c++) out[c * n + i] = (image.rgb[i * 3 + c] * p.rescale - p.mean[c]) / p.std[c];
  }
  return out;
}

// Float32Array [3, size, size] of each frame the encoder takes; with dynamic resolution
// (p.max_pixels) one frame [3, height, width] of frameSize(image, p).
export function imageFrames(image, p) {
  if (p.max_pixels) return [normalized(resized(image, frameSize(image, p), p), p)];
  const first = p.longest_edge ? resized(image, resizedSize([image.width, image.height], p), p) : image;
  const S = p.size;
  if (!p.split) return [normalized(resized(first, [S, S], p), p)];
  const whole = resized(first, tileSize([first.width, first.height], S), p);
  const [rows, cols] = tileGrid([first.width, first.height], S);
  if (!rows) return [normalized(whole, p)];
  const frames = [];
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) frames.push(normalized(crop(whole, c * S, r * S, S), p));
  frames.push(normalized(resized(whole, [S, S], p), p));
  return frames;
}

const FAKE = "<fake_token_around_image>";
const LAYOUTS = {
  gemma3: (config) => config.image_text,
  idefics3: (config, [rows, cols]) => {
    if (!rows) return config.image_text;
    const tokens = config.image_marker.repeat(config.tokens_per_image);
    let text = "";
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) text += `${FAKE}<row_${r + 1}_col_${c + 1}>${tokens}`;
      text += "\n";
    }
    return `${text}\n${FAKE}<global-img>${tokens}${FAKE}`;
  },
};

// [width, height] of a dynamic-resolution image's one frame.
export const frameSize = (image, p) => smartSize([image.width, image.height], p);

// How the image sits in the prompt (runtime/vision/layout.py): its text, the tokens of each
// run of image tokens (a frame each) and, for dynamic resolution, its grid of merged tokens.
export function imageLayout(config, image) {
  const p = config.preprocess;
  if (p.max_pixels) {
    const grid = mergedGrid([image.width, image.height], p);
    const n = grid[0] * grid[1];
    return { text: config.image_text.repeat(n), runs: [n], grid };
  }
  const grid = imageGrid(image, p);
  return { text: imageText(config, grid), runs: Array(framesOf(grid)).fill(config.tokens_per_image), grid: null };
}

// The prompt text an image of this grid becomes.
export function imageText(config, grid) {
  const layout = LAYOUTS[config.family];
  if (!layout) throw new Error(`image encoder family ${config.family} is not known to this page; update mlcx-web`);
  return layout(config, grid);
}

export const framesOf = (grid) => (grid[0] ? grid[0] * grid[1] + 1 : 1);
