"""Run the real `mlcx` command: in a subprocess, or in this process (its console entry point)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

NO_TORCH = Path(__file__).parent / "no_torch"


def mlcx_env(env: dict | None = None) -> dict:
    """The environment of an `mlcx` subprocess: this one's, with torch hidden (as on a user's
    machine: mlcx does not use it) and no debug tracebacks."""
    full_env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", **(env or {})}
    full_env.pop("MLCX_DEBUG", None)
    path = [str(NO_TORCH), *filter(None, [full_env.get("PYTHONPATH")])]
    full_env["PYTHONPATH"] = os.pathsep.join(path)
    return full_env


def run_mlcx(
    *args: str, stdin: str | None = None, env: dict | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mlcx.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=mlcx_env(env),
        timeout=timeout,
    )


def run_mlcx_here(*args: str) -> subprocess.CompletedProcess:
    """`mlcx ARGS` through the console entry point (mlcx.cli.main.main: its parsing, its
    one-line errors, its exit codes) in this process, without a new interpreter's imports
    (several seconds each on a loaded machine): for commands that stop before any heavy work.
    The environment is restored afterwards (commands may set TVM_NUM_THREADS)."""
    from mlcx.cli.main import main

    out, err, environ, argv = io.StringIO(), io.StringIO(), dict(os.environ), sys.argv
    sys.argv = ["mlcx", *args]
    os.environ.pop("MLCX_DEBUG", None)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv = argv
        os.environ.clear()
        os.environ.update(environ)
    return subprocess.CompletedProcess(["mlcx", *args], code, out.getvalue(), err.getvalue())


def compile_here(*args: str) -> subprocess.CompletedProcess:
    """`mlcx compile ARGS` as run_mlcx_here runs it, with the library's compile_model answered
    by the tests' artifact cache (tests/support/compile_cache.py: the same artifact, copied
    when an earlier run compiled the same request). The command's parsing, its summary and
    its exit code are the command's own."""
    from mlcx.cli import compile_cmd
    from tests.support.compile_cache import compile_model

    real = compile_cmd.compile_model
    compile_cmd.compile_model = compile_model
    try:
        return run_mlcx_here("compile", *args)
    finally:
        compile_cmd.compile_model = real


def one_line_error(result: subprocess.CompletedProcess) -> str:
    """The CLI's error output: exactly one line starting with 'error:', no traceback."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.stderr
    return lines[0]
