// The paged KV cache manager, ported from mlcx/runtime/kv (block_pool, free_queue, manager,
// page_tables): integer block ids with reference counts, an LRU queue of free blocks that
// keeps cached prefixes until reused, prefix sharing between prompts (a chat turn reuses the
// pages of the conversation so far) and the per-step page-table arrays. Held to the Python
// manager's block ids and eviction order by web/test/vectors/kv.json.
// Prefix hashes are 64-bit (two 32-bit lanes) instead of Python's blake2b: one tab, one user.

export class OutOfBlocks extends Error {}

class BlockPool {
  constructor(numBlocks) {
    this.refcounts = new Array(numBlocks).fill(0);
    this.hashes = new Array(numBlocks).fill(null);
    this.cached = new Map(); // hash -> block id
    this.empty = new Set(Array.from({ length: numBlocks }, (_, i) => i)); // insertion-ordered
    this.evictable = new Set();
  }

  get numFree() {
    return this.empty.size + this.evictable.size;
  }

  allocate() {
    const segment = this.empty.size ? this.empty : this.evictable;
    const [block] = segment;
    if (block === undefined) throw new OutOfBlocks("no free KV cache block");
    segment.delete(block);
    const hash = this.hashes[block];
    if (hash !== null) {
      this.cached.delete(hash);
      this.hashes[block] = null;
    }
    this.refcounts[block] = 1;
    return block;
  }

  touch(block) {
    if (this.refcounts[block] === 0) {
      this.empty.delete(block);
      this.evictable.delete(block);
    }
    this.refcounts[block] += 1;
  }

  free(block) {
    if (this.refcounts[block] === 0) throw new Error(`block ${block} is already free`);
    this.refcounts[block] -= 1;
    if (this.refcounts[block] === 0) {
      (this.hashes[block] === null ? this.empty : this.evictable).add(block);
    }
  }

  register(block, hash) {
    if (this.hashes[block] !== null || this.cached.has(hash)) return;
    this.cached.set(hash, block);
    this.hashes[block] = hash;
  }
}

function hashBlock(parent, tokens) {
  let h1 = 0x9e3779b9 ^ (parent ? parent.length : 0);
  let h2 = 0x85ebca6b;
  const mix = (v) => {
    h1 = Math.imul(h1 ^ v, 2654435761);
    h2 = Math.imul(h2 ^ v, 1597334677);
  };
  for (const c of parent ?? "") mix(c.charCodeAt(0));
  for (const t of tokens) mix(t);
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `${(h1 >>> 0).toString(16)}:${(h2 >>> 0).toString(16)}`;
}

export class KVCacheManager {
  constructor(numBlocks, pageSize) {
    this.pool = new BlockPool(numBlocks);
    this.pageSize = pageSize;
    this.seqs = new Map();
  }

  // Registers a sequence, reusing cached full blocks of its prompt (at most maxBlocks: a
  // hybrid model resumes only where its state was saved); returns the cached count.
  addSequence(id, prompt, maxBlocks = Infinity) {
    const blocks = [];
    const hashes = [];
    const full = Math.min(Math.floor((prompt.length - 1) / this.pageSize), maxBlocks);
    for (let i = 0; i < full; i++) {
      const hash = hashBlock(hashes.at(-1), prompt.slice(i * this.pageSize, (i + 1) * this.pageSize));
      const block = this.pool.cached.get(hash);
      if (block === undefined) break;
      blocks.push(block);
      hashes.push(hash);
    }
    blocks.forEach((b) => this.pool.touch(b));
    const hit = blocks.length * this.pageSize;
    this.seqs.set(id, { tokens: prompt.slice(0, hit), pages: blocks, computed: hit, hashes });
    return hit;
  }

  // Reserves slots for `tokens`; returns the page copies to run first: none, since only full
  // pages are shared (no forks here), so a sequence never writes a page another one reads.
  append(id, tokens) {
    const seq = this.seqs.get(id);
    const total = Math.ceil((seq.tokens.length + tokens.length) / this.pageSize);
    if (total - seq.pages.length > this.pool.numFree) throw new OutOfBlocks("not enough free KV cache blocks");
    while (seq.pages.length < total) seq.pages.push(this.pool.allocate());
    seq.tokens.push(...tokens);
    return [];
  }

  // The kernels' page-table arrays for [[id, numNew], ...] (see page_tables.py). `spans`:
  // {id: [[start, end], ...]} positions attended to both ways (an image's tokens): each of
  // their new tokens is a row of its own that sees the keys up to its span's end (span_steps).
  buildArrays(batch, spans = {}) {
    const P = this.pageSize;
    const rows = [];
    for (const [id, numNew] of batch) {
      const seq = this.seqs.get(id);
      if (numNew !== seq.tokens.length - seq.computed) throw new Error(`sequence ${id}: ${numNew} new tokens`);
      rows.push(...spanRows(seq.pages, seq.tokens.length, numNew, spans[id] ?? [], P));
    }
    const out = { q_indptr: [0], positions: [], slots: [], page_indptr: [0], page_values: [], last_page_len: [] };
    for (const { pages, tokens, first, count } of rows) {
      for (let pos = first; pos < first + count; pos++) {
        out.positions.push(pos);
        out.slots.push(pages[Math.floor(pos / P)] * P + (pos % P));
      }
      out.q_indptr.push(out.q_indptr.at(-1) + count);
      out.page_values.push(...pages);
      out.page_indptr.push(out.page_values.length);
      out.last_page_len.push(tokens - (pages.length - 1) * P);
    }
    for (const key of Object.keys(out)) out[key] = Int32Array.from(out[key]);
    return out;
  }

  // After the forward step: the reserved tokens are written; full blocks become shareable.
  commit(id) {
    const seq = this.seqs.get(id);
    seq.computed = seq.tokens.length;
    for (let i = seq.hashes.length; i < Math.floor(seq.computed / this.pageSize); i++) {
      const hash = hashBlock(seq.hashes.at(-1), seq.tokens.slice(i * this.pageSize, (i + 1) * this.pageSize));
      seq.hashes.push(hash);
      this.pool.register(seq.pages[i], hash);
    }
  }

  // Blocks `allocate` hands out next, in order (the Python pool's free_order).
  freeOrder() {
    return [...this.pool.empty, ...this.pool.evictable];
  }

  get usedBlocks() {
    return this.pool.refcounts.filter((n) => n > 0).length;
  }

  free(id) {
    const seq = this.seqs.get(id);
    this.seqs.delete(id);
    for (const block of [...seq.pages].reverse()) this.pool.free(block);
  }
}

// A sequence's new tokens as kernel rows: causal runs, and each token of a span a row of its
// own over the pages up to the span's end. {pages, tokens (keys seen), first, count}.
function spanRows(pages, total, numNew, spans, P) {
  const upTo = (tokens) => pages.slice(0, Math.ceil(tokens / P));
  const run = (tokens, count) => ({ pages: upTo(tokens), tokens, first: tokens - count, count });
  const first = total - numNew;
  const rows = [];
  let pos = first;
  for (const [start, stop] of [...spans].sort((a, b) => a[0] - b[0])) {
    if (stop <= first || start >= total) continue;
    if (stop > total) throw new Error(`image tokens ${start}..${stop} are cut by a step ending at ${total}`);
    if (start > pos) rows.push(run(start, start - pos));
    for (let p = Math.max(start, pos); p < stop; p++) rows.push({ pages: upTo(stop), tokens: stop, first: p, count: 1 });
    pos = stop;
  }
  if (pos < total) rows.push(run(total, total - pos));
  return rows;
}
