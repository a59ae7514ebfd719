"""Session fixtures: tiny random models and compiled artifacts shared across test modules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mlcx.cache import cache_dir
from mlcx.passes import lowered_store
from mlcx.targets import llvm_objects
from tests.support.default_model import DEFAULT, default_gguf
from tests.support.tiny_models import TinySpec, make_tiny_model

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# kernels lowered by any worker, any earlier run or an `mlcx` subprocess are read back
LOWERED = os.environ.setdefault(lowered_store.ENV, str(cache_dir() / "test-lowered"))
# CPU kernels' LLVM objects, built by any worker or earlier run, are linked instead of built again
OBJECTS = os.environ.setdefault(llvm_objects.ENV, str(cache_dir() / "test-objects"))

pytest_plugins = ["tests.support.folder_times", "tests.support.file_order"]


def pytest_sessionstart(session) -> None:
    if not hasattr(session.config, "workerinput"):  # once per run, before any worker compiles
        from tests.support import compile_cache, hf_gguf_greedy, kernel_cache, llamacpp_convert
        from tests.support.disk_cache import prune

        roots = (compile_cache.ROOT, kernel_cache.ROOT, hf_gguf_greedy.ROOT, llamacpp_convert.CACHE)
        for root in (*roots, Path(LOWERED), Path(OBJECTS)):
            prune(root)


@pytest.fixture(scope="session")
def models_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tiny_models")


@pytest.fixture(scope="session")
def tiny_model(models_root):
    """Factory: tiny_model(TinySpec(...)) -> HF folder."""
    return lambda spec=TinySpec(): make_tiny_model(models_root, spec)


@pytest.fixture(scope="session")
def moe_model(models_root):
    """Factory: moe_model(arch) -> the tiny mixture of experts `arch` (qwen3_moe, mixtral,
    olmoe) with its routing and attention sharpened (tests/support/tiny_moe.py)."""
    from tests.support.tiny_moe import SPECS, sharpen_moe

    def build(arch: str) -> Path:
        folder = models_root / f"moe-{arch}"
        if not folder.exists():
            spec = SPECS[arch]
            sharpen_moe(make_tiny_model(models_root, spec), folder, spec.seed)
        return folder

    return build


@pytest.fixture(scope="session")
def gemma4_model(models_root):
    """Factory: gemma4_model(name) -> the tiny Gemma 4 `name` (tests/support/tiny_gemma4.py:
    "everything" or "dense"), its norms and scalars set."""
    from tests.support.tiny_gemma4 import SPECS, sharpen_gemma4

    def build(name: str) -> Path:
        spec = SPECS[name]
        return sharpen_gemma4(
            make_tiny_model(models_root, spec), models_root / f"gemma4-{name}", spec.seed
        )

    return build


@pytest.fixture(scope="session")
def moe_compiled(tmp_path_factory, moe_model):
    """Factory: moe_compiled(arch, quantization, target="cpu") -> the artifact of moe_model(arch)
    (cached; f32 pages on cpu, as the `compiled` fixture)."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model
    from tests.support.reference_pages import reference_pages

    cache: dict = {}
    root = tmp_path_factory.mktemp("moe-artifacts")

    def build(arch: str, quantization: str, target: str = "cpu") -> Path:
        key = (arch, quantization, target)
        if key not in cache:
            out = root / "-".join(key)
            request = CompileRequest(
                str(moe_model(arch)), target, quantization, output=out, **reference_pages(target)
            )
            cache[key] = compile_model(request)
        return cache[key]

    return build


@pytest.fixture(scope="session")
def gpt_oss(tmp_path_factory):
    """The tiny gpt-oss's sources (HF folder, MXFP4 folder, llama.cpp's GGUF) and their
    artifacts, each compiled once (tests/support/gpt_oss_builds.py)."""
    from tests.support.gpt_oss_builds import GptOssBuilds

    return GptOssBuilds(tmp_path_factory.mktemp("gpt-oss"))


@pytest.fixture(scope="session")
def compiled(tmp_path_factory, tiny_model):
    """Factory: compiled(spec, quantization, target="cpu", **kw) -> artifact dir (cached)."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model

    cache: dict = {}
    root = tmp_path_factory.mktemp("artifacts")

    def build(spec=TinySpec(), quantization="q0f32", target="cpu", **kw) -> Path:
        # Model-math tests compare logits within ~1e-4 of float32 transformers: their CPU
        # artifacts keep f32 pages unless a test asks (the f16 default moves logits by up to
        # ~1e-3; tests/models/test_kv_dtype.py holds it to that).
        if target == "cpu":
            kw.setdefault("kv_dtype", "float32")
        key = (spec.key, quantization, target, tuple(sorted(kw.items())))
        if key not in cache:
            out = root / f"{spec.key}-{quantization}-{target}-{len(cache)}"
            req = CompileRequest(
                model=str(tiny_model(spec)),
                target=target,
                quantization=quantization,
                output=out,
                **kw,
            )
            cache[key] = compile_model(req)
        return cache[key]

    return build


@pytest.fixture(scope="session")
def default_artifact(tmp_path_factory):
    """Factory: default_artifact(kv_dtype=None) -> the default model compiled for this CPU with
    the request `mlcx compile smollm2-135m --target cpu [--kv-dtype K]` makes, once per KV dtype
    (through the tests' artifact cache: each compile takes 20-30 s on 2 cores). None: compile's
    default (f16)."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model

    built: dict[str | None, Path] = {}

    def build(kv_dtype: str | None = None) -> Path:
        if kv_dtype not in built:
            default_gguf()  # downloads once into the mlcx cache
            out = tmp_path_factory.mktemp("default") / "smollm2"
            built[kv_dtype] = compile_model(CompileRequest(DEFAULT, output=out, kv_dtype=kv_dtype))
        return built[kv_dtype]

    return build


@pytest.fixture(scope="session")
def embedding_folder(tmp_path_factory):
    """Factory: embedding_folder(name) -> the tiny embedding model `name`'s HF folder
    (tests/support/tiny_embedders.py's EMBEDDERS), written once per session."""
    from tests.support.tiny_embedders import EMBEDDERS

    root = tmp_path_factory.mktemp("embedders")
    built: dict[str, Path] = {}

    def build(name: str) -> Path:
        if name not in built:
            built[name] = EMBEDDERS[name](root / name)
        return built[name]

    return build


@pytest.fixture(scope="session")
def webgpu_embedding(tmp_path_factory, embedding_folder):
    """Factory: webgpu_embedding(name) -> `name` compiled for webgpu once per session, through
    the tests' artifact cache (the wgpu embeddings test and the browser's WebLLM examples share
    it)."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model

    root = tmp_path_factory.mktemp("embedders-webgpu")
    built: dict[str, Path] = {}

    def build(name: str) -> Path:
        if name not in built:
            request = CompileRequest(str(embedding_folder(name)), "webgpu", output=root / name)
            built[name] = compile_model(request)
        return built[name]

    return build
