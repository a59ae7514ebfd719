"""Draft-model proposals: a small model with the target's tokenizer drafts k tokens, one
forward per token, on a runner and KV cache manager of its own (the same classes the target
uses). What the draft has computed is kept per sequence between steps; each step it rolls
back to the part the target kept (`truncate`), runs the tokens it has not seen, then drafts.

Greedy choices draft the draft model's argmax; sampled ones draw from the draft's distribution
after the sampler's processing of the choice's parameters and report it, so that rejection
sampling keeps the target's distribution.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.errors import ArtifactError
from mlcx.runtime.backends.registry import create_runner
from mlcx.runtime.forward_batch import ForwardBatch
from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.sampler import draw, processed_probs
from mlcx.runtime.sequence import Sequence
from mlcx.runtime.speculative.proposer import Draft, DraftRequest
from mlcx.runtime.tokenizer import Tokenizer

if TYPE_CHECKING:
    from mlcx.runtime.engine import Engine


def check_same_tokenizer(target: Tokenizer, draft: Tokenizer, draft_path: str) -> None:
    """Raise ArtifactError naming the first difference that would make drafts meaningless."""
    checks = {
        "vocabulary": lambda t: t.backend.get_vocab(with_added_tokens=True),
        "BOS token id": lambda t: t.bos_token_id,
        "EOS token ids": lambda t: t.eos_token_ids,
        "BOS prepending": lambda t: t.add_bos,
    }
    for name, value in checks.items():
        if value(target) != value(draft):
            raise ArtifactError(
                f"the draft model {draft_path} has another {name} than the target model: "
                "speculative decoding needs the same tokenizer; pick a draft model of the "
                "same family (e.g. a smaller model trained with the target's tokenizer)"
            )


class DraftProposer:
    def __init__(self, artifact: Artifact, num_blocks: int, device: str | None = None):
        self.artifact = artifact
        self.runner = create_runner(artifact, num_blocks, device)
        self.kv = KVCacheManager(num_blocks, artifact.config.page_size, False)
        self.chunk = artifact.config.prefill_chunk
        self.seen: dict[int, list[int]] = {}  # tokens whose KV the draft holds, by seq_id
        self.rng = np.random.default_rng(0)

    @classmethod
    def for_target(cls, engine: Engine) -> DraftProposer:
        config = engine.config
        artifact = Artifact(config.draft)
        check_same_tokenizer(engine.tokenizer, Tokenizer.from_dir(artifact.path), config.draft)
        target_vocab = engine.artifact.config.model.vocab_size
        if artifact.config.model.vocab_size != target_vocab:
            raise ArtifactError(
                f"the draft model {config.draft} has {artifact.config.model.vocab_size} logits "
                f"per token, the target {target_vocab}; they must be equal"
            )
        window = min(artifact.config.context_window, engine.context_window)
        per_seq = math.ceil(window / artifact.config.page_size) + 1
        return cls(artifact, per_seq * config.speculative_max_batch, config.device)

    def release(self, live: Collection[int]) -> None:
        for seq_id in [s for s in self.seen if s not in live]:
            self.kv.free(seq_id)
            del self.seen[seq_id]

    def propose(self, requests: list[DraftRequest]) -> dict[int, Draft]:
        ready = [(seq, k, state) for seq, k, state in requests if self._catch_up_room(seq, k)]
        if not ready:
            return {}
        feeds = {seq.seq_id: seq.token_ids[len(self.seen[seq.seq_id]) :] for seq, _, _ in ready}
        tokens: dict[int, list[int]] = {seq.seq_id: [] for seq, _, _ in ready}
        probs: dict[int, list[np.ndarray]] = {seq.seq_id: [] for seq, _, _ in ready}
        for j in range(max(k for _, k, _ in ready)):
            active = [(seq, state) for seq, k, state in ready if k > j]
            logits = self._forward({seq.seq_id: feeds[seq.seq_id] for seq, _ in active})
            q = processed_probs(logits, [state for _, state in active])
            for (seq, state), row in zip(active, q, strict=True):
                token = int(np.argmax(row)) if state.params.is_greedy else draw(row, self.rng)
                tokens[seq.seq_id].append(token)
                probs[seq.seq_id].append(row)
                feeds[seq.seq_id] = [token]
        return {
            sid: Draft(tuple(tokens[sid]), None if _greedy(ready, sid) else np.stack(probs[sid]))
            for sid in tokens
        }

    def _catch_up_room(self, seq: Sequence, k: int) -> bool:
        """Roll the draft's KV back to what `seq` still shares with it; whether the blocks for
        the rest and k drafted tokens are there (if not, no draft this step)."""
        seen = self.seen.get(seq.seq_id, [])
        common = 0
        for a, b in zip(seen, seq.token_ids, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, seq.num_tokens - 1)  # the last token is always fed again
        if seq.seq_id in self.seen and common == 0:
            self.kv.free(seq.seq_id)
            del self.seen[seq.seq_id]
        if seq.seq_id not in self.seen:
            self.kv.add_sequence(seq.seq_id, seq.token_ids[:1])
            self.seen[seq.seq_id] = []
        elif common < len(seen):
            self.kv.truncate(seq.seq_id, common)
            del self.seen[seq.seq_id][common:]
        return self.kv.can_append(seq.seq_id, seq.num_tokens - len(self.seen[seq.seq_id]) + k)

    def _forward(self, feeds: dict[int, list[int]]) -> np.ndarray:
        """Run each sequence's fed tokens (long feeds in prefill chunks); the logits of each
        sequence's last token."""
        while any(len(f) > self.chunk for f in feeds.values()):
            self._run({s: f[: self.chunk] for s, f in feeds.items() if len(f) > self.chunk})
            feeds = {s: f[self.chunk :] if len(f) > self.chunk else f for s, f in feeds.items()}
        return self._run(feeds)

    def _run(self, feeds: dict[int, list[int]]) -> np.ndarray:
        copies = [c for sid, f in feeds.items() for c in self.kv.append(sid, len(f))]
        tables = self.kv.build_arrays([(sid, len(f)) for sid, f in feeds.items()])
        ids = np.array([t for f in feeds.values() for t in f], dtype=np.int32)
        logits = self.runner.forward(ForwardBatch(ids, tables, copies))
        for sid, f in feeds.items():
            self.seen[sid].extend(f)
        return logits


def _greedy(ready: list[DraftRequest], seq_id: int) -> bool:
    return next(state.params.is_greedy for seq, _, state in ready if seq.seq_id == seq_id)
