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

Each function is lowered as a module of its own, its marks' passes skipped (the caller's
instruments see each one's passes, one after the other); without such instruments, one lowered
before in this process is taken as it was (mlcx.passes.lowered_kernels)."""

from __future__ import annotations

import functools

import tvm
from tvm.tirx.compilation_pipeline import get_tir_pipeline, register_tir_pipeline

from mlcx.kernels.lowering_marks import EXACT_BUFFERS, TIDY
from mlcx.passes import lowered_kernels
from mlcx.passes.lowered_kernels import Lowered

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


@tvm.instrument.pass_instrument
class _AfterSplit:
    """The functions as SplitHostDevice leaves them."""

    def __init__(self):
        self.functions = {}

    def run_after_pass(self, mod, info):
        if info.name.endswith("SplitHostDevice"):
            self.functions = dict(mod.functions)


def _lower_alone(pipeline, gv, func, mod: tvm.IRModule, ctx) -> Lowered:
    # TVM's pass timing crashes when entered a second time: it stays out (by name: the FFI
    # hands back every instrument as that class)
    kept = [i for i in ctx.instruments if i.name != "PassTimingInstrument"]
    split = _AfterSplit()
    instruments = [*kept, SkipPasses(skipped(func)), split]
    passes = {"required_pass": ctx.required_pass, "disabled_pass": ctx.disabled_pass}
    with tvm.transform.PassContext(
        ctx.opt_level, config=ctx.config, instruments=instruments, **passes
    ):
        done = pipeline(tvm.IRModule({gv: func}, attrs=mod.attrs))
    return Lowered(dict(done.functions), split.functions)


def lower_split(mod: tvm.IRModule, ctx) -> tuple[tvm.IRModule, tvm.IRModule]:
    """`mod` lowered by TVM's default TIR pipeline one function at a time (each skipping the
    passes of its marks), and its functions as SplitHostDevice left them. Without instruments
    of the caller's, a function lowered before in this process is not lowered again
    (mlcx.passes.lowered_kernels)."""
    pipeline = get_tir_pipeline("s_tir")[0]
    context = lowered_kernels.context_key(mod, ctx)
    remember = not ctx.instruments
    lowered, after_split = {}, {}
    for gv, func in mod.functions.items():
        lower = functools.partial(_lower_alone, pipeline, gv, func, mod, ctx)
        if remember:
            done = lowered_kernels.lowered(gv.name_hint, func, mod, context, lower)
        else:
            done = lower()
        lowered.update(done.functions)
        after_split.update(done.after_split)
    # Lowered alone, each function became the entry: a module of several has none.
    if len(mod.functions) > 1:
        lowered = {gv: _not_entry(f) for gv, f in lowered.items()}
    return tvm.IRModule(lowered, attrs=mod.attrs), tvm.IRModule(after_split, attrs=mod.attrs)


def _pipeline_factory():
    _, finalize_host, finalize_device = get_tir_pipeline("s_tir")

    @tvm.transform.module_pass(opt_level=0, name="mlcx.TirPipeline")
    def pipeline(mod: tvm.IRModule, ctx) -> tvm.IRModule:
        return lower_split(mod, ctx)[0]

    return pipeline, finalize_host, finalize_device


def _not_entry(func):
    return func.without_attr(ENTRY) if func.attrs.get(ENTRY, False) else func


register_tir_pipeline(NAME, _pipeline_factory)
