// node web/test/step.test.mjs CASE_JSON: runs web/src/step.js and kv_cache.js on the case
// tests/webgpu/test_web_step.py builds from the Python definitions, printing one JSON object.
// case: {plan, pageSize, numBlocks, steps: [{feeds: [[seq, tokens], ...], rows}]}
import { KVCacheManager } from "../src/kv_cache.js";
import { kvPagesTensors, stepCall } from "../src/step.js";

const plain = (obj) => Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, Array.from(v)]));

const c = JSON.parse(process.argv[2]);
const kv = new KVCacheManager(c.numBlocks, c.pageSize);
const steps = c.steps.map(({ feeds, rows }) => {
  for (const [seq, tokens] of feeds) {
    if (!kv.seqs.has(seq)) kv.addSequence(seq, tokens);
    kv.append(seq, tokens);
  }
  const tables = kv.buildArrays(feeds.map(([seq, tokens]) => [seq, tokens.length]));
  const ids = Int32Array.from(feeds.flatMap(([, tokens]) => tokens));
  const { name, arrays } = stepCall(c.plan, ids, tables, rows === null ? null : Int32Array.from(rows));
  const pages = feeds.map(([seq]) => [...kv.seqs.get(seq).pages]);
  const numTokens = feeds.map(([seq]) => kv.seqs.get(seq).tokens.length);
  for (const [seq] of feeds) kv.commit(seq);
  return { pages, numTokens, tables: plain(tables), name, names: Object.keys(arrays), arrays: plain(arrays) };
});
console.log(JSON.stringify({ steps, kvPages: kvPagesTensors(c.plan, c.numBlocks) }));
