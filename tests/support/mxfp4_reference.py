"""MXFP4 references outside mlcx: random GGUF blocks, gpt-oss-style HF blocks/scales, and
llama.cpp's own HF -> GGUF nibble transform (read from its converter's source, where the peer
tree is on this machine)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

LLAMA_CPP = Path.home() / ".cache/mlcx/peers/src/llama_cpp_python-0.3.36/vendor/llama.cpp"
CONVERTER = LLAMA_CPP / "conversion/gpt_oss.py"


def random_ggml(rows: int, cols: int, seed: int, exponents=None) -> np.ndarray:
    """uint8 [rows, cols / 32 * 17]: random codes; E8M0 bytes random or from `exponents`."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, (rows, cols // 32, 17), dtype=np.uint8)
    if exponents is not None:
        raw[..., 0] = np.resize(np.asarray(exponents, np.uint8), raw.shape[:2])
    return raw.reshape(rows, -1)


def realistic_exponents(shape, seed: int, low: int = 118, high: int = 134) -> np.ndarray:
    """E8M0 bytes in [low, high): by default gpt-oss's whole range of block scales (about
    2**-10 .. 2**5), which one layer's tensor spans only a part of."""
    return np.random.default_rng(seed).integers(low, high, shape, dtype=np.uint8)


def random_hf(lead: tuple[int, ...], rows: int, cols: int, seed: int, exponents=(118, 134)):
    """(blocks [*lead, rows, cols/32, 16], scales [*lead, rows, cols/32]) as gpt-oss stores
    them, the scales' E8M0 bytes in the range `exponents`."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (*lead, rows, cols // 32, 16), dtype=np.uint8)
    return blocks, realistic_exponents((*lead, rows, cols // 32), seed + 1, *exponents)


def llama_cpp_nibble_transform():
    """llama.cpp's GptOssModel.transform_nibble_layout (torch), or None without the peer tree."""
    if not CONVERTER.exists():
        return None
    import torch

    tree = ast.parse(CONVERTER.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "transform_nibble_layout":
            module = ast.Module(body=[node], type_ignores=[])
            scope: dict = {"torch": torch}
            exec(compile(module, str(CONVERTER), "exec"), scope)
            return lambda blocks: scope["transform_nibble_layout"](None, blocks)
    return None


def hf_to_ggml_bytes(blocks: np.ndarray, scales: np.ndarray, transform) -> np.ndarray:
    """GGUF bytes [rows, K/32 * 17] as llama.cpp's converter writes them (repack_mxfp4)."""
    import torch

    swapped = transform(torch.from_numpy(np.ascontiguousarray(blocks))).numpy()
    data = np.concatenate([scales[..., None], swapped], axis=-1)
    return data.reshape(-1, data.shape[-2] * 17)
