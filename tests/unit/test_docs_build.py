"""The docs site builds with `mkdocs build --strict`, as `make docs` builds it: a broken
link or anchor between pages, a page missing from the nav, or a missing conf schema fails
it. And the README leads to the tasks a new user looks for first."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_docs_reference import gen_ref, stand_in_schema

REPO = Path(__file__).resolve().parents[2]
MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean"]
# What the site is built from.
SITE_SOURCES = ("mkdocs.yml", "docs", "ARCHITECTURE.md", "RELIABILITY.md", "BENCHMARKS.md")


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MKDOCS, "--site-dir", str(site)], cwd=root, capture_output=True,
                          text=True, timeout=600)


def _copy_sources(target: Path) -> None:
    target.mkdir(parents=True)
    for name in SITE_SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built strictly from this tree, or, while the conf's JSON Schema is not in
    the tree, from a copy of the site's sources given a stand-in schema."""
    work = tmp_path_factory.mktemp("docs")
    root = REPO
    if not gen_ref.CONF_SCHEMA.is_file():
        root = work / "tree"
        _copy_sources(root)
        (root / "conf").mkdir()
        (root / "conf" / "provisioning.schema.json").write_text(json.dumps(stand_in_schema()))
    built = _build(root, work / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    return work / "site"


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}

    assert {"index.html", "how-to/add-and-change-topics.html", "how-to/read-the-audit.html",
            "reference/commands.html", "reference/conf.html", "reference/tables.html",
            "reference/vocabulary.html", "ARCHITECTURE.html", "RELIABILITY.html",
            "BENCHMARKS.html"} <= pages


def test_a_missing_conf_schema_fails_the_build_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _copy_sources(root)

    built = _build(root, tmp_path / "site")

    assert built.returncode != 0
    assert "conf/provisioning.schema.json is missing" in built.stdout + built.stderr


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _copy_sources(root)
    (root / "conf").mkdir()
    (root / "conf" / "provisioning.schema.json").write_text(json.dumps(stand_in_schema()))
    page = root / "docs" / "how-to" / "delete-topics.md"
    page.write_text(page.read_text() + "\n[gone](no-such-page.md)\n")

    built = _build(root, tmp_path / "site")

    assert built.returncode != 0
    assert "no-such-page.md" in built.stdout + built.stderr


def _readme_links() -> dict[str, str]:
    readme = (REPO / "README.md").read_text()
    return {text: target for text, target in re.findall(r"\[([^\]]+)\]\(([^)#]+)[^)]*\)", readme)
            if "://" not in target}


def test_every_link_of_the_readme_names_a_file_of_the_tree() -> None:
    missing = [target for target in _readme_links().values() if not (REPO / target).exists()]

    assert missing == []


def test_the_readme_links_the_first_tasks_to_their_pages() -> None:
    targets = set(_readme_links().values())

    assert {"docs/how-to/add-and-change-topics.md", "docs/how-to/read-the-audit.md",
            "docs/how-to/delete-topics.md", "docs/how-to/check-a-cluster.md"} <= targets


def _tests_by_module() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (REPO / "tests").rglob("test_*.py"):
        found[path.name] = set(re.findall(r"^(?:async )?def (test_\w+)",
                                          path.read_text(encoding="utf-8"), re.MULTILINE))
    return found


def test_every_test_the_docs_name_as_their_proof_exists() -> None:
    """A claim that names the test proving it (RELIABILITY.md's table, the benchmarks, the
    docs) names a test of the tree: `module.py::test_name`, or a bare test name."""
    tests = _tests_by_module()
    every = set().union(*tests.values())
    missing = []
    for doc in [REPO / d for d in SITE_SOURCES[2:]] + sorted((REPO / "docs").rglob("*.md")):
        text = doc.read_text(encoding="utf-8")
        for module, name in re.findall(r"(test_\w+\.py)::(test_\w+)", text):
            if name not in tests.get(module, set()):
                missing.append(f"{doc.name}: {module}::{name}")
        for name in re.findall(r"`(test_\w+)`", text):
            if name not in every:
                missing.append(f"{doc.name}: {name}")
    assert missing == []
