// Qwen-VL in the page against the Python runtime (web/test/vectors/qwen_vl.json, written by
// tests/support/web_qwen_vectors.py): smart_resize, each image's frame (Pillow's bicubic to
// its own size, normalized), its prompt layout, embed_image's inputs, bit for bit (the
// patches by their sha256); and the M-RoPE positions of prompts with images.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { imageFrames, imageLayout } from "../src/image_preprocess.js";
import { smartResize } from "../src/image_smart_resize.js";
import { qwenInputs } from "../src/qwen_inputs.js";
import { tokenPositions } from "../src/rope_positions.js";

const vectors = JSON.parse(readFileSync(new URL("vectors/qwen_vl.json", import.meta.url)));
const bytes = (b64) => new Uint8Array(Buffer.from(b64, "base64"));
const TYPED = { float32: Float32Array, int32: Int32Array };

function assertSame(got, wantB64, what) {
  const want = new got.constructor(bytes(wantB64).buffer);
  assert.equal(got.length, want.length, `${what}: length`);
  const diff = want.findIndex((v, j) => !Object.is(v, got[j]));
  assert.equal(diff, -1, `${what}: element ${diff} is ${got[diff]}, Python's ${want[diff]}`);
}

test("qwen-vl: smart_resize as Python's (half to even)", () => {
  for (const { args, want } of vectors.resize) assert.deepEqual(smartResize(...args), want, `${args}`);
});

for (const [name, vec] of Object.entries(vectors.images)) {
  test(`qwen-vl image: ${name}`, () => {
    const image = { width: vec.width, height: vec.height, rgb: bytes(vec.rgb) };
    const layout = imageLayout(vec.config, image);
    assert.deepEqual(layout, vec.layout);
    const [frame, ...rest] = imageFrames(image, vec.config.preprocess);
    assert.equal(rest.length, 0);
    assertSame(frame, vec.frame.data, "frame");
    const [, height, width] = vec.frame.shape;
    const inputs = qwenInputs(frame, height, width, vec.config.config, vec.config.inputs);
    assert.deepEqual(Object.keys(inputs), vec.config.inputs);
    for (const [input, want] of Object.entries(vec.inputs)) {
      assert.deepEqual(inputs[input].shape, want.shape, `${input}: shape`);
      assert.ok(inputs[input].data instanceof TYPED[inputs[input].dtype], `${input}: dtype`);
      const { data } = inputs[input];
      if (want.sha256) assert.equal(createHash("sha256").update(data).digest("hex"), want.sha256, input);
      else assertSame(data, want.data, input);
    }
  });
}

test("qwen-vl: M-RoPE positions as Python's", () => {
  for (const { first, count, images, positions } of vectors.positions) {
    const got = tokenPositions(first, count, images);
    assert.deepEqual([0, 1, 2].map((r) => Array.from(got.subarray(r * count, (r + 1) * count))), positions);
  }
});
