// The JS runtime against what the Python runtime does (web/test/vectors/, written by
// tests/support/web_vectors.py): seeded sampling and penalties, stop strings, KV prefix reuse,
// tool calls parsed from streamed text and tools written into a prompt.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { SYNTAXES } from "../src/call_syntax.js";
import { KVCacheManager } from "../src/kv_cache.js";
import { samplingParams } from "../src/params.js";
import { TokenSampler } from "../src/sampler.js";
import { StopStringMatcher } from "../src/stop.js";
import { ToolReply } from "../src/tool_calls.js";
import { withGenericTools } from "../src/tool_prompt.js";

const load = (name) => JSON.parse(readFileSync(new URL(`vectors/${name}`, import.meta.url)));

for (const [name, vec] of Object.entries(load("sampler.json"))) {
  test(`sampler: ${name}`, () => {
    const sampler = new TokenSampler(samplingParams(vec.request), vec.prompt);
    for (const [i, step] of vec.steps.entries()) {
      const got = sampler.sample(Float32Array.from(step.logits));
      assert.equal(got.token, step.token, `step ${i}`);
      if (step.logprob === undefined) continue;
      assert.ok(Math.abs(got.logprob - step.logprob) < 1e-5, `step ${i} logprob`);
      assert.deepEqual(got.top.map((t) => t.id), step.top_logprobs.map(([id]) => id));
    }
  });
}

for (const [name, vec] of Object.entries(load("stop.json"))) {
  test(`stop strings: ${name}`, () => {
    const matcher = new StopStringMatcher(vec.stop);
    const fed = [];
    for (const delta of vec.deltas) {
      fed.push(matcher.feed(delta));
      if (fed.at(-1).stop !== null) break;
    }
    assert.deepEqual(fed, vec.fed);
    assert.equal(matcher.stopped === null ? matcher.flush() : null, vec.flush);
  });
}

test("kv manager: prefix reuse and eviction order", () => {
  const vec = load("kv.json");
  const kv = new KVCacheManager(vec.num_blocks, vec.page_size);
  for (const [i, op] of vec.ops.entries()) {
    const at = `op ${i} (${op.op} ${op.seq})`;
    if (op.op === "free") kv.free(op.seq);
    else {
      const rest = op.op === "add" ? op.tokens.slice(kv.addSequence(op.seq, op.tokens)) : op.tokens;
      if (op.op === "add") assert.equal(kv.seqs.get(op.seq).computed, op.cached, at);
      assert.deepEqual(kv.append(op.seq, rest), op.copies, at);
      kv.commit(op.seq);
      assert.deepEqual(kv.seqs.get(op.seq).pages, op.page_table, at);
    }
    assert.deepEqual(kv.freeOrder(), op.free_order, at);
  }
});

for (const [name, steps] of Object.entries(load("kv.json").spans)) {
  test(`kv manager: image spans, ${name}`, () => {
    const kv = new KVCacheManager(16, 4);
    kv.addSequence("s", []);
    let next = 1;
    for (const [i, step] of steps.entries()) {
      kv.append("s", Array.from({ length: step.num_new }, () => next++));
      const got = kv.buildArrays([["s", step.num_new]], { s: step.spans });
      kv.commit("s");
      for (const [key, want] of Object.entries(step.arrays)) assert.deepEqual(Array.from(got[key]), want, `step ${i} ${key}`);
    }
  });
}

const withoutIds = (entries) => entries.map(({ id, ...rest }) => rest);

const tools = load("tools.json");
for (const [name, vec] of Object.entries(tools.replies)) {
  test(`tool calls: ${name}`, () => {
    const reply = new ToolReply(false, [], SYNTAXES[vec.syntax ?? "json"](vec.parameters ?? {}));
    const deltas = [...vec.pieces.flatMap((p) => reply.feed(p)), ...reply.finish()];
    const plain = deltas.map((d) => (d.tool_calls ? { tool_calls: withoutIds(d.tool_calls) } : d));
    assert.deepEqual(plain, vec.deltas);
    assert.deepEqual(withoutIds(reply.scanner.calls), vec.calls);
  });
}

for (const [name, vec] of Object.entries(tools.prompts)) {
  test(`tool prompt: ${name}`, () => {
    assert.deepEqual(withGenericTools(vec.messages, vec.tools), vec.rendered);
  });
}

test("embedding batches: the Python Embedder's grouping and EmbedBatch's arrays", async () => {
  const { batchRows, embedBatch } = await import("../src/embedding_batch.js");
  const vec = load("embed_batch.json");
  assert.deepEqual(batchRows(vec.prompts, vec.limits.max_batch, vec.limits.max_batch_tokens), vec.batches);
  for (const [mode, batches] of Object.entries(vec.arrays)) {
    vec.batches.forEach((rows, b) => {
      const { arrays } = embedBatch(rows.map((r) => vec.prompts[r]), mode);
      const want = batches[b];
      for (const name of ["input_ids", "positions", "rows"]) assert.deepEqual(Array.from(arrays[name]), want[name], `${mode} ${name}`);
      for (const name of ["mask", "pool"]) {
        assert.deepEqual(Array.from(arrays[name]), want[name].flat().map(Math.fround), `${mode} ${name}`);
      }
    });
  }
});
