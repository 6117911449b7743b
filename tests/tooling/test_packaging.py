"""Packaging (issue 18): the wheel builds without deprecation notices, ships py.typed and the
Adult data, installs into a clean venv and runs ``dperm demo`` from there.

The slow test needs network access to PyPI (the isolated build fetches setuptools; the clean
venv installs numpy, scipy and scikit-learn).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: What a build needs from the checkout (copied, so the build leaves nothing in the repository).
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "CITATION.cff", "src", "docs")


def test_pyproject_uses_an_spdx_license_and_a_setuptools_that_reads_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "MIT"  # PEP 639 expression, not a table
    assert "setuptools>=77" in project["build-system"]["requires"]  # PEP 639 support
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["dperm"]
    assert (ROOT / "src" / "dperm" / "py.typed").is_file()
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_citation_file_cites_the_software_and_the_four_papers():
    yaml = pytest.importorskip("yaml")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["authors"] == [{"name": "dperm developers"}]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert citation["version"] == project["version"] and citation["license"] == "MIT"
    titles = [reference["title"] for reference in citation["references"]]
    assert len(titles) == 4
    for words in ("Differentially Private Empirical Risk Minimization", "Multiparty Classification",
                  "Perturbation of convex risk minimization", "Error Analysis and Variable Selection"):
        assert any(words in title for title in titles), words


def _cited_pages() -> set[str]:
    """Every ``docs/....md`` page cited in the package's source."""
    import re

    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src" / "dperm").rglob("*.py"))
    return set(re.findall(r"docs/[a-z_/]+\.md", text))


def test_every_page_the_code_cites_exists_in_the_checkout():
    from dperm.documentation import cited_page

    for citation in _cited_pages():
        assert cited_page(citation).is_file(), citation


def _readme_quick_start() -> tuple[str, str]:
    """The install line and the first python block of the README's "Quick start" section."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Quick start", 1)[1]
    install = section.split("```sh", 1)[1].split("```", 1)[0].strip()
    code = section.split("```python", 1)[1].split("```", 1)[0]
    return install, code


def _run(command, cwd, env=None, timeout=1200):
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout + result.stderr


def _clean_env(venv: Path) -> dict:
    """The environment of the installed venv: no PYTHONPATH to the checkout, no data directory."""
    env = {key: value for key, value in os.environ.items()
           if key not in {"PYTHONPATH", "DPERM_DATA", "VIRTUAL_ENV", "PYTHONHOME"}}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    return env


@pytest.mark.slow
def test_wheel_installs_into_a_clean_venv_and_runs_the_demo(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(path, source / name)

    dist = tmp_path / "dist"
    log = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(dist), str(source)],
               cwd=tmp_path)
    assert "SetuptoolsDeprecationWarning" not in log  # no license-table deprecation box
    (wheel,) = dist.glob("dperm-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert "dperm/py.typed" in names
    assert {"dperm/datasets/data/adult.data.gz", "dperm/datasets/data/adult.test.gz"} <= names
    assert "License-Expression: MIT" in metadata
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)  # no system site-packages
    python = venv / "bin" / "python"
    env = _clean_env(venv)
    _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", str(wheel)],
         cwd=tmp_path, env=env)
    where = _run([str(python), "-c", "import dperm; print(dperm.__file__)"], cwd=tmp_path, env=env)
    assert str(venv) in where and str(ROOT) not in where  # the installed copy, not the checkout

    # The README's quick start, after exactly the install line it follows ("pip install -e . pandas",
    # here the wheel and pandas), run from a directory that is not the checkout.
    install_line, quick_start = _readme_quick_start()
    assert install_line.split("#")[0].split() == ["pip", "install", "-e", ".", "pandas"]
    _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "pandas"], cwd=tmp_path, env=env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "quick_start.py").write_text(quick_start, encoding="utf-8")
    printed = _run([str(python), "quick_start.py"], cwd=elsewhere, env=env)
    assert "Guarantee:" in printed
    assert "usage: dperm demo" in _run([str(venv / "bin" / "dperm"), "demo", "--help"], cwd=elsewhere, env=env)

    # Every page the code cites opens from the installed copy.
    cited = sorted(_cited_pages())
    script = ("import sys; from dperm.documentation import cited_page; "
              "print('\\n'.join(str(cited_page(c)) for c in sys.argv[1:]))")
    found = _run([str(python), "-c", script, *cited], cwd=elsewhere, env=env).split()
    assert len(found) == len(cited) and all(str(venv) in path for path in found)

    out = tmp_path / "demo"
    _run([str(venv / "bin" / "dperm"), "demo", "--subset", "2000", "--epsilons", "1",
          "--repeats", "1", "--jobs", "1", "--out", str(out)], cwd=tmp_path, env=env)
    assert any(out.iterdir())  # the demo wrote its report from the embedded Adult copy
