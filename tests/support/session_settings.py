"""Print, as JSON, what the job's session has of the settings named on the command line,
the session built as a run builds it (the conf's spark.settings; --remote or SPARK_REMOTE:
Spark Connect, else classic, as spark-submit.sh started it).

    ./spark-submit.sh tests/support/session_settings.py CONF.yaml KEY [KEY ...]
"""

import json
import logging
import os
import sys

from provisioning.conf import load_conf
from provisioning.registry import KINDS
from provisioning.session import build_session

logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                    format="%(levelname)s %(name)s: %(message)s")
logging.getLogger("py4j").setLevel(logging.WARNING)
conf = load_conf(sys.argv[1], tuple(k.conf for k in KINDS), os.environ)
spark = build_session(conf.spark.app_name, conf.spark.settings,
                      remote=os.environ.get("SPARK_REMOTE"))
print(json.dumps({key: spark.conf.get(key, None) for key in sys.argv[2:]}, sort_keys=True))
