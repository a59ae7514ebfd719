"""A static file server for the browser demo: the page and its npm libraries (as /vendor/) from
this install's browser runtime (mlcx.web.assets), the library's package entry (as /mlcx-web/,
see mlcx.web.package_entry), and one compiled artifact (as /artifact/).

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

from mlcx.artifact.config import Artifact
from mlcx.errors import ArtifactError
from mlcx.web.assets import WebRuntime, web_runtime
from mlcx.web.package_entry import MOUNT, resolve_bare_imports

mimetypes.add_type("text/javascript", ".mjs")
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/plain", ".wgsl")


@dataclass(frozen=True)
class Mounts:
    web: WebRuntime
    artifact: Path

    def resolve(self, url_path: str) -> Path | None:
        path = unquote(urlsplit(url_path).path)
        mounts = (
            ("/artifact/", self.artifact),
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
        if not urlsplit(self.path).path.startswith(MOUNT):
            return super().send_head()
        found = self.mounts.resolve(self.path)
        if found is None:
            self.send_error(404)
            return None
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


def make_server(artifact: Path, port: int = 8000) -> ThreadingHTTPServer:
    art = Artifact(artifact)
    if art.config.runtime != "wgpu":
        raise ArtifactError(
            f"{artifact} was compiled for {art.config.target!r}; the browser runs artifacts "
            "of --target webgpu"
        )
    mounts = Mounts(web_runtime(), art.path.resolve())
    return ThreadingHTTPServer(("127.0.0.1", port), partial(_Handler, mounts=mounts))


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/"


def serve_in_background(artifact: Path, port: int = 0) -> ThreadingHTTPServer:
    """For tests and benchmarks: a running server; call .shutdown() when done."""
    server = make_server(artifact, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
