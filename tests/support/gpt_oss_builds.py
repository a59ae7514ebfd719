"""The tiny gpt-oss's three sources and their compiled artifacts, built once per session (the
`gpt_oss` fixture of tests/conftest.py) for the model, webgpu and server tests.

Sources: the unquantized HF folder, the HF folder with MXFP4 `*_blocks` / `*_scales` experts,
and the GGUF llama.cpp's own converter writes of the MXFP4 folder (its experts MXFP4 blocks,
ggml type 39); compiles go through the tests' artifact cache (tests/support/compile_cache.py).
CPU artifacts keep f32 pages and compute MXFP4 linears with the float kernels unless asked
(LinearKernels.FLOAT: the reference's arithmetic), so logits can be held to 1e-4; the default
int16 kernels round the activations (tests/kernels/test_gpt_oss_experts.py).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from mlcx.compile.model import CompileRequest
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.targets.base import BuildOptions
from tests.support.compile_cache import compile_model
from tests.support.llamacpp_convert import convert
from tests.support.reference_pages import reference_pages
from tests.support.tiny_gpt_oss import TinyGptOss, make_tiny_gpt_oss

SOURCES = ("hf", "mxfp4", "gguf")


class GptOssBuilds:
    def __init__(self, root: Path):
        self.root = root
        self._artifacts: dict[tuple[str, str, str], Path] = {}

    @cached_property
    def folders(self) -> TinyGptOss:
        return make_tiny_gpt_oss(self.root / "models")

    @cached_property
    def gguf(self) -> Path:
        """llama.cpp's GGUF of the MXFP4 folder (the converter repacks the blocks as they are)."""
        return convert(self.folders.mxfp4, self.root / "tiny-gpt-oss.gguf")

    def source(self, name: str) -> Path:
        paths = {"hf": self.folders.dense, "mxfp4": self.folders.mxfp4}
        return self.gguf if name == "gguf" else paths[name]

    def artifact(self, name: str, target: str = "cpu", kernels: str = "float") -> Path:
        """Source `name` compiled for `target` (cached): q0f32 for the folders and for the
        GGUF on GPU targets (f32 activations; MXFP4 experts kept under every scheme), the
        file's own types on cpu; `kernels`: the cpu linear kernels (LinearKernels' value)."""
        key = (name, target, kernels)
        if key not in self._artifacts:
            quant = None if (name, target) == ("gguf", "cpu") else "q0f32"
            chosen = LinearKernels(kernels) if target == "cpu" else None
            request = CompileRequest(
                str(self.source(name)),
                target,
                quant,
                output=self.root / f"art-{name}-{target}-{kernels}",
                options=BuildOptions(linear_kernels=chosen),
                **reference_pages(target),
            )
            self._artifacts[key] = compile_model(request)
        return self._artifacts[key]
