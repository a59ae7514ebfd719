"""Server settings, validated once."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from mlcx.runtime.openai_api.image_parts import ImagePolicy
from mlcx.runtime.text.reasoning import check_format

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8000  # 0: any free port
    api_key: str | None = None  # required on every route but /health and /v1/models
    allow_origins: tuple[str, ...] = ()  # CORS is off unless origins are given ("*" for any)
    model_name: str | None = None  # served name; default: the artifact's model name
    grace_period_s: float = 30.0  # SIGTERM: time in-flight requests get to finish
    max_image_bytes: int = 20 * 1024 * 1024  # of one image in a request (decoded)
    allow_remote_images: bool = False  # fetch http(s) image URLs (off: data: URLs only)
    # how chat replies are split into reasoning_content, content and tool_calls
    # (mlcx.runtime.text.reasoning.CHOICES; a request's reasoning_format overrides it)
    reasoning_format: str = "auto"

    def __post_init__(self) -> None:
        if not self.host:
            raise ValueError("host must not be empty")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in [0, 65535], got {self.port}")
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("api_key must not be empty; leave it out to disable auth")
        if isinstance(self.allow_origins, str):
            raise ValueError("allow_origins must be a tuple of origins, not one string")
        for origin in self.allow_origins:
            if not origin or origin.endswith("/"):
                raise ValueError(
                    f"allow_origins entry {origin!r} must be an origin like "
                    "'http://localhost:3000' (no trailing slash) or '*'"
                )
        if self.max_image_bytes < 1:
            raise ValueError(f"max_image_bytes must be positive, got {self.max_image_bytes}")
        if self.grace_period_s < 0:
            raise ValueError(f"grace_period_s must be >= 0, got {self.grace_period_s}")
        check_format(self.reasoning_format)

    @property
    def images(self) -> ImagePolicy:
        return ImagePolicy(self.max_image_bytes, self.allow_remote_images)

    @property
    def is_loopback(self) -> bool:
        """Bound to this machine only: then a non-local Host header means DNS rebinding."""
        if self.host in LOOPBACK_NAMES:
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False
