"""setuptools hook (the rest is in pyproject.toml): a built wheel carries the browser runtime,
web/ and the npm libraries of web/package-lock.json, as mlcx/web/static/ (mlcx/web/bundle.py)."""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _bundler():
    # loaded by path: mlcx's own dependencies are not installed in a build environment
    spec = importlib.util.spec_from_file_location("_mlcx_web_bundle", ROOT / "mlcx/web/bundle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithWebRuntime(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:  # an editable install serves the checkout's web/ itself
            _bundler().bundle(ROOT / "web", Path(self.build_lib) / "mlcx" / "web" / "static")


setup(cmdclass={"build_py": BuildPyWithWebRuntime})
