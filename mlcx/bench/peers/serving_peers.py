"""The servers `mlcx bench serve --against` loads beside mlcx: name -> factory of a peer.

A peer has a `name`, the `command` that starts it, and `running()`: a context manager giving
the base URL of the started, healthy server and stopping it after. Factories build or find
what a peer needs; none runs at import.
"""

from __future__ import annotations

from collections.abc import Callable

from mlcx.bench.peers.serving_setup import ServingSetup


def _llama_server(setup: ServingSetup):
    from mlcx.bench.peers.llama_server import LlamaServer

    return LlamaServer(setup)


SERVING_PEERS: dict[str, Callable[[ServingSetup], object]] = {
    "llama-server": _llama_server,  # llama.cpp's server on the CPU (scripts/build-llamacpp-cpu.sh)
}


def serving_peer(name: str, setup: ServingSetup):
    if name not in SERVING_PEERS:
        raise ValueError(f"unknown serving peer {name!r}; known: {', '.join(SERVING_PEERS)}")
    return SERVING_PEERS[name](setup)
