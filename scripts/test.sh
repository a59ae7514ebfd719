#!/usr/bin/env bash
# Runs the test suite in a venv of its own (.venv, created from scratch when missing), so that no
# package preinstalled on the machine can stand in for a dependency the project does not name.
# Installs everything from the repo's own files first: Debian packages (scripts/setup-system.sh),
# npm packages (scripts/setup-web.sh), Python extras (pyproject [test]); then lint and format
# checks (ruff, configured in pyproject.toml), then pytest.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m "not slow"`. MLCX_TEST_VENV picks
# another venv folder; MLCX_TEST_WORKERS the number of pytest workers (default: the cores, at
# most 4; each worker holds torch and TVM, ~2-3 GiB). A test file runs whole on one worker, so
# its module fixtures (compiled artifacts, servers) are built once.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-system.sh
./scripts/setup-web.sh
VENV="${MLCX_TEST_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "test.sh: creating the test venv $VENV"
  # from the base interpreter even when a venv is active: nothing of that venv is inherited
  "$(python3 -c 'import sys; print(sys.base_prefix)')/bin/python3" -m venv "$VENV"
fi
PY="$VENV/bin/python"
# --no-compile: pip byte-compiles every module it installs, half of a new venv's install (93 s
# with it, 44 s without; Zen 4). The tests import a fraction of them, each compiled on its first
# import and kept in the venv: bytecode writing is switched back on for that.
"$PY" -m pip install --quiet --disable-pip-version-check --no-compile -e ".[test]" 2>&1 \
  | { grep -v "^WARNING: Location '.*' is ignored" || true; }
unset PYTHONDONTWRITEBYTECODE
"$PY" -m ruff check mlcx tests
"$PY" -m ruff format --check mlcx tests
export TOKENIZERS_PARALLELISM=false
CORES="$(nproc)"
WORKERS="${MLCX_TEST_WORKERS:-$((CORES < 4 ? CORES : 4))}"
# the cores shared out among the workers: TVM's thread pool spins, oversubscribed it crawls
export TVM_NUM_THREADS="${TVM_NUM_THREADS:-$((CORES / WORKERS > 1 ? CORES / WORKERS : 1))}"
# the slowest tests printed, so the suite's time can be watched from CI's log
exec "$PY" -m pytest -q -n "$WORKERS" --dist loadfile --durations=25 "$@"
