"""The state layers through every GPU target's graph passes: no kernel of Qwen3.5's Gated
DeltaNet layer or LFM2's short convolution (tests/support/hybrid_blocks, in f32 and f16) is left
to dlight's Fallback or unscheduled (the state kernels are mlcx's; the gates, norms and
projections around them get dlight's rules), and the state kernels' device code builds for
cuda, metal and android's OpenCL (vulkan runs the webgpu plan: test_moe_targets)."""

from __future__ import annotations

import pytest
import tvm

from mlcx.kernels.hybrid.ops import StateOps
from mlcx.passes.gpu.schedule import schedule_rules_of
from mlcx.passes.pipeline_gpu import gpu_config, gpu_graph_passes
from mlcx.targets.base import BuildOptions
from mlcx.targets.registry import get_target
from tests.support import hybrid_blocks as hb

STATE_KERNELS = ("state_conv", "delta_rule", "delta_chunks", "delta_solve", "delta_scan")


def _target(name: str) -> tvm.target.Target:
    return get_target(name).tvm_target(BuildOptions(gpu_arch="sm_80"))


def _rules(block_type, target_name: str, dtype: str) -> dict[str, str]:
    target = _target(target_name)
    block = block_type(StateOps("gpu", target), dtype)
    mod, _ = block.export_tvm(spec=hb.export_spec(block))
    with target:
        passes = gpu_graph_passes(target, dtype, gpu_config(target))
        mod = tvm.transform.Sequential(passes)(mod)
    return schedule_rules_of(mod)


# f16 where tensor cores take the linears (cuda), f32 on metal, both on webgpu
@pytest.mark.parametrize(
    "target,dtype",
    [("cuda", "float16"), ("metal", "float32"), ("webgpu", "float16"), ("webgpu", "float32")],
)
@pytest.mark.parametrize("block", [hb.DeltaBlock, hb.ShortConvBlock], ids=["delta", "conv"])
def test_no_kernel_falls_back(block, target, dtype):
    rules = _rules(block, target, dtype)
    assert {n: r for n, r in rules.items() if r in ("", "Fallback")} == {}
    ours = {n: r for n, r in rules.items() if n.startswith(STATE_KERNELS)}
    expected = 4 if block is hb.DeltaBlock else 1  # conv; + decode step, prefill's three
    assert len({n.rstrip("0123456789_") for n in ours}) >= expected
    assert set(ours.values()) == {"mlcx"}


def _gpu_kernels(dtype: str) -> dict:
    from mlcx.kernels.hybrid.conv_gpu import conv_gpu
    from mlcx.kernels.hybrid.copy import copy_states
    from mlcx.kernels.hybrid.delta_gpu_chunks import delta_chunks_gpu, delta_solve_gpu
    from mlcx.kernels.hybrid.delta_gpu_decode import delta_decode_gpu
    from mlcx.kernels.hybrid.delta_gpu_scan import delta_scan_gpu
    from mlcx.kernels.hybrid.shapes import ConvShape, DeltaShape

    delta = DeltaShape(16, 16, 128, 128, dtype)  # Qwen3.5's linear-attention heads
    conv = ConvShape(delta.width, 4, dtype, activation="silu")
    return {
        "conv": conv_gpu(conv, False),
        "conv_decode": conv_gpu(conv, True),
        "delta_decode": delta_decode_gpu(delta),
        "delta_chunks": delta_chunks_gpu(delta),
        "delta_solve": delta_solve_gpu(delta),
        "delta_scan": delta_scan_gpu(delta),
        "copy": copy_states(delta.state()[0], "float32", gpu=True),
    }


@pytest.mark.parametrize("target,source", [("cuda", "cuda"), ("metal", "metal"), ("android", "cl")])
def test_state_kernels_build_device_code(target, source):
    """Within each target's limits (android: 256 threads, 16 KiB of workgroup memory)."""
    kernels = _gpu_kernels("float16")
    mod = tvm.IRModule({name: f.with_attr("global_symbol", name) for name, f in kernels.items()})
    code = tvm.compile(mod, _target(target)).mod.imports[0].inspect_source(source)
    for name in kernels:
        assert f"{name}_kernel" in code, name
