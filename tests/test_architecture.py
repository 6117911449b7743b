"""The package layout of issue 16: no import circle between rooms, no room importing another's internals.

Reads the source with ``tools/import_graph.py`` (static, every ``import`` of a
``dperm`` module, function-level ones included).
"""

import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "import_graph.py"


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
