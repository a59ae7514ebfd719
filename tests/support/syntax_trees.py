"""Syntax errors in Swift and Kotlin sources, found with the tree-sitter grammars from PyPI
(no swiftc or kotlinc on Linux CI): every ERROR or MISSING node, with its line."""

from __future__ import annotations

from pathlib import Path

KOTLIN, SWIFT = "tree_sitter_kotlin", "tree_sitter_swift"
GRAMMARS = {".swift": SWIFT, ".kt": KOTLIN, ".kts": KOTLIN}


def _parser(suffix: str):
    import importlib

    import tree_sitter

    grammar = importlib.import_module(GRAMMARS[suffix])
    return tree_sitter.Parser(tree_sitter.Language(grammar.language()))


def syntax_errors(path: Path) -> list[str]:
    """'file:line: ERROR near ...' for each broken node; empty when the file parses."""
    tree = _parser(path.suffix).parse(path.read_bytes())
    found, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            kind = "MISSING " + node.type if node.is_missing else "ERROR"
            text = node.text.decode(errors="replace")[:60] if node.text else ""
            found.append(f"{path.name}:{node.start_point[0] + 1}: {kind} near {text!r}")
        stack.extend(node.children)
    return found
