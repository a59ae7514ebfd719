// Token lists -> the padded arrays of one `embed` call, as mlcx/runtime/backends/embed_batch.py
// builds them (texts right-padded, positions from 0 in each text, each token's share of its
// text's vector by the pooling mode), and texts grouped into calls as the Python Embedder groups
// them: shortest first, at most MAX_BATCH texts and MAX_BATCH_TOKENS padded tokens a call.

export const MAX_BATCH = 8;
export const MAX_BATCH_TOKENS = 4096;

// pooling mode -> a text's weights over its own tokens
const POOL_WEIGHTS = {
  mean: (n) => new Float32Array(n).fill(1 / n),
  cls: (n) => Float32Array.from({ length: n }, (_, i) => (i === 0 ? 1 : 0)),
  last: (n) => Float32Array.from({ length: n }, (_, i) => (i === n - 1 ? 1 : 0)),
};

export function embedBatch(prompts, mode) {
  if (!Object.hasOwn(POOL_WEIGHTS, mode)) throw new Error(`unknown pooling mode ${JSON.stringify(mode)}: recompile the model`);
  const texts = prompts.length;
  const seq = Math.max(...prompts.map((p) => p.length));
  const arrays = {
    input_ids: new Int32Array(texts * seq),
    positions: Int32Array.from({ length: texts * seq }, (_, i) => i % seq),
    rows: Int32Array.from({ length: texts * seq }, (_, i) => Math.floor(i / seq)),
    mask: new Float32Array(texts * seq),
    pool: new Float32Array(texts * seq),
  };
  prompts.forEach((prompt, row) => {
    arrays.input_ids.set(prompt, row * seq);
    arrays.mask.fill(1, row * seq, row * seq + prompt.length);
    arrays.pool.set(POOL_WEIGHTS[mode](prompt.length), row * seq);
  });
  return { texts, seq, arrays };
}

// Row indices per call, shortest texts first (a sorted row sets its batch's padding).
export function batchRows(prompts, maxBatch = MAX_BATCH, maxTokens = MAX_BATCH_TOKENS) {
  const order = [...prompts.keys()].sort((a, b) => prompts[a].length - prompts[b].length || a - b);
  const batches = [[]];
  for (const row of order) {
    const current = batches.at(-1);
    const padded = (current.length + 1) * prompts[row].length;
    if (current.length && (current.length >= maxBatch || padded > maxTokens)) batches.push([row]);
    else current.push(row);
  }
  return batches.filter((rows) => rows.length);
}
