"""Warm the driver's Spark and Delta paths for `make driver-archive` (see provisioning.run.warmup).

    ./spark-submit.sh jobs/driver_archive.py [MANIFEST.yaml]
"""

import sys

from provisioning.cli.topics import load_manifest_file
from provisioning.run.warmup import warm_up

if __name__ == "__main__":
    warm_up(load_manifest_file(sys.argv[1] if len(sys.argv) > 1
                               else "conf/examples/desired_topics.yaml"))
