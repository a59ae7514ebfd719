// node --test web/test/: the phone decisions of web/src/device_fit.js (run by
// tests/webgpu/test_web_node.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import { DeviceUnfit, chooseVariant, kvBlocksForBudget } from "../src/device_fit.js";

const F16 = { quantization: "q4f16", features: ["shader-f16", "subgroups"] };
const F32 = { quantization: "q4f32", features: ["subgroups"] };

test("the preferred variant when the adapter has its features", () => {
  const got = chooseVariant([F16, F32], new Set(["shader-f16", "subgroups", "timestamp-query"]));
  assert.deepEqual(got, { variant: F16, fallbackFrom: null });
});

test("the f32 variant on an adapter without shader-f16, naming what it fell back from", () => {
  assert.deepEqual(chooseVariant([F16, F32], new Set(["subgroups"])), { variant: F32, fallbackFrom: F16 });
});

test("no runnable variant: the missing features and the fix", () => {
  assert.throws(() => chooseVariant([F16], new Set(["subgroups"])), (err) =>
    err instanceof DeviceUnfit && /shader-f16/.test(err.message) && /fallback_quantization/.test(err.message));
  assert.throws(() => chooseVariant([F16, F32], new Set()), /shader-f16, subgroups/);
});

const MODEL = { weightBytes: 1000, blockBytes: 100, contextWindow: 256, pageSize: 16 }; // 16 pages

test("a full context window when the budget holds it", () => {
  assert.equal(kvBlocksForBudget({ ...MODEL, budget: 1000 + 16 * 100 }), 16);
  assert.equal(kvBlocksForBudget({ ...MODEL, budget: 10 ** 9 }), 16);
});

test("fewer pages when the budget is short", () => {
  assert.equal(kvBlocksForBudget({ ...MODEL, budget: 1000 + 7 * 100 + 99 }), 7);
});

test("the device's memory caps the budget at half of it", () => {
  assert.equal(kvBlocksForBudget({ ...MODEL, budget: 10 ** 9, deviceMemoryBytes: 2 * (1000 + 5 * 100) }), 5);
});

test("no room for one page is an error that says what to change", () => {
  assert.throws(() => kvBlocksForBudget({ ...MODEL, budget: 1099 }), (err) =>
    err instanceof DeviceUnfit && /estimated_memory_bytes/.test(err.message));
});
