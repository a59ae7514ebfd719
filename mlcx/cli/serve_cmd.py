"""`mlcx serve ARTIFACT`: the OpenAI-compatible REST server."""

from __future__ import annotations

from typing import Annotated

import typer

from mlcx.artifact.embedding_config import EMBED_TASK, artifact_task
from mlcx.cli.engine_options import EngineOptions, with_engine_options
from mlcx.runtime.api.embedder import Embedder
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine


def served_model(artifact, engine_config: EngineConfig) -> Engine | Embedder:
    """The generative engine, or an embedding model's Embedder, that `artifact` is for."""
    if artifact_task(artifact.path) == EMBED_TASK:
        return Embedder(artifact.path)
    return Engine(artifact, engine_config)


def serve_command(
    model: Annotated[
        str, typer.Argument(help="Artifact dir (from mlcx compile), or a model to compile first.")
    ],
    host: Annotated[str, typer.Option(help="Address to bind; 0.0.0.0 for all.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option(envvar="MLCX_API_KEY", help="Require this key (Bearer or X-Api-Key)."),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(help="Enable CORS for this origin (repeatable; '*' for any)."),
    ] = None,
    max_waiting: Annotated[
        int, typer.Option(help="Queued requests beyond which new ones get 503.")
    ] = 256,
    model_name: Annotated[
        str | None, typer.Option(help="Name clients use (default: the artifact's).")
    ] = None,
    grace_period: Annotated[
        float, typer.Option(help="Seconds in-flight requests get to finish on SIGTERM.")
    ] = 30.0,
    allow_remote_images: Annotated[
        bool, typer.Option(help="Fetch http(s) image URLs (default: data: URLs only).")
    ] = False,
    max_image_bytes: Annotated[
        int, typer.Option(help="Largest image a request may send, in bytes.")
    ] = 20 * 1024 * 1024,
    reasoning_format: Annotated[
        str,
        typer.Option(
            help="Split chat replies into reasoning_content, content and tool_calls: auto (the "
            "model's own format: harmony, think or none), none (all inline in content), think, "
            "harmony. A request's reasoning_format overrides it."
        ),
    ] = "auto",
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    replicas: Annotated[
        int | None,
        typer.Option(help="Serve N engine replicas on Ray Serve (needs mlcx[replicas])."),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(help="Join this Ray cluster ('auto': this node's); default: start one."),
    ] = None,
    threads_per_replica: Annotated[int, typer.Option(help="CPU threads of each replica.")] = 1,
    routing: Annotated[
        str, typer.Option(help="Replica choice: prefix (KV prefix affinity) or round-robin.")
    ] = "prefix",
    *,
    engine: EngineOptions,
) -> None:
    """Serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions)."""
    from mlcx.server import ServerConfig, serve  # fastapi & co. are the optional "serve" extra

    engine_config = engine.engine_config(max_waiting=max_waiting)
    replica_config = None
    if replicas is not None:
        from mlcx.server.replicas import ReplicaConfig
        from mlcx.server.replicas.launch import require_ray

        replica_config = ReplicaConfig(
            replicas=replicas,
            threads_per_replica=threads_per_replica,
            ray_address=ray_address,
            routing=routing,
            engine=engine_config,
        )
        require_ray()
    artifact = engine.artifact(model)  # compiled once, here: replicas load this directory
    config = ServerConfig(
        host=host,
        port=port,
        api_key=api_key,
        allow_origins=tuple(allow_origin or ()),
        model_name=model_name,
        grace_period_s=grace_period,
        max_image_bytes=max_image_bytes,
        allow_remote_images=allow_remote_images,
        reasoning_format=reasoning_format,
    )
    if replica_config is None:
        serve(lambda: served_model(artifact, engine_config), config, log_level=log_level)
    else:
        from mlcx.server.replicas.launch import start_replicas

        serve(lambda: start_replicas(artifact, replica_config), config, log_level=log_level)


def register(app: typer.Typer) -> None:
    app.command("serve")(with_engine_options(serve_command))
