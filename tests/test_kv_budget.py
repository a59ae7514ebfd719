"""The KV budget `mlcx compile` prints, against the cache's size worked out by hand: layers x
(K and V) x kv heads x head_dim x bytes per element, plus an int8 row's float32 scale."""

from __future__ import annotations

import pytest

from mlcx.artifact.config import ArtifactConfig
from mlcx.artifact.kv_budget import human_bytes, kv_budget
from mlcx.frontends.decoder_config import DecoderConfig

# Llama 3 8B's attention: 32 layers, 8 kv heads of 128 features
LLAMA3_8B = DecoderConfig(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_layers=32,
    num_heads=32,
    num_kv_heads=8,
    head_dim=128,
    context_window=131072,
)


def _artifact(kv_dtype: str, context: int, page_size: int = 16) -> ArtifactConfig:
    return ArtifactConfig(
        model_name="llama3-8b",
        architecture="llama",
        model=LLAMA3_8B,
        quantization="q4f16",
        activation_dtype="float16",
        target="cpu",
        tvm_target={},
        library="model.so",
        runtime="tvm",
        context_window=context,
        prefill_chunk=512,
        page_size=page_size,
        kv_dtype=kv_dtype,
    )


@pytest.mark.parametrize(
    ("kv_dtype", "per_token"),
    [
        ("float16", 32 * 2 * 8 * 128 * 2),
        ("float32", 32 * 2 * 8 * 128 * 4),
        ("int8", 32 * 2 * 8 * 132),
    ],
)
def test_bytes_per_token_and_for_the_window(kv_dtype, per_token):
    budget = kv_budget(_artifact(kv_dtype, 8192))
    assert budget.bytes_per_token == per_token
    assert budget.total_bytes == per_token * 8192
    assert budget.dtype == kv_dtype and budget.tokens == 8192


def test_a_window_off_the_page_size_counts_whole_pages():
    budget = kv_budget(_artifact("float16", 100, page_size=16))
    assert budget.total_bytes == budget.bytes_per_token * 112


def test_the_printed_line():
    assert kv_budget(_artifact("float16", 8192)).describe() == (
        "KV cache: float16, 128 KiB/token, 1 GiB for 8192 tokens"
    )
    assert kv_budget(_artifact("int8", 131072)).describe() == (
        "KV cache: int8, 66 KiB/token, 8.25 GiB for 131072 tokens"
    )
    assert human_bytes(36 * 1024) == "36 KiB" and human_bytes(288 * 2**20) == "288 MiB"
    assert human_bytes(512) == "512 B" and human_bytes(1000 * 2**20) == "1000 MiB"
