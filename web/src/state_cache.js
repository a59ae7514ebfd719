// A hybrid model's per-sequence state (Qwen3.5's Gated DeltaNet layers, LFM2's short
// convolutions) beside the paged KV cache; mirrors mlcx/runtime/state (the state-cache
// contract: mlcx/kernels/step_params.py STATE_SLOTS, STATES, COPY_STATES). The plan's step
// functions take `state_slots` (each sequence's slot) among their arrays and `states` (each
// state layer's tensors, the slot axis first) after the KV pages; `copy_states(states, pairs)`
// copies slot rows. The engine runs one sequence at a time: it lives in slot 0, and the other
// slots keep checkpoints, the state after a block-aligned prefix, keyed by that block's prefix
// hash (KVCacheManager's), so a chat's next turn resumes where the last saved state was.

import { evaluate } from "./expr.js";

export const STATES = "states";
export const STATE_SLOTS = "state_slots";
export const COPY_STATES = "copy_states";
export const LIVE = 0; // the running sequence's slot
export const CHECKPOINTS = 3; // slots for saved states

// Whether the plan's step functions take state tensors (a hybrid model).
export const hasStates = (plan) => plan.functions.decode.inputs.some((i) => i.name === STATES);

// Shape and dtype of each state tensor for numSlots slots (the first dimension, a shape
// variable), as the plan's decode declares them.
export function stateTensors(plan, numSlots) {
  const input = plan.functions.decode.inputs.find((i) => i.name === STATES);
  if (!input) return [];
  return input.fields.map(({ shape, dtype }) => ({
    shape: shape.map((d) => evaluate(d, { [shape[0]]: numSlots })),
    dtype,
  }));
}

// Which checkpoint slot holds the state after which prefix, least recently used first.
export class StateCheckpoints {
  constructor(numCheckpoints = CHECKPOINTS) {
    this.free = Array.from({ length: numCheckpoints }, (_, i) => LIVE + 1 + i);
    this.saved = new Map(); // block prefix hash -> slot, in use order
  }

  // The most leading blocks of `hashes` (a sequence's cached prefix) whose state is saved,
  // and the copy that restores it into the live slot: [blocks, [[slot, LIVE]] or []].
  resume(hashes) {
    for (let blocks = hashes.length; blocks > 0; blocks--) {
      const slot = this.saved.get(hashes[blocks - 1]);
      if (slot === undefined) continue;
      this.saved.delete(hashes[blocks - 1]); // most recently used now
      this.saved.set(hashes[blocks - 1], slot);
      return [blocks, [[slot, LIVE]]];
    }
    return [0, []];
  }

  // A slot for the live state after the block of `hash` (`reuse`: a slot this sequence saved
  // into before, overwritten: a decode keeps only its latest save); the copy to run.
  save(hash, reuse = null) {
    if (this.saved.has(hash)) return [this.saved.get(hash), []];
    let slot = reuse;
    if (slot !== null) {
      for (const [h, s] of this.saved) if (s === slot) this.saved.delete(h);
    } else if (this.free.length) {
      slot = this.free.shift();
    } else {
      const [oldest, s] = this.saved.entries().next().value;
      this.saved.delete(oldest);
      slot = s;
    }
    this.saved.set(hash, slot);
    return [slot, [[LIVE, slot]]];
  }

  clear() {
    this.free.push(...this.saved.values());
    this.saved.clear();
  }
}

// The state side of one engine's sequences (ModelCore runs one at a time): where each resumes,
// where its prompt's chunks end, what it saves, as mlcx/runtime/state/cache.py does. A sequence
// saves at its prompt's last full block (the prefill is cut there) and at each block boundary
// while it decodes, keeping only the latest of those: the end of a chat turn, which the next
// turn resumes from.
export class SequenceStates {
  constructor(runner, pageSize) {
    this.runner = runner;
    this.pageSize = pageSize;
    this.checkpoints = new StateCheckpoints();
    this.slots = Int32Array.of(LIVE);
  }

  // A new sequence `id` whose prompt's first `cached` tokens the KV cache holds: the tokens it
  // resumes from (no more than its saved state reaches), the state restored into its slot.
  begin(kv, id, keys, cached) {
    const P = this.pageSize;
    const [blocks, copies] = this.checkpoints.resume(kv.seqs.get(id).hashes);
    if (blocks * P < cached) {
      kv.free(id);
      kv.addSequence(id, keys, blocks);
    }
    this.runner.copyStates(copies);
    this.promptSave = Math.floor(keys.length / P) * P;
    this.decodeSlot = null;
    return blocks * P;
  }

  // The end of a prompt chunk from `start` to at most `end`: cut at the prompt's last full block.
  chunkEnd(start, end) {
    return start < this.promptSave && this.promptSave < end ? this.promptSave : end;
  }

  // After a step of sequence `id`: its state saved where a block ends as described above.
  committed(kv, id) {
    const seq = kv.seqs.get(id);
    const computed = seq.computed;
    const decoding = computed > this.promptSave;
    if (!computed || computed % this.pageSize || (!decoding && computed !== this.promptSave)) return;
    const hash = seq.hashes[computed / this.pageSize - 1];
    const [slot, copies] = this.checkpoints.save(hash, decoding ? this.decodeSlot : null);
    if (decoding) this.decodeSlot = slot;
    this.runner.copyStates(copies);
  }

  clear() {
    this.checkpoints.clear();
  }
}
