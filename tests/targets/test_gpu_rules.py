"""dlight rule choice per GPU target, and the TVM crash it works around.

`dlight.gpu.Matmul` tensorizes for cuda float16 and for metal. TVM 0.27.0.post1's Tensorize
copies the intrinsic through TVM's JSON serializer, which segfaults under apache-tvm-ffi 0.1.15
(so does `tvm.ir.save_json` of any expression: no mlcx code is involved) and works under
0.1.14.post1, which pyproject pins. A segfault cannot be caught, so both are run in
subprocesses: with a working ffi the rule is in and tensorizes; with a broken one it is left out.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from mlcx.kernels.gpu.tensor_core import tensorize_works
from mlcx.passes.pipeline_gpu import MATMUL_RULE_UNSAFE, schedule_rules
from tests.support.cli import mlcx_env
from tests.support.compile_cache import cached_json
from tests.support.tiny_models import TinySpec

TENSORIZING = [("cuda", "float16"), ("metal", "float16"), ("metal", "float32")]
# The root cause, without dlight or tensor intrinsics: TVM's JSON serializer.
SAVE_JSON = "import tvm; x = tvm.tirx.Var('x', 'int32'); tvm.ir.save_json(x + 1); print('ok')"

# A 128x128 linear layer through LegalizeOps and dlight's gpu.Matmul alone. inspect.stack is
# swapped for a source-free version first: TVMScript calls it for every tensor intrinsic it
# registers, and reading source for each frame makes importing the intrinsics take about a
# minute; frames are all the parser needs.
REPRO = """
import inspect, sys

def _stack(context=1):
    frame, out = sys._getframe(1), []
    while frame is not None:
        code = frame.f_code
        info = (frame, code.co_filename, frame.f_lineno, code.co_name, None, None)
        out.append(inspect.FrameInfo(*info))
        frame = frame.f_back
    return out

inspect.stack = _stack
import tvm
from tvm import relax
from tvm.relax.frontend import nn
from tvm.s_tir import dlight as dl

kind, dtype = sys.argv[1], sys.argv[2]

class Linear(nn.Module):
    def __init__(self):
        self.proj = nn.Linear(128, 128, bias=False, dtype=dtype)

    def forward(self, x):
        return self.proj(x)

spec = {"forward": {"x": nn.spec.Tensor(["n", 128], dtype)}}
mod, _ = Linear().export_tvm(spec=spec)
targets = {"cuda": {"kind": "cuda", "arch": "sm_80"}, "metal": {"kind": "metal"}}
target = tvm.target.Target(targets[kind])
with target:
    mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul())(relax.transform.LegalizeOps()(mod))
print("scheduled")
"""


def _has_matmul(rules: list) -> bool:
    return any(type(rule).__name__ == "Matmul" for rule in rules)


@pytest.mark.parametrize("kind,dtype", TENSORIZING)
def test_matmul_rule_in_where_tensorize_works(kind, dtype):
    assert _has_matmul(schedule_rules(kind, dtype)) == tensorize_works()


@pytest.mark.parametrize("kind,dtype", [("cuda", "float32"), ("opencl", "float16")])
def test_matmul_rule_kept_elsewhere(kind, dtype):
    assert _has_matmul(schedule_rules(kind, dtype))


def test_unsafe_set_covers_the_crashes():
    assert ("cuda", "float16") in MATMUL_RULE_UNSAFE and ("metal", "*") in MATMUL_RULE_UNSAFE


def _run_all(cases: dict[str, list[str]]) -> dict[str, tuple[int, str]]:
    """Each case a fresh interpreter (as mlcx's users have it: no torch), all at once:
    case -> (exit code, stdout)."""
    procs = {
        case: subprocess.Popen(
            [sys.executable, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=mlcx_env(),
        )
        for case, argv in cases.items()
    }
    deadline, results = time.monotonic() + 600, {}
    for case, proc in procs.items():
        out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        results[case] = (proc.returncode, out)
    return results


def test_tensorize_crashes_exactly_where_tvm_ffi_breaks_json():
    cases = {repr(case): ["-c", REPRO, *case] for case in TENSORIZING}
    cases["save_json"] = ["-c", SAVE_JSON]
    # how TVM behaves depends on the scripts and TVM's and tvm-ffi's versions (the key) alone
    results = cached_json("tensorize-crashes", cases, lambda: _run_all(cases))
    if tensorize_works():
        broken = {case: code for case, (code, _) in results.items() if code != 0}
        assert not broken, (
            f"crashed under a tvm-ffi taken for working: {broken}; add its version to "
            "BROKEN_FFI in mlcx/kernels/gpu/tensor_core.py"
        )
        assert all("scheduled" in out for case, (_, out) in results.items() if case != "save_json")
    else:
        crashed = {case for case, (code, _) in results.items() if code == -signal.SIGSEGV}
        assert crashed == set(cases), (
            f"no longer crashes: {set(cases) - crashed}; this tvm-ffi's JSON serializer works, "
            "so drop its version from BROKEN_FFI in mlcx/kernels/gpu/tensor_core.py"
        )


@pytest.mark.parametrize(
    "target,quantization", [("cuda", "q4f16"), ("metal", "q4f16"), ("metal", "q0f32")]
)
def test_pipeline_compiles_the_tensorizing_configurations(compiled, target, quantization):
    """Our pipeline builds what tensorizes (cuda f16, metal f16/f32), whichever tvm-ffi."""
    artifact = compiled(TinySpec(), quantization, target=target)
    assert (artifact / f"model-{target}.{'so' if target == 'cuda' else 'dylib'}").exists()


def _rules_used(model: str, target: str, quantization: str | None = None) -> dict[str, str]:
    """kernel -> the rule that scheduled it, after the target's GPU graph passes (kept with
    the tests' artifacts: tests/support/compile_cache.py)."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import cached_result

    request = CompileRequest(model, target=target, quantization=quantization)
    return cached_result(request, "rules", lambda: _schedule_rules(request))


def _schedule_rules(request) -> dict[str, str]:
    import tvm

    from mlcx.compile.model import export_model
    from mlcx.passes.gpu.schedule import schedule_rules_of
    from mlcx.passes.pipeline_gpu import gpu_config, gpu_graph_passes

    exported = export_model(request)
    tvm_target = exported.tvm_target
    with tvm_target:
        passes = gpu_graph_passes(
            tvm_target, exported.quant.activation_dtype, gpu_config(tvm_target)
        )
        mod = tvm.transform.Sequential(passes)(exported.mod)
    return schedule_rules_of(mod)


def _unfit(rules: dict[str, str]) -> dict[str, str]:
    return {name: rule for name, rule in rules.items() if rule in ("", "Fallback")}


GPU_TARGETS = ["cuda", "metal", "webgpu", "iphone", "android"]


@pytest.mark.parametrize("target", ["cuda", "webgpu", "android"])
@pytest.mark.parametrize("quantization", ["q4f16", "q0f32"])
def test_no_kernel_of_a_tiny_model_falls_back(tiny_model, target, quantization):
    rules = _rules_used(str(tiny_model(TinySpec())), target, quantization)
    assert _unfit(rules) == {}
    linears = [name for name, rule in rules.items() if name.startswith("gpu_linear")]
    assert linears and all(rules[name] == "mlcx" for name in linears)


@pytest.mark.slow
@pytest.mark.parametrize("target", GPU_TARGETS)
def test_no_kernel_of_the_default_model_falls_back(target):
    from tests.support.default_model import default_gguf

    rules = _rules_used(str(default_gguf()), target)
    assert _unfit(rules) == {}, f"{target}: scheduled by dlight's Fallback or not at all"
