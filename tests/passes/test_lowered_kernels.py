"""The TIR pipeline "mlcx" lowers a function it lowered before in this process once: a second
module holding it gets the very functions of the first lowering, which are what lowering it
afresh gives; another target, other pass options or the caller's instruments lower it again.
With $MLCX_LOWERED_KERNELS a kernel lowered by an earlier process (GPU or CPU) is read from disk,
as it would lower afresh; an entry that does not match is lowered again."""

from __future__ import annotations

from pathlib import Path

import pytest
import tvm
from tvm import te
from tvm.tirx.compilation_pipeline import get_tir_pipeline

from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.linear import GpuLinearSpec, build_gpu_linear
from mlcx.passes import lowered_kernels, lowered_store, tir_pipeline
from mlcx.quantization.formats import format_from_name

SMALL = GpuConfig(gemm_rows=2, gemm_tokens=2)
HOSTS = {"macos": "arm64-apple-macos", "ios": "arm64-apple-ios"}


def _linear(out: int):
    spec = GpuLinearSpec(format_from_name("int4-sym-g32-float16"), 64, out, "float16")
    return build_gpu_linear(spec, SMALL).with_attr("global_symbol", spec.name)


def _module(outs, host="macos") -> tvm.IRModule:
    target = tvm.target.Target({"kind": "metal"}, host={"kind": "llvm", "mtriple": HOSTS[host]})
    funcs = [_linear(out).with_attr("target", target) for out in outs]
    return tvm.IRModule({f.attrs["global_symbol"]: f for f in funcs})


def _lower(mod: tvm.IRModule, instruments=(), **options) -> tvm.IRModule:
    pipeline = get_tir_pipeline(tir_pipeline.NAME)[0]
    with tvm.transform.PassContext(opt_level=3, instruments=list(instruments), **options):
        return pipeline(mod)


def _by_name(mod: tvm.IRModule) -> dict:
    return {gv.name_hint: f for gv, f in mod.functions.items()}


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setenv(lowered_store.ENV, "off")
    lowered_kernels.forget()
    yield
    lowered_kernels.forget()


@pytest.fixture
def lowerings(monkeypatch) -> list:
    """The functions the pipeline lowers (not finds), by name, as it goes."""
    names: list = []
    lower_alone = tir_pipeline._lower_alone

    def counted(pipeline, gv, func, mod, ctx):
        names.append(gv.name_hint)
        return lower_alone(pipeline, gv, func, mod, ctx)

    monkeypatch.setattr(tir_pipeline, "_lower_alone", counted)
    return names


@tvm.instrument.pass_instrument
class _Count:
    def __init__(self):
        self.passes = 0

    def run_after_pass(self, mod, info):
        self.passes += 1


def test_a_function_lowered_before_is_taken_as_it_was():
    first = _by_name(_lower(_module([32, 48])))
    second = _lower(_module([32, 16]))
    lowered_kernels.forget()
    afresh = _lower(_module([32, 16]))
    # compared as printed: two lowerings of one function are not structurally equal (each
    # host function's compute_scope attribute holds an object of its own)
    assert second.script(show_meta=True) == afresh.script(show_meta=True)
    # the device kernels of the shared function (its host function loses its entry mark anew)
    shared = [name for name in _by_name(second) if "64x32_kernel" in name]
    assert len(shared) == 2  # GEMV and GEMM
    assert all(_by_name(second)[name].same_as(first[name]) for name in shared)
    assert not any(_by_name(second)[name].same_as(_by_name(afresh)[name]) for name in shared)


@pytest.mark.parametrize(
    ("host", "options"),
    [("ios", {}), ("macos", {"config": {"tirx.disable_cse_tir": True}})],
    ids=["another-host", "other-options"],
)
def test_another_target_or_other_options_lower_again(host, options):
    first = _by_name(_lower(_module([32])))
    again = _by_name(_lower(_module([32], host), **options))
    assert first.keys() == again.keys()
    assert not any(again[name].same_as(first[name]) for name in first if "kernel" in name)


def test_the_caller_s_instruments_see_every_pass():
    _lower(_module([32]))
    count = _Count()
    _lower(_module([32]), instruments=[count])
    assert count.passes > 20


def test_a_gpu_kernel_lowered_by_an_earlier_process_is_read_from_disk(
    monkeypatch, tmp_path, lowerings
):
    afresh = _lower(_module([32, 16]))
    monkeypatch.setenv(lowered_store.ENV, str(tmp_path))
    lowered_kernels.forget()
    _lower(_module([32, 16]))
    assert len(lowerings) == 4 and len(list(tmp_path.glob("*.json"))) == 2
    lowered_kernels.forget()  # as a new process finds it
    again = _lower(_module([32, 16]))
    assert len(lowerings) == 4
    assert _bodies(again) == _bodies(afresh)
    # the device kernels' targets keep their host, as JSON does not (TVM's build groups kernels
    # by their target's text: without it a model's kernels split into two device modules)
    assert _targets(again) == _targets(afresh)


def _bodies(mod: tvm.IRModule) -> dict[str, str]:
    return {gv.name_hint: f.without_attr("target").script() for gv, f in mod.functions.items()}


def _targets(mod: tvm.IRModule) -> dict[str, str]:
    return {gv.name_hint: str(f.attrs["target"]) for gv, f in mod.functions.items()}


def _one_entry(monkeypatch, tmp_path) -> tuple[str, Path]:
    """The 32-wide module lowered in memory (its script), then once more into a store in
    `tmp_path` that a new process will find (its one entry)."""
    afresh = _lower(_module([32])).script(show_meta=True)
    monkeypatch.setenv(lowered_store.ENV, str(tmp_path))
    lowered_kernels.forget()
    _lower(_module([32]))
    [entry] = tmp_path.glob("*.json")
    lowered_kernels.forget()
    return afresh, entry


def test_an_entry_that_does_not_match_is_lowered_again(monkeypatch, tmp_path, lowerings):
    afresh, entry = _one_entry(monkeypatch, tmp_path)
    _lower(_module([48]))
    [other] = set(tmp_path.glob("*.json")) - {entry}
    # another function's lowering under this one's key, as a hash collision would leave it
    entry.write_bytes(other.read_bytes())
    lowered_kernels.forget()
    assert _lower(_module([32])).script(show_meta=True) == afresh
    names = [_linear(out).attrs["global_symbol"] for out in (32, 32, 48, 32)]
    assert lowerings == names


def test_a_damaged_entry_is_lowered_again(monkeypatch, tmp_path, lowerings):
    afresh, entry = _one_entry(monkeypatch, tmp_path)
    entry.write_text(entry.read_text()[:100])  # as a full disk or a killed copy leaves it
    assert _lower(_module([32])).script(show_meta=True) == afresh
    assert len(lowerings) == 3


def _cpu_module() -> tvm.IRModule:
    target = tvm.target.Target({"kind": "llvm"})
    a = te.placeholder((64,), "float32", name="a")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="b")
    func = te.create_prim_func([a, b]).with_attr("global_symbol", "double")
    # as mlcx.targets.llvm_objects binds it: a CPU target is its own host
    return tvm.IRModule({"double": func.with_attr("target", target.with_host(target))})


def test_a_cpu_kernel_lowered_by_an_earlier_process_is_read_as_lowered(
    monkeypatch, tmp_path, lowerings
):
    afresh = _lower(_cpu_module())
    monkeypatch.setenv(lowered_store.ENV, str(tmp_path))
    lowered_kernels.forget()
    _lower(_cpu_module())
    lowered_kernels.forget()  # as a new process finds it
    again = _lower(_cpu_module())
    assert lowerings == ["double", "double"] and len(list(tmp_path.glob("*.json"))) == 1
    assert _bodies(again) == _bodies(afresh)
    # lowering leaves a CPU function's target without a host, and so it comes back: with one,
    # its kept LLVM object would be keyed apart from the one a fresh lowering made
    assert _targets(again) == _targets(afresh)
