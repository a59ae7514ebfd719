"""The CPU instruction sets the llama.cpp peers are built for: this CPU's, except AMX.

ggml's AMX kernels take the repacked Q4/Q8 weights on CPUs that list AMX, and on VMs that list
it without a usable tile state they die at the first matmul (SIGSEGV in ldtilecfg, seen on
the Xeon this was measured on, although the kernel grants XTILEDATA). A GGML_NATIVE build
cannot leave AMX out, so the build names each extension the CPU lists instead; the repacked
(interleaved-row) AVX-512/AVX2 kernels, llama.cpp's fastest on such a CPU, stay in.
"""

from __future__ import annotations

from pathlib import Path

# /proc/cpuinfo flag -> ggml's CMake option; GGML_AVX512 covers F/CD/VL/DQ/BW together.
GGML_OPTIONS: dict[str, str] = {
    "avx": "GGML_AVX",
    "avx2": "GGML_AVX2",
    "fma": "GGML_FMA",
    "f16c": "GGML_F16C",
    "bmi2": "GGML_BMI2",
    "avx_vnni": "GGML_AVX_VNNI",
    "avx512f": "GGML_AVX512",
    "avx512vbmi": "GGML_AVX512_VBMI",
    "avx512_vnni": "GGML_AVX512_VNNI",
    "avx512_bf16": "GGML_AVX512_BF16",
}
AVX512_PARTS = ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The first processor's flags; empty where there is no /proc/cpuinfo."""
    if not cpuinfo.is_file():
        return set()
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cmake_args(flags: set[str]) -> list[str]:
    """CMake options for a build on a CPU with `flags`: native on CPUs without AMX (or that
    are not x86), else each listed extension by name."""
    if not any(f.startswith("amx") for f in flags):
        return ["-DGGML_NATIVE=ON"]
    listed = set(flags)
    if not all(part in listed for part in AVX512_PARTS):
        listed.discard("avx512f")
    args = ["-DGGML_NATIVE=OFF"]
    args += [f"-D{option}=ON" for flag, option in GGML_OPTIONS.items() if flag in listed]
    return args
