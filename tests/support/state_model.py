"""A "state model" in numpy behind the Runner protocol: the engine's hybrid-model bookkeeping
(state slots, checkpoints, their copies, page tables) tested without compiled kernels.

The model: layer 0 keeps a short convolution window of the token embeddings, layer 1 a conv
window and a decaying recurrent matrix per head, layer 2 attends over its KV pages (one key per
token). Each token's logits mix all three, so a state read from the wrong slot, a missed or
misplaced checkpoint restore, a slot reused while live or a wrong page gives other tokens.
`StateModelRunner` keeps the states in host arrays indexed by the slots the engine passes and
touches them only there, zeroing a slot at a sequence's position 0 (the contract's rule);
`reference_greedy` runs the same math over one token list with no slots and no pages, which is
what every engine configuration must reproduce.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import tokenizers
from tokenizers import models, pre_tokenizers

from mlcx.artifact.config import CONFIG_FILE, ArtifactConfig
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.tokenizer_assets import TokenizerAssets
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.backends.registry import RUNNERS
from mlcx.runtime.backends.runner import RunnerMemory, check_state_slots

RUNTIME = "numpy-state"
VOCAB = 64
D = 4  # embedding width
WINDOW = 3  # conv kernel - 1
HEADS, K = 2, 2  # recurrent heads of layer 1, each K x K
PAGE = 4
STATE_TENSORS = (
    {"layer": 0, "name": "conv", "shape": [D, WINDOW], "dtype": "float32"},
    {"layer": 1, "name": "conv", "shape": [D, WINDOW], "dtype": "float32"},
    {"layer": 1, "name": "recurrent", "shape": [HEADS, K, K], "dtype": "float32"},
)

_rng = np.random.default_rng(7)
EMBED = _rng.normal(size=(VOCAB, D))
CONV0 = _rng.normal(size=(D, WINDOW))
CONV1 = _rng.normal(size=(D, WINDOW))
QKV = _rng.normal(size=(3, HEADS * K, D))
OUT = _rng.normal(size=(VOCAB, 3 * D)) * 2.0


def write_artifact(path: Path, context_window: int = 256, prefill_chunk: int = 64) -> Path:
    """An artifact directory of the state model (config and tokenizer; no library)."""
    model = DecoderConfig(
        vocab_size=VOCAB,
        hidden_size=D,
        intermediate_size=2 * D,
        num_layers=3,
        num_heads=1,
        num_kv_heads=1,
        head_dim=D,
        context_window=context_window,
    )
    config = ArtifactConfig(
        model_name="tiny-state-model",
        architecture="StateModelForTests",
        model=model,
        quantization="q0f32",
        activation_dtype="float32",
        target="cpu",
        tvm_target={},
        library="none",
        runtime=RUNTIME,
        context_window=context_window,
        prefill_chunk=prefill_chunk,
        page_size=PAGE,
        kv_dtype="float32",
        state_tensors=STATE_TENSORS,
    )
    path.mkdir(parents=True, exist_ok=True)
    (path / CONFIG_FILE).write_text(config.to_json())
    vocab = {f"t{i}": i for i in range(VOCAB)}
    backend = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    TokenizerAssets(backend.to_str(), None, None, (), False, None, None).write(path)
    return path


@contextlib.contextmanager
def registered():
    """RUNNERS knows the state model's runtime while the block runs."""
    RUNNERS[RUNTIME] = StateModelRunner
    try:
        yield
    finally:
        del RUNNERS[RUNTIME]


class SequenceState:
    """One sequence's state, as the runner keeps it per slot."""

    def __init__(self) -> None:
        self.conv0 = np.zeros((D, WINDOW))
        self.conv1 = np.zeros((D, WINDOW))
        self.recurrent = np.zeros((HEADS, K, K))


def _token_step(state: SequenceState, token: int) -> np.ndarray:
    """Advance the state layers by one token; returns their output features."""
    x = EMBED[token]
    state.conv0[:] = np.concatenate([state.conv0[:, 1:], x[:, None]], axis=1)
    h0 = np.tanh((state.conv0 * CONV0).sum(axis=1))
    state.conv1[:] = np.concatenate([state.conv1[:, 1:], h0[:, None]], axis=1)
    h1 = np.tanh((state.conv1 * CONV1).sum(axis=1))
    q, k, v = (m @ h1 for m in QKV)
    y = []
    for h in range(HEADS):
        cut = slice(h * K, (h + 1) * K)
        state.recurrent[h] = 0.9 * state.recurrent[h] + np.outer(k[cut], v[cut])
        y.append(state.recurrent[h].T @ q[cut])
    return np.concatenate([h0, np.concatenate(y)])


def _attend(query: np.ndarray, keys: np.ndarray) -> np.ndarray:
    scores = keys @ query
    weights = np.exp(scores - scores.max())
    return (weights / weights.sum()) @ keys


def _logits(features: np.ndarray, attended: np.ndarray) -> np.ndarray:
    return OUT @ np.tanh(np.concatenate([features, attended]))


def reference_greedy(prompt: list[int], max_tokens: int) -> list[int]:
    """Greedy tokens of one sequence, run token by token with its state and keys in hand."""
    state, keys, out = SequenceState(), [], []
    tokens = list(prompt)
    for i in range(len(prompt) + max_tokens - 1):
        features = _token_step(state, tokens[i])
        keys.append(EMBED[tokens[i]])
        if i >= len(prompt) - 1:
            out.append(int(np.argmax(_logits(features, _attend(EMBED[tokens[i]], np.array(keys))))))
            tokens.append(out[-1])
    return out


class StateModelRunner:
    """The Runner: KV pages (one key per token) and the three state tensors, on the host."""

    def __init__(self, artifact, num_blocks: int, device=None, num_state_slots: int = 0):
        slots = check_state_slots(artifact, num_state_slots)
        self.state_bytes = slots * artifact.config.state_slot_bytes  # as a device would hold
        self.num_blocks = num_blocks
        self.pages = np.zeros((num_blocks * PAGE, D))
        self.states = [SequenceState() for _ in range(slots)]
        self.slots_seen: list[list[int]] = []  # each step's state_slots
        self.waves_done = 0

    def memory(self) -> RunnerMemory:
        return RunnerMemory(0, self.pages.nbytes, None, self.state_bytes)

    def copy_states(self, waves: list[list[tuple[int, int]]]) -> None:
        for wave in waves:
            dsts = [dst for _, dst in wave]
            assert len(set(dsts)) == len(dsts) and not set(dsts) & {s for s, _ in wave}, wave
            copied = {dst: self._copy_of(self.states[src]) for src, dst in wave}
            for dst, state in copied.items():
                self.states[dst] = state
            self.waves_done += 1

    @staticmethod
    def _copy_of(state: SequenceState) -> SequenceState:
        copy = SequenceState()
        for name, array in vars(state).items():
            getattr(copy, name)[...] = array
        return copy

    def forward(self, batch: ForwardBatch) -> np.ndarray:
        for src, dst in batch.copies:
            self.pages[dst * PAGE : (dst + 1) * PAGE] = self.pages[src * PAGE : (src + 1) * PAGE]
        self.copy_states(batch.state_copies)
        t = batch.tables
        assert batch.state_slots is not None and len(set(batch.state_slots)) == t.batch_size
        self.slots_seen.append([int(s) for s in batch.state_slots])
        self.pages[t.slots] = EMBED[batch.input_ids]
        rows = []
        for b, slot in enumerate(batch.state_slots):
            first, end = t.q_indptr[b], t.q_indptr[b + 1]
            if t.positions[first] == 0:
                self.states[slot] = SequenceState()
            pages = t.page_values[t.page_indptr[b] : t.page_indptr[b + 1]]
            for i in range(first, end):
                features = self._features(slot, int(batch.input_ids[i]))
                pos = int(t.positions[i])
                where = pages[np.arange(pos + 1) // PAGE] * PAGE + np.arange(pos + 1) % PAGE
                attended = _attend(EMBED[batch.input_ids[i]], self.pages[where])
                rows.append(_logits(features, attended))
        return np.array(rows, dtype=np.float32)[batch.rows]

    def _features(self, slot: int, token: int) -> np.ndarray:
        return _token_step(self.states[slot], token)
