"""Run the `mlcx` command as if some packages were not installed:

    python -m tests.support.without_modules ray,playwright -- serve MODEL --replicas 2

Imports of the named top-level packages raise ModuleNotFoundError, as in a venv without them.
With `--print-modules`, prints the imported module names (one per line) after the command.
"""

from __future__ import annotations

import importlib.abc
import sys


class _Blocker(importlib.abc.MetaPathFinder):
    def __init__(self, names: set[str]):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (blocked)", name=fullname)
        return None


def main(argv: list[str]) -> int:
    blocked, _, args = argv[0], argv[1], argv[2:]
    print_modules = args[:1] == ["--print-modules"]
    args = args[1:] if print_modules else args
    sys.meta_path.insert(0, _Blocker({n for n in blocked.split(",") if n}))
    from mlcx.cli.main import app
    from mlcx.cli.main import main as cli_main

    if print_modules:
        try:
            app(args, standalone_mode=False)
        finally:
            print("\n".join(sorted(sys.modules)))
        return 0
    sys.argv = ["mlcx", *args]
    cli_main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
