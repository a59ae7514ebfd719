"""The OpenAI-compatible REST server: a front door beside `mlcx.cli`, kept apart from
`mlcx.runtime`.

The runtime knows nothing of HTTP; this package parses requests and hands them to the served
`AsyncMLCEngine` (mlcx.runtime.api), which plans and runs them on the one async path and
answers with OpenAI response bodies and chunks; here they become JSON responses and
Server-Sent Events, and the OpenAI layer's errors become statuses (errors.py). Entry points:
`create_app` (an ASGI app for tests and embedding) and `serve` (uvicorn with graceful
shutdown, used by `mlcx serve`).
"""

from mlcx.server.app import create_app
from mlcx.server.config import ServerConfig
from mlcx.server.serve import serve

__all__ = ["ServerConfig", "create_app", "serve"]
