"""CUDA graphs for decode, checked without a GPU: the lowered Relax of the cuda decode function
captures its kernels (TVM's capture builtins), the launches per step stay under stated
numbers, and the runner keeps one set of step buffers per bucket (the padding itself runs on
the GPU kernels in tests/webgpu/test_decode_padding_wgpu.py)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest, export_model
from mlcx.kernels.decode_buckets import DECODE_BUCKETS, bucket_for, page_capacity
from mlcx.passes.gpu.cuda_graph import CAPTURE_BUILTINS, capture_builtins
from mlcx.passes.gpu.launch_count import step_launches
from mlcx.passes.pipeline_gpu import gpu_config, gpu_pipeline
from mlcx.runtime.backends.decode_graph import DecodeGraphs, padded_decode_inputs
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.kv import KVCacheManager
from mlcx.targets.device_code import activation_dtype
from tests.support.tiny_models import TinySpec

# Kernels of one decode step of a Llama: per layer RMSNorm, qkv, RoPE + KV append, attention
# (split-K and its merge), o + residual, RMSNorm, gate/up, SwiGLU + down + residual; once:
# embedding, the final RMSNorm, the head (and the logits' cast, where the head leaves it).
KERNELS_PER_LAYER = 9
KERNELS_ONCE = 4
# What the CPU issues per decode step with graphs: one graph, then the head or the cast (the
# function's output is allocated per call, outside the graph).
CPU_LAUNCHES_WITH_GRAPHS = 2
# Wide enough that decode's linears are dlight's LowBatchGEMV (the default on cuda) and
# prefill's are tensor-core GEMMs where tensorize works, as for real models.
WIDE = {"hidden": 128, "intermediate": 256}


@pytest.fixture(scope="module")
def lowered(tiny_model):
    """(layers, decode GEMV) -> (module lowered for cuda with decode graphs, its target)."""
    out = {}
    for layers, low_batch in ((1, True), (2, True), (2, False)):
        folder = tiny_model(TinySpec(layers=layers, **WIDE))
        exported = export_model(CompileRequest(str(folder), "cuda", "q4f16"))
        target = exported.tvm_target
        dtype, config = activation_dtype(exported.mod), gpu_config(target)
        pipeline = gpu_pipeline(target, dtype, config, DECODE_BUCKETS[-1], low_batch)
        out[layers, low_batch] = pipeline(exported.mod), target
    return out


def test_decode_calls_the_capture_builtins_and_prefill_does_not(lowered):
    mod, _ = lowered[2, True]
    assert capture_builtins(mod["decode"]) == set(CAPTURE_BUILTINS)
    # prefill's storage is planned at fixed sizes too (passes/step_bounds.py), so the rewrite
    # caches its allocations; its launches take their inputs per call and are never captured
    assert "vm.builtin.cuda_graph.run_or_capture" not in capture_builtins(mod["prefill"])


def test_launches_per_decode_step_stay_under_the_stated_numbers(lowered):
    (one, target), (two, _) = lowered[1, True], lowered[2, True]
    steps = {n: step_launches(m, "decode", target) for n, m in ((1, one), (2, two))}
    per_layer = steps[2].launches - steps[1].launches
    once = steps[1].launches - per_layer
    assert per_layer <= KERNELS_PER_LAYER and once <= KERNELS_ONCE, (per_layer, once)
    # all but the last kernel run inside the one captured graph
    assert steps[2].graph_launches == 1
    assert steps[2].cpu_launches <= CPU_LAUNCHES_WITH_GRAPHS
    # the SwiGLU is computed inside the down projection's GEMV, not a kernel of its own
    assert not any("silu" in name for name, _ in steps[2].calls)
    prefill = step_launches(two, "prefill", target)
    assert prefill.graph_launches == 0 and prefill.cpu_launches == prefill.launches


def test_mlcx_decode_gemv_keeps_the_same_counts(lowered):
    mod, target = lowered[2, False]
    step = step_launches(mod, "decode", target)
    assert step.launches <= 2 * KERNELS_PER_LAYER + KERNELS_ONCE
    assert step.cpu_launches <= CPU_LAUNCHES_WITH_GRAPHS
    assert any(name.startswith("gpu_linear") for name, _ in step.calls)


def test_buckets():
    assert [bucket_for(b, 32) for b in (1, 2, 3, 5, 17, 32)] == [1, 2, 4, 8, 32, 32]
    assert bucket_for(33, 32) is None and bucket_for(9, 8) is None
    assert page_capacity(4, 100, 16) == 4 * 7
    with pytest.raises(ValueError):
        bucket_for(0, 32)


def _decode_batch(kv: KVCacheManager, lengths: dict[int, int]) -> ForwardBatch:
    for seq, n in lengths.items():
        kv.add_sequence(seq, list(range(n)))
        kv.append(seq, n)
        kv.commit(seq, list(range(n)))
        kv.append(seq, 1)
    tables = kv.build_arrays([(seq, 1) for seq in lengths])
    return ForwardBatch(np.arange(len(lengths), dtype=np.int32) + 5, tables)


def test_padding_rows_decode_over_the_scratch_page():
    batch = _decode_batch(KVCacheManager(16, 4, False), {1: 5, 2: 2, 3: 8})
    out = padded_decode_inputs(batch, bucket=4, capacity=12, scratch_page=16)
    t = batch.tables
    assert list(out) == [
        "input_ids",
        "positions",
        "slots",
        "q_indptr",
        "page_indptr",
        "page_values",
        "last_page_len",
    ]
    assert out["input_ids"].tolist() == [5, 6, 7, 0]
    assert out["positions"].tolist() == [*t.positions.tolist(), 0]
    assert out["slots"].tolist() == [*t.slots.tolist(), 16 * 4]
    assert out["q_indptr"].tolist() == [0, 1, 2, 3, 4]
    assert out["page_indptr"].tolist() == [*t.page_indptr.tolist(), t.page_indptr[-1] + 1]
    nnz = int(t.page_indptr[-1])
    assert out["page_values"][:nnz].tolist() == t.page_values.tolist()
    assert set(out["page_values"][nnz:].tolist()) == {16} and len(out["page_values"]) == 12
    assert out["last_page_len"].tolist() == [*t.last_page_len.tolist(), 1]
    assert all(a.dtype == np.int32 for a in out.values())


class _FakeTensor:
    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.data = shape, dtype, None

    def copyfrom(self, array):
        assert array.shape == self.shape
        self.data = array.copy()


def _graphs(max_batch=8):
    return DecodeGraphs(_FakeTensor, max_batch, context_window=64, page_size=4, scratch=16)


def test_a_bucket_keeps_its_buffers_from_step_to_step():
    graphs, seen = _graphs(), []
    for lengths in ({1: 3, 2: 6, 3: 1}, {4: 9, 5: 2, 6: 4, 7: 4}):
        batch = _decode_batch(KVCacheManager(16, 4, False), lengths)
        assert graphs.run(batch, lambda args: seen.append(args) or "logits") == "logits"
    assert [id(a) for a in seen[0]] == [id(a) for a in seen[1]]  # both bucket 4
    assert seen[1][0].data.tolist() == [5, 6, 7, 8]


def test_too_large_batches_and_failed_captures_take_plain_launches(caplog):
    graphs = _graphs(max_batch=2)
    batch = _decode_batch(KVCacheManager(16, 4, False), {1: 3, 2: 6, 3: 1})
    with caplog.at_level(logging.INFO):
        assert graphs.run(batch, lambda args: "logits") is None
        assert graphs.run(batch, lambda args: "logits") is None
    assert sum("plain launches" in r.message for r in caplog.records) == 1
    again = DecodeGraphs.through_prefill(batch)
    assert again.function == "prefill" and again.rows.tolist() == [0, 1, 2]

    def fail(args):
        raise RuntimeError("capture is not supported")

    small = _decode_batch(KVCacheManager(16, 4, False), {1: 3})
    with caplog.at_level(logging.WARNING):
        assert graphs.run(small, fail) is None
    assert "CUDA graph capture failed" in caplog.text
    assert graphs.run(small, lambda args: "logits") is None  # never again
