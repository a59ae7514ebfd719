"""The browser fixtures of the WebGPU tests, for the app tests' WebView stand-in."""

from tests.webgpu.conftest import browser_ready  # noqa: F401
