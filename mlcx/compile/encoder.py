"""The image encoder of a vision-language model, compiled beside its text model
(mlcx.artifact.encoder describes the folder it writes): from the model's Hugging Face folder,
or from a llama.cpp mmproj GGUF given with `--mmproj`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import tokenizers
import tvm

from mlcx.artifact.encoder import ENCODER_FILE, EncoderConfig, Preprocess, encoder_dir
from mlcx.artifact.weight_shards import ShardWriter
from mlcx.compile.encoder_preprocess import HALF, preprocess_config
from mlcx.frontends.encoders import ENCODERS, EncoderFamily, for_mmproj
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.source import ModelSource
from mlcx.kernels.step_params import PIXELS
from mlcx.passes.pipeline_cpu import encoder_cpu_pipeline
from mlcx.targets import device_code
from mlcx.targets.base import BuildOptions, Target
from mlcx.targets.device_code import ACTIVATION_DTYPE
from mlcx.targets.llvm_objects import compile_cpu
from mlcx.targets.mobile import DEFAULT_PREFIX

log = logging.getLogger(__name__)
ENCODER_DTYPE = "float32"  # on cpu; GPU targets follow the text model's activations
VISION_PREFIX = "vision_"  # phones: the encoder's symbols follow the model's prefix with this


def _write_cpu(mod: tvm.IRModule, target: Target, tvm_target, options, folder: Path) -> str:
    library = "encoder-cpu.so"
    pipeline = encoder_cpu_pipeline(tvm_target, options.encoder_linears == "int16")
    executable = compile_cpu(mod, tvm_target, pipeline, "default")
    executable.export_library(str(folder / library))
    return library


def _write_cuda(mod: tvm.IRModule, target: Target, tvm_target, options, folder: Path) -> str:
    """dlight's rules as for the text model, no CUDA graphs (one call an image)."""
    library = "encoder-cuda.so"
    executable = device_code.build_gpu(mod, tvm_target, cuda_graphs=False)
    executable.export_library(str(folder / library))
    return library


def _write_webgpu(mod: tvm.IRModule, target: Target, tvm_target, options, folder: Path) -> str:
    """A plan of its own (vision/webgpu-plan.json, vision/shaders/): the text plan's kernels
    and the encoder's are named by TVM alone, so one plan could not hold both."""
    return target.build(mod, tvm_target, options).write(folder)


def _write_stem(mod: tvm.IRModule, target: Target, tvm_target, options, folder: Path) -> str:
    """metal, iphone, android: the target's own build and export, the files named encoder-*;
    on phones every symbol under `<prefix>vision_`, so an app links the encoder beside the
    model and opens it with SystemLib("<prefix>vision_")."""
    prefix = (options.system_lib_prefix or DEFAULT_PREFIX) + VISION_PREFIX
    options = replace(options, system_lib_prefix=prefix)
    executable = target.build(mod, tvm_target, options)
    return target.export(executable, folder, options, stem="encoder")  # type: ignore[call-arg]


# TVM 0.27's AttachGlobalSymbol fails on the tensorized (simdgroup) f16 matmuls dlight writes
# for Metal once a system-lib prefix is attached ("Cannot treat type ir.Call as type ir.Expr"):
# the iPhone encoder stays float32 until that is fixed upstream.
F32_ENCODER_TARGETS = ("iphone",)


def encoder_dtype(target: Target, activation_dtype: str) -> str:
    """float32 on cpu; on GPU targets the text model's activation dtype (f16 models get an f16
    encoder: half the weights, the GPUs' fast path)."""
    if target.kernel_kind != "gpu" or target.name in F32_ENCODER_TARGETS:
        return ENCODER_DTYPE
    return activation_dtype


# target -> writes the compiled `embed_image` into the vision folder, returns its file name
BUILDS: dict[str, Callable[..., str]] = {
    "cpu": _write_cpu,
    "cuda": _write_cuda,
    "webgpu": _write_webgpu,
    "vulkan": _write_webgpu,  # the same plan, run on a Vulkan adapter
    "metal": _write_stem,
    "iphone": _write_stem,
    "android": _write_stem,
}


@dataclass(frozen=True)
class EncoderSource:
    family: EncoderFamily
    config: Any  # the family's config
    # (param names, dtype) -> arrays in the params' order
    arrays: Callable[[list[str], str], Iterator[tuple[str, np.ndarray]]]
    preprocess: Preprocess


def _tokenizer(source: ModelSource) -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_str(source.tokenizer_assets().tokenizer_json)


def _from_folder(source: ModelSource) -> EncoderSource:
    family = ENCODERS[source.arch.encoder or ""]
    cfg = family.config_from_hf(source.tensors.config)  # type: ignore[attr-defined]
    preprocess = preprocess_config(source.path, cfg)
    return EncoderSource(
        family, cfg, lambda params, dtype: family.arrays(params, source.tensors, dtype), preprocess
    )


def from_mmproj(source: ModelSource, path: Path) -> EncoderSource:
    """The encoder of llama.cpp's mmproj file for the text model `source`; refuses a file of a
    projector mlcx does not read, or one made for another text model."""
    ckpt = GGUFCheckpoint(path)
    family = for_mmproj(ckpt, source.arch.name, source.config.hidden_size)
    token_id = _tokenizer(source).token_to_id
    cfg = family.config_from_mmproj(ckpt, source.config.hidden_size, token_id)
    resize = family.mmproj_preprocess or (lambda ckpt, cfg: {"size": cfg.image_size})
    preprocess = Preprocess(
        mean=tuple(ckpt.meta("clip.vision.image_mean") or HALF),
        std=tuple(ckpt.meta("clip.vision.image_std") or HALF),
        **resize(ckpt, cfg),
    )
    return EncoderSource(
        family, cfg, lambda params, dtype: family.mmproj_arrays(params, ckpt, dtype), preprocess
    )


def compile_encoder(
    source: ModelSource,
    target: Target,
    tvm_target,
    out: Path,
    mmproj: Path | None = None,
    options: BuildOptions | None = None,
    dtype: str = ENCODER_DTYPE,
) -> bool:
    """Write the encoder folder, its math in `dtype` (pixels in and rows out stay float32);
    False (and a warning) where the target cannot run it yet."""
    if target.name not in BUILDS:
        targets = ", ".join(BUILDS)
        log.warning("the image encoder compiles for %s so far: %s: text only", targets, target.name)
        return False
    encoder = from_mmproj(source, mmproj) if mmproj else _from_folder(source)
    cfg = encoder.config
    module = encoder.family.build(cfg, dtype)
    mod, params = module.export_tvm(spec=module.export_spec())
    mod = mod.with_attr(ACTIVATION_DTYPE, dtype)
    folder = encoder_dir(out)
    folder.mkdir(parents=True, exist_ok=True)
    library = BUILDS[target.name](mod, target, tvm_target, options or BuildOptions(), folder)
    writer = ShardWriter(folder / "params")
    for name, array in encoder.arrays([n for n, _ in params], dtype):
        writer.add(name, array)
    writer.finish()
    marker, text = encoder.family.image_text(_tokenizer(source), cfg)
    config = EncoderConfig(
        family=encoder.family.name,
        config=cfg.to_dict(),
        library=library,
        preprocess=encoder.preprocess,
        device=target.name,
        image_token_id=cfg.image_token_id,
        tokens_per_image=getattr(cfg, "tokens_per_image", 0),
        bidirectional=encoder.family.bidirectional,
        image_marker=marker,
        image_text=text,
        dtype=dtype,
        inputs=encoder.family.inputs(cfg) if encoder.family.inputs else (PIXELS,),
    )
    (folder / ENCODER_FILE).write_text(config.to_json())
    return True
