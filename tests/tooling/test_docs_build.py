"""The documentation site: the paper notes the code cites exist, and the site builds.

The build test runs Sphinx with ``-W --keep-going`` (warnings are errors), the gallery
examples executed, as ``make docs`` does; it is ``slow`` (minutes) and needs the ``docs``
extra.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTES_PAGE = ROOT / "docs" / "paper_notes.md"


def cited_notes() -> set[int]:
    """Every note number cited in src/ ("note 7", "notes 2-4", "notes 1, 2, 12, 14")."""
    numbers = set()
    for path in (ROOT / "src").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"\bnotes?\s+(\d+(?:\s*(?:-|,|and)\s*\d+)*)", text):
            for a, b in re.findall(r"(\d+)(?:\s*-\s*(\d+))?", match.group(1)):
                numbers.update(range(int(a), int(b or a) + 1))
    return numbers


def test_every_note_the_code_cites_is_a_section_of_the_paper_notes_page():
    page = NOTES_PAGE.read_text(encoding="utf-8")
    cited = cited_notes()
    assert cited, "the code cites no paper note: the pattern is out of date"
    missing = [n for n in sorted(cited)
               if f"(note-{n})=" not in page or not re.search(rf"^## Note {n}: ", page, re.M)]
    assert not missing, f"notes cited in src/ without a section in {NOTES_PAGE.name}: {missing}"


@pytest.mark.slow
def test_the_site_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    pytest.importorskip("pydata_sphinx_theme")
    pytest.importorskip("myst_parser")
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q",
         "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, env=env, timeout=1800,
    )
    assert build.returncode == 0, build.stderr[-5000:]
    html = tmp_path / "html"
    assert (html / "index.html").is_file()
    assert (html / "paper_notes.html").is_file()
    assert list((html / "generated").glob("dperm.PrivateLogisticRegression.html"))
    examples = sorted((ROOT / "examples").glob("plot_*.py"))
    assert len(examples) >= 10, "issue 32: the gallery has at least 10 executed examples"
    missing = [path.name for path in examples
               if not (html / "_images" / f"sphx_glr_{path.stem}_001.png").is_file()]
    assert not missing, f"gallery examples that drew no figure: {missing}"
