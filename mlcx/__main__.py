"""`python -m mlcx ...` is the `mlcx` command (works even where console scripts are not on PATH)."""

import sys

try:
    from mlcx.cli.main import main
except ModuleNotFoundError as missing:  # run from a checkout that was never installed
    sys.exit(
        f"mlcx: its dependencies are not installed in this Python ({sys.executable}; no module "
        f"named {missing.name!r}): run `python3 -m pip install -e .` in the checkout first"
    )

main()
