"""`mlcx compile --context-window N` on a tiny YaRN Qwen2 whose config keeps the 32-token
pretraining length in max_position_embeddings: up to 32 x factor 4 = 128 tokens compile, and
the KV budget is printed; 129 is refused in one line naming the maximum."""

from __future__ import annotations

from mlcx.artifact.config import Artifact
from mlcx.artifact.kv_budget import kv_budget
from tests.support.cli import compile_here, one_line_error
from tests.support.tiny_models import YARN


def test_the_scaled_maximum_compiles_and_prints_the_kv_budget(tiny_model, tmp_path):
    out = tmp_path / "art"
    args = ("--context-window", "128", "-q", "q0f32", "-o", str(out))
    result = compile_here(str(tiny_model(YARN)), *args)
    assert result.returncode == 0, result.stderr
    config = Artifact(out).config
    assert config.context_window == 128
    # 2 layers x K, V x 2 kv heads x 16 features x 2 bytes (the CPU default: f16 pages)
    assert kv_budget(config).bytes_per_token == 2 * 2 * 2 * 16 * 2
    assert "KV cache: float16, 256 B/token, 32 KiB for 128 tokens" in result.stdout


def test_a_window_past_the_maximum_is_refused(tiny_model, tmp_path):
    args = ("--context-window", "129", "-o", str(tmp_path / "art"))
    line = one_line_error(compile_here(str(tiny_model(YARN)), *args))
    assert "maximum of 128 tokens" in line and "--context-window 128" in line
