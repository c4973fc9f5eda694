"""A Spark Connect client's reads of settings, answered from what the server said before.

pyspark's Connect client asks the server for a few SQL settings (the session's time zone,
Arrow and local-relation settings) before every `collect` and `createDataFrame`: a Config
request each, with the same answer each time, since the job sets its settings once, as the
session starts (`session.connect`).
"""

from __future__ import annotations

import threading
from typing import Any

# The settings whose values a client keeps once the server told them: the SQL settings the
# job's session is given as it starts (`build.runtime_settings`) and never sets again.
REMEMBERED_PREFIX = "spark.sql."


def remember_settings(client: Any) -> None:
    """Have a Connect client answer a read of SQL settings it has read before from what the
    server said then, rather than with a request to the server each time.

    pyspark's client asks the server for a few SQL settings (the session's time zone, Arrow
    and local-relation settings) before every `collect` and `createDataFrame`: a Config
    request each, the same answer each time, since the job sets its settings once, as the
    session starts. A read with a default is kept apart from a read without. Reads of other
    settings, and reads of several keys where one is not known yet, go to the server (their
    SQL answers kept); any other operation (a set, an unset) goes to the server and forgets
    every answer kept."""
    from pyspark.sql.connect.client.core import ConfigResult

    ask = client.config
    # A key's value (a read), or a key's value read with a default (key, default).
    known: dict[Any, str | None] = {}
    lock = threading.Lock()

    def config(operation: Any) -> Any:
        kind = operation.WhichOneof("op_type")
        if kind == "get":
            asked = [(k, k) for k in operation.get.keys]
        elif kind == "get_with_default":
            asked = [((p.key, p.value if p.HasField("value") else None), p.key)
                     for p in operation.get_with_default.pairs]
        else:
            with lock:
                known.clear()
            try:
                return ask(operation)
            finally:
                with lock:
                    known.clear()
        with lock:
            if asked and all(memo in known for memo, _ in asked):
                return ConfigResult([(key, known[memo]) for memo, key in asked], [])
        answer = ask(operation)
        with lock:
            for (memo, key), (_, value) in zip(asked, answer.pairs, strict=False):
                if key.startswith(REMEMBERED_PREFIX):
                    known[memo] = value
        return answer

    client.config = config
