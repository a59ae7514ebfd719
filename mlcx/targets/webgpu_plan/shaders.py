"""One WGSL shader per kernel, with the func_info TVM's WebGPU codegen reports for it.

Each kernel is generated from its own single-function module, so its source is exactly one
shader (with its own `struct PODArgs`); nothing is cut out of a concatenated listing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import tvm
from tvm.target import codegen

from mlcx.targets.webgpu_plan.schema import BLOCK_TAGS, THREAD_TAGS, PlanError

WRITE_TAG = "paramWriteAccess:"
# Kernels that call subgroup builtins (mlcx's GPU kernels share activations through shuffles)
# need this directive in browsers; TVM's codegen emits the calls but not the directive unless
# the target declares `supports_subgroups`, which would also make TVM's own cross-thread
# reductions assume a fixed subgroup size. So the target stays plain and the directive is added
# here, to exactly the kernels that use subgroups (the plan then needs the feature).
SUBGROUPS = "enable subgroups;"
_SUBGROUP_CALL = re.compile(r"\bsubgroup\w*\(")


@dataclass(frozen=True)
class KernelSource:
    name: str
    wgsl: str
    arg_types: tuple[str, ...]
    write_access: tuple[int, ...]

    @property
    def num_buffers(self) -> int:
        return sum(t == "handle" for t in self.arg_types)

    @property
    def uses_subgroups(self) -> bool:
        return SUBGROUPS in self.wgsl


def kernel_sources(device_mod: tvm.IRModule) -> dict[str, KernelSource]:
    out = {}
    for gv, func in device_mod.functions.items():
        name = gv.name_hint
        module = codegen.build_module(tvm.IRModule({gv: func}), func.attrs["target"])
        info = json.loads(module.inspect_source("func_info"))[name]
        out[name] = _source(name, module.inspect_source("wgsl"), info)
    return out


def _source(name: str, wgsl: str, info: dict) -> KernelSource:
    write: tuple[int, ...] = ()
    for tag in info["launch_param_tags"]:
        if tag.startswith(WRITE_TAG):
            write = tuple(int(x) for x in json.loads(tag[len(WRITE_TAG) :]))
        elif tag not in BLOCK_TAGS + THREAD_TAGS:
            raise PlanError(f"{name}: launch tag {tag} is not supported on WebGPU")
    wgsl = wgsl.replace(SUBGROUPS, "")
    if _SUBGROUP_CALL.search(wgsl):
        wgsl = f"{SUBGROUPS}\n{wgsl}"
    source = KernelSource(name, wgsl, tuple(info["arg_types"]), write)
    if len(write) != source.num_buffers:
        raise PlanError(f"{name}: func_info gives no write access for every buffer")
    return source
