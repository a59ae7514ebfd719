"""Dawn toggles (Chromium's WebGPU implementation) for mlcx's headless Chromium.

By default one is turned off: on SwiftShader, Dawn zeroes workgroup memory through the
driver's VK_KHR_zero_initialize_workgroup_memory, which SwiftShader does so slowly that the
attention kernels run 2-4x slower than under wgpu-native on the same SwiftShader (measured
kernel by kernel, docs/webgpu.md). Without it Dawn zeroes that memory in the shader itself, at
no measurable cost: WebGPU's guarantees stay the same. Others (disable_robustness,
disable_workgroup_init) do drop guarantees; `mlcx bench web --dawn-enable` sets them to
measure what they cost.
"""

from __future__ import annotations

from dataclasses import dataclass

SLOW_ON_SWIFTSHADER = ("use_vulkan_zero_initialize_workgroup_memory_extension",)


def _check(names: tuple[str, ...]) -> None:
    for name in names:
        if not name or not name.replace("_", "").isalnum():
            raise ValueError(f"not a Dawn toggle name: {name!r}")


@dataclass(frozen=True)
class DawnToggles:
    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = SLOW_ON_SWIFTSHADER

    def __post_init__(self) -> None:
        _check(self.enable)
        _check(self.disable)

    @classmethod
    def parse(cls, enable: str, disable: str) -> DawnToggles:
        """From comma-separated lists, as the command line gives them."""

        def split(text: str) -> tuple[str, ...]:
            return tuple(t.strip() for t in text.split(",") if t.strip())

        return cls(split(enable), split(disable))

    @property
    def flags(self) -> tuple[str, ...]:
        pairs = (("--enable-dawn-features", self.enable), ("--disable-dawn-features", self.disable))
        return tuple(f"{flag}={','.join(names)}" for flag, names in pairs if names)

    def describe(self) -> str:
        parts = [
            f"{verb} {', '.join(names)}"
            for verb, names in (("enabled", self.enable), ("disabled", self.disable))
            if names
        ]
        return "; ".join(parts) or "Chromium's defaults"


DEFAULT = DawnToggles()
