"""`--kv-dtype int8` on the real default model (SmolLM2-135M-Instruct Q4_1): the same greedy
tokens as the f16 cache, prompt logits within LOGIT_TOL of f16's, in 68/128 of its memory."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from tests.support.harness import Harness

pytestmark = pytest.mark.slow
PROMPT = "The history of the Roman Empire is"
# Measured here: the prompt's logits (about +-36) move by at most 0.43 from f16's; each key and
# value element is rounded to 1/254 of the largest magnitude of its row.
LOGIT_TOL = 0.75


def _run(artifact) -> tuple[list[int], np.ndarray]:
    llm = LLM(artifact)
    ids = llm.tokenizer.encode(PROMPT)
    [out] = llm.generate([ids], SamplingParams.greedy(max_tokens=32, ignore_eos=True))[0].outputs
    logits = Harness(artifact, num_blocks=8).step({1: ids}, all_rows=True)[1]
    return out.token_ids, logits


def test_int8_kv_keeps_f16s_greedy_tokens_and_prompt_logits(default_artifact):
    f16, int8 = default_artifact(), default_artifact("int8")  # the default: f16
    layouts = [Artifact(a).config.kv_layout for a in (f16, int8)]
    assert layouts[0].cache_dtype == "float16"
    assert layouts[0].pages_bytes(68) == layouts[1].pages_bytes(128)  # head_dim 64
    (f16_tokens, f16_logits), (int8_tokens, int8_logits) = _run(f16), _run(int8)
    assert int8_tokens == f16_tokens
    assert len(f16_tokens) == 32
    assert np.abs(int8_logits - f16_logits).max() <= LOGIT_TOL
