"""mlcx's packages form levels; a module may import its own level and the ones below, never
one above, and no module imports itself back through others (no import circle, inside a level
or anywhere). The order is written here once (the README's "How it is built" follows it).

Every import counts, including those inside functions and under TYPE_CHECKING (a lazy import
still ties the modules).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "mlcx"

# Bottom-up. A module belongs to the level of its longest matching prefix.
LEVELS: tuple[tuple[str, ...], ...] = (
    # ground: errors, the cache folder, optional extras, the file format version
    ("mlcx", "mlcx.errors", "mlcx.cache", "mlcx.extras", "mlcx.formats"),
    ("mlcx.quantization",),  # weight formats and quantization schemes
    ("mlcx.kernels",),  # TE computes and TIR kernels the graphs call
    ("mlcx.frontends",),  # model sources -> nn modules, weight conversion
    ("mlcx.passes",),  # Relax/TIR pipelines and schedules
    ("mlcx.targets",),  # target registry: TVM target, pipeline, export
    ("mlcx.artifact",),  # the artifact directory: the contract between compile and runtime
    # workflows producing artifacts (generative, embedding, image encoders), the JIT cache,
    # tuning DBs (mlcx/compile/__init__.py)
    ("mlcx.compile",),
    # the engine every front door shares, by concept (mlcx/runtime/__init__.py)
    ("mlcx.runtime.kv",),  # KV block ids, page tables, prefix sharing: no tensors
    ("mlcx.runtime.state",),  # state slots and checkpoints of hybrid models: no tensors
    ("mlcx.runtime.lora",),  # LoRA adapters by name, their slots and stacked weights
    ("mlcx.runtime.backends",),  # runners: a compiled step on a device
    ("mlcx.runtime.text",),  # tokenizer, chat template, prompt encoding, detokenizing
    ("mlcx.runtime.vision",),  # images: decoding, preprocessing, the encoder, prompt layout
    ("mlcx.runtime.structured",),  # output constraints and their token masks
    ("mlcx.runtime.sample",),  # sampling parameters and the sampler
    ("mlcx.runtime.speculative",),  # draft proposers and verification
    ("mlcx.runtime.core",),  # the engine, its scheduler and outputs
    ("mlcx.runtime",),  # the runtime package's own face (mlcx/runtime/__init__.py)
    # the OpenAI API's shapes: request schemas and plans, response bodies and chunks, tools,
    # one request's serving path; shared by the in-process engines and the REST server
    ("mlcx.runtime.openai_api",),
    ("mlcx.runtime.api",),  # the APIs on the engine: LLM, AsyncEngine, ChatSession, embedders
    # the benchmarks' parts, bottom-up (mlcx/bench/__init__.py): what runs, how it is timed,
    # the peers run beside mlcx; the benches themselves are a front door
    ("mlcx.bench.workloads",),
    ("mlcx.bench.measure",),
    ("mlcx.bench.peers",),
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


@functools.cache
def all_modules(root: Path = ROOT) -> frozenset[str]:
    return frozenset(module_name(p, root) for p in root.rglob("*.py"))


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """mlcx modules imported anywhere in the file (relative imports resolved; `from package
    import module` names the module)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    modules = all_modules(root)
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
                subs = {f"{base}.{a.name}" for a in node.names} & modules
                found.update(subs or {base})
                if len(subs) < len(node.names):  # names from the package itself
                    found.add(base)
    return found - {name}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    return {module_name(p, root): imported_modules(p, root) for p in sorted(root.rglob("*.py"))}


def circles(root: Path = ROOT) -> list[str]:
    """Each import circle once, as `a -> b -> ... -> a` (depth-first: a back edge closes one)."""
    graph = import_graph(root)
    found, state, path = [], {}, []  # state: 1 on the current path, 2 done

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                loop = path[path.index(target) :]
                found.append(" -> ".join([*loop, target]))
            elif target in graph and target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in graph:
        if module not in state:
            visit(module)
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


def test_no_import_circle():
    assert circles() == []


def test_a_circle_is_reported_lazy_imports_included(tmp_path):
    pkg = tmp_path / "mlcx"
    (pkg / "runtime" / "core").mkdir(parents=True)
    for name in ("", "runtime/", "runtime/core/"):
        (pkg / f"{name}__init__.py").write_text("")
    (pkg / "runtime" / "core" / "a.py").write_text("from mlcx.runtime.core import b\n")
    (pkg / "runtime" / "core" / "b.py").write_text("def f():\n    from .a import g\n")
    (pkg / "runtime" / "core" / "c.py").write_text("from mlcx.runtime.core.b import f\n")
    assert circles(pkg) == ["mlcx.runtime.core.a -> mlcx.runtime.core.b -> mlcx.runtime.core.a"]


def test_every_module_has_a_level():
    for path in ROOT.rglob("*.py"):
        level_of(module_name(path))


@pytest.mark.parametrize(
    ("module", "level"),
    [
        ("mlcx.runtime.core.engine", "mlcx.runtime.core"),
        ("mlcx.runtime.api.llm", "mlcx.runtime.api"),
        ("mlcx.kernels.cpu.vec", "mlcx.kernels"),
    ],
)
def test_level_lookup_takes_the_longest_prefix(module, level):
    assert LEVELS[level_of(module)] == next(p for p in LEVELS if level in p)


def test_an_upward_import_is_reported(tmp_path):
    pkg = tmp_path / "mlcx"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "kernels" / "bad.py").write_text("from mlcx.runtime.core.engine import Engine\n")
    (pkg / "kernels" / "lazy.py").write_text("def f():\n    from ..cli import main\n")
    assert violations(pkg) == [
        "mlcx.kernels.bad imports mlcx.runtime.core.engine (a higher level)",
        "mlcx.kernels.lazy imports mlcx.cli (a higher level)",
    ]


def test_no_module_over_300_lines():
    long = [
        f"{p.relative_to(ROOT.parent)}: {n}"
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 300
    ]
    assert long == []
