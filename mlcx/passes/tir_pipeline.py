"""TVM's default TIR pipeline, with some passes skipped for kernels marked as already in the
shape those passes would give them (mlcx.kernels.lowering_marks), registered as the TIR
pipeline "mlcx".

Why: on mlcx's hand-written kernels these passes cost most of a compile and change nothing.
s_tir.CompactBufferAllocation evaluates the access region of every access to a local buffer
under all enclosing conditions: on the paged CPU attention kernel (decode, verify and prefill
variants unrolled over query rows) that took 5-16 s of a 22 s compile of a tiny model, for a
kernel whose buffers are already exact. On a GPU linear kernel (an unrolled tile of
accumulators) HoistIfThenElse, with the simplification and no-op removal it runs inside, and
RemoveNoOp took about 40% of its 3-5 s lowering, and lowering GPU linears was most of a GPU
compile (measured on Sapphire Rapids, TVM 0.27). tests/passes/test_tir_pipeline.py checks that
each marked kind lowers to exactly what the pipeline without the skips gives.

Functions with the same marks are lowered as a module of their own with their passes skipped
(the caller's instruments see each module's passes, one after the other); unmarked ones as
before."""

from __future__ import annotations

import tvm
from tvm.tirx.compilation_pipeline import get_tir_pipeline, register_tir_pipeline

from mlcx.kernels.lowering_marks import EXACT_BUFFERS, TIDY

NAME = "mlcx"
ENTRY = "tirx.is_entry_func"
# mark -> the passes (by name, nested ones included) a kernel carrying it skips
SKIPS: dict[str, frozenset[str]] = {
    EXACT_BUFFERS: frozenset({"s_tir.CompactBufferAllocation"}),
    TIDY: frozenset(
        {
            "s_tir.HoistIfThenElse",
            "s_tir.InjectVirtualThread",
            "s_tir.InjectPermutedLayout",
            "tirx.RemoveNoOp",
        }
    ),
}


@tvm.instrument.pass_instrument
class SkipPasses:
    def __init__(self, names: frozenset[str]):
        self.names = names

    def should_run(self, mod, info) -> bool:
        return info.name not in self.names


def skipped(func) -> frozenset[str]:
    """The passes the pipeline skips for `func`: those of the marks it carries."""
    if not isinstance(func, tvm.tirx.PrimFunc) or func.attrs is None:
        return frozenset()
    marks = [names for mark, names in SKIPS.items() if func.attrs.get(mark, False)]
    return frozenset().union(*marks)


def _lower_skipping(pipeline, mod: tvm.IRModule, names: frozenset[str], ctx) -> tvm.IRModule:
    # TVM's pass timing crashes when entered a second time: it stays out (by name: the FFI
    # hands back every instrument as that class)
    kept = [i for i in ctx.instruments if i.name != "PassTimingInstrument"]
    instruments = [*kept, SkipPasses(names)]
    with tvm.transform.PassContext(ctx.opt_level, config=ctx.config, instruments=instruments):
        return pipeline(mod)


def _pipeline_factory():
    default, finalize_host, finalize_device = get_tir_pipeline("s_tir")

    @tvm.transform.module_pass(opt_level=0, name="mlcx.TirPipeline")
    def pipeline(mod: tvm.IRModule, ctx) -> tvm.IRModule:
        groups: dict[frozenset[str], dict] = {}
        for gv, func in mod.functions.items():
            groups.setdefault(skipped(func), {})[gv] = func
        if set(groups) <= {frozenset()}:
            return default(mod)
        lowered = {}
        for names, funcs in groups.items():
            part = tvm.IRModule(funcs, attrs=mod.attrs)
            done = _lower_skipping(default, part, names, ctx) if names else default(part)
            lowered.update(done.functions)
        # Lowered alone, a part's one function became the entry: the whole has none.
        if len(groups) > 1:
            lowered = {gv: _not_entry(f) for gv, f in lowered.items()}
        return tvm.IRModule(lowered, attrs=mod.attrs)

    return pipeline, finalize_host, finalize_device


def _not_entry(func):
    return func.without_attr(ENTRY) if func.attrs.get(ENTRY, False) else func


register_tir_pipeline(NAME, _pipeline_factory)
