"""The peers without building them: llama.cpp-vulkan's llama-bench JSON parsing on a recorded
run and its errors when the binaries are missing or their build fails; the CPU peer's loading
through a stub llama_cpp module.

tests/fixtures/llama_bench_vulkan_p64_n16.json is the stdout of a real run on lavapipe:
`GGML_VK_VISIBLE_DEVICES=0 llama-bench -m SmolLM2-135M-Instruct.Q4_1.gguf -ngl 99 -p 64 -n 16
-r 1 -o json` (llama.cpp as built by scripts/build-llamacpp-vulkan.sh)."""

from __future__ import annotations

import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest

from mlcx.bench.peers import llamacpp_vulkan
from mlcx.bench.peers.llama_bench import parse_llama_bench
from mlcx.bench.peers.llamacpp_build import VERSION
from mlcx.bench.peers.llamacpp_vulkan import LlamaCppVulkanEngine, ensure_llama_bench
from mlcx.bench.peers.peer_setup import PeerSetup
from mlcx.bench.peers.peers import PEERS
from mlcx.bench.workloads.workload import Workload
from mlcx.errors import MlcxError, ToolchainError

RECORDED = Path(__file__).parents[1] / "fixtures" / "llama_bench_vulkan_p64_n16.json"


def test_peers_are_a_registry_of_the_llama_cpp_engines():
    assert set(PEERS) == {"llama.cpp", "llama.cpp-vulkan", "llama.cpp-cuda"}


def test_parses_prompt_and_decode_of_a_recorded_run():
    timing, device = parse_llama_bench(RECORDED.read_text(), Workload(64, 16, 1))
    assert device == "llvmpipe (LLVM 15.0.6, 256 bits)"
    assert timing.prefill_s == pytest.approx(14196275534e-9)
    assert timing.decode_s == pytest.approx(11638078046e-9)
    # Speeds from these timings are llama-bench's own avg_ts.
    assert 64 / timing.prefill_s == pytest.approx(4.508225, rel=1e-6)
    assert 16 / timing.decode_s == pytest.approx(1.374797, rel=1e-6)


def test_a_run_of_other_sizes_is_rejected():
    with pytest.raises(MlcxError, match="no prefill or decode test"):
        parse_llama_bench(RECORDED.read_text(), Workload(128, 32, 1))


def test_output_that_is_not_json_is_an_error():
    with pytest.raises(MlcxError, match="no JSON"):
        parse_llama_bench("ggml_vulkan: No devices found.", Workload(64, 16, 1))


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MLCX_CACHE", str(tmp_path))
    return tmp_path


def test_missing_binaries_without_building_say_how_to_build(empty_cache):
    setup = PeerSetup(empty_cache / "m.gguf", Workload(64, 16, 1), 1, "float16", "gpu")
    with pytest.raises(ToolchainError) as err:
        LlamaCppVulkanEngine(setup)
    message = str(err.value)
    assert str(empty_cache) in message and "--build-peer" in message
    assert "peer_builds/build-llamacpp-vulkan.sh" in message and "20-40 min" in message


def test_a_failed_build_names_its_last_line_and_log(empty_cache, monkeypatch):
    script = empty_cache / "build.sh"
    script.write_text("echo 'cmake: Vulkan headers not found' >&2\nexit 3\n")
    monkeypatch.setattr(llamacpp_vulkan, "BUILD", replace(llamacpp_vulkan.BUILD, script=script))
    said: list[str] = []
    with pytest.raises(ToolchainError) as err:
        ensure_llama_bench(True, said.append)
    assert "20-40 min" in said[0]
    message = str(err.value)
    assert "exit 3" in message and "cmake: Vulkan headers not found" in message
    assert "build-llamacpp-vulkan.log" in message


def _stub_llama_cpp(monkeypatch, gpu: bool) -> dict:
    """llama-cpp-python replaced by a stub module that records how the model was loaded."""
    loaded: dict = {}

    def llama(path, **kwargs):
        loaded.update(kwargs, path=path)
        return types.SimpleNamespace(n_vocab=lambda: 300)

    stub = types.ModuleType("llama_cpp")
    stub.GGML_TYPE_F16, stub.GGML_TYPE_F32, stub.GGML_TYPE_Q8_0, stub.Llama = 1, 0, 8, llama
    stub.llama_supports_gpu_offload = lambda: gpu
    monkeypatch.setitem(sys.modules, "llama_cpp", stub)
    return loaded


def test_the_cuda_peer_is_llama_bench_with_every_layer_offloaded(empty_cache):
    """llama-bench replaced by a script that lists one CUDA device and prints a recorded run."""
    bin_dir = empty_cache / "peers" / f"llama.cpp-cuda-{VERSION}" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "llama-bench"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --list-devices ]; then\n'
        "  echo 'Available devices:'\n"
        "  echo '  CUDA0: NVIDIA H100 80GB HBM3 (81559 MiB, 80000 MiB free)'\n"
        f"else cat {RECORDED}; fi\n"
    )
    fake.chmod(0o755)
    setup = PeerSetup(empty_cache / "m.gguf", Workload(64, 16, 1), 3, "float32", "cuda")
    engine = PEERS["llama.cpp-cuda"](setup)
    assert (engine.name, engine.device) == ("llama.cpp-cuda", "NVIDIA H100 80GB HBM3")
    assert engine.argv[engine.argv.index("-ngl") + 1] == "99"
    assert "f16 KV cache" in " ".join(engine.notes)  # llama-bench has no f32 cache
    timing = engine.run([], Workload(64, 16, 1))
    assert timing.prefill_s == pytest.approx(14196275534e-9)


def test_the_cuda_peer_says_how_to_build_it(empty_cache):
    setup = PeerSetup(empty_cache / "m.gguf", Workload(64, 16, 1), 1, "float16", "cuda")
    with pytest.raises(ToolchainError, match="peer_builds/build-llamacpp-cuda.sh"):
        PEERS["llama.cpp-cuda"](setup)


def test_the_cpu_peer_loads_the_setup_s_model_threads_and_kv_dtype(monkeypatch, tmp_path):
    loaded = _stub_llama_cpp(monkeypatch, gpu=False)
    setup = PeerSetup(tmp_path / "m.gguf", Workload(24, 6, 1), 3, "float16", "cpu")
    engine = PEERS["llama.cpp"](setup)
    assert (engine.name, engine.device, engine.command) == ("llama.cpp", "cpu", None)
    assert loaded["path"] == str(tmp_path / "m.gguf") and loaded["n_ctx"] == 24 + 6 + 8
    assert (loaded["n_threads"], loaded["type_k"], loaded["type_v"]) == (3, 1, 1)
    assert loaded["n_gpu_layers"] == 0


def test_the_cpu_peer_runs_as_llama_cpp_s_tools_and_matches_an_int8_cache(monkeypatch, tmp_path):
    loaded = _stub_llama_cpp(monkeypatch, gpu=False)
    setup = PeerSetup(tmp_path / "m.gguf", Workload(4000, 64, 1), 2, "int8", "cpu")
    PEERS["llama.cpp"](setup)
    assert (loaded["type_k"], loaded["type_v"]) == (8, 8)  # q8_0, as -ctk/-ctv q8_0
    # llama-cli's and llama-server's defaults: flash attention, batches 2048, micro-batches 512
    assert (loaded["flash_attn"], loaded["n_batch"], loaded["n_ubatch"]) == (True, 2048, 512)
