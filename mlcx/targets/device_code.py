"""What the TVM-library GPU targets (cuda, metal, iphone, android) share: building with the GPU
pipeline, finding the device module in the executable, and writing its kernel source.

`tvm.compile` returns an executable whose host (llvm) module imports one device module
(kind "cuda", "metal", "opencl") holding the kernels and their launch table.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import tvm
from tvm import relax

from mlcx.errors import ArtifactError
from mlcx.kernels.step_params import KV_PAGES
from mlcx.passes import tir_pipeline
from mlcx.passes.gpu.cuda_graph import graph_max_batch
from mlcx.passes.pipeline_gpu import gpu_config, gpu_pipeline

# Which inspect_source format holds a device module's whole kernel source.
SOURCE_FORMATS = {"cuda": "", "metal": "metal", "opencl": "cl"}


def default_quantization(from_gguf: bool) -> str:
    """f16 activations: what GPUs run fastest, and half the KV cache memory."""
    return "gguf-f16" if from_gguf else "q4f16"


# IRModule attribute naming the model's activation dtype (set at export, mlcx.compile.model): the KV
# pages may hold another (--kv-dtype), so their dtype does not say it.
ACTIVATION_DTYPE = "mlcx.activation_dtype"


def activation_dtype(mod: tvm.IRModule) -> str:
    dtype = mod.attrs.get(ACTIVATION_DTYPE) if mod.attrs is not None else None
    if dtype is None:
        raise ValueError(
            f"the module has no {ACTIVATION_DTYPE} attribute; export it with "
            "mlcx.compile.model.export_model"
        )
    return str(dtype)


def kv_pages_dtype(mod: tvm.IRModule) -> str:
    """The element type of the entry functions' KV pages."""
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            for param in func.params:
                if param.name == KV_PAGES:
                    return str(param.ty.fields[0].dtype)
    raise ValueError(f"the module has no entry function taking {KV_PAGES}")


@contextlib.contextmanager
def _device_code_kept_as_source() -> Iterator[None]:
    """TVM compiles device code while building when it finds the device runtime (CUDA through
    nvrtc); this keeps it as source on every build machine, so artifacts do not depend on
    where they were built and the targets decide how kernels are compiled."""
    previous = os.environ.get("TVM_COMPILE_FORCE_FALLBACK")
    os.environ["TVM_COMPILE_FORCE_FALLBACK"] = "1"
    try:
        yield
    finally:
        if previous is None:
            del os.environ["TVM_COMPILE_FORCE_FALLBACK"]
        else:
            os.environ["TVM_COMPILE_FORCE_FALLBACK"] = previous


def build_gpu(
    mod: tvm.IRModule,
    target: tvm.target.Target,
    subgroups: bool = True,
    system_lib_prefix: str | None = None,
    cuda_graphs: bool = True,
    decode_gemv: str = "dlight",
) -> tvm.runtime.Executable:
    if system_lib_prefix is not None:
        mod = mod.with_attr("system_lib_prefix", system_lib_prefix)
    config = gpu_config(target, subgroups)
    graph_batch = graph_max_batch(target.kind.name, cuda_graphs)
    low_batch = decode_gemv == "dlight"
    # TVM 0.27's AttachGlobalSymbol fails on tensorized kernels when it prefixes their symbols
    # ("Cannot treat type ir.Call as type ir.Expr" at a block predicate): a system-lib build
    # (iphone) keeps prefill on mlcx's tiled GEMM until that is fixed upstream.
    units = system_lib_prefix is None
    dtype = activation_dtype(mod)
    pipeline = gpu_pipeline(target, dtype, config, graph_batch, low_batch, matrix_units=units)
    with _device_code_kept_as_source():
        return tvm.compile(
            mod, target=target, relax_pipeline=pipeline, tir_pipeline=tir_pipeline.NAME
        )


def device_module(executable: tvm.runtime.Executable, kind: str) -> tvm.runtime.Module:
    host = executable.mod.imports[0]
    found = [m for m in host.imports if m.kind == kind]
    if len(found) != 1:
        raise ArtifactError(f"the build produced {len(found)} {kind} kernel modules, not one")
    return found[0]


def kernel_source(executable: tvm.runtime.Executable, kind: str) -> str:
    return device_module(executable, kind).inspect_source(SOURCE_FORMATS[kind])


def write_kernel_source(executable: tvm.runtime.Executable, kind: str, path: Path) -> str:
    """Writes the kernels' source next to the library (for reading and checking; the library
    embeds its own copy); returns it."""
    source = kernel_source(executable, kind)
    path.write_text(source)
    return source
