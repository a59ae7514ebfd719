"""Image parts of chat messages: OpenAI's `image_url` parts become `{"type": "image", ...}`
parts (runtime.vision.prompt), their images decoded off the event loop.

A data: URL (base64 PNG, JPEG or WebP) is decoded; an http(s) URL is fetched only where the
operator allowed remote images (`mlcx serve --allow-remote-images`). Any bad image is a 400
naming its part, e.g. `messages.0.content.1`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from mlcx.errors import ImageError
from mlcx.runtime.openai_api.schemas import ImagePart, TextPart
from mlcx.runtime.vision.decode import decode_data_url, decode_image

URL_PART = "image_url"
_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ImagePolicy:
    """Which images a request may give (a server operator's choice: `mlcx serve` flags)."""

    max_image_bytes: int = 20 * 1024 * 1024  # of one image (decoded)
    allow_remote_images: bool = False  # fetch http(s) image URLs (off: data: URLs only)

    def __post_init__(self) -> None:
        if self.max_image_bytes < 1:
            raise ValueError(f"max_image_bytes must be positive, got {self.max_image_bytes}")


ANY_DATA_URL = ImagePolicy()  # the default: data: URLs up to 20 MiB, no fetching


def message_content(index: int, parts: list[TextPart | ImagePart]) -> str | list[dict]:
    """A message's parts: text alone joined into one string (as before images), else the
    parts in order, each image part with its URL and the param that names it."""
    if all(isinstance(part, TextPart) for part in parts):
        return "".join(part.text for part in parts)  # type: ignore[union-attr]
    return [_part(index, i, part) for i, part in enumerate(parts)]


def _part(index: int, i: int, part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    where = f"messages.{index}.content.{i}"
    return {"type": URL_PART, "url": part.image_url.url, "where": where}


def has_images(content: Any) -> bool:
    return isinstance(content, list) and any(p.get("type") == URL_PART for p in content)


async def load_images(messages: list[dict], config: ImagePolicy) -> list[dict]:
    """The messages with every image part decoded ({"type": "image", "image": ...})."""
    return await asyncio.to_thread(_load_all, messages, config)


def _load_all(messages: list[dict], config: ImagePolicy) -> list[dict]:
    return [_load_message(m, config) if has_images(m["content"]) else m for m in messages]


def _load_message(message: dict, config: ImagePolicy) -> dict:
    return {**message, "content": [_load(part, config) for part in message["content"]]}


def _load(part: dict, config: ImagePolicy) -> dict:
    if part.get("type") != URL_PART:
        return part
    url, where = part["url"], part["where"]
    if url.startswith("data:"):
        image = decode_data_url(url, where, config.max_image_bytes)
    elif url.startswith(("http://", "https://")):
        image = decode_image(_fetch(url, where, config), where, config.max_image_bytes)
    else:
        raise ImageError(f"{where}: image_url must be a data: URL or http(s)", param=where)
    return {"type": "image", "image": image, "where": where}


def _fetch(url: str, where: str, config: ImagePolicy) -> bytes:
    if not config.allow_remote_images:
        raise ImageError(
            f"{where}: remote image URLs are refused; send the image as a data: URL (base64), "
            "or start the server with --allow-remote-images",
            param=where,
        )
    import httpx

    try:
        with httpx.stream("GET", url, timeout=_TIMEOUT_S, follow_redirects=True) as response:
            response.raise_for_status()
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > config.max_image_bytes:
                    raise ImageError(
                        f"{where}: the image is larger than {config.max_image_bytes} bytes",
                        param=where,
                    )
            return bytes(data)
    except httpx.HTTPError as err:
        raise ImageError(f"{where}: cannot fetch the image ({err})", param=where) from None
