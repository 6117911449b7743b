"""Every code block in README.md and docs/*.md runs (issue 18).

``python`` blocks of one page run in order in one namespace, in a temporary directory, as a
reader would paste them: each page defines its own data (no hidden set-up). A
``PrivacyLeakWarning`` is an error: the examples show the private usage. Pages whose
examples take long (Flower, the reproductions' 2000-round example, the audits) are marked
``slow``. ``sh`` blocks are checked where it is cheap: every ``dperm`` subcommand and
``--option`` they use exists in the CLI's parser, every ``make`` target exists in the
Makefile, and every ``pip install -e ".[extra]"`` names an extra of pyproject.toml.
"""

from __future__ import annotations

import argparse
import re
import tomllib
import warnings
from pathlib import Path

import pytest

from dperm.exceptions import PrivacyLeakWarning

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "docs" / "design").glob("*.md"))]
#: Pages whose examples run Flower, thousands of protocol rounds or full audits (tens of
#: seconds; auditing.md's about 80 s, a quarter of make test's budget).
SLOW_PAGES = {"auditing.md", "multiparty.md", "reproductions.md"}
#: make targets a page may name before the Makefile has them (none today).
PENDING_MAKE_TARGETS: set = set()


def blocks(page: Path, language: str) -> list[str]:
    """The fenced blocks of ``language`` in a Markdown page (indented fences included)."""
    text = page.read_text(encoding="utf-8")
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```", text, re.S | re.M)
    return [re.sub(rf"^{indent}", "", body, flags=re.M) for indent, body in found]


def name_of(page: Path) -> str:
    return str(page.relative_to(ROOT))


PYTHON_PAGES = [page for page in PAGES if blocks(page, "python")]


def test_the_readme_and_the_user_guide_have_examples():
    names = {page.name for page in PYTHON_PAGES}
    assert {"README.md", "getting_started.md", "accountant_tuning.md", "dask.md",
            "multiparty.md", "mechanisms.md"} <= names
    assert len(blocks(ROOT / "README.md", "python")) >= 2


@pytest.mark.parametrize(
    "page",
    [pytest.param(page, marks=pytest.mark.slow) if page.name in SLOW_PAGES else page
     for page in PYTHON_PAGES],
    ids=name_of,
)
def test_every_python_block_of_a_page_runs(page, tmp_path, monkeypatch):
    if page.name == "multiparty.md":
        pytest.importorskip("flwr")
        pytest.importorskip("dp_accounting")
    if page.name == "reproductions.md":
        pytest.importorskip("dp_accounting")
    if page.name == "dask.md":
        pytest.importorskip("dask.dataframe")
        pytest.importorskip("pyarrow")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs_example__"}
    for index, code in enumerate(blocks(page, "python")):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)
            exec(compile(code, f"{name_of(page)} python block {index}", "exec"), namespace)


def shell_commands(page: Path) -> list[str]:
    """Commands of the page's sh blocks, continuation lines joined, comments dropped."""
    commands = []
    for block in blocks(page, "sh"):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split("#", 1)[0].strip()
            if command:
                commands.extend(part.strip() for part in command.split("&&"))
    return commands


def cli_options() -> dict[tuple[str, ...], set[str]]:
    """Every (sub)command path of the ``dperm`` parser with its option strings."""
    from dperm.cli import build_parser

    found = {}

    def walk(parser, path):
        options = set()
        for action in parser._actions:
            options.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, path + (name,))
        found[path] = options

    walk(build_parser(), ())
    return found


SHELL_PAGES = [page for page in PAGES if shell_commands(page)]


@pytest.mark.parametrize("page", SHELL_PAGES, ids=name_of)
def test_shell_commands_name_existing_commands_options_targets_and_extras(page):
    parsers = cli_options()
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([A-Za-z][\w-]*):", makefile, re.M)) | PENDING_MAKE_TARGETS
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(pyproject["project"]["optional-dependencies"])
    problems = []
    for command in shell_commands(page):
        words = command.split()
        if words[0] == "dperm":
            path = ()
            for word in words[1:]:
                if path + (word,) in parsers:
                    path += (word,)
                elif not word.startswith("-"):
                    break
            assert path, f"{name_of(page)}: {command!r} names no dperm subcommand"
            used = {re.match(r"(--?[\w-]+)", word.strip("[]")).group(1)
                    for word in words if word.strip("[]").startswith("-")}
            problems += [f"{command!r}: {path} has no {option}"
                         for option in sorted(used - parsers[path])]
        elif words[0] == "make":
            problems += [f"{command!r}: no make target {target}"
                         for target in words[1:] if target not in targets]
        elif words[:3] == ["pip", "install", "-e"]:
            for extra in re.findall(r"\[([\w,-]+)\]", command):
                problems += [f"{command!r}: no extra {name}"
                             for name in extra.split(",") if name not in extras]
    assert not problems, f"{name_of(page)}:\n" + "\n".join(problems)


#: Import names of distributions whose import name is not their distribution name.
IMPORT_NAMES = {"scikit-learn": "sklearn"}


def _requirement_names(requirements) -> set[str]:
    """Import names of PEP 508 requirements (``"scikit-learn>=1.4"`` -> ``"sklearn"``)."""
    names = set()
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement.strip()).group(0).lower()
        names.add(IMPORT_NAMES.get(name, name.replace("-", "_")))
    return names


def _installed_by(command: str, pyproject: dict) -> set[str]:
    """Import names a ``pip install -e .[extras] other ...`` command makes available."""
    project = pyproject["project"]
    names = {"dperm"}
    for word in command.split()[2:]:
        word = word.strip("'\"")
        if word == "-e":
            continue
        local = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", word)
        if local:
            names |= _requirement_names(project["dependencies"])
            for extra in (local.group(1) or "").split(",") if local.group(1) else ():
                names |= _requirement_names(project["optional-dependencies"][extra])
        else:
            names |= _requirement_names([word])
    return names


def test_the_readme_quick_start_imports_only_what_its_install_line_installs():
    """Issue 32, finding 1: after ``pip install -e .`` the quick start failed on ``import pandas``."""
    import ast
    import sys

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```python\n")
    install_blocks = re.findall(r"^```sh\n(.*?)^```", text[:start], re.S | re.M)
    commands = [line.split("#", 1)[0].strip() for line in install_blocks[-1].splitlines()]
    commands = [command for command in commands if command.startswith("pip install")]
    assert len(commands) == 1, "the quick start should follow exactly one install command"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    available = _installed_by(commands[0], pyproject) | set(sys.stdlib_module_names)

    tree = ast.parse(blocks(ROOT / "README.md", "python")[0])
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert {"numpy", "sklearn", "dperm", "pandas"} <= imported  # the parse found the imports
    assert imported <= available, (f"{commands[0]!r} does not install "
                                   f"{sorted(imported - available)}")
