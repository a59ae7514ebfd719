"""Runs an artifact's image encoder from its WebGPU plan (vision/webgpu-plan.json) through
wgpu-native: the weights stay on the GPU, the pixels go up and the image rows come back."""

from __future__ import annotations

import numpy as np

from mlcx.artifact.encoder import EncoderConfig, encoder_dir
from mlcx.kernels.step_params import EMBED_IMAGE
from mlcx.runtime.backends.wgpu_module import WgpuModule, load_plan


class WgpuEncoderRunner:
    def __init__(self, artifact_dir, config: EncoderConfig, device: str | None = None):
        folder = encoder_dir(artifact_dir)
        plan = load_plan(folder / config.library, EMBED_IMAGE, config.inputs)
        self.module = WgpuModule(plan, EMBED_IMAGE, folder, folder / "params", device)

    def embed(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        return self.module(inputs)
