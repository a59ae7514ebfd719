// node web/test/step.test.mjs CASE_JSON: runs web/src/step.js and kv_cache.js on the case
// tests/webgpu/test_web_step.py builds from the Python definitions, printing one JSON object.
// case: {plan, pageSize, numBlocks, steps: [{feeds: [[seq, tokens], ...], rows, stateSlots}],
// numStateSlots} (a hybrid model's: each sequence's state slot, the state tensors' slots)
import { KVCacheManager } from "../src/kv_cache.js";
import { stateTensors } from "../src/state_cache.js";
import { kvPagesTensors, stepCall } from "../src/step.js";

const plain = (obj) => Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, Array.from(v)]));

const c = JSON.parse(process.argv[2]);
const kv = new KVCacheManager(c.numBlocks, c.pageSize);
const steps = c.steps.map(({ feeds, rows, stateSlots = null }) => {
  for (const [seq, tokens] of feeds) {
    if (!kv.seqs.has(seq)) kv.addSequence(seq, tokens);
    kv.append(seq, tokens);
  }
  const tables = kv.buildArrays(feeds.map(([seq, tokens]) => [seq, tokens.length]));
  const ids = Int32Array.from(feeds.flatMap(([, tokens]) => tokens));
  const slots = stateSlots && Int32Array.from(stateSlots);
  const { name, arrays } = stepCall(c.plan, ids, tables, rows === null ? null : Int32Array.from(rows), null, slots);
  const pages = feeds.map(([seq]) => [...kv.seqs.get(seq).pages]);
  const numTokens = feeds.map(([seq]) => kv.seqs.get(seq).tokens.length);
  for (const [seq] of feeds) kv.commit(seq);
  return { pages, numTokens, tables: plain(tables), name, names: Object.keys(arrays), arrays: plain(arrays) };
});
const states = stateTensors(c.plan, c.numStateSlots ?? 0);
console.log(JSON.stringify({ steps, kvPages: kvPagesTensors(c.plan, c.numBlocks), states }));
