"""The default model (SmolLM2-135M-Instruct Q4_1) requantized by llama.cpp's own
`llama-quantize --allow-requantize` to IQ4_XS (where it is built; skipped otherwise),
compiled by mlcx for cpu with every tensor kept in the file's own type:

- no tensor is dequantized, and the artifact is within 10% of the GGUF's size;
- greedy tokens equal transformers' reading the same file (it dequantizes with `gguf`) for
  at least 20 of 24: requantizing twice leaves a noisier model than Q4_1, where two float
  summation orders may pick different tokens late in a run.

The model's 576-wide rows are no multiple of 256, so llama.cpp stores most tensors in its
fallback (IQ4_NL for IQ4_XS) and only the 1536-wide down projections as IQ4_XS (three as
Q5_K); each is kept. The file is made once, into the mlcx cache.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType as GT
from gguf import GGUFReader

from mlcx.cache import cache_dir
from mlcx.compile.model import CompileRequest
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from tests.models.test_llama_quantize_kquants import _llama_quantize
from tests.support.compile_cache import compile_model
from tests.support.default_model import DEFAULT, default_gguf
from tests.support.hf_gguf_greedy import hf_gguf_greedy

pytestmark = pytest.mark.slow
PROMPT = "The history of the Roman Empire is"
TOKENS = 24
# mix -> the types llama.cpp writes for it here (its fallbacks for the 576-wide rows, IQ4_XS
# for most down projections). Left out for the suite's time (each mix is a 135M compile and a
# transformers run): Q3_K_M writes only Q4_0 / Q5_0 / Q5_1 / Q4_K / Q5_K / Q8_0 here, Q2_K only
# Q4_0 and Q3_K, whose blocks from llama-quantize test_llama_quantize_kquants.py holds.
MIXES = {"IQ4_XS": {GT.IQ4_NL, GT.IQ4_XS}}


def requantized(mix: str) -> Path:
    """The default GGUF requantized to `mix` by llama-quantize, made once into the cache."""
    out = cache_dir() / "requantized" / f"{DEFAULT}.{mix}.gguf"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_suffix(".partial")
        cmd = [str(_llama_quantize()), "--allow-requantize", str(default_gguf()), str(partial), mix]
        result = subprocess.run(cmd, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-2000:]
        partial.rename(out)
    return out


def _bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """mix -> (gguf, cpu artifact, warnings while compiling), compiled once each."""
    if _llama_quantize() is None:
        pytest.skip("llama-quantize is not built (see docs/kquants.md)")
    cache: dict = {}

    def build(mix: str):
        if mix not in cache:
            path = requantized(mix)
            records: list[str] = []
            handler = logging.Handler(logging.WARNING)
            handler.emit = lambda record: records.append(record.getMessage())
            logging.getLogger("mlcx").addHandler(handler)
            try:
                out = tmp_path_factory.mktemp(mix) / "cpu"
                art = compile_model(CompileRequest(str(path), "cpu", output=out))
            finally:
                logging.getLogger("mlcx").removeHandler(handler)
            cache[mix] = (path, art, records)
        return cache[mix]

    return build


@pytest.fixture(scope="module")
def transformers_greedy():
    """mix -> (prompt ids, TOKENS greedy tokens of transformers on that file)."""
    return lambda path: hf_gguf_greedy(path, PROMPT, TOKENS)


@pytest.mark.parametrize("mix", list(MIXES))
def test_every_tensor_is_kept_and_the_artifact_is_the_files_size(built, mix):
    path, art, warnings = built(mix)
    types = {GT(t.tensor_type) for t in GGUFReader(str(path)).tensors if len(t.shape) > 1}
    assert MIXES[mix] <= types, types
    assert not [w for w in warnings if "dequantized" in w or "re-quantized" in w], warnings
    ratio = _bytes(art) / path.stat().st_size
    print(f"{mix}: artifact {_bytes(art)} B / GGUF {path.stat().st_size} B = {ratio:.3f}")
    assert 0.9 <= ratio <= 1.1, ratio


@pytest.mark.parametrize("mix", list(MIXES))
def test_greedy_tokens_follow_transformers_on_the_same_file(built, transformers_greedy, mix):
    path, art, _ = built(mix)
    prompt_ids, want = transformers_greedy(path)
    llm = LLM(art)
    params = SamplingParams.greedy(max_tokens=TOKENS, ignore_eos=True)
    [ours] = llm.generate([prompt_ids], params)[0].outputs
    same = sum(a == b for a, b in zip(ours.token_ids, want, strict=True))
    print(f"{mix}: {same} of {TOKENS} greedy tokens equal transformers'")
    assert same >= 20, (same, ours.token_ids, want)
