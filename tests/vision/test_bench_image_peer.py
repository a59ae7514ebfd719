"""`mlcx bench image --against llama.cpp`: a random vision pair written as llama.cpp lays it
out (text GGUF + mmproj GGUF) compiles with `--mmproj` and is timed; llama.cpp's mtmd encodes
the same files where the CPU peer is built, and a clear error says how to build it where not."""

from __future__ import annotations

import pytest

from mlcx.bench.image_encode import PeerRun, bench_image
from mlcx.bench.peers.llama_server import BUILD
from mlcx.bench.peers.mtmd_peer import BINARY, MtmdFiles
from mlcx.bench.workloads.random_models import LlamaShape
from mlcx.bench.workloads.random_vision import SiglipShape, write_mmproj, write_text
from mlcx.compile.model import CompileRequest
from mlcx.errors import ToolchainError
from tests.support.compile_cache import compile_model

TEXT = LlamaShape(64, 128, 1, 4, 2, 600, 10000.0, key_length=16, arch="gemma3")
VISION = SiglipShape(56, 14, 32, 64, 2, 2, 2)  # 16 patches pooled to 4 tokens


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("vision-pair")
    text = write_text(TEXT, root / "text.gguf")
    return MtmdFiles(text, write_mmproj(VISION, TEXT.hidden, root / "mmproj.gguf"), "gemma3")


@pytest.fixture(scope="module")
def artifact(pair, tmp_path_factory):
    out = tmp_path_factory.mktemp("vision-pair-art") / "art"
    return compile_model(CompileRequest(str(pair.text), output=out, mmproj=pair.mmproj))


def _built() -> bool:
    return (BUILD.bin_dir() / BINARY).exists()


def test_mlcx_times_the_random_pairs_encoder(artifact):
    result = bench_image(artifact, reps=1)
    assert result.tokens == 4 and result.encode_s > 0 and result.peer_s is None


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
