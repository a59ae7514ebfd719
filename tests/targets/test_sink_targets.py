"""A gpt-oss-shaped decoder (attention sinks; sliding-window and full layers alternating, as
DecoderConfig.layer_window gives them) through the graph: each layer has its sinks parameter,
every attention kernel of both layer kinds takes it, and on GPU targets no kernel is left to
dlight's Fallback."""

from __future__ import annotations

from collections import defaultdict

import pytest
import tvm
from tvm import tirx

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.causal_lm import CausalLM
from mlcx.kernels.attention import KVLayout, PagedKVOps
from mlcx.kernels.gpu.config import gpu_config
from mlcx.passes.gpu.schedule import schedule_rules_of
from mlcx.passes.pipeline_gpu import gpu_graph_passes
from mlcx.quantization.formats import DenseFormat
from mlcx.targets.base import BuildOptions
from mlcx.targets.registry import get_target

CFG = DecoderConfig(
    vocab_size=64,
    hidden_size=64,
    intermediate_size=96,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    head_dim=16,
    context_window=512,
    sliding_window=128,
    full_attention_layers=(1,),
    attn_sinks=True,
)


def _export(target_name: str, dtype: str):
    target = get_target(target_name)
    tvm_target = target.tvm_target(BuildOptions())
    heads = (CFG.num_heads, CFG.num_kv_heads, CFG.head_dim)
    layout = KVLayout(*heads, 16, dtype, dtype, target.kernel_kind)
    kv = PagedKVOps(layout, tvm_target, gpu_config(tvm_target))
    model = CausalLM(CFG, defaultdict(lambda: DenseFormat(dtype)), kv)
    mod, params = model.export_tvm(spec=model.export_spec())
    return tvm_target, mod, params


def _attention_kernels(mod: tvm.IRModule) -> dict[str, tirx.PrimFunc]:
    return {
        gvar.name_hint: func
        for gvar, func in mod.functions_items()
        if isinstance(func, tirx.PrimFunc)
        and "attention" in gvar.name_hint
        and "merge" not in gvar.name_hint
    }


def _takes_sinks(func: tirx.PrimFunc) -> bool:
    """A float parameter of one value per query head (the kernels' only one)."""
    heads = [str(CFG.num_heads)]
    return any(
        str(p.dtype).startswith("float") and [str(n) for n in p.shape] == heads for p in func.params
    )


def test_each_layer_has_its_sinks_in_the_activation_dtype():
    _, _, params = _export("cpu", "float32")
    sinks = {name: ([int(n) for n in p.shape], p.dtype) for name, p in params if "sinks" in name}
    want = ([CFG.num_heads], "float32")
    assert sinks == {f"layers.{i}.attn.sinks": want for i in range(CFG.num_layers)}


def test_cpu_graph_calls_the_windowed_and_the_full_sink_kernels():
    _, mod, _ = _export("cpu", "float32")
    kernels = _attention_kernels(mod)
    assert set(kernels) == {"paged_attention_cpu_w128_sinks", "paged_attention_cpu_sinks"}
    assert all(_takes_sinks(func) for func in kernels.values())


@pytest.mark.parametrize("target", ["webgpu", "cuda"])
def test_no_gpu_kernel_falls_back_and_every_attention_takes_the_sinks(target):
    tvm_target, mod, _ = _export(target, "float16")
    with tvm_target:
        passes = gpu_graph_passes(tvm_target, "float16", gpu_config(tvm_target))
        mod = tvm.transform.Sequential(passes)(mod)
    rules = schedule_rules_of(mod)
    assert {name: rule for name, rule in rules.items() if rule in ("", "Fallback")} == {}
    kernels = _attention_kernels(mod)
    # windowed and full layers, each in one pass (prefill) and split-K (decode)
    assert len(kernels) == 4, sorted(kernels)
    assert all(_takes_sinks(func) for func in kernels.values())
