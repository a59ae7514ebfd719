"""The random gpt-oss `mlcx bench` writes (mlcx.bench.workloads.random_gpt_oss): gpt-oss-20b's
shape as a GGUF with MXFP4 experts that mlcx reads as gpt-oss and llama.cpp loads, its weights
small random values (gguf-py's dequantize as the reference)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT
from gguf import GGUFReader
from gguf.quants import dequantize

from mlcx.bench.peers.llama_server import BUILD
from mlcx.bench.workloads.named_models import RANDOM_MODELS
from mlcx.bench.workloads.random_gpt_oss import GptOssShape, write_random_gpt_oss
from mlcx.frontends.source import load_source

SMALL = GptOssShape(
    hidden=256, layers=2, heads=8, kv_heads=2, head_dim=32, experts=8, expert_width=128,
    vocab=1000, original_context=256,
)  # fmt: skip


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return write_random_gpt_oss(SMALL, tmp_path_factory.mktemp("gpt-oss") / "r.gguf")


def test_the_named_shape_is_gpt_oss_20b():
    shape = RANDOM_MODELS["gpt-oss-20b-random"]
    assert (shape.layers, shape.experts, shape.experts_used) == (24, 32, 4)
    assert (shape.hidden, shape.heads, shape.kv_heads, shape.head_dim) == (2880, 64, 8, 64)
    assert (shape.window, shape.context, shape.vocab) == (128, 131072, 201088)


def test_mlcx_reads_it_as_gpt_oss(small):
    source = load_source(str(small))
    cfg = source.config
    assert source.arch.name == "gpt_oss" and cfg.attn_sinks and cfg.sliding_window == 128
    assert (cfg.num_layers, cfg.num_experts, cfg.experts_per_token) == (2, 8, 4)
    assert (cfg.hidden_size, cfg.head_dim, cfg.expert_intermediate_size) == (256, 32, 128)
    assert cfg.rope_scaling["rope_type"] == "yarn" and cfg.context_window == 256 * 32


def test_its_weights_are_small_random_values(small):
    tensors = {t.name: t for t in GGUFReader(small).tensors}
    for name, qtype in (("blk.0.ffn_up_exps.weight", GT.MXFP4), ("blk.1.attn_q.weight", GT.Q8_0)):
        tensor = tensors[name]
        assert tensor.tensor_type == qtype
        weights = dequantize(np.asarray(tensor.data), qtype)
        assert 0.015 < weights.std() < 0.025 and abs(weights.mean()) < 1e-3


def test_llama_cpp_loads_it(small):
    """llama.cpp's own llama-bench runs it (where the cpu peer is built)."""
    binary = BUILD.bin_dir() / "llama-bench"
    if not binary.exists():
        pytest.skip(f"llama.cpp's cpu build is missing ({binary})")
    args = [str(binary), "-m", str(small), "-p", "8", "-n", "2", "-t", "1", "-r", "1", "-o", "csv"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gpt-oss" in done.stdout and "MXFP4" in done.stdout
