"""KV cache manager under 600 random adds, appends, forks and frees: after every operation
the refcounts, free queue and prefix index are consistent, and every computed token's (fake)
KV sits where its page table points. The test keeps each sequence's tokens, as the scheduler
does; the manager only sees them when it hashes blocks."""

import random

import numpy as np

from mlcx.runtime.kv import KVCacheManager, OutOfBlocks
from tests.support.kv_state import refcounts, snapshot

PAGE = 4
VOCAB = 3


def fake_kv(tokens: tuple[int, ...]) -> list[int]:
    """Stand-in for a token's KV: like the real one, it depends on the whole prefix."""
    kv, running = [], 0
    for token in tokens:
        running = hash((running, token)) % 2**62
        kv.append(running)
    return kv


def check_invariants(m: KVCacheManager, tokens: dict, device: np.ndarray) -> None:
    pool = m.pool
    holders = [0] * pool.num_blocks
    for seq_id, seq_tokens in tokens.items():
        table = m.page_table(seq_id)
        assert len(set(table)) == len(table)
        assert m.num_tokens(seq_id) == len(seq_tokens)
        assert len(table) == -(-len(seq_tokens) // PAGE)
        for block_id in table:
            holders[block_id] += 1
        # Every written token's KV sits where the page table says (prefix reuse, COW); here
        # every slot is written between operations.
        kv = fake_kv(tuple(seq_tokens))
        for pos in range(len(seq_tokens)):
            assert device[table[pos // PAGE], pos % PAGE] == kv[pos]
    assert refcounts(m) == holders
    free = pool.free_order()
    assert sorted(free) == [b for b in range(pool.num_blocks) if holders[b] == 0]
    assert pool.num_free + pool.num_used == pool.num_blocks == len(free) + pool.num_used
    for block_id in range(pool.num_blocks):
        block_hash = pool.block_hash(block_id)
        assert block_hash is None or pool.lookup(block_hash) == block_id
    assert m.usage() == pool.num_used / pool.num_blocks


def forward(m: KVCacheManager, device: np.ndarray, tokens: dict, batch: list, copies: list):
    for src, dst in copies:
        device[dst] = device[src]
    arrays = m.build_arrays(batch)
    new_kv = [kv for seq_id, n in batch for kv in fake_kv(tuple(tokens[seq_id]))[-n:]]
    device.reshape(-1)[arrays.slots] = new_kv
    for seq_id, _ in batch:
        m.commit(seq_id, tokens[seq_id])


def test_random_operations_keep_invariants():
    # A tiny vocabulary makes equal blocks under different prefixes likely; `fake_kv` tells
    # them apart, so a prefix hit that ignores the hash chain would fail the device check.
    rng = random.Random(1234)
    num_blocks = 24
    m = KVCacheManager(num_blocks, PAGE)
    device = np.full((num_blocks, PAGE), -1, dtype=np.int64)
    prefixes = [[rng.randrange(VOCAB) for _ in range(rng.randrange(1, 14))] for _ in range(4)]
    tokens: dict = {}  # the live sequences' tokens
    events = dict.fromkeys(["oob", "cow", "hit", "fork", "free"], 0)
    hit_tokens = query_tokens = 0

    def try_append(seq_id, new_tokens) -> list | None:
        before = snapshot(m, tokens)
        try:
            copies = m.append(seq_id, len(new_tokens))
        except OutOfBlocks:
            events["oob"] += 1
            assert snapshot(m, tokens) == before
            return None
        tokens[seq_id] += new_tokens
        return copies

    for step in range(600):
        op = rng.random()
        if op < 0.25 or not tokens:
            seq_id = step
            prompt = rng.choice(prefixes) + [rng.randrange(VOCAB) for _ in range(rng.randrange(6))]
            cached = m.add_sequence(seq_id, prompt)
            events["hit"] += cached > 0
            hit_tokens, query_tokens = hit_tokens + cached, query_tokens + len(prompt)
            tokens[seq_id] = prompt[:cached]
            copies = try_append(seq_id, prompt[cached:])
            if copies is None:
                m.free(seq_id)
                del tokens[seq_id]
            else:
                forward(m, device, tokens, [(seq_id, len(prompt) - cached)], copies)
        elif op < 0.65:
            batch, copies = [], []
            for seq_id in rng.sample(sorted(tokens), rng.randint(1, len(tokens))):
                n = rng.randint(1, 3)
                step_copies = try_append(seq_id, [rng.randrange(VOCAB) for _ in range(n)])
                if step_copies is not None:
                    batch.append((seq_id, n))
                    copies += step_copies
            events["cow"] += len(copies)
            if batch:
                forward(m, device, tokens, batch, copies)
        elif op < 0.8:
            parent = rng.choice(sorted(tokens))
            m.fork(parent, step)
            tokens[step] = list(tokens[parent])
            events["fork"] += 1
        else:
            seq_id = rng.choice(sorted(tokens))
            m.free(seq_id)
            del tokens[seq_id]
            events["free"] += 1
        check_invariants(m, tokens, device)

    assert all(count > 0 for count in events.values()), events
    assert 0 < hit_tokens < query_tokens
