"""Phones: a static library (plus, on Android, a shared one) that an app links with the TVM
runtime, and the weights beside it. `mlcx package` bundles several of them for one app.

The library is built as a TVM "system library": every symbol carries a prefix
(BuildOptions.system_lib_prefix, default `mlcx_`) and static constructors register the model
with the runtime when the app starts, so an app links several models side by side and opens
each with `SystemLib(prefix)`. Nothing references those objects by name, so the app must link
the archive whole (-force_load / --whole-archive); docs/packaging.md shows how.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tvm

from mlcx.targets import device_code
from mlcx.targets.base import BuildOptions
from mlcx.targets.toolchain import archive, link_elf_shared, merge_archives, require

DEFAULT_PREFIX = "mlcx_"


@dataclass(frozen=True)
class MobilePlatform:
    name: str
    summary: str
    device_kind: str  # TVM device module kind: "metal" or "opencl"
    device_limits: dict[str, int]
    host_triple: str
    source_suffix: str
    shared_library: bool  # also link a .so of the same objects
    archive_format: str  # llvm-ar --format: "darwin" for Apple linkers, "gnu" for Android
    tools: tuple[str, ...] = field(default=("llvm-ar",))


class MobileTarget:
    """A Target for one MobilePlatform; iphone.py and android.py name the platforms."""

    kernel_kind = "gpu"
    runtime = "app"
    platform: MobilePlatform
    name: str
    summary: str

    def tvm_target(self, options: BuildOptions) -> tvm.target.Target:
        spec = {"kind": self.platform.device_kind, **self.platform.device_limits}
        return tvm.target.Target(spec, host={"kind": "llvm", "mtriple": self.platform.host_triple})

    def default_quantization(self, from_gguf: bool) -> str:
        return device_code.default_quantization(from_gguf)

    def build(self, mod, target, options):
        require(*self.platform.tools)
        return device_code.build_gpu(mod, target, options.subgroups, prefix(options))

    def library_files(self) -> list[str]:
        """The library files export writes, static archive first."""
        stem = f"model-{self.name}"
        return [f"{stem}.a"] + ([f"{stem}.so"] if self.platform.shared_library else [])

    def export(self, executable, out_dir: Path, options: BuildOptions, stem: str = "model") -> str:
        """`stem`: "encoder" for an image encoder (built with its own symbol prefix)."""
        kind = self.platform.device_kind
        stem = f"{stem}-{self.name}"
        device_code.write_kernel_source(
            executable, kind, out_dir / f"{stem}.{self.platform.source_suffix}"
        )
        static = out_dir / f"{stem}.a"
        executable.export_library(str(static), fcompile=self._archiver(prefix(options)))
        if self.platform.shared_library:
            self.link_shared(out_dir / f"{stem}.so", static)
        return static.name

    def link_shared(self, output: Path, static: Path) -> None:
        link_elf_shared(output, static, self.platform.host_triple)

    def merge(self, output: Path, archives: list[Path]) -> None:
        merge_archives(output, archives, self.platform.archive_format)

    def _archiver(self, symbol_prefix: str):
        """export_library's fcompile: archive TVM's objects under names unique to this model
        (TVM calls the host object lib0.o in every model)."""

        def fcompile(output: str, objects: list[str], **_kwargs) -> None:
            with tempfile.TemporaryDirectory() as tmp:
                members = []
                for obj in map(Path, objects):
                    name = (
                        obj.name if obj.name.startswith(symbol_prefix) else symbol_prefix + obj.name
                    )
                    members.append(Path(shutil.copy(obj, Path(tmp) / name)))
                archive(Path(output), members, self.platform.archive_format)

        return fcompile


def prefix(options: BuildOptions) -> str:
    return options.system_lib_prefix or DEFAULT_PREFIX
