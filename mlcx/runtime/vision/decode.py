"""Image bytes -> an RGB Pillow image, or an ImageError naming the part that gave them."""

from __future__ import annotations

import base64
import binascii
import io
import re
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from mlcx.errors import ImageError

FORMATS = ("PNG", "JPEG", "WEBP")
MAX_BYTES = 20 * 1024 * 1024
MAX_PIXELS = 64 * 1024 * 1024  # width * height of a decoded image
_DATA_URL = re.compile(r"^data:image/([a-z+.-]+);base64,(.*)$", re.DOTALL | re.IGNORECASE)


def _bad(where: str, why: str) -> ImageError:
    return ImageError(f"{where}: {why}", param=where)


def decode_image(data: bytes, where: str, max_bytes: int = MAX_BYTES) -> Image.Image:
    """Decode PNG/JPEG/WebP bytes; `where` names the input in errors."""
    if not data:
        raise _bad(where, "the image is empty (0 bytes)")
    if len(data) > max_bytes:
        raise _bad(where, f"the image is {len(data)} bytes; the limit is {max_bytes}")
    try:
        with Image.open(io.BytesIO(data)) as image:
            _check(image, where)
            image.load()
            return image.convert("RGB")
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError) as err:
        raise _bad(where, f"not a readable PNG, JPEG or WebP image ({err})") from None


def _check(image: Image.Image, where: str) -> None:
    if image.format not in FORMATS:
        raise _bad(where, f"{image.format} images are not taken ({', '.join(FORMATS)})")
    if not image.width or not image.height or image.width * image.height > MAX_PIXELS:
        raise _bad(where, f"a {image.width}x{image.height} image cannot be used")


def read_image_file(path: Path) -> Image.Image:
    """An image file (PNG, JPEG, WebP) from disk; errors name the file."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise _bad(str(path), f"cannot read the file ({err.strerror})") from None
    return decode_image(data, str(path))


def decode_data_url(url: str, where: str, max_bytes: int = MAX_BYTES) -> Image.Image:
    """A `data:image/...;base64,...` URL -> its image."""
    match = _DATA_URL.match(url)
    if not match:
        raise _bad(where, "expected a data:image/...;base64 URL")
    if len(match.group(2)) > max_bytes * 4 // 3 + 4:
        raise _bad(where, f"the image is larger than the limit of {max_bytes} bytes")
    try:
        data = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        raise _bad(where, "the data URL is not valid base64") from None
    return decode_image(data, where, max_bytes)
