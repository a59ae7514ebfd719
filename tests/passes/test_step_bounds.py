"""Issue 32: the step functions' memory is planned once. Without upper bounds on their symbolic
sizes every intermediate tensor was allocated at each step's size, and the Relax VM's pooled
allocator kept a buffer per distinct size for good (a server grew ~70 MB a minute). With them,
every storage but the logits' is a constant size; the engine refuses steps the plan cannot hold.
"""

from __future__ import annotations

import pytest
import tvm
from tvm import relax

from mlcx.compile.model import CompileRequest, export_model
from mlcx.kernels.gpu.config import gpu_config
from mlcx.passes.pipeline_cpu import cpu_pipeline
from mlcx.passes.pipeline_gpu import gpu_pipeline
from mlcx.passes.step_bounds import BOUND_ATTR, bound_step_shapes
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from tests.support.tiny_models import TinySpec

CHUNK = 64


def _lower(exported) -> tvm.IRModule:
    target = tvm.target.Target(exported.tvm_target)
    if exported.target.kernel_kind == "cpu":
        return cpu_pipeline(target, exported.options.linear_kernels)(exported.mod)
    dtype = exported.quant.activation_dtype
    return gpu_pipeline(target, dtype, gpu_config(exported.tvm_target, True))(exported.mod)


def _storage_sizes(func: relax.Function) -> list:
    """The size argument of every storage the function allocates."""
    sizes = []

    def visit(expr) -> None:
        if (
            isinstance(expr, relax.Call)
            and getattr(expr.op, "name", "") == "relax.vm.alloc_storage"
        ):
            sizes.append(expr.args[0])

    relax.analysis.post_order_visit(func.body, visit)
    return sizes


def _is_constant(size) -> bool:
    return isinstance(size, relax.ShapeExpr) and all(
        isinstance(v, tvm.tirx.IntImm) for v in size.values
    )


@pytest.mark.parametrize("target", ["cpu", "webgpu"])
def test_only_the_logits_storage_depends_on_the_step(tiny_model, target):
    request = CompileRequest(
        model=str(tiny_model(TinySpec())), target=target, quantization="q4f32", prefill_chunk=CHUNK
    )
    exported = export_model(request)
    assert exported.mod["prefill"].attrs[BOUND_ATTR]["tokens"] == CHUNK
    lowered = _lower(exported)
    for name in ("prefill", "decode"):
        sizes = _storage_sizes(lowered[name])
        dynamic = [s for s in sizes if not _is_constant(s)]
        assert len(sizes) >= 3 and len(dynamic) <= 1, (name, sizes)


def test_a_tighter_bound_already_set_is_kept(tiny_model):
    exported = export_model(CompileRequest(model=str(tiny_model(TinySpec())), prefill_chunk=CHUNK))
    again = bound_step_shapes(4 * CHUNK)(exported.mod)
    assert again["decode"].attrs[BOUND_ATTR]["tokens"] == CHUNK


@pytest.mark.parametrize(
    "config",
    [EngineConfig(prefill_chunk=1024), EngineConfig(max_batch=1024)],
    ids=["chunk", "batch"],
)
def test_steps_larger_than_the_compiled_chunk_are_refused(compiled, config):
    with pytest.raises(ValueError, match=r"exceed the 512 .*--prefill-chunk 1024"):
        Engine(compiled(), config)
