"""Example Airflow DAG: plan, decide, then apply exactly the plan that was made.

    plan ──► anything_to_apply ──► apply [──► site]

- `plan` runs `provision_topics.py plan --out PLAN_FILE` with SparkSubmitOperator.
  Any non-zero exit fails the task, and the apply never runs: 1 means some topics
  were rejected (invalid manifest row, broker refused them in the validateOnly
  pass) or blocked by a policy, and a person has to look; 2, 3 and 4 are bad conf,
  an unreachable cluster and a held lock.
- `anything_to_apply` (ShortCircuitOperator) reads the saved plan and skips the
  apply when the plan recorded a non-zero exit code or holds nothing the apply
  would do. It reads the plan's `needs` section, which every kind the job manages fills
  (topics, ACL bindings, replica moves, client quotas, SCRAM credentials, and any kind a
  later release adds): each change's kind, action and the `apply --allow-*` options it
  takes. A change is counted when every option it takes is allowed here (the
  PROVISIONING_ALLOW_* settings below); a plan without that section (written by another
  release of the job) fails the task rather than being skipped.
- `apply` runs `provision_topics.py apply --plan PLAN_FILE`: the job plans again
  and exits 2 before any request reaches Kafka if the fresh plan differs from the
  saved one (the manifests, the conf or the cluster changed in between).
- `site` (only when PROVISIONING_SITE_DIR is set) runs `provision_topics.py report
  --site DIR` once the apply is done or skipped: the audit as a static site, made from
  the tables. It does not run after a failed plan or apply (the DAG run fails; the next
  run's site shows that run).

Deployment settings come from the environment of the scheduler and workers, read
when the DAG file is parsed (this file needs nothing but Airflow, the Spark
provider and the standard library):

- PROVISIONING_HOME (/opt/topic-provisioning): the checkout with jobs/provision_topics.py.
- PROVISIONING_CONF ($PROVISIONING_HOME/conf/local.yaml): the job's YAML conf.
- PROVISIONING_PY_FILES ($PROVISIONING_HOME/dist/provisioning.zip): a zip of
  lib/provisioning and schemas (what spark-submit.sh builds into .cache/dist).
- PROVISIONING_PLAN_DIR ($PROVISIONING_HOME/plans): where plans are saved, on
  storage that the Spark driver and the Airflow workers share.
- PROVISIONING_DELTA_JARS (unset): comma-separated local Delta jars; when unset,
  Delta comes with --packages PROVISIONING_DELTA_PACKAGE
  (io.delta:delta-spark_4.2_2.13:4.4.0) from a Maven repository.
- PROVISIONING_SPARK_CONN_ID (spark_default): the Airflow connection naming the master.
- PROVISIONING_SPARK_REMOTE (unset): a Spark Connect server (sc://HOST:PORT) the tasks run
  on, as thin clients: spark-submit then starts no Spark driver of its own (only its
  launcher, which puts the zip of PROVISIONING_PY_FILES on the job's path), the job ships
  its code to the server, and the Delta jars, PROVISIONING_SPARK_CONF and the driver
  memory are the server's business, not passed. The conf's `spark.settings` still apply.
  The URL is a task argument, seen in Airflow's task view: for a URL that carries a token,
  put it in the conf's `spark.remote` and set this to `conf`.
- PROVISIONING_SPARK_CONF ({}): a JSON object of extra Spark properties.
- PROVISIONING_DRIVER_MEMORY (unset): spark-submit --driver-memory.
- PROVISIONING_ALLOW_<CHANGE> (false): `true` passes --allow-<change> to the apply (the
  name's `_` as `-`), and lets the gate count the changes that take it. One per opt-in flag
  of `apply`:
  - PROVISIONING_ALLOW_DELETES: --allow-deletes (topic deletions);
  - PROVISIONING_ALLOW_ALTER: --allow-alter (configs, more partitions);
  - PROVISIONING_ALLOW_REASSIGN: --allow-reassign (replica moves; a move still running
    when the apply stops waiting is finished by the next DAG run's apply; an ALTER's moves
    take --allow-alter too);
  - PROVISIONING_ALLOW_ACL_REMOVALS: --allow-acl-removals (ACL bindings removed; its
    earlier name PROVISIONING_ALLOW_REVOKES still works);
  - PROVISIONING_ALLOW_QUOTA_REMOVALS: --allow-quota-removals (client quotas removed);
  - PROVISIONING_ALLOW_USER_REMOVALS: --allow-user-removals (SCRAM credentials removed);
  - PROVISIONING_ALLOW_GROUP_REMOVALS: --allow-group-removals (consumer groups deleted);
  - PROVISIONING_ALLOW_OFFSET_RESETS: --allow-offset-resets (consumer groups' committed
    offsets reset or deleted, as the offset reset requests ask).
  ACL grants, quota sets, SCRAM credentials set or rotated and group configs set take no
  flag: every apply makes them, as it makes topic creations.
- PROVISIONING_SCHEDULE (unset: manual runs only): a cron expression or a preset.
- PROVISIONING_SITE_DIR (unset: no site task): where `report --site` writes the site, on
  storage the driver writes and a web server or a sync job reads.

SASL credentials reach the job as the environment variables its conf names
(`sasl_username_env`, `sasl_password_env`): set them in the worker's
environment; they never appear in this file, the task arguments or the logs.
The job's Python (PYSPARK_PYTHON) needs the project's packages installed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.python import ShortCircuitOperator
from airflow.sdk import DAG

DAG_ID = "provision_topics"
PLAN_FORMAT = "topic-provisioning-plan/1"

HOME = os.environ.get("PROVISIONING_HOME", "/opt/topic-provisioning")
CONF = os.environ.get("PROVISIONING_CONF", f"{HOME}/conf/local.yaml")
PY_FILES = os.environ.get("PROVISIONING_PY_FILES", f"{HOME}/dist/provisioning.zip")
PLAN_DIR = os.environ.get("PROVISIONING_PLAN_DIR", f"{HOME}/plans")
DELTA_JARS = os.environ.get("PROVISIONING_DELTA_JARS") or None
DELTA_PACKAGE = os.environ.get("PROVISIONING_DELTA_PACKAGE",
                               "io.delta:delta-spark_4.2_2.13:4.4.0")
SPARK_CONN_ID = os.environ.get("PROVISIONING_SPARK_CONN_ID", "spark_default")
DRIVER_MEMORY = os.environ.get("PROVISIONING_DRIVER_MEMORY") or None
_ALLOW_PREFIX = "PROVISIONING_ALLOW_"
# The `apply --allow-*` options set to `true`, one per PROVISIONING_ALLOW_<CHANGE> setting:
# a flag a later release adds needs no change here.
# An option's earlier name is taken as the new one (the job still takes it too, warning).
_RENAMED = {"--allow-revokes": "--allow-acl-removals"}
ALLOWED = tuple(sorted({
    _RENAMED.get(option, option) for option in (
        "--allow-" + name[len(_ALLOW_PREFIX):].lower().replace("_", "-")
        for name, value in os.environ.items()
        if name.startswith(_ALLOW_PREFIX) and len(name) > len(_ALLOW_PREFIX)
        and value.strip().lower() == "true")}))
SCHEDULE = os.environ.get("PROVISIONING_SCHEDULE") or None
SITE_DIR = os.environ.get("PROVISIONING_SITE_DIR") or None
REMOTE = os.environ.get("PROVISIONING_SPARK_REMOTE") or None
REMOTE_ARGS = ["--remote", REMOTE] if REMOTE and REMOTE != "conf" else []

SPARK_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # The admin step talks to Kafka: a speculative duplicate would send requests twice.
    "spark.speculation": "false",
    **json.loads(os.environ.get("PROVISIONING_SPARK_CONF") or "{}"),
}

# One file per DAG run, so a rerun of `apply` reads the plan of its own DAG run.
PLAN_FILE = PLAN_DIR + "/" + DAG_ID + "/{{ run_id | replace(':', '-') | replace('+', '-') }}.json"


def plan_verdict(plan_file: str, allowed: Iterable[str] = ()) -> tuple[bool, str]:
    """Whether the saved plan should be applied with the `apply` options `allowed`
    (`--allow-acl-removals`, ...), and why (pure: reads only the file). A plan without its
    `needs` section raises ValueError: the task fails rather than skip every apply."""
    path = Path(plan_file)
    if not path.exists():
        return False, f"no saved plan at {plan_file}"
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if doc.get("format") != PLAN_FORMAT:
        return False, f"{plan_file} is not a saved plan of format {PLAN_FORMAT}"
    exit_code = doc.get("meta", {}).get("exit_code")
    if exit_code != 0:
        return False, f"the plan exited {exit_code}: some topics need a person (see the audit)"
    needs = doc.get("plan", {}).get("needs")
    if not isinstance(needs, list):
        raise ValueError(f"{plan_file} has no `needs` section: it was written by another "
                         "release of the job than this DAG's; run the plan again")
    given = set(allowed)
    todo = [n for n in needs if set(n["flags"]) <= given]
    if not todo:
        waiting = sorted({f for n in needs for f in n["flags"]} - given)
        return False, "nothing to apply" + (
            f" (changes that take {', '.join(waiting)} wait for it)" if waiting else "")
    per_kind: dict[str, list[str]] = {}
    for n in todo:
        per_kind.setdefault(n["kind"], []).append(f"{n['changes']} {n['action'].lower()}")
    summary = "; ".join(f"{kind}: {', '.join(done)}" for kind, done in per_kind.items())
    return True, f"applying {summary} (plan digest {doc['digest'][:12]})"


def _should_apply(plan_file: str, allowed: list[str]) -> bool:
    go, why = plan_verdict(plan_file, allowed)
    print(f"anything_to_apply: {why}")
    return go


def _submit(task_id: str, args: list[str], **kwargs: Any) -> SparkSubmitOperator:
    local = REMOTE is None   # a Spark driver of the task's own, with Delta
    return SparkSubmitOperator(
        task_id=task_id,
        conn_id=SPARK_CONN_ID,
        application=f"{HOME}/jobs/provision_topics.py",
        application_args=[*args, *REMOTE_ARGS],
        py_files=PY_FILES,
        conf=SPARK_CONF if local else None,
        jars=DELTA_JARS if local else None,
        packages=None if DELTA_JARS or not local else DELTA_PACKAGE,
        driver_memory=DRIVER_MEMORY if local else None,
        name=f"{DAG_ID}.{task_id}",
        # The job records its own outcome per topic; a blind retry of a whole apply
        # would only repeat a refusal (or, for `plan`, hide it).
        retries=0,
        **kwargs,
    )


with DAG(
    dag_id=DAG_ID,
    description="Plan Kafka topics from the Delta manifests, then apply exactly that plan",
    schedule=SCHEDULE,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    tags=["kafka", "provisioning"],
    doc_md=__doc__,
) as dag:
    plan = _submit("plan", ["plan", "--conf", CONF, "--out", PLAN_FILE, "--json"])
    anything_to_apply = ShortCircuitOperator(
        task_id="anything_to_apply",
        python_callable=_should_apply,
        op_args=[PLAN_FILE, list(ALLOWED)],
        # Skips the apply only: the site task after it decides by its own trigger rule.
        ignore_downstream_trigger_rules=False,
    )
    apply = _submit("apply", ["apply", "--conf", CONF, "--plan", PLAN_FILE, "--json",
                              *ALLOWED])
    plan >> anything_to_apply >> apply
    if SITE_DIR:
        # After an apply that ran or was skipped; not after a failure upstream.
        site = _submit("site", ["report", "--conf", CONF, "--site", SITE_DIR, "--json"],
                       trigger_rule="none_failed")
        apply >> site
