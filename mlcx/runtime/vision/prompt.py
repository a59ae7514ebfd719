"""Conversations with images -> prompt ids and the images in prompt order.

An image part of a message is `{"type": "image", "image": <PIL image>}`. The chat template
sees `{"type": "image"}` and writes the model's image marker (Gemma 3: <start_of_image>),
which becomes the model's full image text (the marker between blank lines, then one image
token per embedding row, then <end_of_image>), as the model's own processor does."""

from __future__ import annotations

from typing import Any

from PIL import Image

from mlcx.artifact.encoder import EncoderConfig
from mlcx.errors import ImageError
from mlcx.runtime.text.prompt_encoder import PromptEncoder
from mlcx.runtime.vision.layout import image_layout

IMAGE_PART = "image"


def split_images(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Image.Image]]:
    """The messages as the chat template takes them, and their images in order."""
    images: list[Image.Image] = []
    plain = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if isinstance(part, dict) and part.get("type") == IMAGE_PART:
                    images.append(part["image"])
                    parts.append({"type": IMAGE_PART})
                else:
                    parts.append(part)
            message = {**message, "content": parts}
        plain.append(message)
    return plain, images


def _first_image_part(messages: list[dict[str, Any]]) -> str:
    """Where the first image part is (the server names parts so), for errors."""
    for index, message in enumerate(messages):
        content = message.get("content")
        for i, part in enumerate(content if isinstance(content, list) else ()):
            if isinstance(part, dict) and part.get("type") == IMAGE_PART:
                return part.get("where", f"messages.{index}.content.{i}")
    return "messages"


def chat_with_images(
    prompts: PromptEncoder,
    config: EncoderConfig | None,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
) -> tuple[list[int], list[Image.Image]]:
    plain, images = split_images(messages)
    if not images:
        return prompts.chat(plain, tools), []
    if config is None or not config.image_text:
        where = _first_image_part(messages)
        raise ImageError(
            f"{where}: this model takes text only (it was compiled without an image encoder)",
            param=where,
        )
    text = prompts.chat_template.render(plain, add_generation_prompt=True, tools=tools)
    marker = config.image_marker
    if text.count(marker) != len(images):
        raise ImageError(
            f"the chat template wrote {text.count(marker)} image marker(s) {marker!r} for "
            f"{len(images)} image(s)"
        )
    pieces = text.split(marker)
    layouts = [image_layout(config, image).text for image in images]
    text = pieces[0] + "".join(lay + piece for lay, piece in zip(layouts, pieces[1:], strict=True))
    return prompts.tokenizer.encode(text, add_special_tokens=False), images
