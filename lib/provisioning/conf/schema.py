"""The JSON Schemas of the conf file and of the manifest files, generated from their models
(`conf.validate.file_model`, each kind's manifest row: `conf.manifests.manifest_schema`).

Editors validate a conf against it (the `# yaml-language-server: $schema=...` line at the
top of each conf); the docs' reference of conf keys is generated from it, each key with
its type, default and description. `make conf-schema` writes it; a unit test fails when
the file in the repo is not what this makes.

    python -m provisioning.conf.schema conf/provisioning.schema.json schemas/manifest.schema.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def conf_schema() -> dict[str, Any]:
    """The conf file's JSON Schema."""
    from provisioning.conf.validate import file_model

    return {"$schema": DIALECT, **file_model().model_json_schema(mode="validation")}


def render(schema: dict[str, Any]) -> str:
    """The schema as the file holds it: stable, indented, ending in a newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m provisioning.conf.schema CONF_OUT.json MANIFEST_OUT.json",
              file=sys.stderr)
        return 2
    from provisioning.conf.manifests import manifest_schema

    for path, schema in zip(argv, (conf_schema(), manifest_schema()), strict=True):
        Path(path).write_text(render(schema), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
