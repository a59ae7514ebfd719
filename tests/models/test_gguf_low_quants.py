"""GGUFs mixed as llama.cpp's Q2_K and IQ4_XS files are (tiny random Llamas, blocks
laid out by mlcx's encoder from round-to-nearest codes), kept bit for bit on cpu.

- no tensor is dequantized or re-quantized, and every kept weight packed back into GGUF
  blocks equals the file's bytes (a fused q/k/v or gate/up of two types stays two parts);
- logits within 1e-4 of transformers', which dequantizes the same file with `gguf`.
(The webgpu plan of the same files: tests/webgpu/test_low_quants_wgpu.py.)
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from gguf import GGUFReader

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.compile.model import CompileRequest
from mlcx.frontends.source import load_source
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.formats import format_from_name
from mlcx.quantization.ggml_blocks import KIND_OF, encode_blocks
from mlcx.quantization.stacked import StackedFormat
from tests.models.test_gguf_kquants import _Collect, _file_rows, _sources_in
from tests.support.compile_cache import compile_model
from tests.support.harness import assert_prompt_and_greedy_steps_match
from tests.support.kquant_files import KQUANT_SPEC, LOW_MIXES, write_mix
from tests.support.reference_pages import reference_pages

TOL = 1e-4
TYPE_OF = {kind: gtype for gtype, kind in KIND_OF.items()}


@pytest.fixture(scope="module")
def built(tiny_model, tmp_path_factory):
    """mix name -> (gguf path, cpu artifact, warnings logged while compiling)."""
    cache: dict = {}

    def build(mix: str):
        if mix not in cache:
            root = tmp_path_factory.mktemp(mix)
            path = write_mix(tiny_model(KQUANT_SPEC), root / f"{mix}.gguf", mix)
            handler = _Collect()
            logging.getLogger("mlcx").addHandler(handler)
            try:
                request = CompileRequest(str(path), "cpu", output=root / "cpu", **reference_pages())
                art = compile_model(request)
            finally:
                logging.getLogger("mlcx").removeHandler(handler)
            cache[mix] = (path, art, handler.messages)
        return cache[mix]

    return build


def _kept_parts(art, source):
    """(spec, part index or None, rows or None, BlockFormat) of every kept block part."""
    formats = Artifact(art).config.weight_formats
    for spec in source.weights:
        if spec.target in formats:
            fmt = format_from_name(formats[spec.target])
            parts = fmt.parts if isinstance(fmt, StackedFormat) else ((None, fmt),)
            for i, (rows, part) in enumerate(parts):
                yield spec, (None if rows is None else i), rows, part


@pytest.mark.parametrize("mix", list(LOW_MIXES))
def test_blocks_round_trip_bit_for_bit(built, mix):
    path, art, warnings = built(mix)
    assert not [w for w in warnings if "dequantized" in w or "re-quantized" in w], warnings
    reader, source = GGUFReader(str(path)), load_source(str(path))
    arrays = dict(load_arrays(Artifact(art).params_dir))
    kinds, first = set(), {}
    for spec, i, rows, part in _kept_parts(art, source):
        start = first.get(spec.target, 0)
        count = len(spec.sources) if rows is None else _sources_in(reader, spec, start, rows)
        first[spec.target] = start + count
        if not isinstance(part, BlockFormat):
            continue
        prefix = f"{spec.target}." + ("" if i is None else f"p{i}_")
        codes, planes = part.parts({s: arrays[prefix + s] for s in part.suffixes})
        want = _file_rows(reader, spec, list(spec.sources[start : start + count]), start)
        got = encode_blocks(codes, planes, TYPE_OF[part.kind])
        np.testing.assert_array_equal(got, want, spec.target)
        kinds.add(part.kind)
    assert kinds & {"q2_k", "q3_k", "iq4_nl", "iq4_xs"}, kinds


@pytest.mark.parametrize(
    "mix, target, parts",
    [
        ("iq4_xs", "layers.1.mlp.gate_up", ["iq4_xs", "iq4_nl"]),
        ("q2_k", "layers.1.attn.qkv", ["q2_k", "q3_k"]),
    ],
)
def test_fused_weights_of_two_types_stay_two_parts(built, mix, target, parts):
    _, art, _ = built(mix)
    fmt = format_from_name(Artifact(art).config.weight_formats[target])
    assert isinstance(fmt, StackedFormat)
    assert [f.row_major for _, f in fmt.parts] == [BlockFormat(k) for k in parts]


@pytest.mark.parametrize("mix", list(LOW_MIXES))
def test_logits_match_transformers(built, mix):
    import torch
    from transformers import AutoModelForCausalLM

    path, art, _ = built(mix)
    reference = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    ).eval()
    prompt = np.random.default_rng(5).integers(0, reference.config.vocab_size, 23).tolist()
    assert_prompt_and_greedy_steps_match(art, reference, prompt, 3, TOL)
