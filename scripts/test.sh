#!/usr/bin/env bash
# Installs everything the test suite needs from the repo's own files, checks lint and format
# (ruff, configured in pyproject.toml), then runs it: Debian packages (scripts/setup-system.sh),
# Python extras (pyproject [test]), npm packages (web/).
# Extra arguments go to pytest, e.g. `scripts/test.sh -m "not slow"`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-system.sh
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
./scripts/setup-web.sh
python3 -m ruff check mlcx tests
python3 -m ruff format --check mlcx tests
export TOKENIZERS_PARALLELISM=false
exec python3 -m pytest -q "$@"
