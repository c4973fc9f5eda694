"""The JSON Schemas of the conf file and of the manifest files, generated from their models
(`conf.validate.file_model`, each kind's manifest row: `conf.manifests.manifest_schema`).

Editors validate a conf against it (the `# yaml-language-server: $schema=...` line at the
top of each conf); the docs' reference of conf keys is generated from it, each key with
its type, default and description. `make conf-schema` writes it (`cli.schemas`); a unit
test fails when the file in the repo is not what this makes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provisioning.conf.section import Section

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def conf_schema(parts: Sequence[Section]) -> dict[str, Any]:
    """The conf file's JSON Schema, with the keys of the kinds' sections `parts`."""
    from provisioning.conf.validate import file_model

    return {"$schema": DIALECT, **file_model(tuple(parts)).model_json_schema(
        mode="validation")}


def render(schema: dict[str, Any]) -> str:
    """The schema as the file holds it: stable, indented, ending in a newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
