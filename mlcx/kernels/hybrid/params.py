"""The parameters every state kernel shares: shape variables, the step's arrays, a state's
fresh-sequence test (the state-cache contract, item 4)."""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

SLOTS = "num_state_slots"  # the slot count of a state tensor (a shape variable)


def param(name: str, shape, dtype: str) -> tirx.Buffer:
    """Declare a buffer parameter (inside a prim_func frame, in parameter order)."""
    return T.match_buffer(T.arg(name, T.handle()), shape, dtype)


@dataclass(frozen=True)
class StepArrays:
    """The int32 arrays of a step a state kernel reads, declared in this order after its
    tensors: state_slots [batch], q_indptr [batch + 1], positions [tokens]."""

    state_slots: tirx.Buffer
    q_indptr: tirx.Buffer
    positions: tirx.Buffer

    @staticmethod
    def declare(batch, tokens) -> StepArrays:
        return StepArrays(
            param("state_slots", (batch,), "int32"),
            param("q_indptr", (batch + 1,), "int32"),
            param("positions", (tokens,), "int32"),
        )

    def span(self, seq):
        """(first row, row count) of sequence `seq`, bound."""
        start = T.bind(self.q_indptr[seq])
        return start, T.bind(self.q_indptr[seq + 1] - start)

    def fresh(self, seq, start, count):
        """The sequence starts from a zero state: it has rows and its first is position 0."""
        last = T.Cast("int32", self.positions.shape[0]) - 1
        return tirx.all(count > 0, self.positions[T.max(T.min(start, last), 0)] == 0)


def shape_vars() -> tuple[tirx.Var, tirx.Var, tirx.Var]:
    """tokens, batch, num_state_slots."""
    return tirx.Var("tokens", "int64"), tirx.Var("batch", "int64"), tirx.Var(SLOTS, "int64")


# Decays below exp(FLUSH) (~1e-26) count as 0. Chunk decays reach far below it (c_t sums up
# to 64 log decays of -0.1 .. -50 each); left as they are, their products leave float32's
# normal range, and denormal arithmetic ran 13-30x slower on x86 (512 tokens of Qwen3.5's
# heads). Next to the O(1) terms of every output, what is dropped is below float32's precision.
FLUSH = -60.0


def decay(x, lanes: int = 1):
    """exp(x) of a log decay x <= 0 (float32, scalar or `lanes` lanes), or 0 below FLUSH."""
    from mlcx.kernels.cpu import vec

    floor = vec.splat(vec.f32(FLUSH), lanes)
    value = T.exp(x) if lanes == 1 else vec.exp(x, lanes)
    return T.Select(x > floor, value, vec.splat(vec.f32(0.0), lanes))
