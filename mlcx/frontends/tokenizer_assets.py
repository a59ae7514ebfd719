"""Everything a compiled model needs to turn text into token ids and back.

A model source (a Hugging Face folder or a GGUF file) is read once into `TokenizerAssets`, which a
compiled artifact stores as two files: `tokenizer.json` (the `tokenizers` library's own format,
loadable by any of its bindings) and `mlcx-tokenizer.json` (the rest: chat template, BOS/EOS).
`mlcx.runtime.text.tokenizer.Tokenizer.from_dir` reads them back.

`add_bos` is authoritative: the runtime encodes without the `tokenizer.json` post-processor and
prepends BOS itself, so a model is encoded the same way whichever source it came from.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import tokenizers

from mlcx.errors import ArtifactError, ModelSourceError

TOKENIZER_JSON = "tokenizer.json"
MLCX_TOKENIZER_JSON = "mlcx-tokenizer.json"


@dataclass(frozen=True)
class TokenizerAssets:
    tokenizer_json: str
    chat_template: str | None
    bos_token_id: int | None
    eos_token_ids: tuple[int, ...]
    add_bos: bool
    bos_token: str | None
    eos_token: str | None

    def __post_init__(self) -> None:
        if self.add_bos and self.bos_token_id is None:
            raise ValueError(
                "add_bos is set but the model has no BOS token id; "
                "set bos_token_id or turn add_bos off"
            )

    @classmethod
    def from_hf_folder(cls, path: str | Path) -> TokenizerAssets:
        return _from_hf_folder(Path(path))

    @classmethod
    def read(cls, artifact_dir: str | Path) -> TokenizerAssets:
        """Read back what `write` stored in a compiled-artifact directory."""
        return _read(Path(artifact_dir))

    def write(self, out_dir: str | Path) -> None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / TOKENIZER_JSON).write_text(self.tokenizer_json, encoding="utf-8")
        rest = {key: value for key, value in asdict(self).items() if key != "tokenizer_json"}
        rest["eos_token_ids"] = list(self.eos_token_ids)
        text = json.dumps(rest, indent=2, ensure_ascii=False)
        (out / MLCX_TOKENIZER_JSON).write_text(text + "\n", encoding="utf-8")


def _from_hf_folder(folder: Path) -> TokenizerAssets:
    tokenizer_path = folder / TOKENIZER_JSON
    if not tokenizer_path.is_file():
        raise ModelSourceError(
            f"{folder} has no {TOKENIZER_JSON}; mlcx needs the fast-tokenizer file that "
            "Hugging Face model folders ship (re-download the model or save it with "
            "transformers' `tokenizer.save_pretrained`)"
        )
    tokenizer_json = tokenizer_path.read_text(encoding="utf-8")
    backend = _parse_tokenizer(tokenizer_json, tokenizer_path)
    config = _read_json(folder / "tokenizer_config.json")
    special_map = _read_json(folder / "special_tokens_map.json")
    bos_token = _token_content(config.get("bos_token", special_map.get("bos_token")))
    eos_token = _token_content(config.get("eos_token", special_map.get("eos_token")))
    bos_token_id = _bos_token_id(backend, bos_token, folder)
    return TokenizerAssets(
        tokenizer_json=tokenizer_json,
        chat_template=_chat_template(folder, config),
        bos_token_id=bos_token_id,
        eos_token_ids=_eos_token_ids(backend, eos_token, folder),
        add_bos=_add_bos(backend, config, bos_token_id),
        bos_token=bos_token,
        eos_token=eos_token,
    )


def _parse_tokenizer(text: str, path: Path) -> tokenizers.Tokenizer:
    try:
        return tokenizers.Tokenizer.from_str(text)
    except Exception as error:  # the library raises plain Exception on malformed JSON
        raise ModelSourceError(
            f"{path} is not a valid tokenizers file ({error}); re-download the model"
        ) from error


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ModelSourceError(f"{path} is not valid JSON ({error}); re-download it") from error
    if not isinstance(data, dict):
        raise ModelSourceError(f"{path} should hold a JSON object; re-download it")
    return data


def _token_content(token: Any) -> str | None:
    """A special token as transformers saves it: a string or a serialized `AddedToken`."""
    if isinstance(token, dict):
        token = token.get("content")
    return token if isinstance(token, str) else None


def _chat_template(folder: Path, config: dict[str, Any]) -> str | None:
    template_file = folder / "chat_template.jinja"
    if template_file.is_file():
        return template_file.read_text(encoding="utf-8")
    template = config.get("chat_template")
    if template is None or isinstance(template, str):
        return template
    if isinstance(template, list):
        named = {entry.get("name"): entry.get("template") for entry in template}
        if isinstance(named.get("default"), str):
            return named["default"]
        raise ModelSourceError(
            f"{folder / 'tokenizer_config.json'} lists chat templates {sorted(map(str, named))} "
            "but none named 'default'; add a chat_template.jinja with the one to use"
        )
    raise ModelSourceError(
        f"{folder / 'tokenizer_config.json'} has a chat_template that is neither a string nor "
        "a list of named templates; fix the file or add a chat_template.jinja"
    )


def _config_ids(folder: Path, key: str) -> list[int]:
    """`key` from generation_config.json then config.json, each an int, a list or absent."""
    ids: list[int] = []
    for name in ("generation_config.json", "config.json"):
        value = _read_json(folder / name).get(key)
        values = value if isinstance(value, list) else [value]
        ids.extend(v for v in values if isinstance(v, int) and not isinstance(v, bool))
    return ids


def _bos_token_id(backend: tokenizers.Tokenizer, bos: str | None, folder: Path) -> int | None:
    if bos is not None and (token_id := backend.token_to_id(bos)) is not None:
        return token_id
    ids = _config_ids(folder, "bos_token_id")
    return ids[0] if ids else None


def _eos_token_ids(backend: tokenizers.Tokenizer, eos: str | None, folder: Path) -> tuple[int, ...]:
    ids: list[int] = []
    if eos is not None and (token_id := backend.token_to_id(eos)) is not None:
        ids.append(token_id)
    ids.extend(_config_ids(folder, "eos_token_id"))
    return tuple(dict.fromkeys(ids))


def _add_bos(
    backend: tokenizers.Tokenizer, config: dict[str, Any], bos_token_id: int | None
) -> bool:
    """Whether `tokenizer.json`'s post-processor prepends BOS; without one, `add_bos_token`.

    transformers 5 lets the post-processor decide and ignores the flag when there is one; the
    flag only matters for older files whose `tokenizer.json` has no post-processor.
    """
    if bos_token_id is None:
        return False
    if backend.post_processor is None:
        return config.get("add_bos_token") is True
    return backend.encode("", add_special_tokens=True).ids[:1] == [bos_token_id]


def _read(artifact_dir: Path) -> TokenizerAssets:
    tokenizer_path = artifact_dir / TOKENIZER_JSON
    rest_path = artifact_dir / MLCX_TOKENIZER_JSON
    for path in (tokenizer_path, rest_path):
        if not path.is_file():
            raise ArtifactError(f"{path} is missing; recompile the model")
    try:
        rest = json.loads(rest_path.read_text(encoding="utf-8"))
        return TokenizerAssets(
            tokenizer_json=tokenizer_path.read_text(encoding="utf-8"),
            chat_template=rest["chat_template"],
            bos_token_id=rest["bos_token_id"],
            eos_token_ids=tuple(rest["eos_token_ids"]),
            add_bos=rest["add_bos"],
            bos_token=rest["bos_token"],
            eos_token=rest["eos_token"],
        )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise ArtifactError(f"{rest_path} is corrupted ({error!r}); recompile the model") from error
