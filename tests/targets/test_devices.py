"""`mlcx devices` on a machine without a GPU: the CPU with its features, no CUDA device, and
wgpu adapters (Mesa's lavapipe here, marked as software)."""

from __future__ import annotations

import json

import pytest
import tvm

from mlcx.runtime.backends import devices
from tests.support.cli import run_mlcx


@pytest.fixture(scope="module")
def report():
    return devices.list_devices()


def test_cpu_is_listed_with_its_features(report):
    cpu = [d for d in report.devices if d.kind == "cpu"]
    assert len(cpu) == 1 and cpu[0].targets == ("cpu",)
    assert cpu[0].details["features"] and int(cpu[0].details["cores"]) >= 1


def test_cuda_devices_match_tvm(report):
    listed = [d for d in report.devices if d.kind == "cuda"]
    assert len(listed) == sum(tvm.cuda(i).exist for i in range(devices.MAX_CUDA_DEVICES))
    if not listed:
        assert any("CUDA" in note for note in report.notes)


def test_software_adapters_are_marked():
    info = {"device": "llvmpipe", "adapter_type": "CPU", "backend_type": "Vulkan"}
    adapter = devices._adapter(info)
    assert adapter.software
    assert adapter.targets == tuple(t for t in ("webgpu", "vulkan") if t in devices.TARGETS)
    gpu = devices._adapter(
        {"device": "RTX", "adapter_type": "DiscreteGPU", "backend_type": "D3D12"}
    )
    assert not gpu.software and "vulkan" not in gpu.targets


def test_cli_prints_the_report_as_json():
    result = run_mlcx("devices", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    kinds = [d["kind"] for d in data["devices"]]
    assert kinds[0] == "cpu" and set(kinds) <= {"cpu", "cuda", "wgpu"}
    for adapter in (d for d in data["devices"] if d["kind"] == "wgpu"):
        assert adapter["software"] == (adapter["details"]["type"] == "CPU")
