"""The plain install's front door: `mlcx COMMAND` imports that command's modules only, and a
missing optional extra is one line naming it (mlcx/extras.py), never a traceback."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import metadata

import pytest

from mlcx.cli.commands import COMMANDS
from mlcx.extras import EXTRAS
from tests.support.cli import one_line_error

OPTIONAL = ("ray", "playwright", "llama_cpp", "torch", "transformers", "openai", "scipy")
# a group command's own subcommand modules load with it
SUBCOMMAND_MODULES = {
    "bench": {
        "mlcx.cli.bench_serve_cmd",
        "mlcx.cli.web_cmd",
        "mlcx.cli.bench_spec_cmd",
        "mlcx.cli.bench_lora_cmd",
        "mlcx.cli.bench_profile_cmd",
        "mlcx.cli.bench_soak_cmd",
        "mlcx.cli.bench_embed_cmd",
        "mlcx.cli.bench_image_cmd",
    }
}


def _run(blocked: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "tests.support.without_modules", blocked, "--", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_command_list_is_each_commands_own_help(name):
    command = COMMANDS[name].load(name)
    first_paragraph = " ".join(command.help.split("\n\n")[0].split())
    assert first_paragraph == COMMANDS[name].help


def test_top_level_help_imports_no_command():
    result = _run("", "--print-modules", "--help")
    assert result.returncode == 0, result.stderr
    modules = set(result.stdout.split())
    assert "compile" in result.stdout and "serve" in result.stdout
    assert not {m for m in modules if m.startswith("mlcx.cli.") and m.endswith("_cmd")}
    assert "tvm" not in modules


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_imports_its_own_module_and_no_optional_package(name):
    result = _run(",".join(OPTIONAL), "--print-modules", name, "--help")
    assert result.returncode == 0, result.stderr
    modules = set(result.stdout.split())
    commands = {m for m in modules if m.startswith("mlcx.cli.") and m.endswith("_cmd")}
    assert commands == {COMMANDS[name].module} | SUBCOMMAND_MODULES.get(name, set())
    assert not modules & set(OPTIONAL)


def test_serve_replicas_without_ray_names_the_extra(tmp_path):
    line = one_line_error(_run("ray", "serve", str(tmp_path / "model"), "--replicas", "2"))
    assert "pip install 'mlcx[replicas]'" in line and "--replicas" in line


def test_bench_web_without_playwright_names_the_extra(tmp_path):
    line = one_line_error(_run("playwright", "bench", "web", str(tmp_path / "artifact")))
    assert "pip install 'mlcx[bench]'" in line and "mlcx bench web" in line


def test_every_extra_named_by_an_error_is_an_installed_extra():
    assert set(EXTRAS) == set(metadata("mlcx").get_all("Provides-Extra"))


def test_python_m_mlcx_without_its_dependencies_says_to_install(tmp_path):
    """`python -m mlcx` from a checkout that was never installed: one line naming the missing
    package and the install command, not a traceback."""
    script = (
        "import runpy, sys\n"
        "from tests.support.without_modules import _Blocker\n"
        "sys.meta_path.insert(0, _Blocker({'typer'}))\n"
        "sys.argv = ['mlcx', '--help']\n"
        "runpy.run_module('mlcx', run_name='__main__')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "'typer'" in result.stderr and "pip install -e ." in result.stderr
