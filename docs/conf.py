"""Sphinx configuration for dperm's documentation site.

Build with ``make docs`` (warnings are errors). The gallery scripts in
``examples/`` are executed at build time and draw their figures then.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "docs"))          # _gallery_order (the gallery's reading order)
os.environ.setdefault("MPLBACKEND", "Agg")

import dperm  # noqa: E402

project = "dperm"
author = "dperm contributors"
copyright = "2026, dperm contributors"
release = dperm.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.json",
                    "auto_examples/*.md5", "auto_examples/*.codeobj.json"]

# MyST: "(label)=" anchors, ``{note}`` fences, dollar maths; headings get anchors so
# "paper_notes.md#note-7" style links resolve.
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3

# autosummary writes one page per public name (docs/generated/, not committed). It never
# deletes a page, so a name that left the API would keep a stale page that fails the build
# (warnings are errors): start every build from an empty folder.
import shutil  # noqa: E402

shutil.rmtree(ROOT / "docs" / "generated", ignore_errors=True)
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False, "inherited-members": False}
autodoc_typehints = "none"

# numpydoc renders the Parameters/Attributes/... sections. Class member tables are
# off: autosummary already lists the public names, and numpydoc's tables would
# document every scikit-learn method inherited by the estimators.
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "_gallery_order.GalleryOrder",
    "min_reported_time": 1,
}

html_theme = "pydata_sphinx_theme"
html_title = f"dperm {release}"
html_static_path = ["_static"]
templates_path = ["_templates"]
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
