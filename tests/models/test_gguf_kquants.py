"""K-quant GGUFs (Q4_K, Q5_K, Q6_K and a Q4_K_M-style mix) kept bit for bit.

Tiny random Llamas (every in_features a multiple of 256, as K-quants need) are written as
GGUF files: K-quant blocks from round-to-nearest codes laid out as ggml lays them (the `gguf`
package quantizes only the 32-weight types), Q5_0/Q5_1/Q8_0 with `gguf`'s own quantizer.
mlcx compiles each keeping the blocks; transformers dequantizes the same file with `gguf`.
- every kept weight, packed back into GGUF blocks, equals the file's bytes;
- logits within 1e-4 of transformers' on the cpu artifact.
(The webgpu plan of the same files: tests/webgpu/test_kquants_wgpu.py.)
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT
from gguf import GGUFReader

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.compile.model import CompileRequest
from mlcx.frontends.source import load_source
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.formats import format_from_name
from mlcx.quantization.ggml_blocks import encode_blocks
from mlcx.quantization.stacked import StackedFormat
from tests.support.compile_cache import compile_model
from tests.support.harness import Harness, assert_prompt_and_greedy_steps_match, hf_logits
from tests.support.kquant_files import (
    ARCH_SPECS,
    GEMMA3_SPEC,
    KQUANT_SPEC,
    MIXES,
    TIED_SPEC,
    write_mix,
)
from tests.support.reference_pages import reference_pages

TOL = 1e-4
TYPE_OF = {"q4_k": GT.Q4_K, "q5_k": GT.Q5_K, "q6_k": GT.Q6_K, "q5_0": GT.Q5_0, "q5_1": GT.Q5_1}


@pytest.fixture(scope="module")
def built(tiny_model, tmp_path_factory):
    """mix name -> (gguf path, cpu artifact, warnings logged while compiling)."""
    cache: dict = {}

    def build(mix: str):
        if mix not in cache:
            spec = TIED_SPEC if mix == "q4_k_m_tied" else KQUANT_SPEC
            root = tmp_path_factory.mktemp(mix)
            path = write_mix(tiny_model(spec), root / f"{mix}.gguf", mix)
            handler = _Collect()
            logging.getLogger("mlcx").addHandler(handler)
            try:
                art = compile_model(
                    CompileRequest(str(path), "cpu", output=root / "cpu", **reference_pages())
                )
            finally:
                logging.getLogger("mlcx").removeHandler(handler)
            cache[mix] = (path, art, handler.messages)
        return cache[mix]

    return build


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _file_rows(reader: GGUFReader, spec, names: list[str], first: int) -> np.ndarray:
    """The file's raw block rows of `names` (spec sources first, first + 1, ...), each reordered
    by the spec's row transform (llama.cpp's q/k permutation undone), stacked."""
    tensors = {t.name: t for t in reader.tensors}
    rows = []
    for i, name in enumerate(names):
        data = np.asarray(tensors[name].data)
        data = data.reshape(int(tensors[name].shape[-1]), -1)
        transform = spec.transform(first + i)
        rows.append(transform(data) if transform else data)
    return np.concatenate(rows)


def _repacked(fmt: BlockFormat, arrays: dict, prefix: str) -> np.ndarray:
    codes, planes = fmt.parts({s: arrays[prefix + s] for s in fmt.suffixes})
    return encode_blocks(codes, planes, TYPE_OF[fmt.kind])


@pytest.mark.parametrize("mix", list(MIXES))
def test_blocks_round_trip_bit_for_bit(built, mix):
    path, art, warnings = built(mix)
    assert not [w for w in warnings if "dequantized" in w or "re-quantized" in w], warnings
    reader, source = GGUFReader(str(path)), load_source(str(path))
    formats = Artifact(art).config.weight_formats
    arrays = dict(load_arrays(Artifact(art).params_dir))
    kept = 0
    for spec in source.weights:
        if spec.target not in formats:
            continue
        fmt = format_from_name(formats[spec.target])
        parts = fmt.parts if isinstance(fmt, StackedFormat) else ((None, fmt),)
        first = 0
        for i, (rows, part) in enumerate(parts):
            count = len(spec.sources) if rows is None else _sources_in(reader, spec, first, rows)
            if isinstance(part, BlockFormat):
                prefix = f"{spec.target}." + ("" if rows is None else f"p{i}_")
                want = _file_rows(reader, spec, list(spec.sources[first : first + count]), first)
                np.testing.assert_array_equal(_repacked(part, arrays, prefix), want, spec.target)
                kept += 1
            first += count
    assert kept >= 2 * KQUANT_SPEC.layers


def _sources_in(reader, spec, first: int, rows: int) -> int:
    shapes = {t.name: int(t.shape[-1]) for t in reader.tensors}
    count = covered = 0
    while covered < rows:
        covered += shapes[spec.sources[first + count]]
        count += 1
    return count


@pytest.mark.parametrize("mix", list(MIXES))
def test_logits_match_transformers(built, mix):
    import torch
    from transformers import AutoModelForCausalLM

    path, art, _ = built(mix)
    reference = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    ).eval()
    prompt = np.random.default_rng(5).integers(0, reference.config.vocab_size, 23).tolist()
    assert_prompt_and_greedy_steps_match(art, reference, prompt, 3, TOL)


@pytest.mark.parametrize("arch", sorted(ARCH_SPECS))
def test_other_architectures_as_q4_k_m(tiny_model, tmp_path, arch):
    """Qwen2 (q/k/v biases, tied head), Qwen3 (q/k norms), Phi-3 (fused qkv and gate/up
    tensors) written with the Q4_K_M-style mix: logits within 1e-4 of transformers'."""
    import torch
    from transformers import AutoModelForCausalLM

    path = write_mix(tiny_model(ARCH_SPECS[arch]), tmp_path / f"{arch}.gguf", "q4_k_m")
    art = compile_model(
        CompileRequest(str(path), "cpu", output=tmp_path / "cpu", **reference_pages())
    )
    kinds = {getattr(format_from_name(f), "kind", "") for f in _formats(art)}
    assert {"q4_k", "q6_k"} <= kinds
    # config values transformers' GGUF loader does not read
    extra = {"phi3": {"pad_token_id": 1}, "qwen3": {"head_dim": 64}}.get(arch, {})
    reference = AutoModelForCausalLM.from_pretrained(
        tmp_path, gguf_file=path.name, dtype=torch.float32, **extra
    ).eval()
    prompt = np.random.default_rng(6).integers(0, reference.config.vocab_size, 21).tolist()
    got = Harness(art, num_blocks=32).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= TOL


def test_gemma3_as_q4_k_m(tiny_model, tmp_path):
    """Gemma 3 (tied Q6_K table, +1 norms, sliding and global layers) with the Q4_K_M-style
    mix. The float linear kernels, as in tests/models/test_gemma3.py: the int16 ones round
    activations by about 1e-4 of these larger logits."""
    import torch
    from transformers import AutoModelForCausalLM

    from mlcx.kernels.cpu.kernel_config import LinearKernels
    from mlcx.targets.base import BuildOptions
    from tests.support.tiny_models import sharpen_gemma3

    folder = sharpen_gemma3(tiny_model(GEMMA3_SPEC), tmp_path / "hf", GEMMA3_SPEC.seed)
    path = write_mix(folder, tmp_path / "gemma3.gguf", "q4_k_m_tied")
    options = BuildOptions(linear_kernels=LinearKernels.FLOAT)
    art = compile_model(
        CompileRequest(
            str(path), "cpu", output=tmp_path / "cpu", options=options, **reference_pages()
        )
    )
    assert {"q4_k", "q6_k"} <= {getattr(format_from_name(f), "kind", "") for f in _formats(art)}
    reference = AutoModelForCausalLM.from_pretrained(  # with what the GGUF loader drops
        tmp_path, gguf_file=path.name, dtype=torch.float32, **GEMMA3_SPEC.extra
    ).eval()
    prompt = np.random.default_rng(7).integers(0, reference.config.vocab_size, 21).tolist()
    got = Harness(art, num_blocks=32).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= TOL


def _formats(art) -> list[str]:
    names = []
    for name in Artifact(art).config.weight_formats.values():
        fmt = format_from_name(name)
        parts = fmt.parts if isinstance(fmt, StackedFormat) else ((0, fmt),)
        names += [part.row_major.name for _, part in parts if hasattr(part, "row_major")]
    return names


def test_the_mix_keeps_each_tensor_in_its_own_format(built):
    _, art, _ = built("q4_k_m")
    formats = {k: format_from_name(v) for k, v in Artifact(art).config.weight_formats.items()}
    assert formats["layers.0.mlp.down"].row_major == BlockFormat("q6_k")
    assert formats["layers.1.mlp.down"].row_major == BlockFormat("q4_k")
    assert formats["lm_head"].row_major == BlockFormat("q6_k")
    qkv = formats["layers.0.attn.qkv"]  # q, k Q4_K; v Q6_K: two parts, each kept
    assert isinstance(qkv, StackedFormat)
    assert [f.row_major for _, f in qkv.parts] == [BlockFormat("q4_k"), BlockFormat("q6_k")]


def test_requantizing_a_k_quant_file_says_it_is_lossy(built, tmp_path, caplog):
    path, _, _ = built("q4_k")
    with caplog.at_level(logging.WARNING):
        compile_model(
            CompileRequest(str(path), "cpu", "q8f32", output=tmp_path / "q8", **reference_pages())
        )
    lossy = [r.message for r in caplog.records if "re-quantized" in r.message]
    assert lossy and all("lossy" in m and "Q4_K" in m for m in lossy)


def test_a_tensor_with_the_wrong_block_count_is_named():
    from mlcx.errors import ModelSourceError
    from mlcx.frontends.convert import convert_weight
    from mlcx.frontends.tensors import SourceTensor
    from mlcx.frontends.weight_spec import WeightSpec
    from mlcx.quantization.schemes import Role

    short = np.zeros((8, 144), np.uint8)  # one Q4_K block a row where 512 weights need two
    tensor = SourceTensor("blk.3.ffn_down.weight", (8, 512), GT.Q4_K, lambda: short, None)
    source = type("Source", (), {"get": lambda self, name: tensor, "names": lambda self: []})()
    spec = WeightSpec("layers.3.mlp.down", Role.LINEAR, (tensor.name,))
    with pytest.raises(ModelSourceError, match=r"blk\.3\.ffn_down\.weight: Q4_K data of shape"):
        convert_weight(spec, source, BlockFormat("q4_k"), "float32")
