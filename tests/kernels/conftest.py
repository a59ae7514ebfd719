"""The wgpu adapter the GPU kernel tests run on (lavapipe on these machines)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def adapter():
    """Skips, naming the set-up script, where no Vulkan/Metal/DX12 adapter exists."""
    import wgpu

    if not wgpu.gpu.enumerate_adapters_sync():
        pytest.skip("no wgpu adapter: run scripts/setup-system.sh (mesa-vulkan-drivers)")
