"""Rewrite the code's citations of paper notes to one form: "paper note N".

Section N of docs/paper_notes.md is note N (the package docstring says so). Older code
cites "shared papers README, note N", "shared papers note N" or a bare "note N"; run
``python tools/cite_paper_notes.py .`` from the repository root after merging such code.
Only comments and statement-level strings (docstrings, attribute docs) are changed;
runtime strings (messages, record text) are left alone and listed, to be changed by hand
with their tests. The result is idempotent.
"""
import io
import re
import sys
import tokenize
from pathlib import Path

PAGE = "docs/paper_notes.md"
WS = r"[\s#]+"  # words may wrap onto the next comment or docstring line
NUMS = r"(\d+(?:\s*(?:-|,|and)\s*\d+)*(?:'s)?)"
def _short(m, word, nums):
    """``paper note N``, keeping a line break the original phrase had."""
    breaks = re.findall(r"[ \t]*\n[\s#]*", m.group(0))
    return f"paper{breaks[0] if breaks else ' '}\x00{word} {nums}"


RULES = [
    # "note N of the shared papers README"
    (re.compile(rf"\b(notes?){WS}{NUMS}{WS}of{WS}the{WS}shared{WS}papers{WS}README"),
     lambda m: _short(m, m.group(1), m.group(2))),
    # "shared papers README, note N" / "shared papers README note N" / "shared papers note N"
    (re.compile(rf"\bshared{WS}papers(?:{WS}README)?,?{WS}(notes?){WS}{NUMS}"),
     lambda m: _short(m, m.group(1), m.group(2))),
    # a bare "note N" / "notes N-M": "paper note N" (not when "paper" ends the line before)
    (re.compile(rf"(?<![\w\x00-])(notes?) (\d+)"), None),
]


def _bare(m):
    before = re.sub(r"[\s#]+$", "", m.string[:m.start()])
    if before.endswith("paper"):
        return m.group(0)
    return f"paper {m.group(1)} {m.group(2)}"


def spans(source: str):
    """(start, end) offsets of comments and statement-level strings."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    out, runtime = [], []
    at_statement_start = True
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        start = offsets[token.start[0] - 1] + token.start[1]
        end = offsets[token.end[0] - 1] + token.end[1]
        if token.type == tokenize.COMMENT:
            out.append((start, end))
        elif token.type == tokenize.STRING:
            (out if at_statement_start else runtime).append((start, end))
        if token.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            at_statement_start = True
        elif token.type not in (tokenize.NL, tokenize.COMMENT):
            at_statement_start = False
    return out, runtime


def rewrite(text: str) -> str:
    for pattern, replace in RULES:
        text = pattern.sub(replace or _bare, text)
    return text.replace("\x00", "")


def main(root):
    leftovers = []
    for path in sorted(Path(root, "src").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        doc_spans, runtime = spans(source)
        # merge consecutive comment lines so a phrase wrapped over two comments matches
        new = source
        for start, end in reversed(doc_spans):
            new = new[:start] + rewrite(new[start:end]) + new[end:]
        if new != source:
            path.write_text(new, encoding="utf-8")
        for start, end in runtime:
            if re.search(r"\bnotes? \d", source[start:end]):
                line = source.count("\n", 0, start) + 1
                leftovers.append(f"{path.relative_to(root)}:{line}: {source[start:end][:90]!r}")
    print("runtime strings citing notes (left alone):")
    print("\n".join(leftovers))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
