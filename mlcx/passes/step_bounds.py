"""Upper bounds on the step functions' symbolic sizes, so their memory is planned once.

Without bounds, every intermediate tensor of `prefill` and `decode` is allocated at the size of
the step it serves, and the Relax VM's pooled allocator keeps one freed buffer per distinct size
for the life of the process: a server whose steps see every token count from 1 to the prefill
chunk grows by megabytes a minute (issue 32). With `tir_var_upper_bound` set, memory planning
(`StaticPlanBlockMemory`) gives every intermediate a storage of fixed size, planned for the
largest step, and the same few buffers serve every call. Only the logits, the functions'
output, keep a size per call: one buffer per distinct logit row count, at most one per
sequence a step can hold.

The bound is the most tokens one step holds: the artifact's prefill chunk. The engine refuses
a configuration whose steps could exceed it (runtime.core.engine).
"""

from __future__ import annotations

import tvm

from mlcx.kernels.step_params import DECODE, PREFILL, PREFILL_IMAGE

BOUND_ATTR = "tir_var_upper_bound"


def step_bounds(max_tokens: int) -> dict[str, int]:
    """Bounds of the step parameters' shape variables (mlcx.kernels.step_params) for steps of
    at most `max_tokens` tokens: a step has no more sequences or logit rows than tokens."""
    if max_tokens < 1:
        raise ValueError(f"a step holds at least one token, not {max_tokens}")
    return {
        "tokens": max_tokens,
        "batch": max_tokens,
        "batch_plus_one": max_tokens + 1,
        "num_logits": max_tokens,
        "image_tokens": max_tokens,  # prefill_image's embedding rows, at most one a token
    }


def bound_step_shapes(max_tokens: int) -> tvm.transform.Pass:
    """Sets the bounds on `prefill` and `decode`; a tighter bound already there is kept."""

    @tvm.transform.module_pass(opt_level=0, name="mlcx.BoundStepShapes")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        for gvar in mod.get_global_vars():
            if gvar.name_hint in (PREFILL, DECODE, PREFILL_IMAGE):
                func = mod[gvar]
                bounds = _tighter(step_bounds(max_tokens), (func.attrs or {}).get(BOUND_ATTR))
                mod[gvar] = func.with_attr(BOUND_ATTR, bounds)
        return mod

    return _pass


def _tighter(bounds: dict[str, int], existing) -> dict[str, int]:
    merged = dict(bounds)
    for name, value in (existing or {}).items():
        merged[str(name)] = min(int(value), merged.get(str(name), int(value)))
    return merged
