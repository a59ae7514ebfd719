"""One tiny model as a Hugging Face folder and as a GGUF file, both compiled by mlcx and held to
HF transformers: the checks every GGUF architecture's test makes (qwen2, qwen3, ...)."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as GT

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.compile.model import CompileRequest
from mlcx.frontends.convert import convert_weight, plan_formats
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.source import load_source
from mlcx.quantization.formats import format_from_name
from mlcx.quantization.schemes import get_quantization
from tests.support.compile_cache import compile_model
from tests.support.disk_cache import tree_digest
from tests.support.harness import Harness, hf_logits
from tests.support.hf_gguf_greedy import kept_reference
from tests.support.tiny_gguf import write_tiny_gguf
from tests.support.tiny_models import load_reference

TOL = 1e-4
GREEDY = 32
F32 = {"weight": GT.F32}


def compile_both(
    folder: Path, root: Path, gguf_writer=write_tiny_gguf, **request
) -> tuple[Path, Path, Path]:
    """(the f32 GGUF of `folder`, its cpu artifact, the HF folder's q0f32 cpu artifact);
    `gguf_writer(folder, path, types)` writes the GGUF; `request`: further CompileRequest
    fields for both (f32 pages unless given: see the `compiled` fixture)."""
    request.setdefault("kv_dtype", "float32")
    path = gguf_writer(folder, root / "tiny.gguf", F32)
    gguf_art, hf_art = (
        compile_model(
            CompileRequest(model=str(model), output=root / name, quantization=quant, **request)
        )
        for model, name, quant in ((path, "gguf-art", None), (folder, "hf-art", "q0f32"))
    )
    return path, gguf_art, hf_art


def assert_same_config_and_weights(
    folder, path, gguf_art, hf_art, arch: str, rope_scaling: dict | None = None
):
    """The GGUF's config and converted weights equal the HF folder's; returns (the HF
    folder's config, the converted weights). `rope_scaling`: stands for the GGUF's where the
    file stores the scaling in another form (llama3 as rope_freqs)."""
    gguf_source, hf_source = load_source(str(path)), load_source(str(folder))
    assert gguf_source.arch.name == hf_source.arch.name == arch
    ours_cfg, theirs_cfg = gguf_source.config, hf_source.config
    if rope_scaling is not None:
        ours_cfg = replace(ours_cfg, rope_scaling=rope_scaling)
    # GGUF stores the epsilon as float32
    assert np.float32(ours_cfg.rms_norm_eps) == np.float32(theirs_cfg.rms_norm_eps)
    assert replace(ours_cfg, rms_norm_eps=theirs_cfg.rms_norm_eps) == theirs_cfg
    ours = dict(load_arrays(Artifact(gguf_art).params_dir))
    theirs = dict(load_arrays(Artifact(hf_art).params_dir))
    assert ours.keys() == theirs.keys()
    for name, array in ours.items():
        np.testing.assert_array_equal(array, theirs[name], err_msg=name)
    return theirs_cfg, ours


def _greedy_hf(reference, prompt: list[int]) -> tuple[np.ndarray, list[int], list[np.ndarray]]:
    """transformers' prompt logits, then GREEDY greedy tokens and each step's logits row."""
    prompt_logits = hf_logits(reference, prompt)
    seq, rows = list(prompt), [prompt_logits[-1]]
    for _ in range(GREEDY):
        seq.append(int(np.argmax(rows[-1])))
        if len(rows) < GREEDY:
            rows.append(hf_logits(reference, seq)[-1])
    return prompt_logits, seq[len(prompt) :], rows


@functools.cache
def _greedy_hf_of(folder: str, prompt_tokens: int) -> tuple[list[int], tuple]:
    """The seeded prompt and _greedy_hf of the folder's own transformers model: a family's HF
    and GGUF artifacts are held to the same reference. Kept between runs, as the GGUF greedy
    references are (hf_gguf_greedy: keyed by the folder's bytes, the prompt, the step count and
    the versions of transformers, torch and gguf)."""

    def write(dest: Path) -> None:
        reference = load_reference(Path(folder))
        prompt = _prompt(reference.config.vocab_size, prompt_tokens)
        logits, tokens, rows = _greedy_hf(reference, prompt)
        with open(dest, "wb") as out:
            np.savez(out, prompt=prompt, logits=logits, tokens=tokens, rows=np.stack(rows))

    parts = ["gguf_vs_hf", tree_digest(Path(folder)), str(prompt_tokens), str(GREEDY)]
    found = np.load(kept_reference(parts, ".npz", write))
    rows = list(found["rows"])
    return found["prompt"].tolist(), (found["logits"], found["tokens"].tolist(), rows)


def _prompt(vocab: int, prompt_tokens: int) -> list[int]:
    return np.random.default_rng(7).integers(0, vocab, prompt_tokens).tolist()


def assert_matches_transformers(
    folder: Path, artifact: Path, prompt_tokens: int = 29, reference=None, tol: float = TOL
) -> None:
    """fp32 logits within `tol` over a `prompt_tokens` prompt and at each of GREEDY greedy
    steps, with the same tokens; `reference`: transformers' model where not
    load_reference(folder)."""
    if reference is None:
        prompt, (want_logits, want_tokens, want_rows) = _greedy_hf_of(str(folder), prompt_tokens)
    else:
        prompt = _prompt(reference.config.vocab_size, prompt_tokens)
        want_logits, want_tokens, want_rows = _greedy_hf(reference, prompt)
    harness = Harness(artifact, num_blocks=32)
    got = harness.step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - want_logits).max() <= tol
    tokens, row = [], got[-1]
    for want_row in want_rows:
        assert np.abs(row - want_row).max() <= tol
        tokens.append(int(np.argmax(row)))
        row = harness.decode({0: tokens[-1]})[0]
    assert tokens == want_tokens


def assert_quantized_file_matches(
    folder: Path, tmp_path: Path, compile_options: dict | None = None, **hf_kwargs
) -> None:
    """Q4_0/Q4_1/Q8_0 tensors as in a downloaded file: mlcx keeps the blocks, transformers
    dequantizes the same file with the `gguf` package; both then compute in fp32.
    `compile_options`: further CompileRequest fields; `hf_kwargs`: config values transformers'
    GGUF loader does not read."""
    import torch
    from transformers import AutoModelForCausalLM

    path = write_tiny_gguf(folder, tmp_path / "q.gguf")
    options = {"kv_dtype": "float32", **(compile_options or {})}  # as the `compiled` fixture
    request = CompileRequest(model=str(path), output=tmp_path / "art", **options)
    artifact = compile_model(request)
    reference = AutoModelForCausalLM.from_pretrained(
        tmp_path, gguf_file=path.name, dtype=torch.float32, **hf_kwargs
    ).eval()
    down = format_from_name(Artifact(artifact).config.weight_formats["layers.0.mlp.down"])
    assert down.row_major.name == "int8-sym-g32-float16"  # the Q8_0 blocks kept
    prompt = np.random.default_rng(8).integers(0, reference.config.vocab_size, 21).tolist()
    got = Harness(artifact, num_blocks=32).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= TOL


def converted_weights(model) -> tuple[DecoderConfig, dict[str, np.ndarray]]:
    """The config and every converted weight array of a source, as `mlcx compile` writes them
    (q0f32 for a folder; an f32 GGUF's tensors kept as they are)."""
    source = load_source(str(model))
    quant = get_quantization("q0f32" if source.kind == "hf" else "gguf")
    formats = plan_formats(source.weights, source.tensors, quant)
    arrays = {}
    for spec in source.weights:
        arrays.update(convert_weight(spec, source.tensors, formats.get(spec.target), "float32"))
    return source.config, arrays
