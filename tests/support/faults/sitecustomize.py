"""Fault injection for the reliability tests: real failures at precise moments, in any Python
process of a run (the driver, a Connect client, a Spark worker) started with this directory
on PYTHONPATH and PROVISIONING_FAULT set. Nothing of it ships with the job.

PROVISIONING_FAULT is a comma-separated list of `point` or `point:argument`:

- kill-driver-before-audit:PHASE  SIGKILL the driver before the audit commit holding PHASE
- fail-task-after:REQUEST         a Spark task's first attempt dies (its Python worker
                                  SIGKILLed) once a real request of REQUEST (create_topics,
                                  delete_topics, create_partitions: functions of
                                  provisioning.kafka.requests) was answered
- kill-worker-after:REQUEST       the Python worker that sent REQUEST dies (SIGKILL)
- describe-fails-after-create     the first describe after a real CreateTopics loses its
                                  connection (KafkaConnectionError)
- pause-before-changes:PATH       before the first phase that changes Kafka,
- pause-between-waves:PATH        before each wave of apply requests after the first,
- pause-in-snapshot:PATH          when the snapshot phase starts,
- pause-before-lock:PATH          once an apply's first plan, made without its lock,
                                  has changes, before it writes its lock claim and plans
                                  again (the claim starts beside the first plan's
                                  policies, which may still be reading Kafka),
- pause-after-phases:PATH         once every phase is done (before the last commits land):
                                  create PATH.waiting, then wait (at most five minutes)
                                  until PATH exists
"""

from __future__ import annotations

import os

_FAULTS = [f.strip() for f in os.environ.get("PROVISIONING_FAULT", "").split(",") if f.strip()]

if _FAULTS:
    try:
        from tests.support.faults.inject import install
    except ImportError:  # a process that cannot see the test package (a stock Connect server)
        pass
    else:
        install(_FAULTS)
