"""The WebGPU plan file (`webgpu-plan.json`), as typed records; docs/webgpu.md has the format.

Both executors read it: mlcx.runtime.backends.wgpu_* (Python, wgpu-native) and web/src (the
browser). No TVM import here, so the Python executor loads plans without TVM's compiler.

Value ids name tensors inside one entry function: its inputs, then its allocations and views.
A call argument is a value id (int) for a buffer parameter or `{"expr": tree}` for a scalar one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Union

from mlcx.errors import UnsupportedModelError

PLAN_FILE = "webgpu-plan.json"
FORMAT = "mlcx-webgpu-plan"
VERSION = 1
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
POD_TYPES = ("int32", "uint32", "float32")

Expr = Union[int, float, str, list]  # noqa: UP007 (a runtime alias; see webgpu_plan.expr)


class PlanError(UnsupportedModelError):
    """The compiled model uses something the WebGPU plan cannot express."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@dataclass(frozen=True)
class Kernel:
    """One WGSL compute shader; its entry point is `name`. Bindings: the handle args in order
    (read_write where `write_access`), then a uniform of the POD args and packGridDimX."""

    name: str
    shader: str  # path of the .wgsl file, relative to the artifact
    arg_types: tuple[str, ...]
    write_access: tuple[int, ...]
    block: tuple[int, int, int]  # workgroup size, baked into the shader; for reference

    def __post_init__(self) -> None:
        pods = [t for t in self.arg_types if t != "handle"]
        _require(all(t in POD_TYPES for t in pods), f"{self.name}: scalar types {pods}")
        handles = len(self.arg_types) - len(pods)
        _require(len(self.write_access) == handles, f"{self.name}: write_access length")

    @property
    def num_buffers(self) -> int:
        return len(self.write_access)

    @property
    def pod_types(self) -> tuple[str, ...]:
        return tuple(t for t in self.arg_types if t != "handle")


@dataclass(frozen=True)
class Launch:
    """One dispatch: bindings are parameters of the TIR function, scalars and grid are
    expressions over its shape variables."""

    kernel: str
    buffers: tuple[int, ...]
    scalars: tuple[Expr, ...]
    grid: tuple[Expr, Expr, Expr]


@dataclass(frozen=True)
class Param:
    """A TIR function parameter: a buffer (shape + dtype) or a scalar (`shape` is None)."""

    dtype: str
    shape: tuple[Expr, ...] | None = None


@dataclass(frozen=True)
class TirFunction:
    name: str
    params: tuple[Param, ...]
    shape_vars: dict[str, tuple[int, int]]  # var -> (param, dim); dim -1: a scalar param
    launches: tuple[Launch, ...]


@dataclass(frozen=True)
class Tensor:
    """An entry function input: one tensor (value id, declared shape, dtype)."""

    value: int
    shape: tuple[Expr, ...]
    dtype: str


@dataclass(frozen=True)
class Input:
    """`fields` holds one Tensor for a tensor input, one per element for a tuple input."""

    name: str
    fields: tuple[Tensor, ...]
    is_tuple: bool


@dataclass(frozen=True)
class Step:
    """op: alloc (out, shape, dtype) | view (out, src, shape, dtype: src's buffer reinterpreted) |
    call (func, args) |
    release (values: allocations dead from here on; their buffers can be reused)."""

    op: str
    out: int = -1
    src: int = -1
    shape: tuple[Expr, ...] = ()
    dtype: str = ""
    func: str = ""
    args: tuple[Any, ...] = ()
    values: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _require(self.op in ("alloc", "view", "call", "release"), f"unknown step op {self.op!r}")


@dataclass(frozen=True)
class Function:
    name: str
    inputs: tuple[Input, ...]
    shape_vars: dict[str, tuple[int, int]]  # var -> (value id, dim) of an input
    steps: tuple[Step, ...]
    outputs: Any  # value id or nested lists of them


@dataclass(frozen=True)
class Plan:
    activation_dtype: str
    features: tuple[str, ...]  # WebGPU features the shaders need ("shader-f16")
    kernels: dict[str, Kernel]
    tir_functions: dict[str, TirFunction]
    functions: dict[str, Function]

    def __post_init__(self) -> None:
        for func in self.tir_functions.values():
            for launch in func.launches:
                _require(launch.kernel in self.kernels, f"{func.name}: no kernel {launch.kernel}")
                kernel = self.kernels[launch.kernel]
                _require(len(launch.buffers) == kernel.num_buffers, f"{kernel.name}: bindings")
                _require(len(launch.scalars) == len(kernel.pod_types), f"{kernel.name}: scalars")
        for entry in self.functions.values():
            for step in entry.steps:
                if step.op == "call":
                    _require(step.func in self.tir_functions, f"{entry.name}: no {step.func}")

    def to_json(self) -> str:
        data = {"format": FORMAT, "version": VERSION, **asdict(self)}
        for func in data["functions"].values():
            func["steps"] = [_compact(step) for step in func["steps"]]
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Plan:
        """Raises ValueError (or KeyError/TypeError) on a malformed plan."""
        data = json.loads(text)
        _require(data.get("format") == FORMAT, "not an mlcx WebGPU plan")
        _require(data.get("version") == VERSION, f"plan version {data.get('version')}")
        return cls(
            activation_dtype=data["activation_dtype"],
            features=tuple(data["features"]),
            kernels={k: _kernel(v) for k, v in data["kernels"].items()},
            tir_functions={k: _tir_function(v) for k, v in data["tir_functions"].items()},
            functions={k: _function(v) for k, v in data["functions"].items()},
        )


_STEP_DEFAULTS = asdict(Step("call"))


def _compact(step: dict) -> dict:
    """A step without the fields its op does not use."""
    return {k: v for k, v in step.items() if k == "op" or v != _STEP_DEFAULTS[k]}


def _kernel(d: dict) -> Kernel:
    return Kernel(
        d["name"], d["shader"], tuple(d["arg_types"]), tuple(d["write_access"]), tuple(d["block"])
    )


def _vars(d: dict) -> dict[str, tuple[int, int]]:
    return {name: (int(a), int(b)) for name, (a, b) in d.items()}


def _tir_function(d: dict) -> TirFunction:
    params = tuple(
        Param(p["dtype"], None if p["shape"] is None else tuple(p["shape"])) for p in d["params"]
    )
    launches = tuple(
        Launch(x["kernel"], tuple(x["buffers"]), tuple(x["scalars"]), tuple(x["grid"]))
        for x in d["launches"]
    )
    return TirFunction(d["name"], params, _vars(d["shape_vars"]), launches)


def _input(d: dict) -> Input:
    fields = tuple(Tensor(f["value"], tuple(f["shape"]), f["dtype"]) for f in d["fields"])
    return Input(d["name"], fields, bool(d["is_tuple"]))


def _function(d: dict) -> Function:
    inputs = tuple(_input(i) for i in d["inputs"])
    steps = tuple(
        Step(**{**s, **{k: tuple(s[k]) for k in ("shape", "args", "values") if k in s}})
        for s in d["steps"]
    )
    return Function(d["name"], inputs, _vars(d["shape_vars"]), steps, d["outputs"])
