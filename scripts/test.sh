#!/usr/bin/env bash
# Runs the test suite in a venv of its own (.venv, created from scratch when missing), so that no
# package preinstalled on the machine can stand in for a dependency the project does not name.
# Installs everything from the repo's own files first: Debian packages (scripts/setup-system.sh),
# npm packages (scripts/setup-web.sh), Python extras (pyproject [test]); then lint and format
# checks (ruff, configured in pyproject.toml), then pytest.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m "not slow"`. MLCX_TEST_VENV picks
# another venv folder.
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
"$PY" -m pip install --quiet --disable-pip-version-check -e ".[test]" 2>&1 \
  | { grep -v "^WARNING: Location '.*' is ignored" || true; }
"$PY" -m ruff check mlcx tests
"$PY" -m ruff format --check mlcx tests
export TOKENIZERS_PARALLELISM=false
exec "$PY" -m pytest -q "$@"
