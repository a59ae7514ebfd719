"""A static file server for the browser demo: the page and its npm libraries (as /vendor/) from
this install's browser runtime (mlcx.web.assets), the library's package entry (as /mlcx-web/,
see mlcx.web.package_entry), and compiled artifacts: each at /artifacts/<model_id>/, the first
also at /artifact/, all listed in /mlcx-web/prebuilt_app_config.js (mlcx.web.app_config).

Local only (127.0.0.1): it serves files and nothing else, with no directory listings.
"""

from __future__ import annotations

import io
import mimetypes
import threading
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mlcx.web.app_config import (
    FIRST,
    PREBUILT_MODULE,
    ServedModel,
    prebuilt_module,
    served_models,
)
from mlcx.web.assets import WebRuntime, web_runtime
from mlcx.web.package_entry import MOUNT, resolve_bare_imports

mimetypes.add_type("text/javascript", ".mjs")
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/plain", ".wgsl")


@dataclass(frozen=True)
class Mounts:
    web: WebRuntime
    models: tuple[ServedModel, ...]

    def resolve(self, url_path: str) -> Path | None:
        path = unquote(urlsplit(url_path).path)
        mounts = (
            (FIRST, self.models[0].path),
            *((m.url, m.path) for m in self.models),
            ("/vendor/", self.web.vendor),
            (MOUNT, self.web.page / "src"),
        )
        for prefix, root in mounts:
            if path.startswith(prefix):
                return _inside(root, path[len(prefix) :])
        return _inside(self.web.page, "index.html" if path == "/" else path.lstrip("/"))


def _inside(root: Path, rel: str) -> Path | None:
    target = (root / rel).resolve()
    return target if target.is_file() and target.is_relative_to(root.resolve()) else None


class _Handler(SimpleHTTPRequestHandler):
    def __init__(self, *args, mounts: Mounts, **kwargs):
        self.mounts = mounts
        super().__init__(*args, **kwargs)

    def translate_path(self, path: str) -> str:
        found = self.mounts.resolve(path)
        return str(found) if found else "/nonexistent"

    def send_head(self):
        path = urlsplit(self.path).path
        if not path.startswith(MOUNT):
            return super().send_head()
        found = self.mounts.resolve(self.path)
        if found is None:
            self.send_error(404)
            return None
        if path == MOUNT + PREBUILT_MODULE:
            body = prebuilt_module(list(self.mounts.models)).encode()
        else:
            body = resolve_bare_imports(found.read_text()).encode()
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(found)))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Service-Worker-Allowed", "/")  # src/service_worker.js may serve "/"
        self.end_headers()
        return io.BytesIO(body)

    def end_headers(self):
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


def make_server(artifacts: Path | list[Path], port: int = 8000) -> ThreadingHTTPServer:
    """`artifacts`: one webgpu artifact or several (generative or embedding models)."""
    paths = [artifacts] if isinstance(artifacts, Path | str) else list(artifacts)
    mounts = Mounts(web_runtime(), tuple(served_models([Path(p) for p in paths])))
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(_Handler, mounts=mounts))
    server.models = mounts.models  # type: ignore[attr-defined]
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/"


def serve_in_background(artifacts: Path | list[Path], port: int = 0) -> ThreadingHTTPServer:
    """For tests and benchmarks: a running server; call .shutdown() when done."""
    server = make_server(artifacts, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
