"""Prefix caching over the block pool: a prompt's full pages found among the cached blocks by
their chained content hashes, and a sequence's newly full blocks cached once written."""

from collections.abc import Sequence

from mlcx.runtime.kv.block_pool import BlockPool
from mlcx.runtime.kv.prefix_hash import hash_block
from mlcx.runtime.kv.sequence_blocks import RELEASED, SequenceBlocks


def cached_prefix(
    pool: BlockPool, page_size: int, prompt_token_ids: Sequence[int]
) -> tuple[list[int], list[int]]:
    """(block ids, their hashes) of the longest chain of the prompt's full pages in the cache."""
    blocks: list[int] = []
    hashes: list[int] = []
    # (n - 1) // page_size full blocks at most: the last prompt token stays uncached.
    for i in range((len(prompt_token_ids) - 1) // page_size):
        chunk = prompt_token_ids[i * page_size : (i + 1) * page_size]
        block_hash = hash_block(hashes[-1] if hashes else None, chunk)
        block_id = pool.lookup(block_hash)
        if block_id is None:
            break
        blocks.append(block_id)
        hashes.append(block_hash)
    return blocks, hashes


def register_full_blocks(
    pool: BlockPool, page_size: int, seq: SequenceBlocks, token_ids: Sequence[int]
) -> None:
    """Hash the sequence's full blocks not hashed yet and offer them to the cache."""
    for i in range(len(seq.block_hashes), seq.num_tokens // page_size):
        parent = seq.block_hashes[-1] if seq.block_hashes else None
        block_hash = hash_block(parent, token_ids[i * page_size : (i + 1) * page_size])
        seq.block_hashes.append(block_hash)
        # Returns False when another block already caches this prefix; this block then
        # stays private, and later blocks still chain on the content hash.
        if seq.page_table[i] != RELEASED:
            pool.register(seq.page_table[i], block_hash)
