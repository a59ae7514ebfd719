"""mlcx's paged KV cache manager: block ids, page tables and prefix sharing, no tensors."""

from mlcx.runtime.kv.block_pool import BlockPool, OutOfBlocks
from mlcx.runtime.kv.manager import KVCacheManager
from mlcx.runtime.kv.page_tables import PageTableArrays, SequenceStep, build_page_table_arrays
from mlcx.runtime.kv.sequence_blocks import SeqId

__all__ = [
    "BlockPool",
    "KVCacheManager",
    "OutOfBlocks",
    "PageTableArrays",
    "SeqId",
    "SequenceStep",
    "build_page_table_arrays",
]
