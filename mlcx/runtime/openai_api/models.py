"""The names a served model answers to, its LoRA adapters among them, and which adapter a
request picks: `model="base:adapter"`, or the `lora` body field (`extra_body={"lora": ...}`:
a name, or {"name": ..., "scale": ...})."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlcx.errors import InvalidFieldError, ModelNotFoundError
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.openai_api.schemas import LoraField

SEPARATOR = ":"


@dataclass(frozen=True)
class ServedModels:
    names: tuple[str, ...]  # the name /v1/models lists first, then accepted aliases
    adapters: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError("a served model needs a name")

    @property
    def name(self) -> str:
        return self.names[0]

    def cards(self) -> list[dict]:
        """/v1/models' data: the model, then each adapter as `name:adapter`."""
        base = {"object": "model", "created": 0, "owned_by": "mlcx"}
        adapters = [
            {"id": f"{self.name}{SEPARATOR}{a}", **base, "parent": self.name} for a in self.adapters
        ]
        return [{"id": self.name, **base}, *adapters]

    def resolve(self, model: str, lora: str | LoraField | None = None) -> LoraRequest | None:
        """The adapter a request picks (None: the base model); ModelNotFoundError (404) for a
        model or adapter not served, InvalidFieldError where `model` and `lora` disagree."""
        chosen = self._from_model(model)
        given = self._from_field(lora)
        if chosen is not None and given is not None and chosen.name != given.name:
            raise InvalidFieldError(
                f"model names the adapter {chosen.name!r} but lora names {given.name!r}; "
                "give one of them",
                "lora",
            )
        return given or chosen

    def _from_model(self, model: str) -> LoraRequest | None:
        if model in self.names:
            return None
        base, sep, adapter = model.rpartition(SEPARATOR)
        if sep and base in self.names and adapter in self.adapters:
            return LoraRequest(adapter)
        raise ModelNotFoundError(
            f"the model {model!r} does not exist; this server serves {self.name!r}"
            f"{self._adapter_names()} (see GET /v1/models)"
        )

    def _from_field(self, lora: str | LoraField | None) -> LoraRequest | None:
        if lora is None:
            return None
        request = LoraRequest(lora) if isinstance(lora, str) else LoraRequest(lora.name, lora.scale)
        if request.name not in self.adapters:
            raise ModelNotFoundError(
                f"the LoRA adapter {request.name!r} is not loaded{self._adapter_names()}",
                "lora",
            )
        return request

    def _adapter_names(self) -> str:
        if not self.adapters:
            return ""
        return " with the adapters " + ", ".join(repr(a) for a in self.adapters)


def model_names(configured: str | None, model_name: str, aliases: Sequence[str]) -> tuple[str, ...]:
    """The served name (the configured one, else the model's), then the aliases."""
    return tuple(dict.fromkeys((configured or model_name, *aliases)))
