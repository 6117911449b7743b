"""Issue 29: a module split into a package keeps its surface.

``dperm.tabular`` and ``dperm.model_io`` became packages of private modules,
one job each; every name any caller imports from them (in ``src``, ``tests``,
``scripts``, ``benchmarks``, the gallery ``examples`` or the docs' examples) is one of the package's
``__all__``, so no caller reaches into a private module.
"""

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPLIT = ("dperm.tabular", "dperm.model_io")


def _imported_names(package):
    """``(file, name)`` of every ``from package import name`` in the code and the pages' examples."""
    found = []
    for folder in ("src", "tests", "scripts", "benchmarks", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == package:
                    found += [(str(path.relative_to(ROOT)), alias.name) for alias in node.names]
    pattern = re.compile(rf"from {re.escape(package)} import \(?([\w,\s]+)\)?")
    for path in sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]:
        for names in pattern.findall(path.read_text(encoding="utf-8")):
            found += [(str(path.relative_to(ROOT)), name.strip()) for name in names.split(",") if name.strip()]
    return found


@pytest.mark.parametrize("package", SPLIT)
def test_every_name_callers_import_is_public(package):
    module = importlib.import_module(package)
    assert Path(module.__file__).name == "__init__.py"  # a package, not a module
    imported = _imported_names(package)
    assert len(imported) > 10
    outside = sorted({f"{where}: {name}" for where, name in imported if name not in module.__all__})
    assert not outside, f"names imported from {package} but not in its __all__: {outside}"


@pytest.mark.parametrize("package", SPLIT)
def test_its_modules_are_private_and_its_names_come_from_them(package):
    module = importlib.import_module(package)
    folder = Path(module.__file__).parent
    assert sorted(path.stem for path in folder.glob("*.py") if path.stem != "__init__")
    assert all(path.stem.startswith("_") for path in folder.glob("*.py"))
    defined = [getattr(module, name) for name in module.__all__ if callable(getattr(module, name))]
    assert defined and all(value.__module__.startswith(package + "._") for value in defined)
