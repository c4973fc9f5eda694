"""What spark-submit.sh ships: the package and the schemas, nothing of the dev tooling."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import REPO, run_cli


def test_the_shipped_zip_holds_only_the_package_and_the_schemas() -> None:
    done = run_cli([], job="tests/support/list_package.py")
    assert done.returncode == 0, done.output[-3000:]
    zips = json.loads(done.stdout.strip().splitlines()[-1])
    shipped = [names for path, names in zips.items()
               if Path(path).name.startswith("provisioning-")]
    expected = sorted(
        [p.relative_to(REPO / "lib").as_posix() for p in (REPO / "lib" / "provisioning")
         .rglob("*.py")] + [p.relative_to(REPO).as_posix() for p in
                            (REPO / "schemas").rglob("*.py")])
    assert shipped == [expected]
    assert not [n for n in expected if "devkafka" in n or n.startswith("tests/")]
