"""Runs an artifact's image encoder (`embed_image`) with TVM's Relax VM on the CPU."""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from mlcx.artifact.encoder import EncoderConfig, encoder_dir
from mlcx.artifact.weight_shards import load_arrays
from mlcx.errors import ArtifactError

EMBED_IMAGE = "embed_image"
DEVICES = {"cpu": tvm.cpu, "cuda": tvm.cuda}


class EncoderRunner:
    def __init__(self, artifact_dir, config: EncoderConfig):
        folder = encoder_dir(artifact_dir)
        if config.device not in DEVICES:
            raise ArtifactError(f"the image encoder runs on {config.device}, not here; recompile")
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

    def embed(self, pixels: np.ndarray) -> np.ndarray:
        """pixels [3, S, S] float32 -> image rows [tokens, text hidden] float32."""
        tensor = tvm.runtime.tensor(np.ascontiguousarray(pixels, dtype=np.float32), self.device)
        return self.vm[EMBED_IMAGE](tensor, self._params).numpy()
