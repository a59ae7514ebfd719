"""`python -m mlcx ...` is the `mlcx` command (works even where console scripts are not on PATH)."""

from mlcx.cli.main import main

main()
