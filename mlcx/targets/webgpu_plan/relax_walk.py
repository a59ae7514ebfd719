"""Entry functions (prefill, decode, copy_pages) as ordered steps, by walking Relax bindings.

Input: the module after `gpu_graph_passes` (call_tir already rewritten to direct calls of TIR
functions with explicit output tensors, before memory planning). Tuple construction, tuple
indexing and var-to-var bindings are resolved here, so executors only see four step kinds.
"""

from __future__ import annotations

import tvm
from tvm import relax

from mlcx.targets.webgpu_plan.expr import by_name, to_tree
from mlcx.targets.webgpu_plan.schema import Expr, Function, Input, PlanError, Step, Tensor

Ref = int | tuple  # a value id, or a tuple of refs


def _tensor_type(ty, what: str) -> tuple[tuple[Expr, ...], str]:
    if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
        raise PlanError(f"{what} is not a tensor of known shape ({ty}); the plan needs one")
    return tuple(to_tree(d, by_name) for d in ty.shape.values), str(ty.dtype)


class _Walker:
    def __init__(self, func: relax.Function, name: str):
        self.name = name
        self.refs: dict = {}
        self.steps: list[Step] = []
        self.count = 0
        self.inputs = tuple(self._input(p) for p in func.params)

    def _new(self) -> int:
        self.count += 1
        return self.count - 1

    def _input(self, param) -> Input:
        if isinstance(param.ty, relax.TensorType):
            shape, dtype = _tensor_type(param.ty, param.name)
            tensor = Tensor(self._new(), shape, dtype)
            self.refs[param] = tensor.value
            return Input(param.name, (tensor,), False)
        if not isinstance(param.ty, relax.TupleType):
            raise PlanError(f"{self.name}: parameter `{param.name}` is neither tensor nor tuple")
        fields = []
        for i, field in enumerate(param.ty.fields):
            shape, dtype = _tensor_type(field, f"{param.name}[{i}]")
            fields.append(Tensor(self._new(), shape, dtype))
        self.refs[param] = tuple(f.value for f in fields)
        return Input(param.name, tuple(fields), True)

    def ref(self, expr) -> Ref:
        if isinstance(expr, relax.Var):
            return self.refs[expr]
        if isinstance(expr, relax.Tuple):
            return tuple(self.ref(f) for f in expr.fields)
        if isinstance(expr, relax.TupleGetItem):
            return self.ref(expr.tuple_value)[expr.index]
        raise PlanError(f"{self.name}: cannot use `{expr}` as a value in the WebGPU plan")

    def binding(self, binding) -> None:
        if not isinstance(binding, relax.VarBinding):
            raise PlanError(f"{self.name}: {type(binding).__name__} is not supported")
        var, value = binding.var, binding.value
        if isinstance(value, relax.Call):
            self._call(var, value)
        else:
            self.refs[var] = self.ref(value)

    def _call(self, var, call: relax.Call) -> None:
        op = call.op
        if isinstance(op, relax.GlobalVar):
            args = tuple(self._arg(a) for a in call.args)
            self.steps.append(Step("call", func=op.name_hint, args=args))
            return
        name = getattr(op, "name", str(op))
        if name == "relax.builtin.alloc_tensor":
            shape, dtype = _tensor_type(var.ty, var.name)
            self.refs[var] = out = self._new()
            self.steps.append(Step("alloc", out=out, shape=shape, dtype=dtype))
        elif name in ("relax.reshape", "relax.memory.view"):
            # the same buffer with another shape (and, for memory.view, element type)
            shape, dtype = _tensor_type(var.ty, var.name)
            self.refs[var] = out = self._new()
            src = self.ref(call.args[0])
            self.steps.append(Step("view", out=out, src=src, shape=shape, dtype=dtype))
        else:
            raise PlanError(f"{self.name}: operator {name} has no WebGPU plan equivalent")

    def _arg(self, arg):
        if isinstance(arg, relax.ShapeExpr):
            raise PlanError(f"{self.name}: symbolic TIR arguments ({arg}) are not supported")
        if isinstance(getattr(arg, "ty", None), tvm.ir.PrimType):
            # a shape the kernel cannot read off its buffers (Qwen's merger: patches // 4)
            return {"expr": to_tree(arg, by_name)}
        ref = self.ref(arg)
        if not isinstance(ref, int):
            raise PlanError(f"{self.name}: a tuple cannot be passed to a TIR function")
        return ref


def walk_function(func: relax.Function, name: str) -> Function:
    walker = _Walker(func, name)
    body = func.body
    for block in body.blocks:
        for binding in block.bindings:
            walker.binding(binding)
    outputs = walker.ref(body.body)
    steps = _with_releases(walker.steps, outputs)
    return Function(name, walker.inputs, _shape_vars(walker.inputs), steps, _plain(outputs))


def _plain(ref: Ref):
    return ref if isinstance(ref, int) else [_plain(r) for r in ref]


def _flat(ref: Ref) -> list[int]:
    return [ref] if isinstance(ref, int) else [x for r in ref for x in _flat(r)]


def _shape_vars(inputs: tuple[Input, ...]) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for tensor in (f for i in inputs for f in i.fields):
        for dim, size in enumerate(tensor.shape):
            if isinstance(size, str):
                found.setdefault(size, (tensor.value, dim))
    return found


def _with_releases(steps: list[Step], outputs: Ref) -> tuple[Step, ...]:
    """Insert a release after the last step that touches each allocation (through views too);
    outputs are never released."""
    root: dict[int, int] = {}
    last: dict[int, int] = {}
    for index, step in enumerate(steps):
        if step.op == "alloc":
            root[step.out] = step.out
        elif step.op == "view":
            root[step.out] = root.get(step.src, -1)
            last[root[step.out]] = index
        for value in step.args:
            if isinstance(value, int):  # a value id, not a scalar's {"expr": tree}
                last[root.get(value, -1)] = index
    kept = {root.get(v, -1) for v in _flat(outputs)}
    dead_after: dict[int, list[int]] = {}
    for alloc, index in last.items():
        if alloc >= 0 and alloc not in kept:
            dead_after.setdefault(index, []).append(alloc)
    out: list[Step] = []
    for index, step in enumerate(steps):
        out.append(step)
        if index in dead_after:
            out.append(Step("release", values=tuple(sorted(dead_after[index]))))
    return tuple(out)
