"""`mlcx bench image --against llama.cpp`: random vision pairs written as llama.cpp lays them
out (text GGUF + mmproj GGUF: Gemma 3's and Qwen2.5-VL's) compile with `--mmproj` and are timed;
llama.cpp's mtmd encodes the same files where the CPU peer is built, and a clear error says how
to build it where not."""

from __future__ import annotations

import pytest

from mlcx.bench.image_encode import PeerRun, bench_image
from mlcx.bench.peers.llama_server import BUILD
from mlcx.bench.peers.mtmd_peer import BINARY, MtmdFiles
from mlcx.bench.workloads.random_models import LlamaShape
from mlcx.bench.workloads.random_qwen_vision import MropeText, QwenPair, QwenVisionShape
from mlcx.bench.workloads.random_vision import SiglipShape, VisionPair
from mlcx.compile.model import CompileRequest
from mlcx.errors import ToolchainError
from tests.support.compile_cache import compile_model

PAIRS = {
    # 16 patches pooled to 4 tokens
    "gemma3": VisionPair(
        LlamaShape(64, 128, 1, 4, 2, 600, 10000.0, key_length=16, arch="gemma3"),
        SiglipShape(56, 14, 32, 64, 2, 2, 2),
    ),
    # windows in layer 1, the whole image in layer 2
    "qwen2_5_vl": QwenPair(
        MropeText(LlamaShape(64, 128, 1, 4, 2, 600, 1e6, rms_eps=1e-6, arch="qwen2vl"), (2, 3, 3)),
        QwenVisionShape(32, 64, 2, 2, full_period=2),
    ),
}
# the benched 640x480 photo's image tokens: Gemma 3's pooled grid; Qwen's merged 28-pixel
# patches over the photo rounded to whole ones (480 / 28 -> 17 rows, 640 / 28 -> 23 columns)
TOKENS = {"gemma3": 4, "qwen2_5_vl": 17 * 23}


@pytest.fixture(scope="module", params=list(PAIRS))
def pair(request, tmp_path_factory):
    written = PAIRS[request.param]
    root = tmp_path_factory.mktemp(f"{request.param}-pair")
    text = written.write_text(root / "text.gguf")
    return MtmdFiles(text, written.write_mmproj(root / "mmproj.gguf"), written.family)


@pytest.fixture(scope="module")
def artifact(pair, tmp_path_factory):
    out = tmp_path_factory.mktemp("vision-pair-art") / "art"
    return compile_model(CompileRequest(str(pair.text), output=out, mmproj=pair.mmproj))


def _built() -> bool:
    return (BUILD.bin_dir() / BINARY).exists()


def test_mlcx_times_the_random_pairs_encoder(artifact, pair):
    result = bench_image(artifact, reps=1)
    assert result.tokens == TOKENS[pair.family] and result.encode_s > 0 and result.peer_s is None


@pytest.mark.skipif(not _built(), reason=f"{BINARY} is not built (scripts/build-llamacpp-cpu.sh)")
def test_llama_cpp_encodes_the_same_files(artifact, pair):
    result = bench_image(artifact, reps=1, peer=PeerRun(pair, 2, build=False))
    # llama.cpp logs whole milliseconds: this tiny encoder may take 0 of them
    assert result.peer_s is not None and result.peer_s >= 0
    assert "llama.cpp's speed" in "\n".join(result.lines())


@pytest.mark.skipif(_built(), reason=f"{BINARY} is built")
def test_a_missing_peer_says_how_to_build_it(artifact, pair):
    with pytest.raises(ToolchainError, match="--build-peer"):
        bench_image(artifact, reps=1, peer=PeerRun(pair, 2, build=False))


def test_the_peer_needs_both_files(pair, tmp_path):
    with pytest.raises(ValueError, match="mmproj GGUF"):
        MtmdFiles(pair.text, tmp_path / "missing.gguf", "gemma3")
