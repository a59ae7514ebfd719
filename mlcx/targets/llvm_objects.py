"""A CPU library's kernels compiled one by one and kept on disk as LLVM objects: opt-in, by
$MLCX_KERNEL_OBJECTS (a directory; the test suite sets one).

LLVM's optimizer and code generator are most of a CPU compile (a tiny model: 3.5 s of 4.4 s,
TVM 0.27, one Zen 4 core), and most kernels recur from one compile to the next: the same shapes
and formats under another page size, window, family or option (one run of the test suite
builds 136 CPU libraries holding 2,499 functions, 785 of them distinct). So each lowered kernel
is built alone into its own object, kept, and linked into every later library that holds it
(export_library's addons).

An object is keyed by what decides its code: the lowered function's structural hash (free
variables mapped, so equal functions hash alike in any process; its target attribute left out
and keyed as the target's text), its name, the target with its host, the module's attributes,
the pass context's settings and TVM's and tvm-ffi's versions (LLVM is TVM's own). Each function
builds alone: no function of a lowered Relax module calls another (in TVM 0.27 a TIR subroutine
call does not even survive relax's pipeline). Objects are written whole (a staging file
renamed), so processes share the store. The cuda target keeps nvcc's fatbins in it too
(mlcx.targets.cuda_kernels).

TVM's own steps are followed (relax.build, then tirx.build for a CPU target: bind the target,
lower, finalize the host functions, generate code); only the last is split. The executable that
comes back holds its kept kernels in objects, not in its in-memory library: it is exported
(mlcx always exports a CPU artifact), never run in memory.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from dataclasses import dataclass
from pathlib import Path

import tvm
import tvm_ffi
from tvm import relax
from tvm.relax import vm_build

from mlcx.cache import write_whole

ENV = "MLCX_KERNEL_OBJECTS"
# the module tvm.tirx.build (the function of that name hides it): its host/device split and codegen
_tirx_build = importlib.import_module("tvm.tirx.build")


@dataclass(frozen=True)
class LinkedExecutable:
    """A Relax VM executable and the kept objects its library links."""

    executable: relax.VMExecutable
    objects: tuple[str, ...]

    def export_library(self, file_name: str, **kwargs) -> None:
        # export_library appends its own objects to the addons list it is given: a new list
        self.executable.export_library(file_name, addons=list(self.objects), **kwargs)


def root() -> Path | None:
    """The store's directory; None: compile as TVM does, keeping nothing."""
    where = os.environ.get(ENV)
    return None if not where or where == "off" else Path(where)


def compile_cpu(mod: tvm.IRModule, target: tvm.target.Target, relax_pipeline, tir_pipeline: str):
    """`tvm.compile(mod, target, relax_pipeline, tir_pipeline)` for a CPU target, its kernels'
    objects read from the store or kept there."""
    store = root()
    if store is None:
        return tvm.compile(
            mod, target=target, relax_pipeline=relax_pipeline, tir_pipeline=tir_pipeline
        )
    with target:
        mod = relax_pipeline(mod)
    attrs = dict(mod.attrs) if mod.attrs else {}
    ext_libs, params = attrs.get("external_mods", []), dict(attrs.get("const_name_to_constant", {}))
    builder = relax.ExecBuilder()
    tir_mod = vm_build._filter_tir(vm_build._vmcodegen(builder, mod, "bytecode"))
    if ext_libs or tir_mod is None:  # nothing of ours to split: TVM's own link
        return vm_build._vmlink(builder, target, tir_mod, tir_pipeline, ext_libs, params)
    host = _lowered(tir_mod, target, tir_pipeline)
    lib, objects = _link(host, target, store)
    linked = relax._ffi_api.VMLink(builder, target, lib, [], params)
    return LinkedExecutable(relax.VMExecutable(linked), tuple(objects))


def _lowered(tir_mod: tvm.IRModule, target: tvm.target.Target, name: str) -> tvm.IRModule:
    """The host functions as tirx.build hands them to code generation (a CPU target is its own
    host and has no device functions)."""
    mod = tvm.tirx.transform.BindTarget(target.with_host(target))(tir_mod)
    pipeline, finalize_host, _ = tvm.tirx.get_tir_pipeline(name)
    host, devices = _tirx_build.split_host_device_mods(pipeline(mod))
    if any(len(device.functions) for device in devices.values()):
        raise ValueError(f"a CPU target ({target}) was given device functions")
    return finalize_host()(host)


def _link(host: tvm.IRModule, target, store: Path) -> tuple[tvm.runtime.Module, list[str]]:
    """An empty library (the module the VM imports: the loaded file's own symbols) and the
    objects of the functions, each built alone unless kept."""
    objects = []
    for gvar, func in host.functions.items():
        path = store / f"{_key(gvar, func, host, target)}.o"
        if path.exists():
            os.utime(path)
        else:
            _build_alone(tvm.IRModule({gvar: func}, attrs=host.attrs), target, path)
        objects.append(str(path))
    return _codegen(tvm.IRModule({}, attrs=host.attrs), target), objects


def _build_alone(mod: tvm.IRModule, target, path: Path) -> None:
    write_whole(path, lambda staging: _codegen(mod, target).write_to_file(str(staging)))


def _codegen(mod: tvm.IRModule, target) -> tvm.runtime.Module:
    return _tirx_build.codegen_build(mod, target)


def _key(gvar, func, host: tvm.IRModule, target) -> str:
    func_target = func.attrs.get("target") if func.attrs else None
    parts = (
        tvm_ffi.structural_hash(func.without_attr("target"), map_free_vars=True),
        gvar.name_hint,
        sorted((func_target or target).export().items(), key=str),
        str(host.attrs),
        str(tvm.transform.PassContext.current().config),
        tvm.__version__,
        tvm_ffi.__version__,
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]
