"""What the KV cache manager records about one sequence: its blocks, not its tokens."""

from dataclasses import dataclass, field

SeqId = int | str
# A page-table entry whose block was released (wholly outside every layer's sliding window):
# the attention kernels never read it, and it holds no block.
RELEASED = -1


@dataclass
class SequenceBlocks:
    """The blocks holding a sequence's KV slots.

    The token ids and how many of them are computed belong to the scheduler's sequence; the
    manager is handed token ids only where it hashes them (`add_sequence`, `commit`).

    Invariants:
    - `page_table` has exactly ceil(num_tokens / page_size) entries, blocks or RELEASED;
    - `block_hashes[i]` is the prefix hash of the full, written block `page_table[i]`.
    """

    page_table: list[int]
    num_tokens: int  # slots written or reserved
    block_hashes: list[int] = field(default_factory=list)

    def copy(self) -> "SequenceBlocks":
        return SequenceBlocks(list(self.page_table), self.num_tokens, list(self.block_hashes))
