"""Build hook: ship the documentation pages that dperm's privacy records cite.

Records and docstrings cite pages such as ``docs/paper_notes.md`` and
``docs/design/gaussian_objective.md``. ``docs/`` is outside the package, so
building a wheel copies its Markdown pages into ``dperm/_docs``;
:func:`dperm.documentation.cited_page` finds them there in an installed copy and
in ``docs/`` in a checkout. Everything else is declared in ``pyproject.toml``.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DOCS = Path(__file__).resolve().parent / "docs"


class BuildWithCitedPages(build_py):
    """``build_py`` that also copies ``docs/*.md`` and ``docs/design/*.md`` into ``dperm/_docs``."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "dperm" / "_docs"
        for page in [*DOCS.glob("*.md"), *DOCS.glob("design/*.md")]:
            destination = target / page.relative_to(DOCS)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(page, destination)


setup(cmdclass={"build_py": BuildWithCitedPages})
