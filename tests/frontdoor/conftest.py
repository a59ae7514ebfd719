"""Headless Chromium for the wheel's browser demo, as the WebGPU tests set it up."""

from tests.webgpu.conftest import _setup, browser_ready  # noqa: F401
