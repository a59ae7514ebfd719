"""Hides the test venv's torch from `mlcx` subprocesses (tests/support/cli.py): mlcx never uses
torch and its users need not have it, but tvm_ffi imports torch whenever it can (~3 s a
process). Placed first on PYTHONPATH, this package makes that import fail as on a machine
without torch."""

raise ImportError("torch is hidden from the mlcx command in the tests (tests/support/no_torch)")
