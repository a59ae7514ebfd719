"""`mlcx serve ARTIFACT`: the OpenAI-compatible REST server."""

from __future__ import annotations

from typing import Annotated

import typer

from mlcx.cli.options import KVDtypeOption, kv_dtype_value
from mlcx.cli.runtime_options import resolve_artifact
from mlcx.cli.speculative_options import (
    DraftOption,
    NumSpeculativeOption,
    SpeculativeOption,
    speculation,
)
from mlcx.runtime.engine import Engine
from mlcx.runtime.engine_config import EngineConfig
from mlcx.runtime.speculative.proposer import DEFAULT_NUM_SPECULATIVE


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
    max_batch: Annotated[int, typer.Option(help="Sequences decoded together at most.")] = 16,
    max_waiting: Annotated[
        int, typer.Option(help="Queued requests beyond which new ones get 503.")
    ] = 256,
    model_name: Annotated[
        str | None, typer.Option(help="Name clients use (default: the artifact's).")
    ] = None,
    grace_period: Annotated[
        float, typer.Option(help="Seconds in-flight requests get to finish on SIGTERM.")
    ] = 30.0,
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
    speculative: SpeculativeOption = None,
    draft: DraftOption = None,
    num_speculative: NumSpeculativeOption = DEFAULT_NUM_SPECULATIVE,
    kv_dtype: KVDtypeOption = None,
) -> None:
    """Serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions)."""
    from mlcx.server import ServerConfig, serve  # fastapi & co. are the optional "serve" extra

    spec = speculation(speculative, draft, num_speculative)
    engine_config = EngineConfig(max_running=max_batch, max_waiting=max_waiting, **spec)
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
    artifact = resolve_artifact(
        model, kv_dtype=kv_dtype_value(kv_dtype)
    )  # compiled once, here: replicas load this directory
    config = ServerConfig(
        host=host,
        port=port,
        api_key=api_key,
        allow_origins=tuple(allow_origin or ()),
        model_name=model_name,
        grace_period_s=grace_period,
    )
    if replica_config is None:
        serve(lambda: Engine(artifact, engine_config), config, log_level=log_level)
    else:
        from mlcx.server.replicas.launch import start_replicas

        serve(lambda: start_replicas(artifact, replica_config), config, log_level=log_level)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
