"""Runs an artifact's image encoder (`embed_image`): TVM's Relax VM for libraries (cpu, cuda,
metal), the WebGPU plan executor for webgpu (backends.wgpu_encoder). Phone builds run in the
app, not here."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from mlcx.artifact.config import ArtifactConfig, read_config
from mlcx.artifact.encoder import EncoderConfig, encoder_dir
from mlcx.artifact.weight_shards import load_arrays
from mlcx.errors import ArtifactError
from mlcx.kernels.step_params import EMBED_IMAGE
from mlcx.runtime.backends.tvm_vm import use_compiled_threads

DEVICES = {"cpu": tvm.cpu, "cuda": tvm.cuda, "metal": tvm.metal}


class EncoderRunner(Protocol):
    def embed(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """embed_image's inputs by name, in order (pixels [3, S, S] float32, or a
        dynamic-resolution encoder's: EncoderConfig.inputs) -> image rows [tokens, text
        hidden] float32."""
        ...


class TVMEncoderRunner:
    def __init__(self, artifact_dir, config: EncoderConfig):
        folder = encoder_dir(artifact_dir)
        # alone (mlcx bench image) the encoder must size TVM's thread pool as the text model
        # does: TVM's default is half the logical CPUs, one thread on a 2-core machine
        use_compiled_threads(read_config(Path(artifact_dir), ArtifactConfig).tvm_target)
        self.device = DEVICES[config.device](0)
        try:
            module = tvm.runtime.load_module(str(folder / config.library))
        except Exception as err:
            raise ArtifactError(f"cannot load the image encoder ({err}); recompile") from None
        self.vm = relax.VirtualMachine(module, self.device)
        arrays = [
            tvm.runtime.tensor(np.asarray(a), self.device)
            for _, a in load_arrays(folder / "params")
        ]
        self._params = tvm_ffi.convert(arrays)

    def embed(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        args = [tvm.runtime.tensor(np.ascontiguousarray(a), self.device) for a in inputs.values()]
        return self.vm[EMBED_IMAGE](*args, self._params).numpy()


def _wgpu(artifact_dir, config: EncoderConfig) -> EncoderRunner:
    from mlcx.runtime.backends.wgpu_encoder import WgpuEncoderRunner  # imports wgpu when used
    from mlcx.runtime.backends.wgpu_runner import TARGET_BACKENDS

    return WgpuEncoderRunner(artifact_dir, config, TARGET_BACKENDS[config.device])


RUNNERS = {**dict.fromkeys(DEVICES, TVMEncoderRunner), "webgpu": _wgpu, "vulkan": _wgpu}


def open_encoder_runner(artifact_dir, config: EncoderConfig) -> EncoderRunner:
    if config.device not in RUNNERS:
        raise ArtifactError(
            f"the image encoder was compiled for {config.device}, which runs it in an app, not "
            f"here (runs here: {', '.join(RUNNERS)}); recompile for one of those"
        )
    return RUNNERS[config.device](artifact_dir, config)
