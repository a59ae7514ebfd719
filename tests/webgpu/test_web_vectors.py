"""The shared test vectors (web/test/vectors/) are what the Python runtime computes now: the
node tests hold the JS runtime to them (tests/webgpu/test_web_node.py runs those), so a change
on either side that is not made on the other fails a test. Regenerate them with
`python -m tests.support.web_vectors` after a deliberate change on the Python side."""

from __future__ import annotations

import pytest

from tests.support.web_vectors import VECTORS, render


@pytest.mark.parametrize("name,text", sorted(render().items()))
def test_committed_vectors_match_the_python_runtime(name, text):
    assert (VECTORS / name).read_text() == text, (
        f"{name} is stale: run `python -m tests.support.web_vectors` and let the node tests "
        "(web/test/vectors.test.mjs) say whether the JS side still agrees"
    )
