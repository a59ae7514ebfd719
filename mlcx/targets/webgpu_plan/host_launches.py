"""Kernel launches of each TIR function, read from its lowered host code.

After TVM's SplitHostDevice, a TIR function's host part is a straight line of `Bind`s,
`DeclBuffer`s and `call_ffi_kernel(name, buffer_data..., scalars..., extents...)` calls, possibly
under `if`s on shape variables (a kernel chosen by the token count). This walks those statements:
handle arguments resolve (through declared buffer aliases) to the function's parameters, scalars
and extents become expression trees over the shape variables. A launch under an `if` gets the
condition folded into its grid (x is 0 when it is false), and executors skip empty grids.
Element offsets are bound to 0: plan executors always pass whole, unoffset buffers.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from mlcx.targets.webgpu_plan.expr import to_tree
from mlcx.targets.webgpu_plan.schema import (
    BLOCK_TAGS,
    THREAD_TAGS,
    Expr,
    Launch,
    Param,
    PlanError,
    TirFunction,
)

KERNEL_CALL = "tirx.call_ffi_kernel"


def _is_buffer(param) -> bool:
    return isinstance(param.ty, tirx.BufferType)


class _HostWalker:
    def __init__(self, func: tirx.PrimFunc, name: str, handle_counts: dict[str, int]):
        self.name = name
        self.handle_counts = handle_counts
        self.lets: dict = {}
        self.zero: set = set()
        self.names: dict[str, object] = {}
        self.roots: dict = {}
        self.launches: list[Launch] = []
        self.blocks: dict[str, tuple[int, int, int]] = {}
        self.scalars: dict[int, str] = {}
        self.conditions: list[Expr] = []
        self.params = tuple(self._param(i, p) for i, p in enumerate(func.params))

    def _param(self, index: int, param) -> Param:
        if not _is_buffer(param):
            self.scalars[index] = self._name(param)
            return Param(str(param.ty.dtype))  # a scalar (a shape no buffer carries)
        self.roots[param] = index
        if isinstance(param.elem_offset, tirx.Var):
            self.zero.add(param.elem_offset)
        shape = tuple(to_tree(d, self._declare) for d in param.shape)
        return Param(str(param.dtype), shape)

    def _declare(self, var) -> Expr:
        return self._name(var)

    def _name(self, var) -> str:
        name = str(var.name)
        seen = self.names.setdefault(name, var)
        if not seen.same_as(var):
            raise PlanError(f"{self.name}: two shape variables are both called {name!r}")
        return name

    def resolve(self, var) -> Expr:
        if var in self.lets:
            return self.lets[var]
        if var in self.zero:
            return 0
        if str(var.name) in self.names and self.names[str(var.name)].same_as(var):
            return str(var.name)
        raise PlanError(f"{self.name}: launch depends on `{var.name}`, which is not a shape")

    def visit(self, stmt) -> None:
        if isinstance(stmt, tirx.SeqStmt):
            for s in stmt.seq:
                self.visit(s)
        elif isinstance(stmt, tirx.Bind):
            self.lets[stmt.var] = to_tree(stmt.value, self.resolve)
        elif isinstance(stmt, tirx.DeclBuffer):
            self.roots[stmt.buffer] = self._root(stmt.data)
        elif isinstance(stmt, tirx.AttrStmt):
            self.visit(stmt.body)
        elif isinstance(stmt, tirx.AssertStmt):
            pass
        elif isinstance(stmt, tirx.IfThenElse):
            self._branch(stmt)
        elif isinstance(stmt, tirx.Evaluate) and _is_kernel_call(stmt.value):
            self._launch(stmt.value)
        else:
            raise PlanError(
                f"{self.name}: host code has a {type(stmt).__name__}; the WebGPU plan only "
                "expresses straight-line kernel launches"
            )

    def _branch(self, stmt: tirx.IfThenElse) -> None:
        cond = to_tree(stmt.condition, self.resolve)
        for taken, body in ((cond, stmt.then_case), (["not", cond], stmt.else_case)):
            if body is None:
                continue
            self.conditions.append(taken)
            self.visit(body)
            self.conditions.pop()

    def _root(self, data) -> int:
        if isinstance(data, tvm.ir.Call) and data.op.name == "tirx.buffer_data":
            buffer = data.args[0]
            if buffer in self.roots:
                return self.roots[buffer]
        raise PlanError(f"{self.name}: cannot trace buffer `{data}` to a parameter")

    def _launch(self, call) -> None:
        kernel = str(call.args[0].value)
        tags = [str(t) for t in call.attrs.launch_params]
        rest = list(call.args[1:])
        handles = self.handle_counts[kernel]
        extents = rest[len(rest) - len(tags) :]
        buffers = tuple(self._root(a) for a in rest[:handles])
        scalars = tuple(to_tree(a, self.resolve) for a in rest[handles : len(rest) - len(tags)])
        grid: list[Expr] = [1, 1, 1]
        block = [1, 1, 1]
        for tag, extent in zip(tags, extents, strict=True):
            if tag in BLOCK_TAGS:
                grid[BLOCK_TAGS.index(tag)] = to_tree(extent, self.resolve)
            elif tag in THREAD_TAGS:
                block[THREAD_TAGS.index(tag)] = _constant(extent, kernel)
            else:
                raise PlanError(f"{kernel}: launch parameter {tag} is not supported on WebGPU")
        for cond in reversed(self.conditions):
            grid[0] = ["select", cond, grid[0], 0]
        self.blocks[kernel] = (block[0], block[1], block[2])
        self.launches.append(Launch(kernel, buffers, scalars, (grid[0], grid[1], grid[2])))

    def shape_vars(self) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        for index, param in enumerate(self.params):
            if param.shape is None:
                found[self.scalars[index]] = (index, -1)
                continue
            for dim, size in enumerate(param.shape):
                if isinstance(size, str):
                    found.setdefault(size, (index, dim))
        missing = set(self.names) - set(found)
        if missing:
            raise PlanError(f"{self.name}: shape variables {sorted(missing)} have no source")
        return found


def _is_kernel_call(value) -> bool:
    return isinstance(value, tvm.ir.Call) and getattr(value.op, "name", "") == KERNEL_CALL


def _constant(extent, kernel: str) -> int:
    if isinstance(extent, tirx.IntImm):
        return int(extent.value)
    raise PlanError(f"{kernel}: workgroup size `{extent}` is not a constant")


def tir_function(
    func: tirx.PrimFunc, name: str, handle_counts: dict[str, int]
) -> tuple[TirFunction, dict[str, tuple[int, int, int]]]:
    """The plan of one host function, and the workgroup size of each kernel it launches."""
    walker = _HostWalker(func, name, handle_counts)
    walker.visit(func.body)
    plan = TirFunction(name, walker.params, walker.shape_vars(), tuple(walker.launches))
    return plan, walker.blocks
