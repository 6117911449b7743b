"""The package layout of issue 16: no import circle between rooms, no room importing another's internals;
issue 29: no import circle between files, no monkeypatch of another library at import time.

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
