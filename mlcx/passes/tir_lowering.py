"""TIR functions of a graph lowered by TVM's default TIR pipeline for a target, keeping the
module as SplitHostDevice leaves it: there, host launches of device kernels are still plain
calls (what the WebGPU plan reads its launches from, and what the launch count counts)."""

from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm import relax, tirx
from tvm.tirx.compilation_pipeline import get_tir_pipeline

from mlcx.passes import tir_pipeline

DEVICE_KERNEL = tvm.ir.CallingConv.DEVICE_KERNEL_LAUNCH


@dataclass(frozen=True)
class LoweredTir:
    after_split: tvm.IRModule  # host functions with their kernel launches as calls
    lowered: tvm.IRModule  # the pipeline's output: host and device functions
    finalize_device: object  # the target's last device passes (a pass factory)

    def host_functions(self) -> dict[str, tirx.PrimFunc]:
        return {
            gv.name_hint: f
            for gv, f in self.after_split.functions.items()
            if f.attrs.get("calling_conv") != DEVICE_KERNEL
        }

    def device_module(self) -> tvm.IRModule:
        device = {
            gv: f
            for gv, f in self.lowered.functions.items()
            if f.attrs.get("calling_conv") == DEVICE_KERNEL
        }
        return tvm.IRModule(device)


def lower_tir(graph: tvm.IRModule, names: set[str], target: tvm.target.Target) -> LoweredTir:
    """Lowers the TIR functions of `graph` named in `names` for `target`."""
    funcs = {gv: f for gv, f in graph.functions.items() if gv.name_hint in names}
    mod = relax.transform.AttachGlobalSymbol()(tvm.IRModule(funcs))
    mod = tirx.transform.BindTarget(target)(mod)
    finalize_device = get_tir_pipeline("s_tir")[2]
    with tvm.transform.PassContext(opt_level=3) as ctx:
        lowered, after_split = tir_pipeline.lower_split(mod, ctx)
    return LoweredTir(after_split, lowered, finalize_device)
