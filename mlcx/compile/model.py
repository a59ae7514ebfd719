"""`mlcx compile`: model source -> compiled library + converted weights + tokenizer + config."""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import tvm
from tvm.relax.frontend import nn

from mlcx.artifact.config import CONFIG_FILE, KV_DTYPES, ArtifactConfig
from mlcx.artifact.sampling import recorded_defaults
from mlcx.artifact.weight_shards import ShardWriter
from mlcx.compile.encoder import compile_encoder, encoder_dtype, from_mmproj
from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.convert import iter_params, plan_formats
from mlcx.frontends.family import Family
from mlcx.frontends.lora.layout import lora_layout
from mlcx.frontends.lora.merge import merge_adapter
from mlcx.frontends.presets import PRESETS
from mlcx.frontends.source import ModelSource, load_source
from mlcx.kernels.attention import KVLayout, PagedKVOps
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.kernels.cpu.weight_layout import cpu_weight_layout
from mlcx.kernels.gpu.config import gpu_config
from mlcx.kernels.kv_layout import default_kv_dtype
from mlcx.kernels.lora_layout import LoraSpec, default_weight_dtype
from mlcx.passes.gpu.cuda_graph import graph_max_batch
from mlcx.passes.step_bounds import bound_step_shapes
from mlcx.passes.tuning.records import resolve_linear_kernels
from mlcx.quantization.formats import WeightFormat
from mlcx.quantization.schemes import Quantization, get_quantization
from mlcx.targets.base import BuildOptions, Target
from mlcx.targets.device_code import ACTIVATION_DTYPE
from mlcx.targets.registry import get_target

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True)
class CompileRequest:
    model: str
    target: str = "cpu"
    quantization: str | None = None
    output: Path = Path("dist/model")
    context_window: int | None = None
    prefill_chunk: int = 512
    page_size: int = 16
    options: BuildOptions = BuildOptions()
    kv_dtype: str | None = None  # None: default_kv_dtype of the target's kernel kind
    mmproj: Path | None = None  # a llama.cpp mmproj GGUF: the model's image encoder
    lora: Path | None = None  # a LoRA adapter merged into the weights (MLC-LLM's way)
    lora_slots: LoraSpec | None = None  # adapters taken at run time, per token (--lora-slots)

    def __post_init__(self) -> None:
        if self.kv_dtype not in (None, *KV_DTYPES):
            choices = ", ".join(KV_DTYPES)
            raise ValueError(f"KV cache dtype must be one of {choices}, not {self.kv_dtype!r}")
        if self.page_size not in (8, 16, 32, 64):
            raise ValueError(f"page size must be 8, 16, 32 or 64, not {self.page_size}")
        if self.prefill_chunk < 1:
            raise ValueError(f"prefill chunk must be positive, not {self.prefill_chunk}")
        if self.context_window is not None and self.context_window < 1:
            raise ValueError(f"context window must be positive, not {self.context_window}")


def _context_window(source: ModelSource, requested: int | None) -> int:
    """The requested window, or the model's own; at most what the model's RoPE supports."""
    cfg = source.config
    if requested is None:
        return cfg.context_window
    if requested > cfg.max_context_window:
        scaling = cfg.rope_scaling.get("rope_type", "default")
        raise ValueError(
            f"context window {requested} exceeds the model's maximum of "
            f"{cfg.max_context_window} tokens (context {cfg.context_window}, RoPE scaling "
            f"{scaling}); pass --context-window {cfg.max_context_window} or less"
        )
    return requested


@dataclass(frozen=True)
class ExportedModel:
    """A model exported to a Relax IRModule for one target, before the target builds it."""

    source: ModelSource
    target: Target
    quant: Quantization
    formats: dict[str, WeightFormat]
    tvm_target: tvm.target.Target
    mod: tvm.IRModule
    params: list[tuple[str, nn.Parameter]]
    kv_dtype: str  # of the KV pages
    context_window: int
    options: BuildOptions  # the request's, with the linear-kernel choice resolved
    # a hybrid model's state tensors (mlcx.artifact.state_tensors); empty for a transformer
    state_tensors: tuple[dict, ...] = ()
    lora: LoraSpec | None = None  # the request's adapter slots, their weights' dtype resolved


def resolve_options(options: BuildOptions, target: Target) -> BuildOptions:
    """The options a target builds with. The linear kernels are a CPU choice, resolved here
    alone (a tuning database may decide them), so that a bad combination fails before
    anything is built and the JIT cache key (mlcx/compile/jit.py) names what is built."""
    if target.name != "cpu":
        return replace(options, linear_kernels=None)
    kernels = resolve_linear_kernels(options.linear_kernels, options.tuning_db)
    return replace(options, linear_kernels=kernels)


def _check_target(family: Family, target: str) -> None:
    if family.targets and target not in family.targets:
        raise ModelSourceError(
            f"{family.name} compiles for {', '.join(family.targets)} only so far, not "
            f"{target!r}: compile it with --target {family.targets[0]}"
        )


def export_model(req: CompileRequest) -> ExportedModel:
    """Load the source, plan weight formats and export the graph (also used by `mlcx tune`)."""
    target = get_target(req.target)
    options = resolve_options(req.options, target)
    if req.lora_slots is not None:  # a decode graph would capture one batch's adapter rows
        options = replace(options, cuda_graphs=False)
    source = load_source(req.model)
    _check_target(source.arch, target.name)
    if req.lora is not None:
        source = merge_adapter(source, req.lora)
    context_window = _context_window(source, req.context_window)
    quant = get_quantization(req.quantization or target.default_quantization(source.kind == "gguf"))
    if quant.keeps_source_formats and source.kind != "gguf":
        raise ModelSourceError(
            f"quantization {quant.name!r} needs a GGUF source; {source.path} "
            "is a Hugging Face folder (use q4f16, q4f32, q8f32, q0f32 ...)"
        )
    cfg = source.config
    layout = cpu_weight_layout(options.linear_kernels) if target.kernel_kind == "cpu" else None
    formats = plan_formats(source.weights, source.tensors, quant, layout)
    tvm_target = target.tvm_target(options)
    kv_dtype = req.kv_dtype or default_kv_dtype(target.kernel_kind, quant.activation_dtype)
    heads = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim)
    layout = KVLayout(*heads, req.page_size, quant.activation_dtype, kv_dtype, target.kernel_kind)
    gpu = gpu_config(tvm_target, options.subgroups)
    kv_ops = PagedKVOps(layout, tvm_target, gpu)
    # the model is built for the compiled context (LongRoPE picks its factors by it)
    family = source.arch
    if req.mmproj is not None:  # the text model takes image rows (prefill_image)
        from_mmproj(source, req.mmproj)  # refuses a mismatched pair before any compiling
        family = family.with_images()
    elif source.kind == "gguf" and family.encoder:  # a VL text GGUF: its encoder is elsewhere
        raise UnsupportedModelError(
            f"{source.path} is the text model of {family.name}, whose images need its encoder: "
            "give llama.cpp's mmproj file of the same model with --mmproj"
        )
    lora = None
    if (spec := req.lora_slots) is not None:
        dtype = spec.dtype or default_weight_dtype(target.kernel_kind, quant.activation_dtype)
        lora = lora_layout(cfg, replace(spec, dtype=dtype), quant.activation_dtype)
    model = family.build(replace(cfg, context_window=context_window), formats, kv_ops, lora)
    mod, params = model.export_tvm(spec=model.export_spec())
    mod = bound_step_shapes(req.prefill_chunk)(mod).with_attr(
        ACTIVATION_DTYPE, quant.activation_dtype
    )
    states = tuple(model.state_tensors()) if hasattr(model, "state_tensors") else ()
    return ExportedModel(
        source,
        target,
        quant,
        formats,
        tvm_target,
        mod,
        params,
        kv_dtype,
        context_window,
        options,
        states,
        lora.spec if lora else None,
    )


def compile_model(req: CompileRequest, progress: Progress | None = None) -> Path:
    from mlcx.compile.embedding import compile_embedding
    from mlcx.frontends.embedding_source import is_embedding_model

    if is_embedding_model(Path(req.model)):
        model = Path(req.model)
        return compile_embedding(
            model, req.output, req.target, req.quantization, req.options, progress
        )
    report = progress or (lambda stage, done, total: None)
    started = time.perf_counter()
    report("export", 0, 1)
    exported = export_model(req)
    source, target, quant = exported.source, exported.target, exported.quant
    cfg, formats, tvm_target = source.config, exported.formats, exported.tvm_target
    mod, params, options = exported.mod, exported.params, exported.options
    report("build", 0, 1)
    executable = target.build(mod, tvm_target, options)
    out = req.output
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    library = target.export(executable, out, options)
    _write_weights(source, formats, quant.activation_dtype, params, out / "params", report)
    source.tokenizer_assets().write(out)
    if source.arch.encoder or req.mmproj:
        dtype = encoder_dtype(target, quant.activation_dtype)
        compile_encoder(source, target, tvm_target, out, req.mmproj, options, dtype)
    config = ArtifactConfig(
        model_name=source.name,
        architecture=source.arch.name,
        model=cfg,
        quantization=quant.name,
        activation_dtype=quant.activation_dtype,
        kv_dtype=exported.kv_dtype,
        target=target.name,
        tvm_target=_plain(tvm_target.export()),
        library=library,
        runtime=target.runtime,
        context_window=exported.context_window,
        prefill_chunk=req.prefill_chunk,
        page_size=req.page_size,
        sampling=recorded_defaults(source.generation_config),
        weight_formats={name: fmt.name for name, fmt in formats.items()},
        source=req.model if req.model in PRESETS else str(source.path.resolve()),
        tuning_db=str(options.tuning_db.resolve()) if options.tuning_db else None,
        linear_kernels=_value(options.linear_kernels),
        decode_graph_batch=graph_max_batch(target.name, options.cuda_graphs),
        state_tensors=exported.state_tensors,
        lora=exported.lora,
        lora_merged=str(Path(req.lora).resolve()) if req.lora else None,
    )
    (out / CONFIG_FILE).write_text(config.to_json())
    log.info(
        "compiled %s for %s in %.1f s", source.name, target.name, time.perf_counter() - started
    )
    return out


def _value(kernels: LinearKernels | None) -> str | None:
    return kernels.value if kernels is not None else None


def _plain(value):
    """TVM's Map/Array/String values as JSON-ready Python values."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value if not isinstance(value, str) else str(value)
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "__iter__"):
        return [_plain(v) for v in value]
    return str(value)


def _write_weights(source, formats, act_dtype, params, folder: Path, report: Progress) -> None:
    expected = {name: (tuple(int(d) for d in p.shape), p.dtype) for name, p in params}
    writer = ShardWriter(folder)
    order = [name for name, _ in params]
    for done, (name, array) in enumerate(
        iter_params(source.weights, source.tensors, formats, act_dtype, order)
    ):
        shape, dtype = expected[name]
        if tuple(array.shape) != shape or str(array.dtype) != dtype:
            raise ModelSourceError(
                f"weight {name} converts to {tuple(array.shape)} {array.dtype}, but the model "
                f"config implies {shape} {dtype}; config.json and the weights disagree"
            )
        writer.add(name, array)
        report("weights", done + 1, len(order))
    writer.finish()
