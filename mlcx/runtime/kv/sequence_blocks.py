"""What the KV cache manager records about one sequence."""

from dataclasses import dataclass, field

SeqId = int | str


@dataclass
class SequenceBlocks:
    """A sequence's tokens in the cache and the blocks holding their KV.

    Invariants:
    - `page_table` has exactly ceil(len(token_ids) / page_size) blocks;
    - the KV of `token_ids[:num_computed]` is written; the rest is reserved for the next step;
    - `block_hashes[i]` is the prefix hash of the full, written block `page_table[i]`.
    """

    token_ids: list[int]
    page_table: list[int]
    num_computed: int
    block_hashes: list[int] = field(default_factory=list)

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def num_pending(self) -> int:
        """Reserved tokens whose KV the next forward step writes."""
        return len(self.token_ids) - self.num_computed

    def copy(self) -> "SequenceBlocks":
        return SequenceBlocks(
            token_ids=list(self.token_ids),
            page_table=list(self.page_table),
            num_computed=self.num_computed,
            block_hashes=list(self.block_hashes),
        )
