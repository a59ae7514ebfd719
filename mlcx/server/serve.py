"""Running the app under uvicorn, with a graceful SIGTERM.

On SIGTERM (or Ctrl-C) uvicorn stops accepting connections and waits for the requests in
flight; after `grace_period_s` it cancels them, which aborts them in the engine. Meanwhile
the host reports "draining", so /health turns 503 and new requests on kept-alive
connections are refused.
"""

from __future__ import annotations

import logging

import uvicorn

from mlcx.server.app import create_app
from mlcx.server.config import ServerConfig
from mlcx.server.model_host import EngineSource

log = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_exit_signal, on_started):
        super().__init__(config)
        self._on_exit_signal = on_exit_signal
        self._on_started = on_started

    def handle_exit(self, sig, frame) -> None:
        self._on_exit_signal()
        super().handle_exit(sig, frame)

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started:
            self._on_started(self)


def bound_port(server: uvicorn.Server) -> int:
    return server.servers[0].sockets[0].getsockname()[1]


def serve(source: EngineSource, config: ServerConfig, log_level: str = "info") -> None:
    """Serve until SIGTERM/SIGINT; prints the URL once listening."""
    app = create_app(source, config)
    host = app.state.host

    def started(server: uvicorn.Server) -> None:
        name = f"[{config.host}]" if ":" in config.host else config.host
        print(f"mlcx serve: listening on http://{name}:{bound_port(server)}", flush=True)

    def draining() -> None:
        host.draining = True

    uv_config = uvicorn.Config(
        app,
        host=config.host,
        port=config.port,
        log_level=log_level,
        timeout_graceful_shutdown=config.grace_period_s,  # type: ignore[arg-type]
        access_log=False,
    )
    _Server(uv_config, draining, started).run()
