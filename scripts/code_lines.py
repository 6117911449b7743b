"""Count dperm's code lines: physical lines that are not blank, not comments and not docstrings.

Usage::

    python scripts/code_lines.py [SRC]          # SRC defaults to src/dperm next to this script

prints the total and one line per package (the issue 29 closing note's measure:
"code lines without docstrings"; a docstring is the first statement of a module,
class or function when it is a string, found with ``ast``).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections import Counter
from pathlib import Path


def docstring_lines(tree) -> set[int]:
    """Line numbers covered by module, class and function docstrings."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def code_lines(text: str) -> int:
    """Lines holding a token other than a comment, outside docstrings."""
    skip = docstring_lines(ast.parse(text))
    code = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                          tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        code.update(line for line in range(token.start[0], token.end[0] + 1) if line not in skip)
    return len(code)


def main(argv) -> int:
    src = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "src" / "dperm"
    by_package = Counter()
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src).parts
        package = parts[0] if len(parts) > 1 else "(top level)"
        by_package[package] += code_lines(path.read_text(encoding="utf-8"))
    print(f"total {sum(by_package.values())}")
    for package, count in sorted(by_package.items(), key=lambda item: -item[1]):
        print(f"{package:24s} {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
