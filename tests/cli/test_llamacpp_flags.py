"""The llama.cpp peers' CPU build options: native where that is safe, AMX never."""

from __future__ import annotations

from mlcx.bench.peers.llamacpp_flags import cmake_args, cpu_flags

AVX512 = {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}


def test_a_cpu_without_amx_builds_native():
    assert cmake_args({"sse2", "avx", "avx2", "fma"}) == ["-DGGML_NATIVE=ON"]
    assert cmake_args(set()) == ["-DGGML_NATIVE=ON"]  # not x86, or no /proc/cpuinfo


def test_a_cpu_listing_amx_names_its_extensions_but_not_amx():
    flags = {"avx", "avx2", "fma", "f16c", "avx512_vnni", "amx_tile", "amx_int8"} | AVX512
    args = cmake_args(flags)
    assert args[0] == "-DGGML_NATIVE=OFF"
    assert {"-DGGML_AVX512=ON", "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX2=ON"} <= set(args)
    assert not [a for a in args if "AMX" in a or "VBMI" in a]


def test_avx512_needs_every_part_ggml_enables_with_it():
    args = cmake_args({"avx2", "avx512f", "amx_tile"})
    assert "-DGGML_AVX512=ON" not in args and "-DGGML_AVX2=ON" in args


def test_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_int8\n\nprocessor\t: 1\n")
    assert cpu_flags(info) == {"fpu", "avx2", "amx_int8"}
    assert cpu_flags(tmp_path / "missing") == set()
