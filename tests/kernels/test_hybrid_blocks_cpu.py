"""The state ops inside an `nn` graph, compiled with mlcx's CPU pipeline: Qwen3.5's Gated
DeltaNet layer and LFM2's short convolution (tests/support/hybrid_blocks) against transformers'
layers run on whole sequences without a cache. Two sequences go through two prefill steps (the
first fresh, the second continuing from the slots, one crossing a chunk) and three decode
steps; the unused slot and the fresh sequences' slots start as NaN, which a fresh sequence
must never read."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax

from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.kernels.hybrid.ops import StateOps
from mlcx.passes.pipeline_cpu import cpu_pipeline
from tests.support import hybrid_blocks as hb

TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})
SLOTS = {"a": 2, "b": 0}
# rows of each sequence per step: two prefill steps, then three decode steps
STEPS = [{"a": 40, "b": 5}, {"a": 60, "b": 2}] + [{"a": 1, "b": 1}] * 3


def _compile(block):
    mod, params = block.export_tvm(spec=hb.export_spec(block))
    built = tvm.compile(
        mod, target=TARGET, relax_pipeline=cpu_pipeline(TARGET, LinearKernels.FLOAT)
    )
    return relax.VirtualMachine(built, tvm.cpu()), [name for name, _ in params]


def _run_steps(vm, weights, states, inputs):
    """inputs: token ids per sequence."""
    """Every step's outputs per sequence, concatenated in row order."""
    done = {name: 0 for name in SLOTS}
    got = {name: [] for name in SLOTS}
    for rows in STEPS:
        x = np.concatenate([inputs[n][done[n] : done[n] + rows[n]] for n in SLOTS])
        positions = np.concatenate([np.arange(done[n], done[n] + rows[n]) for n in SLOTS])
        q_indptr = np.concatenate([[0], np.cumsum([rows[n] for n in SLOTS])])
        slots = np.array([SLOTS[n] for n in SLOTS], np.int32)
        step = [positions.astype(np.int32), q_indptr.astype(np.int32), slots]
        args = [tvm.runtime.tensor(a) for a in (x, *step)]
        decode = all(r == 1 for r in rows.values())
        out = vm["decode" if decode else "prefill"](*args, *states, weights)
        y = out[0].numpy()
        for i, n in enumerate(SLOTS):
            got[n].append(y[q_indptr[i] : q_indptr[i + 1]])
            done[n] += rows[n]
        states = list(out[1:])  # the same tensors, updated in place
    return {n: np.concatenate(v) for n, v in got.items()}


def _inputs(rng):
    total = {n: sum(step[n] for step in STEPS) for n in SLOTS}
    return {n: rng.integers(0, hb.VOCAB, total[n]).astype(np.int32) for n in SLOTS}


def _nan_states(block) -> list:
    return [
        tvm.runtime.tensor(np.full((3, *shape), np.nan, dtype))
        for _, shape, dtype in block.states()
    ]


@pytest.mark.parametrize("kind", ["delta", "conv"])
def test_block_steps_match_transformers(kind):
    rng = np.random.default_rng(7)
    if kind == "delta":
        from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5GatedDeltaNet

        block, layer = hb.DeltaBlock(StateOps("cpu", TARGET)), None
        layer = Qwen3_5GatedDeltaNet(hb.qwen35_config(), 0)
        weights = hb.delta_weights(rng, layer)
    else:
        from transformers import Lfm2Config
        from transformers.models.lfm2.modeling_lfm2 import Lfm2ShortConv

        config = Lfm2Config(
            hidden_size=hb.HIDDEN, conv_L_cache=hb.LFM_TAPS, conv_bias=True, num_hidden_layers=1
        )
        block, layer = hb.ShortConvBlock(StateOps("cpu", TARGET)), Lfm2ShortConv(config, 0)
        weights = hb.conv_weights(rng, layer)
    vm, names = _compile(block)
    packed = [tvm.runtime.tensor(weights[name]) for name in names]
    inputs = _inputs(rng)
    got = _run_steps(vm, packed, _nan_states(block), inputs)
    with torch.no_grad():
        for name, ids in inputs.items():
            x = torch.from_numpy(weights["embed.weight"][ids])
            want = layer(x[None])[0].numpy()
            np.testing.assert_allclose(got[name], want, atol=1e-4, rtol=1e-4)
