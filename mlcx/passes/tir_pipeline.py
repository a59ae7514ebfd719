"""TVM's default TIR pipeline, with buffer compaction skipped for the kernels marked
EXACT_BUFFERS (mlcx.kernels.exact_buffers), registered as the TIR pipeline "mlcx".

Why: s_tir.CompactBufferAllocation evaluates the access region of every access to a local
buffer under all enclosing conditions. On the paged CPU attention kernel (decode, verify and
prefill variants unrolled over query rows) that took 5-16 s of a 22 s compile of a tiny model
(measured on Sapphire Rapids, TVM 0.27), and it changes nothing there: the kernel's buffers are
already exact (tests/passes/test_tir_pipeline.py checks the marked kernels stay so). Marked
functions are lowered as a module of their own with the pass skipped (the caller's instruments
see both modules' passes, one after the other); the others as before."""

from __future__ import annotations

import tvm
from tvm.tirx.compilation_pipeline import get_tir_pipeline, register_tir_pipeline

from mlcx.kernels.exact_buffers import EXACT_BUFFERS

NAME = "mlcx"
COMPACTION = "s_tir.CompactBufferAllocation"
ENTRY = "tirx.is_entry_func"


@tvm.instrument.pass_instrument
class _SkipCompaction:
    def should_run(self, mod, info) -> bool:
        return info.name != COMPACTION


def _exact(func) -> bool:
    return isinstance(func, tvm.tirx.PrimFunc) and bool(func.attrs.get(EXACT_BUFFERS, False))


def _lower_marked(pipeline, mod: tvm.IRModule, ctx) -> tvm.IRModule:
    # TVM's pass timing crashes when entered a second time: it stays out (by name: the FFI
    # hands back every instrument as that class)
    kept = [i for i in ctx.instruments if i.name != "PassTimingInstrument"]
    instruments = [*kept, _SkipCompaction()]
    with tvm.transform.PassContext(ctx.opt_level, config=ctx.config, instruments=instruments):
        return pipeline(mod)


def _pipeline_factory():
    default, finalize_host, finalize_device = get_tir_pipeline("s_tir")

    @tvm.transform.module_pass(opt_level=0, name="mlcx.TirPipeline")
    def pipeline(mod: tvm.IRModule, ctx) -> tvm.IRModule:
        exact = {gv: f for gv, f in mod.functions.items() if _exact(f)}
        if not exact:
            return default(mod)
        rest = {gv: f for gv, f in mod.functions.items() if gv not in exact}
        marked = _lower_marked(default, tvm.IRModule(exact, attrs=mod.attrs), ctx)
        lowered = dict(marked.functions)
        if rest:  # lowered alone, one marked kernel became the entry function: the whole has none
            lowered = {gv: _not_entry(f) for gv, f in lowered.items()}
            lowered.update(default(tvm.IRModule(rest, attrs=mod.attrs)).functions)
        return tvm.IRModule(lowered, attrs=mod.attrs)

    return pipeline, finalize_host, finalize_device


def _not_entry(func):
    return func.without_attr(ENTRY) if func.attrs.get(ENTRY, False) else func


register_tir_pipeline(NAME, _pipeline_factory)
