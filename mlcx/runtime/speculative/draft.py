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

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.errors import ArtifactError
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.backends.registry import create_runner
from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.sample.sampler import draw, processed_probs
from mlcx.runtime.speculative.proposer import Draft, DraftRequest, ProposalTarget
from mlcx.runtime.text.tokenizer import Tokenizer


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
    def for_target(cls, draft: str, target: ProposalTarget, max_batch: int) -> DraftProposer:
        """The draft model at `draft` checked against the target, with KV blocks for
        `max_batch` sequences (no drafts are asked for beyond it)."""
        artifact = Artifact(draft)
        check_same_tokenizer(target.tokenizer, Tokenizer.from_dir(artifact.path), draft)
        if artifact.config.model.vocab_size != target.vocab_size:
            raise ArtifactError(
                f"the draft model {draft} has {artifact.config.model.vocab_size} logits "
                f"per token, the target {target.vocab_size}; they must be equal"
            )
        window = min(artifact.config.context_window, target.context_window)
        per_seq = math.ceil(window / artifact.config.page_size) + 1
        return cls(artifact, per_seq * max_batch, target.device)

    def release(self, live: Collection[int]) -> None:
        for seq_id in [s for s in self.seen if s not in live]:
            self.kv.free(seq_id)
            del self.seen[seq_id]

    def propose(self, requests: list[DraftRequest]) -> dict[int, Draft]:
        ready = [req for req in requests if self._catch_up_room(req)]
        if not ready:
            return {}
        feeds = {req.seq_id: req.token_ids[len(self.seen[req.seq_id]) :] for req in ready}
        tokens: dict[int, list[int]] = {req.seq_id: [] for req in ready}
        probs: dict[int, list[np.ndarray]] = {req.seq_id: [] for req in ready}
        for j in range(max(req.k for req in ready)):
            active = [req for req in ready if req.k > j]
            logits = self._forward({req.seq_id: feeds[req.seq_id] for req in active})
            q = processed_probs(logits, [req.state for req in active])
            for req, row in zip(active, q, strict=True):
                greedy = req.state.params.is_greedy
                token = int(np.argmax(row)) if greedy else draw(row, self.rng)
                tokens[req.seq_id].append(token)
                probs[req.seq_id].append(row)
                feeds[req.seq_id] = [token]
        return {
            req.seq_id: Draft(
                tuple(tokens[req.seq_id]),
                None if req.state.params.is_greedy else np.stack(probs[req.seq_id]),
            )
            for req in ready
        }

    def _catch_up_room(self, req: DraftRequest) -> bool:
        """Roll the draft's KV back to what the sequence still shares with it; whether the
        blocks for the rest and k drafted tokens are there (if not, no draft this step)."""
        seq_id, token_ids = req.seq_id, req.token_ids
        seen = self.seen.get(seq_id, [])
        common = 0
        for a, b in zip(seen, token_ids, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, len(token_ids) - 1)  # the last token is always fed again
        if seq_id in self.seen and common == 0:
            self.kv.free(seq_id)
            del self.seen[seq_id]
        if seq_id not in self.seen:
            self.kv.add_sequence(seq_id, token_ids[:1])
            self.seen[seq_id] = []
        elif common < len(seen):
            self.kv.truncate(seq_id, common)
            del self.seen[seq_id][common:]
        return self.kv.can_append(seq_id, len(token_ids) - len(self.seen[seq_id]) + req.k)

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
