"""What an operator reads: `plan`/`apply` output and the `report` views, as exact text."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from provisioning.kinds.reassign.results import ReassignSummary
from provisioning.kinds.topics.results import TopicsSummary
from provisioning.kinds.topics.text import broker_defaults, drift_lines, topic_lines
from provisioning.registry import KINDS
from provisioning.results import RunResult
from provisioning.views.plan_text import render_run
from provisioning.views.report import render_recent_runs, render_run_view
from tests.helpers import VIEWS

CONFIGS = [
    {"name": "cleanup.policy", "value": "delete", "source": "DEFAULT_CONFIG",
     "read_only": False, "sensitive": False},
    {"name": "min.insync.replicas", "value": "2", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG",
     "read_only": False, "sensitive": False},
    {"name": "retention.ms", "value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG",
     "read_only": False, "sensitive": False},
    {"name": "segment.ms", "value": "604800000", "source": "DEFAULT_CONFIG",
     "read_only": False, "sensitive": False},
    {"name": "some.secret", "value": None, "source": "STATIC_BROKER_CONFIG",
     "read_only": True, "sensitive": True},
]


def topic(name: str, action: str | None, phase: str, outcome: str, **cols: Any
          ) -> dict[str, Any]:
    """One entry of RunResult.topics, as the pipeline's summary selects it."""
    return {"cluster": "local", "topic": name, "action": action, "phase": phase,
            "outcome": outcome, "error_name": None, "error_message": None, "drift": [],
            "policy_violations": [], "result_partitions": None,
            "result_replication_factor": None, "result_configs": None, "source_table": "m",
            "source_version": 3, "topic_id": None, "requested_partitions": None,
            "requested_replication_factor": None, "requested_configs": None,
            "requested_assignment": None, **cols}


def test_plan_output_lists_counts_then_every_topic_with_what_to_judge_it_by() -> None:
    summary = TopicsSummary(
        counts={"validated": 2, "rejected": 2, "blocked": 1, "drift": 1, "planned": 1,
                "already_present": 4},
        actions=[
            {"cluster": "local", "action": "CREATE", "topics": 5},
            {"cluster": "local", "action": "NOOP", "topics": 4},
            {"cluster": "local", "action": "DRIFT", "topics": 1},
            {"cluster": "local", "action": "DELETE", "topics": 1},
            {"cluster": "east", "action": "CREATE", "topics": 1},
        ],
        topics=[
            topic("orders", "CREATE", "validate", "validated", requested_partitions=3,
                  requested_replication_factor=1, requested_configs={"retention.ms": "3600000"},
                  result_partitions=3, result_replication_factor=1, result_configs=CONFIGS),
            topic("ledger", "CREATE", "validate", "validated", result_partitions=6,
                  result_replication_factor=3,
                  requested_assignment=None, result_configs=CONFIGS[:2]),
            topic("bad name!", "CREATE", "plan", "rejected", error_name="INVALID_MANIFEST_ROW",
                  error_message="topic: bad; partitions: 0 is not >= 1"),
            topic("huge", "CREATE", "plan", "blocked", requested_partitions=64,
                  error_name="POLICY_VIOLATION",
                  error_message="partitions_range: partitions 64 exceeds the maximum of 8",
                  policy_violations=[{"policy": "partitions_range",
                                      "message": "partitions 64 exceeds the maximum of 8"}]),
            topic("odd", "CREATE", "validate", "rejected", requested_configs={
                "cleanup.policy": "bogus"}, error_name="INVALID_CONFIG",
                error_message="Invalid value bogus for configuration cleanup.policy"),
            topic("moved", "DRIFT", "plan", "drift", topic_id="id-moved", drift=[
                {"field": "partitions", "desired": "3", "actual": "2", "supported": True},
                {"field": "replication_factor", "desired": "3", "actual": "1",
                 "supported": False},
                {"field": "config:retention.ms", "desired": None, "actual": "1000",
                 "supported": True}]),
            topic("old", "DELETE", "plan", "planned", topic_id="id-old"),
            topic("pinned", "CREATE", "validate", "validated", cluster="east",
                  requested_assignment={1: [2, 1], 0: [1, 2]}, result_partitions=2,
                  result_replication_factor=2, result_configs=[]),
        ],
        topics_not_listed=0,
        deletes_not_allowed=0,
    )
    # The pipeline hands the topics over sorted by cluster, then topic.
    summary.topics.sort(key=lambda t: (t["cluster"], t["topic"]))
    result = RunResult(run_id="20261122T030000Z-0badcafe", summaries={"topics": summary})
    assert render_run(VIEWS, result, "plan", saved_plan=("/plans/p.json", "ab" * 32)) == [
        "plan 20261122T030000Z-0badcafe",
        "",
        "cluster east: 1 to create",
        "cluster local: 5 to create, 1 to delete, 1 drifted, 4 unchanged",
        "",
        "  + east/pinned  create  validated by the broker (validateOnly)",
        "      replica assignment 0: 1, 2; 1: 2, 1",
        "",
        "  ! local/bad name!  create  rejected: invalid manifest row",
        "      row error: topic: bad",
        "      row error: partitions: 0 is not >= 1",
        "  ! local/huge  create  blocked by policy",
        "      policy partitions_range: partitions 64 exceeds the maximum of 8",
        "      partitions 64, replication factor: broker default",
        "  + local/ledger  create  validated by the broker (validateOnly)",
        "      partitions 6 (broker default), replication factor 3 (broker default)",
        "      broker defaults: cleanup.policy=delete, "
        "min.insync.replicas=2 [DYNAMIC_DEFAULT_BROKER_CONFIG]",
        "  ~ local/moved  drift  drift (reported, never changed by this job)",
        "      partitions: 2 -> 3",
        "      replication_factor: 1 -> 3 (not supported: needs a new topic)",
        "      config retention.ms: 1000 -> (not set)",
        "      topic id id-moved",
        "  ! local/odd  create  rejected by the broker's validateOnly pass: INVALID_CONFIG",
        "      partitions: broker default, replication factor: broker default",
        "      configs: cleanup.policy=bogus",
        "      error: Invalid value bogus for configuration cleanup.policy",
        "  - local/old  delete  planned (made only by apply --allow-deletes)",
        "      topic id id-old",
        "  + local/orders  create  validated by the broker (validateOnly)",
        "      partitions 3, replication factor 1",
        "      configs: retention.ms=3600000",
        "      broker defaults: cleanup.policy=delete, "
        "min.insync.replicas=2 [DYNAMIC_DEFAULT_BROKER_CONFIG], "
        "some.secret=(sensitive) [STATIC_BROKER_CONFIG]",
        "",
        "outcomes: already_present=4, blocked=1, drift=1, planned=1, rejected=2, validated=2",
        "plan saved to /plans/p.json (digest abababababab); apply exactly this plan with: "
        "apply --plan /plans/p.json",
    ]


def test_apply_output_shows_created_ids_failures_and_what_was_left_out() -> None:
    result = RunResult(run_id="r2", summaries={"topics": TopicsSummary(
        counts={"created": 1, "unknown": 1, "already_present": 7},
        actions=[{"cluster": "local", "action": "CREATE", "topics": 2},
                 {"cluster": "local", "action": "NOOP", "topics": 7}],
        topics=[
            topic("a", "CREATE", "verify", "created", topic_id="id-a", requested_partitions=1,
                  result_partitions=1, result_replication_factor=1),
            topic("b", "CREATE", "verify", "unknown", requested_partitions=1,
                  error_name="REQUEST_TIMED_OUT", error_message="no leader after 60000 ms"),
        ],
        topics_not_listed=3,
        deletes_not_allowed=2,
    )})
    assert render_run(VIEWS, result, "apply") == [
        "apply r2",
        "",
        "cluster local: 2 to create, 7 unchanged",
        "",
        "  + local/a  create  created",
        "      partitions 1, replication factor 1 (broker default)",
        "      topic id id-a",
        "  ! local/b  create  unknown in phase verify: REQUEST_TIMED_OUT",
        "      partitions 1, replication factor: broker default",
        "      error: no leader after 60000 ms",
        "",
        "... and 3 more topic(s): report --run-id r2 lists every one",
        "2 deletion(s) not made: run apply with --allow-deletes",
        "outcomes: already_present=7, created=1, unknown=1",
    ]


def test_an_empty_run_says_so() -> None:
    assert render_run(VIEWS, RunResult(run_id="r3"), "plan") == [
        "plan r3", "", "no topic in scope", "", "outcomes: nothing to do"]


def test_verbose_shows_every_broker_default() -> None:
    assert broker_defaults(CONFIGS, verbose=False) == (
        "cleanup.policy=delete, min.insync.replicas=2 [DYNAMIC_DEFAULT_BROKER_CONFIG], "
        "some.secret=(sensitive) [STATIC_BROKER_CONFIG]")
    assert broker_defaults(CONFIGS, verbose=True) == (
        "cleanup.policy=delete, min.insync.replicas=2 [DYNAMIC_DEFAULT_BROKER_CONFIG], "
        "segment.ms=604800000, some.secret=(sensitive) [STATIC_BROKER_CONFIG]")
    t = topic("x", "CREATE", "validate", "validated", result_partitions=1,
              result_replication_factor=1, requested_partitions=1,
              requested_replication_factor=1, result_configs=CONFIGS)
    assert topic_lines(t, verbose=True)[-1] == (
        "      broker defaults: cleanup.policy=delete, "
        "min.insync.replicas=2 [DYNAMIC_DEFAULT_BROKER_CONFIG], segment.ms=604800000, "
        "some.secret=(sensitive) [STATIC_BROKER_CONFIG]")


def test_drift_lines_name_configs_and_unsupported_changes() -> None:
    assert drift_lines([
        {"field": "config:cleanup.policy", "desired": "compact", "actual": None,
         "supported": True},
        {"field": "replica_assignment", "desired": "[a]", "actual": "[b]", "supported": False},
    ]) == ["config cleanup.policy: (not set) -> compact",
           "replica_assignment: [b] -> [a] (not supported: needs a new topic)"]


AT = dt.datetime(2026, 11, 22, 3, 0, 0)


def render_view(option: str, payload: dict[str, Any]) -> list[str]:
    """`payload` as `report <option>` renders it (the kind's report view that option
    chooses)."""
    view = next(v for k in KINDS for v in k.cli.report_views if v.option.option == option)
    return view.render(payload)


def audit_row(run_id: str, phase: str, outcome: str, **cols: Any) -> dict[str, Any]:
    return {"run_id": run_id, "cluster": "local", "topic": "orders", "topic_id": None,
            "action": "CREATE", "phase": phase, "outcome": outcome, "error_name": None,
            "error_message": None, "policy_violations": [], "drift": [],
            "requested_partitions": 3, "requested_replication_factor": 1,
            "requested_configs": {"retention.ms": "1000"}, "requested_assignment": None,
            "result_partitions": None, "result_replication_factor": None,
            "result_configs": None, "owner": "team-a", "source_table": "wh/desired",
            "source_version": 0, "recorded_at": AT, **cols}


def test_topic_history_shows_each_run_and_the_manifest_rows_as_they_were() -> None:
    returned = [{"name": "retention.ms", "value": "1000", "source": "DYNAMIC_TOPIC_CONFIG",
                 "read_only": False, "sensitive": False},
                {"name": "cleanup.policy", "value": "delete", "source": "DEFAULT_CONFIG",
                 "read_only": False, "sensitive": False}]
    payload = {
        "topic": "orders",
        "history": [
            audit_row("r1", "plan", "planned", run_command="apply"),
            audit_row("r1", "validate", "validated", topic_id="throwaway",
                      result_partitions=3, result_replication_factor=1,
                      result_configs=returned, run_command="apply"),
            audit_row("r1", "apply", "created", topic_id="id-1", result_partitions=3,
                      result_replication_factor=1, result_configs=returned,
                      run_command="apply"),
            audit_row("r1", "verify", "created", topic_id="id-1", result_partitions=3,
                      result_replication_factor=1, run_command="apply"),
            audit_row("r2", "plan", "drift", action="DRIFT", topic_id="id-1",
                      source_version=1, requested_configs={"retention.ms": "2000"},
                      recorded_at=AT + dt.timedelta(days=1), run_command="plan",
                      drift=[{"field": "config:retention.ms", "desired": "2000",
                              "actual": "1000", "supported": True}]),
        ],
        "manifest_versions": [
            {"source_table": "wh/desired", "source_version": 0, "error": None, "rows": [
                {"cluster": "local", "topic": "orders", "state": None, "partitions": 3,
                 "replication_factor": 1, "replica_assignment": None,
                 "configs": {"retention.ms": "1000"}, "owner": "team-a", "force": None}]},
            {"source_table": "wh/desired", "source_version": 1, "error": None, "rows": [
                {"cluster": "local", "topic": "orders", "state": None, "partitions": 3,
                 "replication_factor": 1, "replica_assignment": None,
                 "configs": {"retention.ms": "2000"}, "owner": "team-a", "force": None}]},
            {"source_table": "wh/old", "source_version": 7, "rows": [],
             "error": "version 7 of wh/old is not readable any more: AnalysisException: gone"},
        ],
    }
    assert render_view("--topic", payload) == [
        "history of topic orders",
        "  2026-11-22 03:00:00 run r1 (apply) local CREATE: plan planned -> validate "
        "validated -> apply created -> verify created",
        "      requested partitions 3, replication factor 1, configs retention.ms=1000; "
        "owner team-a; manifest wh/desired@0",
        "      broker returned (apply: partitions 3, replication factor 1, topic configs "
        "retention.ms=1000)",
        "      topic id id-1",
        "  2026-11-23 03:00:00 run r2 (plan) local DRIFT: plan drift",
        "      requested partitions 3, replication factor 1, configs retention.ms=2000; "
        "owner team-a; manifest wh/desired@1",
        "      topic id id-1",
        "      config retention.ms: 1000 -> 2000",
        "  manifest rows as they were at those versions:",
        "    wh/desired@0: cluster=local topic=orders partitions=3 replication_factor=1 "
        "configs={retention.ms: 1000} owner=team-a",
        "    wh/desired@1: cluster=local topic=orders partitions=3 replication_factor=1 "
        "configs={retention.ms: 2000} owner=team-a",
        "    wh/old@7: version 7 of wh/old is not readable any more: AnalysisException: gone",
    ]


def test_drift_report_groups_topics_per_cluster() -> None:
    item = {"field": "partitions", "desired": "4", "actual": "2", "supported": True}
    payload = {"drift": [
        {"cluster": "east", "topics": [
            {"cluster": "east", "topic": "a", "drift": [item], "run_id": "r9",
             "recorded_at": AT, "owner": None}]},
        {"cluster": "west", "topics": [
            {"cluster": "west", "topic": "b", "drift": [item], "run_id": "r8",
             "recorded_at": AT, "owner": "team-b"}]},
    ]}
    assert render_view("--drift", payload) == [
        "drift across clusters (each topic's latest plan)",
        "cluster east: 1 topic(s) drifted",
        "  ~ a  (run r9 at 2026-11-22 03:00:00, owner (none))",
        "      partitions: 2 -> 4",
        "cluster west: 1 topic(s) drifted",
        "  ~ b  (run r8 at 2026-11-22 03:00:00, owner team-b)",
        "      partitions: 2 -> 4",
    ]
    assert render_view("--drift", {"drift": []}) == [
        "drift across clusters (each topic's latest plan)", "  no topic shows drift"]


def test_one_run_and_recent_runs() -> None:
    run = {"run_id": "r1", "command": "apply", "status": "completed_with_errors",
           "exit_code": 1, "started_at": AT, "finished_at": AT + dt.timedelta(minutes=2),
           "message": None, "outcome_counts": {"created": 1, "rejected": 1}}
    payload = {"run": run, "audit_not_shown": 0, "limit": 20, "audit": [
        audit_row("r1", "plan", "planned"), audit_row("r1", "validate", "validated"),
        audit_row("r1", "apply", "created"), audit_row("r1", "verify", "created"),
        audit_row("r1", "plan", "planned", topic="odd"),
        audit_row("r1", "validate", "rejected", topic="odd", error_name="INVALID_CONFIG",
                  error_message="bogus"),
    ]}
    assert render_run_view(VIEWS, payload) == [
        "run r1: apply completed_with_errors (exit 1) 2026-11-22 03:00:00 -> "
        "2026-11-22 03:02:00",
        "  outcomes: created=1, rejected=1",
        "  local/orders CREATE: plan planned -> validate validated -> apply created -> "
        "verify created",
        "  local/odd CREATE: plan planned -> validate rejected (INVALID_CONFIG: bogus)",
    ]
    failed = {**run, "run_id": "r0", "command": "plan", "status": "failed", "exit_code": 2,
              "outcome_counts": {}, "message": "the saved plan p.json is stale: ...\n  more"}
    assert render_recent_runs({"runs": [run, failed]}) == [
        "recent runs (newest first)",
        "  r1  apply  completed_with_errors  exit 1  2026-11-22 03:00:00 -> "
        "2026-11-22 03:02:00  created=1, rejected=1",
        "  r0  plan   failed                 exit 2  2026-11-22 03:00:00 -> "
        "2026-11-22 03:02:00  -",
        "      the saved plan p.json is stale: ...",
    ]


def test_topic_history_ends_with_checks_violations_when_and_until() -> None:
    payload = {
        "topic": "orders", "history": [], "manifest_versions": [],
        "violation_spans": [
            {"cluster": "local", "topic": "orders", "rule": "unmanaged", "severity": "info",
             "detail": "no manifest row names topic orders of cluster local",
             "started_at": AT, "started_run_id": "c1", "stopped_at": None,
             "stopped_run_id": None, "runs": 2},
            {"cluster": "local", "topic": "orders", "rule": "partitions_range",
             "severity": "error", "detail": "8 partitions; at most 4",
             "started_at": AT, "started_run_id": "c1", "stopped_at": AT + dt.timedelta(days=1),
             "stopped_run_id": "c2", "runs": 1},
        ]}
    assert render_view("--topic", payload) == [
        "history of topic orders",
        "  no audit row names this topic",
        "  check's violations (when each started and stopped):",
        "    local unmanaged (info): from run c1 (2026-11-22 03:00:00) still broken, 2 run(s); "
        "no manifest row names topic orders of cluster local",
        "    local partitions_range (error): from run c1 (2026-11-22 03:00:00) until run c2 "
        "(2026-11-23 03:00:00), 1 run(s); 8 partitions; at most 4",
    ]


def test_report_violations_payload_renders_as_the_trend() -> None:
    from provisioning.views.check import render_trend

    days = [{"cluster": "local", "day": AT.date(), "run_id": "c1", "rule": "unmanaged",
             "violations": 1}]
    payload = {"violations": {"days": days, "spans": []}}
    assert render_view("--violations", payload) == render_trend(days, [])


@pytest.mark.parametrize(("options", "message"), [
    (["--drift", "--violations"],
     "report takes one of --run-id, --site, --topic, --drift, --unmanaged, --violations, "
     "--inventory, --unmanaged-acls, --orphaned-acls, --reassignments, --unmanaged-quotas, "
     "--unmanaged-users, --unmanaged-groups; got --drift and --violations"),
    (["--since", "7"], "--since goes with --violations or --inventory"),
    (["--violations", "--idle"], "--idle goes with --inventory"),
    (["--largest", "3"], "--largest goes with --inventory"),
])
def test_report_refuses_two_views_and_since_without_violations(
        options: list[str], message: str, tmp_path: Any) -> None:
    from click.testing import CliRunner

    from provisioning.cli.report import report

    # Refused before the conf is read or a session started: a usage error, exit 2.
    result = CliRunner().invoke(report, ["--conf", str(tmp_path / "unread.yaml"), *options])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == f"Error: {message}"


def test_replica_moves_show_before_and_after_per_partition_and_what_became_of_them() -> None:
    moves = [{"partition": 0, "before": [1], "after": [1, 2, 3], "in_flight": False},
             {"partition": 1, "before": [2], "after": [2, 3, 1], "in_flight": True}]
    result = RunResult(run_id="r4", summaries={"topics": TopicsSummary(
        counts={"validated": 1, "reassigning": 1, "failed": 1},
        actions=[{"cluster": "local", "action": "REASSIGN", "topics": 3}],
        topics=[
            topic("checked", "REASSIGN", "validate", "validated", reassignment=moves),
            topic("half", "REASSIGN", "apply", "failed", reassignment=moves,
                  error_name="INVALID_REPLICA_ASSIGNMENT", throttle_rate=1048576,
                  result_reassignment=[
                      {"partition": 0, "before": [1], "after": [1, 9],
                       "outcome": "rejected", "error_name": "INVALID_REPLICA_ASSIGNMENT",
                       "error_message": "broker 9 is not live"},
                      {"partition": 1, "before": [2], "after": [2, 3], "outcome": "reassigning",
                       "error_name": "NONE", "error_message": None}]),
            topic("slow", "REASSIGN", "verify", "reassigning", reassignment=moves[1:],
                  result_reassignment=[
                      {"partition": 1, "before": [2], "after": [2, 3, 1],
                       "outcome": "reassigning", "error_name": "NONE",
                       "error_message": "still moving"}]),
        ],
    ), "reassign": ReassignSummary(reassigns_not_allowed=1)})
    assert render_run(VIEWS, result, "apply") == [
        "apply r4",
        "",
        "cluster local: 3 to reassign",
        "",
        "  > local/checked  reassign  checked (made only by apply --allow-reassign)",
        "      partition 0: [1] -> [1, 2, 3]",
        "      partition 1: [2] -> [2, 3, 1] (in flight since an earlier run)",
        "  ! local/half  reassign  failed in phase apply: INVALID_REPLICA_ASSIGNMENT",
        "      partition 0: [1] -> [1, 9] rejected (INVALID_REPLICA_ASSIGNMENT: broker 9 is "
        "not live)",
        "      partition 1: [2] -> [2, 3] reassigning",
        "      throttle: 1048576 bytes/s per broker",
        "  > local/slow  reassign  reassigning (still moving: a later apply --allow-reassign "
        "finishes it)",
        "      partition 1: [2] -> [2, 3, 1] reassigning",
        "",
        "1 topic(s)' replica moves checked but not made: run apply with --allow-reassign (an "
        "ALTER's moves start once its alter is made: --allow-alter)",
        "outcomes: failed=1, reassigning=1, validated=1",
    ]
