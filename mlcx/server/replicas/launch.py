"""Starting engine replicas on Ray Serve, and stopping them.

The artifact is compiled (or found in the cache) by the caller before this runs; every
replica loads that one directory. Replicas import the same mlcx as this process (its folder
goes on their PYTHONPATH) and run `threads_per_replica` TVM threads on as many Ray CPUs.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import mlcx
from mlcx.artifact.config import Artifact
from mlcx.extras import require
from mlcx.server.replicas.config import ReplicaConfig

log = logging.getLogger(__name__)
_READY_TIMEOUT_S = 600.0


def require_ray() -> None:
    """Import Ray Serve, or say which extra to install. Call it before anything imports ray."""
    # Ray's failure signal handler (absl; read when ray is first imported) re-raises SIGTERM
    # after the server's own handler: the front would die mid-drain, leaving Ray running.
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    require("ray.serve", "replicas", "--replicas")


def start_replicas(artifact: Artifact, config: ReplicaConfig):
    """Deploy the replicas and return the front's RayEngineClient once all of them serve.
    Without `config.ray_address`, starts (and on close stops) a local Ray instance."""
    require_ray()
    import ray
    from ray import serve

    from mlcx.server.replicas.client import RayEngineClient

    owns_ray = not ray.is_initialized() and config.ray_address is None
    if not ray.is_initialized():
        ray.init(**_ray_init_args(config))
    serve.start(proxy_location="Disabled")
    handle = serve.run(_deployment(artifact, config), name=config.app_name, route_prefix=None)

    def stop() -> None:
        log.info("stopping the replicas")
        serve.delete(config.app_name)
        if owns_ray:
            serve.shutdown()
            ray.shutdown()
        log.info("replicas stopped")

    _wait_for_router(handle, config)
    return RayEngineClient(handle, artifact, config, on_close=stop)


def _ray_init_args(config: ReplicaConfig) -> dict:
    if config.ray_address is not None:
        return {"address": config.ray_address}
    cpus = max(os.cpu_count() or 1, config.replicas * config.threads_per_replica)
    return {"num_cpus": cpus, "include_dashboard": False, "log_to_driver": False}


def _deployment(artifact: Artifact, config: ReplicaConfig):
    from ray import serve
    from ray.serve.config import RequestRouterConfig

    from mlcx.server.replicas.deployment import EngineReplica
    from mlcx.server.replicas.router import MlcxRequestRouter

    threads = str(config.threads_per_replica)
    env = {
        "PYTHONPATH": _with_mlcx_on_path(os.environ.get("PYTHONPATH")),
        "TVM_NUM_THREADS": threads,
        "OMP_NUM_THREADS": threads,
        "TOKENIZERS_PARALLELISM": "false",
    }
    router = RequestRouterConfig(
        request_router_class=MlcxRequestRouter,
        request_router_kwargs={
            "policy": config.routing,
            "max_imbalance": config.max_imbalance,
            "key": config.app_name,
        },
    )
    deployment = serve.deployment(
        EngineReplica,
        name="engine",
        num_replicas=config.replicas,
        max_ongoing_requests=config.max_ongoing_requests,
        ray_actor_options={
            "num_cpus": config.threads_per_replica,
            "runtime_env": {"env_vars": env},
        },
        request_router_config=router,
    )
    return deployment.bind(str(artifact.path), config.engine)


def _with_mlcx_on_path(pythonpath: str | None) -> str:
    root = str(Path(mlcx.__file__).resolve().parent.parent)
    return os.pathsep.join(p for p in (root, pythonpath) if p)


def _wait_for_router(handle, config: ReplicaConfig) -> None:
    """Until the front's router knows every replica (it is made at the handle's first call
    and learns the replicas from Serve's controller)."""
    from mlcx.server.replicas.route_key import RouteKey
    from mlcx.server.replicas.router import live_replicas

    deadline = time.monotonic() + _READY_TIMEOUT_S
    while len(live_replicas(config.app_name)) < config.replicas:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the {config.replicas} replicas did not come up")
        handle.pid.remote(route=RouteKey()).result(timeout_s=_READY_TIMEOUT_S)
        time.sleep(0.1)
