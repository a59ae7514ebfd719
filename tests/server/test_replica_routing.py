"""Replica routing without Ray: the policies, the page hashes they route by, the options."""

from __future__ import annotations

import sys

import pytest

from mlcx.errors import MlcxError
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.sample.params import SamplingParams
from mlcx.server.replicas import ReplicaConfig
from mlcx.server.replicas.launch import require_ray
from mlcx.server.replicas.policies import PrefixAffinity, RoundRobin
from mlcx.server.replicas.route_key import prefix_hashes
from tests.support.cli import one_line_error, run_mlcx


def test_a_prefix_sticks_to_the_replica_that_took_it():
    policy = PrefixAffinity(max_imbalance=2)
    idle = {"a": 0, "b": 0}
    first = policy.choose(idle, (1, 2, 3))
    policy.record((1, 2, 3), first)
    other = "b" if first == "a" else "a"
    assert policy.choose(idle, (1, 2, 3)) == first
    assert policy.choose(idle, (1, 2, 9, 10)) == first  # shares the first two pages
    assert policy.choose({first: 2, other: 0}, (1, 2, 3)) == first  # within the bound
    assert policy.choose({first: 3, other: 0}, (1, 2, 3)) == other  # past the bound
    assert policy.choose({other: 0}, (1, 2, 3)) == other  # its owner is gone


def test_the_longest_matching_prefix_wins():
    policy = PrefixAffinity(max_imbalance=4)
    policy.record((1,), "a")
    policy.record((1, 2), "b")
    assert policy.choose({"a": 0, "b": 0}, (1, 2, 7)) == "b"
    assert policy.choose({"a": 0, "b": 0}, (1, 5)) == "b"  # page 1's last owner


def test_new_prefixes_spread_over_idle_replicas():
    policy = PrefixAffinity(max_imbalance=4)
    idle = {"a": 0, "b": 0}
    chosen = []
    for prompt in range(4):
        chosen.append(policy.choose(idle, (100 + prompt,)))
        policy.record((100 + prompt,), chosen[-1])
    assert sorted(chosen) == ["a", "a", "b", "b"]
    assert policy.choose({"a": 0, "b": 1}, (200,)) == "a"  # the least loaded


def test_round_robin_ignores_the_prefix():
    policy = RoundRobin()
    load = {"a": 0, "b": 0}
    assert [policy.choose(load, (1, 2)) for _ in range(4)] == ["a", "b", "a", "b"]


def test_routing_hashes_are_the_pages_the_engine_caches(artifact):
    engine = Engine(artifact)
    page = engine.artifact.config.page_size
    prompt = list(range(5, 5 + 3 * page + 4))
    engine.add_request("r", prompt, SamplingParams(max_tokens=1, temperature=0))
    while engine.has_work():
        engine.step()
    hashes = prefix_hashes(prompt, page, max_pages=64)
    assert len(hashes) == 3
    assert all(engine.kv.pool.lookup(h) is not None for h in hashes)
    assert prefix_hashes(prompt, page, max_pages=2) == hashes[:2]
    other = prefix_hashes([6, *prompt[1:]], page, max_pages=64)
    assert all(engine.kv.pool.lookup(h) is None for h in other)


@pytest.mark.parametrize(
    ("field", "value"),
    [("replicas", 0), ("threads_per_replica", 0), ("routing", "random"), ("max_imbalance", -1)],
)
def test_bad_replica_options_are_refused(field, value):
    with pytest.raises(ValueError, match=field.split("_")[0]):
        ReplicaConfig(**{field: value})


def test_cli_names_the_bad_option():
    line = one_line_error(run_mlcx("serve", "no-such-model", "--replicas", "0"))
    assert "--replicas must be >= 1" in line
    line = one_line_error(run_mlcx("serve", "no-such-model", "--replicas", "2", "--routing", "x"))
    assert "--routing must be one of prefix, round-robin" in line


def test_without_ray_the_error_names_the_extra(monkeypatch):
    for name in ("ray", "ray.serve"):  # an earlier test in this worker may have imported both
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MlcxError, match=r"pip install 'mlcx\[replicas\]'"):
        require_ray()
