"""mlcx's packages form levels; a module may import its own level and the ones below, never
one above. The order is written here once (the README's "How it is built" follows it).

Every import counts, including those inside functions (a lazy import still ties the levels).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "mlcx"

# Bottom-up. A module belongs to the level of its longest matching prefix.
LEVELS: tuple[tuple[str, ...], ...] = (
    ("mlcx", "mlcx.errors", "mlcx.cache", "mlcx.extras"),  # ground: errors, cache, extras
    ("mlcx.quantization",),  # weight formats and quantization schemes
    ("mlcx.kernels",),  # TE computes and TIR kernels the graphs call
    ("mlcx.frontends",),  # model sources -> nn modules, weight conversion
    ("mlcx.passes",),  # Relax/TIR pipelines and schedules
    ("mlcx.targets",),  # target registry: TVM target, pipeline, export
    ("mlcx.artifact",),  # the artifact directory: the contract between compile and runtime
    ("mlcx.compile", "mlcx.tune"),  # workflows that produce artifacts and tuning databases
    ("mlcx.runtime",),  # the engine every front door shares
    ("mlcx.server", "mlcx.web", "mlcx.bench", "mlcx.package"),  # front doors and tools
    ("mlcx.cli", "mlcx.__main__"),  # thin commands
)


def level_of(module: str) -> int:
    best, best_len = -1, -1
    for level, prefixes in enumerate(LEVELS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and len(prefix) > best_len:
                best, best_len = level, len(prefix)
    if best < 0:
        raise AssertionError(f"{module} belongs to no level; add it to LEVELS")
    return best


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """mlcx modules imported anywhere in the file (relative imports resolved)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "mlcx")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base.split(".")[0] == "mlcx":
                found.add(base)
    return found


def violations(root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        here = module_name(path, root)
        for target in sorted(imported_modules(path, root)):
            if level_of(target) > level_of(here):
                found.append(f"{here} imports {target} (a higher level)")
    return found


def test_no_module_imports_a_higher_level():
    assert violations() == []


def test_every_module_has_a_level():
    for path in ROOT.rglob("*.py"):
        level_of(module_name(path))


@pytest.mark.parametrize(
    ("module", "level"),
    [("mlcx.runtime.engine", "mlcx.runtime"), ("mlcx.kernels.cpu.vec", "mlcx.kernels")],
)
def test_level_lookup_takes_the_longest_prefix(module, level):
    assert LEVELS[level_of(module)] == next(p for p in LEVELS if level in p)


def test_an_upward_import_is_reported(tmp_path):
    pkg = tmp_path / "mlcx"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "kernels" / "bad.py").write_text("from mlcx.runtime.engine import Engine\n")
    (pkg / "kernels" / "lazy.py").write_text("def f():\n    from ..cli import main\n")
    assert violations(pkg) == [
        "mlcx.kernels.bad imports mlcx.runtime.engine (a higher level)",
        "mlcx.kernels.lazy imports mlcx.cli (a higher level)",
    ]


def test_no_module_over_300_lines():
    long = [
        f"{p.relative_to(ROOT.parent)}: {n}"
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 300
    ]
    assert long == []
