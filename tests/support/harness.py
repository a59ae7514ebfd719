"""Drive a compiled artifact step by step through the KV cache manager and the runner, the
way the engine does, but with the test choosing every token and reading every logit row."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.backends.registry import create_runner
from mlcx.runtime.kv import KVCacheManager

STATE_SLOTS = 16  # a hybrid model's state slots: one per sequence id the test uses


class Harness:
    def __init__(self, artifact_dir, num_blocks: int = 64, runner=None, release: bool = False):
        self.artifact = Artifact(artifact_dir)
        page = self.artifact.config.page_size
        # release pages outside the model's sliding window after each step, as the engine does
        self.window = self.artifact.config.model.kv_window if release else 0
        # a hybrid model: each sequence keeps its state slot, in order of first appearance
        self.slots: dict[int, int] | None = {} if self.artifact.config.state_tensors else None
        slots = STATE_SLOTS if self.slots is not None else 0
        self.runner = runner or create_runner(self.artifact, num_blocks, num_state_slots=slots)
        self.kv = KVCacheManager(num_blocks, page, enable_prefix_caching=False)
        self.tokens: dict[int, list[int]] = {}  # each sequence's tokens, as the scheduler keeps

    def step(
        self, feeds: dict[int, list[int]], all_rows: bool = False, lora: dict | None = None
    ) -> dict[int, np.ndarray]:
        """Append `feeds[seq]` tokens to each sequence in one forward; returns the logits of
        each sequence's new tokens (all rows, or only the last). `lora`: seq -> (adapter
        slot, scale) in a model with adapter slots (every other sequence: slot 0)."""
        copies, ids, rows, start = [], [], [], 0
        for seq, tokens in feeds.items():
            if seq not in self.kv:
                self.kv.add_sequence(seq, tokens)
            copies += self.kv.append(seq, len(tokens))
            self.tokens.setdefault(seq, []).extend(tokens)
            ids += tokens
            rows += (
                list(range(start, start + len(tokens))) if all_rows else [start + len(tokens) - 1]
            )
            start += len(tokens)
        tables = self.kv.build_arrays([(seq, len(t)) for seq, t in feeds.items()])
        batch = ForwardBatch(
            np.array(ids, np.int32),
            tables,
            copies,
            logit_rows=np.array(rows, np.int32),
            state_slots=self._state_slots(feeds),
        )
        logits = self.runner.forward(self._lora(batch, feeds, lora))
        self._commit(feeds)
        out, pos = {}, 0
        for seq, tokens in feeds.items():
            n = len(tokens) if all_rows else 1
            out[seq] = logits[pos : pos + n]
            pos += n
        return out

    def _lora(self, batch: ForwardBatch, feeds: dict, lora: dict | None) -> ForwardBatch:
        if self.artifact.config.lora is None:
            return batch
        lora = lora or {}
        counts = [len(t) if isinstance(t, list) else 1 for t in feeds.values()]
        slots = [lora.get(seq, (0, 0.0))[0] for seq in feeds]
        scales = [lora.get(seq, (0, 0.0))[1] for seq in feeds]
        rows = np.repeat(slots, counts).astype(np.int32)
        return replace(batch, lora_rows=rows, lora_scales=np.repeat(scales, counts).astype("f4"))

    def decode(self, feeds: dict[int, int], lora: dict | None = None) -> dict[int, np.ndarray]:
        """One token per sequence through the `decode` entry (no explicit logit rows)."""
        copies, ids = [], []
        for seq, token in feeds.items():
            copies += self.kv.append(seq, 1)
            self.tokens[seq].append(token)
            ids.append(token)
        tables = self.kv.build_arrays([(seq, 1) for seq in feeds])
        slots = self._state_slots(feeds)
        batch = ForwardBatch(np.array(ids, np.int32), tables, copies, state_slots=slots)
        logits = self.runner.forward(self._lora(batch, feeds, lora))
        self._commit(feeds)
        return {seq: logits[i] for i, seq in enumerate(feeds)}

    def _state_slots(self, feeds) -> np.ndarray | None:
        if self.slots is None:
            return None
        for seq in feeds:
            self.slots.setdefault(seq, len(self.slots))
        return np.array([self.slots[seq] for seq in feeds], np.int32)

    def _commit(self, feeds) -> None:
        for seq in feeds:
            self.kv.commit(seq, self.tokens[seq])
            if self.window:
                self.kv.release_outside_window(seq, self.window)

    def fork(self, parent: int, child: int) -> None:
        if self.slots is not None:
            raise NotImplementedError("the harness forks no state slots (hybrid models)")
        self.kv.fork(parent, child)
        self.tokens[child] = list(self.tokens[parent])


def hf_logits(model, tokens: list[int]) -> np.ndarray:
    """All-position logits of HF transformers for one sequence."""
    import torch

    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].float().numpy()


def assert_prompt_and_greedy_steps_match(artifact, reference, prompt, steps: int, tol: float):
    """Every prompt row's logits, then `steps` greedy decode steps, within `tol` of HF's."""
    harness = Harness(artifact, num_blocks=32)
    got = harness.step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= tol
    seq = list(prompt)
    for _ in range(steps):
        seq.append(int(np.argmax(got[-1])))
        got = harness.decode({0: seq[-1]})[0][None]
        assert np.abs(got[0] - hf_logits(reference, seq)[-1]).max() <= tol


def assert_backends_agree(want: Harness, got: Harness, prompts: dict, tokens, tol: float) -> None:
    """Two artifacts of one model (cpu and a GPU plan) give the same logits for a batched
    prefill of `prompts` (every row), then a decode step per token of `tokens` for all."""
    first, second = want.step(prompts, all_rows=True), got.step(prompts, all_rows=True)
    for seq in prompts:
        assert np.abs(first[seq] - second[seq]).max() <= tol
    for token in tokens:
        step = dict.fromkeys(prompts, token)
        first, second = want.decode(step), got.decode(step)
        for seq in prompts:
            assert np.abs(first[seq] - second[seq]).max() <= tol
