// Image preprocessing against the Python runtime (web/test/vectors/images.json, written by
// tests/support/web_image_vectors.py): Pillow's resize filters, Idefics3's longest edge and
// tiles, rescale and normalize, bit for bit; and each image's prompt text.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { imageFrames, imageGrid, imageText } from "../src/image_preprocess.js";

const vectors = JSON.parse(readFileSync(new URL("vectors/images.json", import.meta.url)));
const bytes = (b64) => new Uint8Array(Buffer.from(b64, "base64"));

for (const [name, vec] of Object.entries(vectors)) {
  test(`image preprocessing: ${name}`, () => {
    const image = { width: vec.width, height: vec.height, rgb: bytes(vec.rgb) };
    const p = vec.config.preprocess;
    const grid = imageGrid(image, p);
    assert.deepEqual(grid, vec.grid);
    const frames = imageFrames(image, p);
    assert.equal(frames.length, vec.frames.length);
    frames.forEach((frame, i) => {
      const want = new Float32Array(bytes(vec.frames[i]).buffer);
      const diff = want.findIndex((v, j) => v !== frame[j]);
      assert.equal(diff, -1, `frame ${i}: pixel ${diff} is ${frame[diff]}, Python's ${want[diff]}`);
    });
    assert.equal(imageText(vec.config, grid), vec.text);
  });
}
