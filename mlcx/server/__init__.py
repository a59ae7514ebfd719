"""The OpenAI-compatible REST server: a front door beside `mlcx.cli`, kept apart from
`mlcx.runtime`.

The runtime knows nothing of HTTP; this package turns requests into `SamplingParams` and
prompts, feeds them to the one async path (`mlcx.runtime.api.async_engine`) and turns deltas into
OpenAI responses and Server-Sent Events. Entry points: `create_app` (an ASGI app for tests and
embedding) and `serve` (uvicorn with graceful shutdown, used by `mlcx serve`).
"""

from mlcx.server.app import create_app
from mlcx.server.config import ServerConfig
from mlcx.server.serve import serve

__all__ = ["ServerConfig", "create_app", "serve"]
