"""MkDocs hooks of the docs site: on every build, the reference pages generated from the
code (`docs/gen_ref.py`) and the repository's ARCHITECTURE.md, RELIABILITY.md and
BENCHMARKS.md are added to the site's files, so none of them is kept in `docs/`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_ref

# Kept at the repository's root, where a reader of the code looks for them.
ROOT_PAGES = ("ARCHITECTURE.md", "RELIABILITY.md", "BENCHMARKS.md")


def on_files(files: Files, config: Any) -> Files:
    for page, make in gen_ref.PAGES.items():
        try:
            content = make()
        except gen_ref.MissingConfSchema as exc:
            raise PluginError(str(exc)) from exc
        files.append(File.generated(config, page, content=content))
    for name in ROOT_PAGES:
        files.append(File.generated(config, name, content=(gen_ref.ROOT / name).read_text()))
    return files
