"""MXFP4 weights as the files store them <-> Mxfp4Format's planes, losslessly.

- GGUF (ggml type MXFP4, 17 bytes per 32 weights): the E8M0 byte, then 16 bytes whose low
  nibbles are weights 0..15 and high nibbles weights 16..31 of the block.
- Hugging Face (`quantization_config.quant_method == "mxfp4"`, gpt-oss): `*_blocks` uint8
  [..., rows, K/32, 16], byte b of a block holding weight 2b (low nibble) and 2b + 1 (high
  nibble), and `*_scales` uint8 [..., rows, K/32], the same E8M0 bytes (transformers reads them
  as 2 ** (scale - 127) times the E2M1 value, which is ggml's 2 ** (e - 128) times the value
  doubled). Leading dimensions (experts) stack into rows, expert-major.

gpt-oss's `gate_up_proj` interleaves its output rows (row 2i is gate row i, row 2i + 1 up row
i, and so its bias). mlcx's expert stack holds every expert's gate rows, then every expert's up
rows (mlcx.kernels.moe), as llama.cpp's converter also splits them: `hf_gate_up_planes` and
`hf_gate_up_bias` de-interleave once at import. Rows are independent, so this moves bytes and
changes no value; the kernels keep one layout for GGUF and HF.
"""

from __future__ import annotations

import numpy as np

from mlcx.quantization.mxfp4 import GROUP, MXFP4, Mxfp4Format

BLOCK_BYTES = 1 + GROUP // 2


def ggml_to_parts(raw: np.ndarray, name: str = "tensor") -> tuple[np.ndarray, np.ndarray]:
    """uint8 [rows, blocks * 17] -> (codes [rows, K], exponents [rows, K/32])."""
    if raw.ndim != 2 or raw.shape[1] % BLOCK_BYTES:
        raise ValueError(
            f"{name}: MXFP4 rows must be whole {BLOCK_BYTES}-byte blocks; got shape {raw.shape}"
        )
    rows = raw.shape[0]
    b = np.ascontiguousarray(raw, dtype=np.uint8).reshape(rows, -1, BLOCK_BYTES)
    qs = b[..., 1:]
    codes = np.concatenate([qs & 0xF, qs >> 4], axis=-1)
    return codes.reshape(rows, -1), np.ascontiguousarray(b[..., 0])


def parts_to_ggml(codes: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    """Inverse of ggml_to_parts: uint8 [rows, blocks * 17]."""
    rows = codes.shape[0]
    c = codes.astype(np.uint8).reshape(rows, -1, GROUP)
    qs = c[..., : GROUP // 2] | (c[..., GROUP // 2 :] << 4)
    return np.concatenate([exponents.astype(np.uint8)[..., None], qs], axis=-1).reshape(rows, -1)


def from_ggml(raw: np.ndarray, fmt: Mxfp4Format = MXFP4, name: str = "tensor") -> dict:
    """A GGUF MXFP4 tensor's rows as fmt's planes."""
    return fmt.from_parts(*ggml_to_parts(raw, name))


def to_ggml(params: dict, fmt: Mxfp4Format = MXFP4) -> np.ndarray:
    """The GGUF bytes of fmt's planes (the file's bytes for planes read by from_ggml)."""
    return parts_to_ggml(*fmt.parts(params))


def _hf_parts(blocks: np.ndarray, scales: np.ndarray, name: str):
    blocks, scales = np.asarray(blocks), np.asarray(scales)
    if (
        blocks.dtype != np.uint8
        or scales.dtype != np.uint8
        or blocks.ndim < 3
        or blocks.shape[-1] != GROUP // 2
        or blocks.shape[:-1] != scales.shape
    ):
        raise ValueError(
            f"{name}: MXFP4 blocks must be uint8 [..., rows, K/32, 16] with uint8 scales "
            f"[..., rows, K/32]; got {blocks.dtype} {blocks.shape} and {scales.dtype} "
            f"{scales.shape}"
        )
    rows = int(np.prod(blocks.shape[:-2]))
    pairs = blocks.reshape(rows, -1)
    codes = np.stack([pairs & 0xF, pairs >> 4], axis=-1).reshape(rows, -1)
    return codes, scales.reshape(rows, -1)


def hf_to_ggml(blocks, scales, name: str = "tensor") -> np.ndarray:
    """`*_blocks` / `*_scales` ([experts,] rows, K/32, ...) as the GGUF bytes of the
    [experts * rows, K] matrix: uint8 [rows, K/32 * 17], the same codes and exponents."""
    return parts_to_ggml(*_hf_parts(blocks, scales, name))


def hf_planes(blocks, scales, fmt: Mxfp4Format = MXFP4, name: str = "tensor") -> dict:
    """`*_blocks` / `*_scales` of an HF checkpoint ([experts,] rows, K/32, ...) as fmt's
    planes of the [experts * rows, K] matrix (a down projection's stack, or a plain weight)."""
    return fmt.from_parts(*_hf_parts(blocks, scales, name))


def _split_gate_up(values: np.ndarray, name: str) -> np.ndarray:
    """[experts, 2I, ...] interleaved rows -> [2 * experts * I, ...]: gate rows, then up."""
    if values.ndim < 2 or values.shape[1] % 2:
        raise ValueError(f"{name}: gate_up needs [experts, 2 * width, ...], not {values.shape}")
    rest = values.shape[2:]
    gate, up = values[:, 0::2], values[:, 1::2]
    return np.concatenate([gate.reshape(-1, *rest), up.reshape(-1, *rest)])


def hf_gate_up_planes(blocks, scales, fmt: Mxfp4Format = MXFP4, name: str = "gate_up") -> dict:
    """gpt-oss's `gate_up_proj_blocks` [E, 2I, K/32, 16] / `_scales` [E, 2I, K/32] as fmt's
    planes of mlcx's fused expert stack [2 * E * I, K] (every gate row, then every up row)."""
    blocks, scales = np.asarray(blocks), np.asarray(scales)
    return hf_planes(_split_gate_up(blocks, name), _split_gate_up(scales, name), fmt, name)


def hf_gate_up_bias(bias, name: str = "gate_up_proj_bias") -> np.ndarray:
    """gpt-oss's `gate_up_proj_bias` [E, 2I] (interleaved) as the fused stack's bias [2 * E * I]
    (a value per stacked row, as the expert kernels add it)."""
    return _split_gate_up(np.asarray(bias, np.float32), name)


def hf_expert_bias(bias) -> np.ndarray:
    """A per-expert bias [E, rows] (gpt-oss's `down_proj_bias`) as the stack's [E * rows]."""
    return np.asarray(bias, np.float32).reshape(-1)
