"""The package layout of issue 16: no import circle between rooms, no room importing another's internals;
issue 29: no import circle between files, no monkeypatch of another library at import time, and
tests/ mirrors src/dperm/ (each test file named for the module it tests).

Reads the source with ``tools/import_graph.py`` (static, every ``import`` of a
``dperm`` module, function-level ones included).
"""

import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "import_graph.py"


@pytest.fixture(scope="module")
def import_graph():
    spec = importlib.util.spec_from_file_location("import_graph", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_import_circle_between_rooms(import_graph):
    rooms, edges, _, _ = import_graph.graph()
    assert "dperm.privacy" in rooms and "dperm.multiparty.flower" in rooms
    assert import_graph.circles(rooms, edges) == []


def test_the_circle_finder_finds_a_circle(import_graph):
    assert import_graph.circles(["a", "b", "c"], {"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_no_room_imports_another_rooms_private_modules_or_names(import_graph):
    _, _, private, _ = import_graph.graph()
    assert private == []


def test_privacy_arithmetic_depends_on_nothing_but_validation(import_graph):
    """dperm.privacy is the bottom of the house: mechanisms, estimators and protocols build on it."""
    _, edges, _, _ = import_graph.graph()
    assert edges["dperm.privacy"] <= {"dperm.exceptions", "dperm.validation"}


def test_the_file_graph_sees_function_level_relative_and_submodule_imports(import_graph, tmp_path, monkeypatch):
    """module_edges on a made-up package: each way of hiding a circle is still an edge."""
    package = tmp_path / "dperm" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "dperm" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from .a import f\n")  # the package's own init: not a circle
    (package / "a.py").write_text("import dperm.pkg\n\ndef f():\n    from . import b\n    return b\n")
    (package / "b.py").write_text("from dperm.pkg.c import g\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dperm.pkg import b\n"
        "def g():\n    from dperm.pkg import a, missing_name\n")
    (package / "d.py").write_text("from ..pkg import c\n")
    monkeypatch.setattr(import_graph, "SRC", tmp_path)
    edges = import_graph.module_edges()
    assert edges["dperm.pkg"] == {"dperm.pkg.a"}
    assert edges["dperm.pkg.a"] == {"dperm.pkg.b"}  # function-level, relative, submodule; not its own package
    assert edges["dperm.pkg.b"] == {"dperm.pkg.c"}
    assert edges["dperm.pkg.c"] == {"dperm.pkg.a"}  # the TYPE_CHECKING import of b never runs
    assert edges["dperm.pkg.d"] == {"dperm.pkg.c"}
    assert import_graph.circles(sorted(edges), edges) == [["dperm.pkg.a", "dperm.pkg.b", "dperm.pkg.c"]]


def test_no_import_circle_between_files(import_graph):
    """Issue 29: no module imports one that imports it back, directly or through others.

    Function-level imports count: they are how a circle between two files of
    one package is usually closed (``noise`` and ``l2_laplace`` at 12df8d2).
    """
    edges = import_graph.module_edges()
    assert len(edges) > 50 and "dperm.mechanisms" in edges and "dperm.linear_model" in edges
    found = import_graph.circles(sorted(edges), edges)
    assert found == [], "import circles between files:\n" + "\n".join(" <-> ".join(c) for c in found)


def _probe(*args, env):
    """Run tests/_import_probe.py in a fresh interpreter; its JSON answer."""
    probe = Path(__file__).resolve().parent / "_import_probe.py"
    done = subprocess.run([sys.executable, str(probe), *args], capture_output=True, text=True, env=env,
                          timeout=300, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_import_probe_sees_a_replaced_function_and_edited_defaults(monkeypatch):
    from tests import _import_probe as probe

    module = types.ModuleType("flwr_fake_for_probe")

    def pull(*, backoff=1.0):
        return backoff

    module.pull, module.LIMIT = pull, 3
    monkeypatch.setitem(sys.modules, module.__name__, module)
    before = probe.fingerprint([module.__name__])
    pull.__kwdefaults__["backoff"] = 0.02
    module.LIMIT = 4
    module.added = 5  # a new attribute is not a patch
    assert probe.changed(before, probe.fingerprint([module.__name__])) == [
        "flwr_fake_for_probe.LIMIT", "flwr_fake_for_probe.pull"]
    monkeypatch.setattr(module, "pull", lambda: None)
    assert probe.changed(before, probe.fingerprint([module.__name__])) == [
        "flwr_fake_for_probe.LIMIT", "flwr_fake_for_probe.pull"]


@pytest.mark.slow  # two fresh interpreters importing every dperm module and its libraries (~10 s)
def test_importing_dperm_patches_no_other_library(tmp_path):
    """Issue 29: no dperm module changes another library when imported (Flower's included).

    The libraries' modules that importing dperm loads are imported first and
    fingerprinted; then every dperm module is imported and nothing may differ.
    A patch that a function applies when called is not found here.
    """
    import dperm

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(dperm.__file__).resolve().parents[1]),
                                                        str(Path(__file__).resolve().parent)]),
           "FLWR_HOME": str(tmp_path / "flwr"), "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1"}
    listed = _probe("list", env=env)
    assert listed["failed"] == {} and any(name.startswith("numpy") for name in listed["modules"])
    found = _probe("compare", json.dumps(listed["modules"]), env=env)
    assert found["changed"] == [], "importing dperm changed: " + ", ".join(found["changed"])


def test_every_public_module_declares_its_public_names():
    """Issue 29: one ``__all__`` per public module (a module or package without a leading underscore),
    and every name it lists exists."""
    import ast
    import importlib

    missing, unknown = [], []
    for path in sorted((ROOT / "src" / "dperm").rglob("*.py")):
        relative = path.relative_to(ROOT / "src")
        parts = relative.with_suffix("").parts
        if any(part.startswith("_") and part != "__init__" for part in parts):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        declared = [node for node in tree.body if isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)]
        defines = any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")
                      for node in tree.body)
        if not declared:
            if defines:
                missing.append(str(relative))
            continue
        module = importlib.import_module(".".join(p for p in parts if p != "__init__"))
        unknown += [f"{relative}: {name}" for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"public modules without __all__: {missing}"
    assert not unknown, f"__all__ names that do not exist: {unknown}"


# -- tests/ mirrors src/dperm/ (issue 29, target 8) ---------------------------------------------------------

#: The folder of tests of the repository's tools (scripts/, benchmarks/, docs/, packaging), not of a module.
TOOLING = "tooling"
#: Files at the top of tests/ that check the library as a whole rather than one module.
WHOLE_LIBRARY = {"test_architecture.py"}


def _subject(stem, modules):
    """The module ``test_<stem>.py`` is named for (``<module>`` or ``<module>_<topic>``), or None."""
    return next((m for m in sorted(modules, key=len, reverse=True) if stem == m or stem.startswith(m + "_")), None)


def _shown(tests, path):
    """``path`` as ``tests/...`` (a folder with a trailing slash)."""
    shown = "/".join(["tests", *path.relative_to(tests).parts])
    return shown + "/" if path.is_dir() else shown


def _layout_problems(tests, package):
    """Every file or folder of ``tests`` that does not mirror ``package``, with what to do.

    ``tests/<p>/test_<m>.py`` tests module ``<m>`` (``_<m>.py`` for a private one) of package
    ``dperm.<p>``; ``test_<m>_<topic>.py`` is one more file for the same module, and
    ``test_<p>.py`` / ``test_<p>_<topic>.py`` test the package as a whole (not a topic named
    after one of its modules). Every folder is a package (``__init__.py``: two folders may hold
    the same file name). ``tests/tooling/`` tests the repository's scripts, benchmarks and docs.
    """
    problems = []
    folders = [tests, *(p for p in tests.rglob("*") if p.is_dir())]
    for folder in sorted(p for p in folders if not any(
            part == "__pycache__" or part.startswith(".") for part in p.relative_to(tests).parts)):
        relative = folder.relative_to(tests)
        if not (folder / "__init__.py").is_file():
            problems.append(f"{_shown(tests, folder)}: add an empty __init__.py "
                            "(test files in different folders share names)")
        if relative.parts[:1] == (TOOLING,):
            continue
        mirrored = package.joinpath(*relative.parts)
        if not (mirrored / "__init__.py").is_file():
            problems.append(f"{_shown(tests, folder)}: no package dperm.{'.'.join(relative.parts)}; move its tests "
                            f"to the folder of the package they test, or to tests/{TOOLING}/")
            continue
        modules = {p.stem.removeprefix("_") for p in mirrored.glob("*.py") if p.name != "__init__.py"}
        own = relative.name if relative.parts else "dperm"
        for path in sorted(folder.glob("*.py")):
            name = path.name
            if name in ("__init__.py", "conftest.py") or name.startswith("_") or (
                    not relative.parts and name in WHOLE_LIBRARY):
                continue
            where = _shown(tests, path)
            stem = name.removeprefix("test_").removesuffix(".py")
            if not name.startswith("test_") or not name.endswith(".py"):
                problems.append(f"{where}: a helper's name starts with '_', a test file's with 'test_'")
            elif _subject(stem, modules) is None:
                whole = stem == own or stem.startswith(own + "_")  # the package as a whole, or one topic of it
                topic = stem[len(own) + 1:] if whole else ""
                if not whole:
                    problems.append(f"{where}: names no module of dperm{'.' if relative.parts else ''}"
                                    f"{'.'.join(relative.parts)}; name it test_<module>[_<topic>].py for the module "
                                    f"it tests ({', '.join(sorted(modules))}) or move it")
                elif topic and _subject(topic, modules):
                    problems.append(f"{where}: tests module {_subject(topic, modules)}; name it test_{topic}.py")
    return problems


def test_every_test_file_is_named_for_the_module_it_tests():
    """tests/ mirrors src/dperm/: a test's place says which module it tests (docs/developer.md, "Tests")."""
    problems = _layout_problems(ROOT / "tests", ROOT / "src" / "dperm")
    assert problems == [], "tests/ does not mirror src/dperm/:\n" + "\n".join(problems)


def test_the_layout_check_refuses_a_file_or_folder_no_module_has(tmp_path):
    package, tests = tmp_path / "dperm", tmp_path / "tests"
    for path in ["__init__.py", "losses.py", "pkg/__init__.py", "pkg/_base.py", "pkg/newton.py"]:
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text("")
    good = ["__init__.py", "conftest.py", "_helper.py", "test_architecture.py", "test_losses.py",
            "test_losses_smooth.py", "pkg/__init__.py", "pkg/test_base.py", "pkg/test_base_weights.py",
            "pkg/test_newton.py", "pkg/test_pkg.py", "pkg/test_pkg_reply_noise.py", "tooling/__init__.py",
            "tooling/test_docs_build.py"]
    bad = ["test_loss.py", "pkg/test_newtons.py", "pkg/test_pkg_newton.py", "pkg/helper.py",
           "other/__init__.py", "other/test_x.py", "pkg/inner/test_y.py"]
    for path in good + bad:
        (tests / path).parent.mkdir(parents=True, exist_ok=True)
        (tests / path).write_text("")
    assert _layout_problems(tests, package) == [
        "tests/test_loss.py: names no module of dperm; name it test_<module>[_<topic>].py for the module it "
        "tests (losses) or move it",
        "tests/other/: no package dperm.other; move its tests to the folder of the package they test, or to "
        "tests/tooling/",
        "tests/pkg/helper.py: a helper's name starts with '_', a test file's with 'test_'",
        "tests/pkg/test_newtons.py: names no module of dperm.pkg; name it test_<module>[_<topic>].py for the "
        "module it tests (base, newton) or move it",
        "tests/pkg/test_pkg_newton.py: tests module newton; name it test_newton.py",
        "tests/pkg/inner/: add an empty __init__.py (test files in different folders share names)",
        "tests/pkg/inner/: no package dperm.pkg.inner; move its tests to the folder of the package they test, "
        "or to tests/tooling/",
    ]
