"""Plan expressions: TIR -> JSON tree -> value, with TIR's integer semantics."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from tvm import tirx

from mlcx.runtime.backends.wgpu_expr import evaluate
from mlcx.targets.webgpu_plan.expr import by_name, to_tree

# (tree, env, value): the same table web/test/expr.test.mjs checks against web/src/expr.js.
CASES = [
    (["floordiv", -7, 2], {}, -4),
    (["floormod", -7, 2], {}, 1),
    (["div", -7, 2], {}, -3),
    (["mod", -7, 2], {}, -1),
    (["select", ["lt", "n", 4], ["mul", "n", 2], ["max", "n", 9]], {"n": 3}, 6),
    (["select", ["lt", "n", 4], ["mul", "n", 2], ["max", "n", 9]], {"n": 5}, 9),
    (["and", ["ge", "n", 1], ["not", ["eq", "n", 2]]], {"n": 2}, 0),
    (["floordiv", ["add", "tokens", 31], 32], {"tokens": 33}, 2),
]


@pytest.mark.parametrize(("tree", "env", "value"), CASES)
def test_evaluate(tree, env, value):
    assert evaluate(tree, env) == value


def _i64(value: int) -> tirx.IntImm:
    return tirx.IntImm("int64", value)


def test_tir_expressions_round_trip():
    n = tirx.Var("n", "int64")
    m = tirx.Var("m", "int32")
    expr = tirx.Max(tirx.FloorDiv(n + _i64(31), _i64(32)), tirx.Cast("int64", m) * _i64(2))
    tree = to_tree(expr, by_name)
    assert tree == ["max", ["floordiv", ["add", "n", 31], 32], ["mul", "m", 2]]
    assert evaluate(tree, {"n": 65, "m": 1}) == 3


def test_let_values_are_inlined():
    n, k = tirx.Var("n", "int64"), tirx.Var("k", "int64")
    tree = to_tree(tirx.Let(k, n * _i64(4), k + _i64(1)), by_name)
    assert evaluate(tree, {"n": 3}) == 13


def test_unknown_operator_is_rejected():
    with pytest.raises(ValueError, match="unknown plan expression operator"):
        evaluate(["pow", 2, 3], {})


def test_javascript_evaluator_agrees():
    """web/src/expr.js, which the browser runtime uses, on the same table."""
    if shutil.which("node") is None:
        pytest.skip("Node.js is missing: run scripts/setup-web.sh")
    script = Path(__file__).resolve().parents[2] / "web" / "test" / "expr.test.mjs"
    cases = json.dumps([[tree, env] for tree, env, _ in CASES])
    out = subprocess.run(["node", str(script), cases], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [value for _, _, value in CASES]
