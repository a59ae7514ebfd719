"""Speculative rollbacks on the KV cache manager: thousands of steps that reserve 1 + k slots,
write them, keep a random accepted prefix (`truncate`) and commit, mixed with prefix-cache
hits, forks (shared pages, copy-on-write) and frees. After every operation no block is leaked
or double-freed, every live token's (fake) KV sits where its page table points, and every
block in the prefix cache holds the KV of exactly the tokens its hash names: a rolled-back
page never stays findable under a hash of rejected tokens."""

import random

import numpy as np
import pytest

from mlcx.runtime.kv import KVCacheManager, OutOfBlocks
from mlcx.runtime.kv.prefix_hash import hash_block
from tests.runtime.test_kv_random_ops import PAGE, check_invariants, fake_kv

VOCAB = 3


def record_hashes(tokens: list[int], names: dict) -> None:
    """Remember which token prefix each full-block hash of `tokens` names."""
    parent = None
    for i in range(len(tokens) // PAGE):
        parent = hash_block(parent, tokens[i * PAGE : (i + 1) * PAGE])
        names[parent] = tuple(tokens[: (i + 1) * PAGE])


def check_prefix_cache(m: KVCacheManager, device: np.ndarray, names: dict) -> None:
    for block_id in range(m.pool.num_blocks):
        block_hash = m.pool.block_hash(block_id)
        if block_hash is not None:
            prefix = names[block_hash]
            assert list(device[block_id]) == fake_kv(prefix)[-PAGE:], block_id


def test_truncate_frees_tail_blocks_and_unregisters_rolled_back_pages():
    m = KVCacheManager(8, PAGE)
    m.add_sequence("a", [1] * 9)
    m.append("a", 9)
    m.commit("a", [1] * 9)  # blocks 0, 1 full and cached, block 2 partial
    table = m.page_table("a")
    m.truncate("a", 6)  # into block 1: its cached prefix is no longer what it will hold
    assert m.page_table("a") == table[:2] and m.num_tokens("a") == 6
    assert m.pool.refcount(table[2]) == 0 and m.pool.block_hash(table[2]) is None
    assert m.pool.block_hash(table[0]) is not None and m.pool.block_hash(table[1]) is None
    m.append("a", 2)
    m.commit("a", [1] * 8)
    m.fork("a", "b")
    m.truncate("a", 5)  # block 1 now full and cached, shared with "b": it keeps its hash
    assert m.pool.block_hash(m.page_table("b")[1]) is not None
    shared = m.page_table("b")[1]
    assert m.page_table("a")[1] == shared
    assert m.append("a", 1) == [(shared, m.page_table("a")[1])]  # copy-on-write first
    with pytest.raises(ValueError, match="truncated to 1..6"):
        m.truncate("a", 7)


def test_thousands_of_random_rollbacks_keep_invariants():
    rng = random.Random(99)
    num_blocks = 32
    m = KVCacheManager(num_blocks, PAGE)
    device = np.full((num_blocks, PAGE), -1, dtype=np.int64)
    prefixes = [[rng.randrange(VOCAB) for _ in range(rng.randrange(1, 14))] for _ in range(4)]
    tokens: dict = {}
    names: dict = {}
    events = dict.fromkeys(["rollback", "full_accept", "cow", "hit", "oob", "fork", "deep"], 0)

    def commit(seq_id):
        m.commit(seq_id, tokens[seq_id])
        record_hashes(tokens[seq_id], names)

    for step in range(4000):
        op = rng.random()
        if op < 0.12 or not tokens:
            prompt = rng.choice(prefixes) + [rng.randrange(VOCAB) for _ in range(rng.randrange(4))]
            cached = m.add_sequence(step, prompt)
            events["hit"] += cached > 0
            try:
                copies = m.append(step, len(prompt) - cached)
            except OutOfBlocks:
                m.free(step)
                events["oob"] += 1
                continue
            tokens[step] = prompt
            for src, dst in copies:
                device[dst] = device[src]
            arrays = m.build_arrays([(step, len(prompt) - cached)])
            device.reshape(-1)[arrays.slots] = fake_kv(tuple(prompt))[cached:]
            commit(step)
        elif op < 0.8:  # one speculative step per chosen sequence, mixed proposal lengths
            batch = []
            for seq_id in rng.sample(sorted(tokens), rng.randint(1, len(tokens))):
                k = rng.randint(0, 5)
                try:
                    copies = m.append(seq_id, 1 + k)
                except OutOfBlocks:
                    events["oob"] += 1
                    continue
                events["cow"] += len(copies)
                for src, dst in copies:
                    device[dst] = device[src]
                batch.append((seq_id, 1 + k, [rng.randrange(VOCAB) for _ in range(1 + k)]))
            if not batch:
                continue
            arrays = m.build_arrays([(seq_id, n) for seq_id, n, _ in batch])
            new_kv = [kv for s, n, new in batch for kv in fake_kv((*tokens[s], *new))[-n:]]
            device.reshape(-1)[arrays.slots] = new_kv
            for seq_id, n, new in batch:
                accepted = rng.randint(1, n)  # the last input token plus accepted drafts
                m.truncate(seq_id, len(tokens[seq_id]) + accepted)
                tokens[seq_id] += new[:accepted]
                events["rollback" if accepted < n else "full_accept"] += 1
                commit(seq_id)
        elif op < 0.84:  # a rollback of committed tokens, into cached blocks
            seq_id = rng.choice(sorted(tokens))
            keep = rng.randint(1, len(tokens[seq_id]))
            m.truncate(seq_id, keep)
            del tokens[seq_id][keep:]
            events["deep"] += 1
        elif op < 0.9:
            parent = rng.choice(sorted(tokens))
            m.fork(parent, step)
            tokens[step] = list(tokens[parent])
            events["fork"] += 1
        else:
            seq_id = rng.choice(sorted(tokens))
            m.free(seq_id)
            del tokens[seq_id]
        for seq_id in [s for s in tokens if len(tokens[s]) > 28]:  # finished at max_tokens
            m.free(seq_id)
            del tokens[seq_id]
        check_invariants(m, tokens, device)
        check_prefix_cache(m, device, names)

    for seq_id in list(tokens):
        m.free(seq_id)
    assert m.pool.num_used == 0 and len(m.pool.free_order()) == num_blocks
    assert all(count > 0 for count in events.values()), events
    assert events["rollback"] > 2000, events
