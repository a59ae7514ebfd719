"""`mlcx bench speculative` on tiny models (the echo workload needs a 2k context), and the
truncated-GGUF draft it can cut. Speeds themselves are never asserted."""

from __future__ import annotations

import re

import gguf
import numpy as np
import pytest

from mlcx.bench.workloads.truncated_gguf import write_truncated_gguf
from mlcx.runtime.speculative.config import DEFAULT_NUM_SPECULATIVE
from tests.support.cli import one_line_error, run_mlcx
from tests.support.tiny_gguf import write_tiny_gguf
from tests.support.tiny_models import TinySpec

SPEC = TinySpec(layers=3, context=2048, seed=6)
ROW = re.compile(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x\s+(\d+)/(\d+)\s+([\d.]+)%\s+(\d+)$")


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled(SPEC, "q0f32")


def rows(stdout: str) -> dict[int, tuple]:
    found = [ROW.match(line) for line in stdout.splitlines()]
    return {int(m[1]): tuple(float(x) for x in m.groups()[1:]) for m in found if m}


def test_prompt_lookup_bench_reports_both_speeds_and_the_acceptance(artifact):
    args = ["bench", "speculative", str(artifact), "--speculative", "ngram", "-c", "1"]
    result = run_mlcx(*args, "-c", "6", "--reps", "1", "--max-tokens", "12")
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert set(table) == {1, 6}
    plain, spec, _, accepted, proposed, _, off = table[6]
    assert plain > 0 and spec > 0 and off > 0  # 6 streams: speculation off at first
    assert f"speculative=ngram num_speculative={DEFAULT_NUM_SPECULATIVE}" in result.stdout


def test_draft_bench_with_the_target_as_draft_keeps_every_draft(artifact):
    args = ["bench", "speculative", str(artifact), "--speculative", "draft", "--draft"]
    result = run_mlcx(*args, str(artifact), "-c", "1", "--reps", "1", "--max-tokens", "10")
    assert result.returncode == 0, result.stderr
    _, _, _, accepted, proposed, rate, _ = rows(result.stdout)[1]
    assert accepted == proposed > 0 and rate == 100.0
    lone = run_mlcx("bench", "speculative", str(artifact), "--speculative", "draft")
    assert "--draft MODEL or --draft-blocks" in one_line_error(lone)
    off = run_mlcx("bench", "speculative", str(artifact))
    assert off.returncode != 0 and "--speculative" in off.stderr


def test_truncated_gguf_keeps_the_first_and_last_blocks_renumbered(tiny_model, tmp_path):
    src = write_tiny_gguf(tiny_model(SPEC), tmp_path / "tiny.gguf")
    out = write_truncated_gguf(src, tmp_path / "cut.gguf", 1, 1)
    full, cut = gguf.GGUFReader(str(src)), gguf.GGUFReader(str(out))
    assert int(cut.fields["llama.block_count"].contents()) == 2
    tensors = {t.name: t for t in full.tensors}
    kept = {t.name: t for t in cut.tensors}
    for name, tensor in kept.items():
        source = name.replace("blk.1.", "blk.2.")
        np.testing.assert_array_equal(tensor.data, tensors[source].data)
    assert len(kept) == len(tensors) - (len(tensors) - 3) // 3  # one block of three left out
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges"):
        assert cut.fields[key].contents() == full.fields[key].contents()
    with pytest.raises(ValueError, match="has 3 blocks"):
        write_truncated_gguf(src, tmp_path / "bad.gguf", 2, 1)
