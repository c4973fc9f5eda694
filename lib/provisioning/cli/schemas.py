"""The JSON Schemas of the conf file and of the manifest files, written from the registered
kinds' models (`make conf-schema`):

    python -m provisioning.cli.schemas conf/provisioning.schema.json schemas/manifest.schema.json
"""

from __future__ import annotations

import sys
from pathlib import Path

from provisioning.conf.manifests import manifest_schema
from provisioning.conf.schema import conf_schema, render
from provisioning.registry import KINDS


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m provisioning.cli.schemas CONF_OUT.json MANIFEST_OUT.json",
              file=sys.stderr)
        return 2
    sections = tuple(k.conf for k in KINDS)
    for path, schema in zip(argv, (conf_schema(sections), manifest_schema(sections)),
                            strict=True):
        Path(path).write_text(render(schema), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
