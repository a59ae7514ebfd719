"""Kernel launches of one step of a compiled GPU model, read from the lowered module.

A step function (after the GPU pipeline: Relax VM code) calls TIR functions in order, directly
or inside a CUDA-graph capture function (`vm.builtin.cuda_graph.run_or_capture`); each TIR
function launches the device kernels its lowered host code calls (`call_ffi_kernel`), one
branch of an `if` on the shapes at a time. This counts, per step: device kernels, those of
them replayed from graphs, and what the CPU issues (plain launches plus one per graph).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import tvm
from tvm import relax, tirx

from mlcx.passes.gpu.cuda_graph import CAPTURE_BUILTINS
from mlcx.passes.tir_lowering import lower_tir

KERNEL_CALL = "tirx.call_ffi_kernel"


@dataclass(frozen=True)
class StepLaunches:
    calls: tuple[tuple[str, bool], ...]  # (TIR function, inside a graph) in call order
    kernels: dict[str, int]  # TIR function -> device kernels one call launches

    @property
    def launches(self) -> int:
        """Device kernels one step runs."""
        return sum(self.kernels[name] for name, _ in self.calls)

    @property
    def in_graphs(self) -> int:
        return sum(self.kernels[name] for name, graph in self.calls if graph)

    graph_launches: int = 0  # graph replays per step

    @property
    def cpu_launches(self) -> int:
        """What the CPU issues per step: plain kernel launches, and one per graph replay."""
        return self.launches - self.in_graphs + self.graph_launches

    def by_function(self) -> Counter:
        return Counter(name for name, _ in self.calls)


def _callee(expr, mod: tvm.IRModule):
    if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.GlobalVar):
        return expr.op, mod[expr.op]
    return None, None


def _walk(mod: tvm.IRModule, func: relax.Function, in_graph: bool, calls: list, graphs: list):
    def visit(expr) -> None:
        gvar, callee = _callee(expr, mod)
        if isinstance(callee, tirx.PrimFunc):
            calls.append((gvar.name_hint, in_graph))
        elif isinstance(callee, relax.Function):
            _walk(mod, callee, in_graph, calls, graphs)
        elif _is_capture(expr):
            graphs.append(1)
            captured = expr.args[1].fields[0]
            _walk(mod, mod[captured], True, calls, graphs)

    # post_order_visit visits a call's arguments before the call: bindings stay in order
    for block in func.body.blocks:
        for binding in block.bindings:
            relax.analysis.post_order_visit(binding.value, visit)


def _is_capture(expr) -> bool:
    if not isinstance(expr, relax.Call) or not expr.args:
        return False
    head = expr.args[0]
    return isinstance(head, relax.ExternFunc) and str(head.global_symbol) == CAPTURE_BUILTINS[0]


def _kernels_on_a_path(stmt) -> int:
    """Most device kernels one run of host code launches (max over if branches)."""
    if isinstance(stmt, tirx.SeqStmt):
        return sum(_kernels_on_a_path(s) for s in stmt.seq)
    if isinstance(stmt, tirx.IfThenElse):
        other = _kernels_on_a_path(stmt.else_case) if stmt.else_case is not None else 0
        return max(_kernels_on_a_path(stmt.then_case), other)
    if isinstance(stmt, tirx.Evaluate):
        value = stmt.value
        op = getattr(value, "op", None)
        return int(isinstance(value, tvm.ir.Call) and getattr(op, "name", "") == KERNEL_CALL)
    body = getattr(stmt, "body", None)
    return _kernels_on_a_path(body) if body is not None else 0


def kernels_per_call(mod: tvm.IRModule, names: set[str], target) -> dict[str, int]:
    """TIR function -> device kernels one call launches (its host code split from devices)."""
    host = lower_tir(mod, names, target).host_functions()
    return {name: _kernels_on_a_path(func.body) for name, func in host.items() if name in names}


def step_launches(lowered: tvm.IRModule, function: str, target) -> StepLaunches:
    """The launches of `function` in a module lowered by the GPU pipeline (pipeline_gpu)."""
    gvar = next(g for g in lowered.get_global_vars() if g.name_hint == function)
    calls: list = []
    graphs: list = []
    _walk(lowered, lowered[gvar], False, calls, graphs)
    kernels = kernels_per_call(lowered, {name for name, _ in calls}, target)
    return StepLaunches(tuple(calls), kernels, graph_launches=len(graphs))
