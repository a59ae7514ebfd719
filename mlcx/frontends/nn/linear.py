"""Linear and embedding layers whose weights can be stored in any `WeightFormat`."""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.nn.lora import LoraStep
from mlcx.kernels.linear import embedding_te, matmul_te
from mlcx.quantization.formats import WeightFormat
from mlcx.quantization.stacked import StackedFormat


def _declare(module: nn.Module, fmt: WeightFormat, rows: int, cols: int) -> list[str]:
    names = []
    for suffix, (shape, dtype) in fmt.param_specs(rows, cols).items():
        setattr(module, suffix, nn.Parameter(shape, dtype))
        names.append(suffix)
    return names


class QLinear(nn.Module):
    """y = x @ W.T (+ bias) for x [tokens, in_features]; one kernel per call, plus each token's
    LoRA delta where the step has adapter inputs for `name` (mlcx.frontends.nn.lora)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        fmt: WeightFormat,
        dtype: str,
        bias: bool,
        name: str = "",
    ):
        self.name = name  # the weight's parameter prefix, e.g. "layers.0.attn.qkv"
        self.in_features = in_features
        self.out_features = out_features
        self.fmt = fmt
        self.weight_names = _declare(self, fmt, out_features, in_features)
        self.bias = nn.Parameter((out_features,), dtype) if bias else None

    def forward(self, x: nn.Tensor, lora: LoraStep | None = None) -> nn.Tensor:
        if isinstance(self.fmt, StackedFormat):
            y = op.concat([self._part(x, i) for i in range(len(self.fmt.parts))], dim=-1)
        else:
            y = _matmul(x, self.fmt, self.weight_names, self._weights(), self.out_features)
        y = y if self.bias is None else y + self.bias
        return y if lora is None else lora.apply(self.name, x, y)

    def _weights(self, prefix: str = "") -> list[nn.Tensor]:
        return [getattr(self, n) for n in self.weight_names if n.startswith(prefix)]

    def _part(self, x: nn.Tensor, index: int) -> nn.Tensor:
        """One stacked part's rows: a linear of its own, in its own format."""
        rows, fmt = self.fmt.parts[index]
        prefix = f"p{index}_"
        return _matmul(x, fmt, list(fmt.suffixes), self._weights(prefix), rows)


def _matmul(x: nn.Tensor, fmt: WeightFormat, names, weights, rows: int) -> nn.Tensor:
    def compute(xt, *ws):
        return matmul_te(xt, dict(zip(names, ws, strict=True)), fmt, rows)

    return op.tensor_expr_op(compute, "matmul", [x, *weights])


class QEmbedding(nn.Module):
    """Token embedding; `as_head` reuses the same table as a tied lm_head."""

    def __init__(self, vocab_size: int, hidden_size: int, fmt: WeightFormat, dtype: str):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.fmt = fmt
        self.dtype = dtype
        self.weight_names = _declare(self, fmt, vocab_size, hidden_size)

    def _weights(self) -> list[nn.Tensor]:
        return [getattr(self, n) for n in self.weight_names]

    def forward(self, ids: nn.Tensor) -> nn.Tensor:
        names, fmt, hidden, dtype = self.weight_names, self.fmt, self.hidden_size, self.dtype

        def compute(idt, *weights):
            return embedding_te(idt, dict(zip(names, weights, strict=True)), fmt, hidden, dtype)

        return op.tensor_expr_op(compute, "embedding", [ids, *self._weights()])

    def as_head(self, x: nn.Tensor) -> nn.Tensor:
        names, fmt, rows = self.weight_names, self.fmt, self.vocab_size

        def compute(xt, *weights):
            return matmul_te(xt, dict(zip(names, weights, strict=True)), fmt, rows)

        return op.tensor_expr_op(compute, "lm_head", [x, *self._weights()])
