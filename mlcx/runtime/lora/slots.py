"""The adapters an engine serves, each in a slot of the compiled model's adapter inputs
(mlcx.kernels.lora_layout; slot 0: no adapter), and what a request's adapter becomes in a
step: its slot and scale on each of its token rows.

KV computed with an adapter is not the base model's, nor another adapter's: each (adapter,
scale) gets a prefix-cache namespace of its own (`LoraRef.salted`), so blocks are shared only
between requests that run the same adapter at the same scale."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.errors import ModelNotFoundError
from mlcx.frontends.lora.layout import check_fits, lora_layout, stack
from mlcx.frontends.lora.read import read_adapter
from mlcx.frontends.registry import families
from mlcx.kernels.lora_layout import LoraLayout
from mlcx.runtime.lora.request import LoraRequest

_SALT_SHIFT = 40  # above every token id; image cache ids keep their top byte (core.images)
_MAX_SALTS = 1 << 15


@dataclass(frozen=True)
class LoraRef:
    slot: int  # 1.. (0 is no adapter)
    scale: float
    salt: int  # the prefix cache's namespace of (slot, scale)

    def salted(self, ids: Sequence[int]) -> list[int]:
        """The ids the prefix cache hashes for this adapter: a bijection per salt whose images
        never meet another salt's (token ids stay below 2**40, image ids keep their top bits)."""
        mask = self.salt << _SALT_SHIFT
        return [i ^ mask for i in ids]


class LoraRunner(Protocol):
    def set_lora_weights(self, arrays: list[np.ndarray]) -> None: ...


class LoraSlots:
    def __init__(self, layout: LoraLayout | None = None, names: tuple[str, ...] = ()):
        self.layout = layout
        self.names = names  # the adapter in slot i + 1
        self._salts: dict[tuple[int, float], int] = {}

    @classmethod
    def load(
        cls, artifact: Artifact, adapters: Sequence[tuple[str, str]], runner: Any
    ) -> LoraSlots:
        """Read `adapters` ((name, path) pairs) into the artifact's slots and hand the stacked
        weights to the runner; ValueError naming what to recompile with where they do not fit."""
        config = artifact.config
        spec = config.lora
        if spec is None:
            if adapters:
                raise ValueError(
                    f"{artifact.path} was compiled without LoRA adapter slots; recompile it with "
                    "`mlcx compile MODEL --lora-slots N --lora-rank R`, or pass the model itself "
                    "(it is compiled with slots for the adapters)"
                )
            return cls()
        names = tuple(name for name, _ in adapters)
        if len(set(names)) != len(names) or any(not n or ":" in n for n in names):
            raise ValueError(
                f"LoRA adapter names must be distinct, non-empty, without ':': {names}"
            )
        if len(names) > spec.slots:
            raise ValueError(
                f"{len(names)} LoRA adapters, but {artifact.path} has {spec.slots} adapter slots; "
                f"recompile with --lora-slots {len(names)}"
            )
        layout = lora_layout(config.model, spec, config.activation_dtype)
        family = families()[config.architecture]
        read = []
        for name, path in adapters:
            adapter = read_adapter(path, family, config.model)
            check_fits(layout, adapter, name)
            read.append(adapter)
        runner.set_lora_weights(stack(layout, read))
        return cls(layout, names)

    def ref(self, request: LoraRequest | None) -> LoraRef | None:
        if request is None:
            return None
        if request.name not in self.names:
            loaded = ", ".join(repr(n) for n in self.names) or "none"
            raise ModelNotFoundError(
                f"no LoRA adapter named {request.name!r} is loaded (loaded: {loaded})", "lora"
            )
        slot = self.names.index(request.name) + 1
        key = (slot, float(request.scale))
        if key not in self._salts:
            if len(self._salts) >= _MAX_SALTS:
                raise ModelNotFoundError("too many distinct LoRA scales in one engine", "lora")
            self._salts[key] = len(self._salts) + 1
        return LoraRef(slot, key[1], self._salts[key])

    def attach(self, batch: Any, plan: Any, requests: Mapping[str, Any]) -> Any:
        """`batch` (a ForwardBatch) with each token row's slot and scale, in a model with
        adapter slots; `plan.scheduled` lists the rows' sequences in order."""
        if self.layout is None:
            return batch
        refs = [requests[item.seq.request_id].lora for item in plan.scheduled]
        counts = [len(item.input_ids) for item in plan.scheduled]
        slots = np.repeat([r.slot if r else 0 for r in refs], counts).astype(np.int32)
        scales = np.repeat([r.scale if r else 0.0 for r in refs], counts).astype(np.float32)
        return dataclasses.replace(batch, lora_rows=slots, lora_scales=scales)
