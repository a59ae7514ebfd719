"""`mlcx compile` of an embedding model (a BERT encoder, a Qwen3-Embedding decoder):
folder -> library exporting `embed` + converted weights + tokenizer + EmbeddingArtifactConfig.

mlcx.compile.model.compile_model hands embedding folders here; there is no KV cache, so none of the
generative compile's page, context or KV-dtype knobs apply.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from mlcx.artifact.config import CONFIG_FILE
from mlcx.artifact.embedding_config import EmbeddingArtifactConfig
from mlcx.artifact.weight_shards import ShardWriter
from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.convert import iter_params, plan_formats
from mlcx.frontends.embedding_source import EmbeddingSource, load_embedding_source
from mlcx.kernels.cpu.weight_layout import cpu_weight_layout
from mlcx.passes.tuning.records import resolve_linear_kernels
from mlcx.quantization.schemes import get_quantization
from mlcx.targets.base import BuildOptions
from mlcx.targets.device_code import ACTIVATION_DTYPE
from mlcx.targets.registry import get_target
from mlcx.targets.webgpu_plan.build import build_plan

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (stage, done, total)
DEFAULT_QUANTIZATION = "q0f32"
# Targets an embedding model compiles for: those TVM's Relax VM runs, and the WebGPU plan (run
# by wgpu-native and in the browser; vulkan is the same plan). The mobile apps run the decoder's
# step functions only. cuda and metal are codegen-tested only.
EMBED_TARGETS = ("cpu", "cuda", "metal", "webgpu", "vulkan")


def _checked_target(name: str):
    if name not in EMBED_TARGETS:
        raise UnsupportedModelError(
            f"embedding models compile for {', '.join(EMBED_TARGETS)} only, not {name!r}"
        )
    return get_target(name)


def _checked_quantization(name: str | None):
    quant = get_quantization(name or DEFAULT_QUANTIZATION)
    if quant.activation_dtype != "float32" or quant.keeps_source_formats:
        raise UnsupportedModelError(
            f"embedding models compile with float32 activations (q0f32, q8f32, q4f32), "
            f"not {quant.name!r}"
        )
    return quant


def compile_embedding(
    folder: Path,
    output: Path,
    target_name: str = "cpu",
    quantization: str | None = None,
    options: BuildOptions = BuildOptions(),
    progress: Progress | None = None,
) -> Path:
    report = progress or (lambda stage, done, total: None)
    started = time.perf_counter()
    target = _checked_target(target_name)
    quant = _checked_quantization(quantization)
    report("export", 0, 1)
    source = load_embedding_source(folder)
    kernels = None  # the linear kernels are a CPU choice (mlcx.compile.model.resolve_options)
    if target.kernel_kind == "cpu":
        kernels = resolve_linear_kernels(options.linear_kernels, options.tuning_db)
    options = replace(options, linear_kernels=kernels)
    formats = plan_formats(source.weights, source.tensors, quant, cpu_weight_layout(kernels))
    model = source.arch.build(source.config, formats, quant.activation_dtype)
    mod, params = model.export_tvm(spec=model.export_spec())
    mod = mod.with_attr(ACTIVATION_DTYPE, quant.activation_dtype)
    report("build", 0, 1)
    tvm_target = target.tvm_target(options)
    executable = _build(target, mod, tvm_target, options)
    if output.exists():
        shutil.rmtree(output)
    output.mkdir(parents=True)
    library = target.export(executable, output, options)
    _write_weights(source, formats, quant.activation_dtype, params, output / "params", report)
    source.tokenizer_assets().write(output)
    config = EmbeddingArtifactConfig(
        model_name=source.name,
        architecture=source.arch.name,
        model=source.config.to_dict(),
        hidden_size=source.hidden_size,
        max_tokens=source.max_tokens,
        pooling=source.pooling,
        quantization=quant.name,
        activation_dtype=quant.activation_dtype,
        target=target.name,
        tvm_target=_target_record(tvm_target),
        library=library,
        runtime=target.runtime,
        weight_formats={name: fmt.name for name, fmt in formats.items()},
        source=str(folder.resolve()),
    )
    (output / CONFIG_FILE).write_text(config.to_json())
    log.info(
        "compiled %s for %s in %.1f s", source.name, target.name, time.perf_counter() - started
    )
    return output


def _build(target, mod, tvm_target, options: BuildOptions):
    """The target's build; a WebGPU plan without dlight's Matmul rule: over the padded batch's
    symbolic shapes it writes attention-score kernels that Chromium's SwiftShader takes many
    minutes to compile, where the reduction rules' kernels compile at once."""
    if target.runtime != "wgpu":
        return target.build(mod, tvm_target, options)
    return build_plan(mod, tvm_target, options.subgroups, matmul=False)


def _target_record(tvm_target) -> dict:
    """The TVM target's top-level attributes as JSON values (the runtime reads num-cores)."""
    plain = lambda v: v if isinstance(v, int | float | bool) else str(v)  # noqa: E731
    return {str(k): plain(v) for k, v in tvm_target.export().items()}


def _write_weights(source: EmbeddingSource, formats, act_dtype, params, folder, report) -> None:
    expected = {name: (tuple(int(d) for d in p.shape), p.dtype) for name, p in params}
    writer = ShardWriter(folder)
    order = [name for name, _ in params]
    arrays = iter_params(source.weights, source.tensors, formats, act_dtype, order)
    for done, (name, array) in enumerate(arrays):
        if (tuple(array.shape), str(array.dtype)) != expected[name]:
            raise ModelSourceError(
                f"weight {name} converts to {tuple(array.shape)} {array.dtype}, but the model "
                f"config implies {expected[name]}; config.json and the weights disagree"
            )
        writer.add(name, array)
        report("weights", done + 1, len(order))
    writer.finish()
