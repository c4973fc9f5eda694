"""`plan --format markdown`: the exact Markdown a pull-request comment gets."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from provisioning.kinds.topics.markdown import topics_markdown
from provisioning.kinds.topics.results import TopicsSummary
from provisioning.results import RunResult
from provisioning.run.kind import slices
from provisioning.run.options import ApplyOptions
from provisioning.run.state import RunState
from provisioning.views.plan_markdown import render_markdown
from tests.builders import audit_df
from tests.helpers import RUNS, VIEWS
from tests.unit.test_render import topic


def every_action_and_outcome() -> RunResult:
    return RunResult(run_id="20261122T030000Z-0badcafe", summaries={"topics": TopicsSummary(
        counts={"validated": 2, "altered": 1, "created": 1, "rejected": 2, "blocked": 1,
                "planned": 1, "deleted": 1, "drift": 1, "failed": 1, "unknown": 1,
                "already_present": 4},
        actions=[
            {"cluster": "local", "action": "CREATE", "topics": 7},
            {"cluster": "local", "action": "DELETE", "topics": 2},
            {"cluster": "local", "action": "ALTER", "topics": 2},
            {"cluster": "local", "action": "DRIFT", "topics": 1},
            {"cluster": "local", "action": "NOOP", "topics": 4},
            {"cluster": "east", "action": "CREATE", "topics": 1},
            {"cluster": None, "action": None, "topics": 1},
        ],
        topics=[
            topic("pinned", "CREATE", "validate", "validated", cluster="east",
                  requested_assignment={1: [2, 1], 0: [1, 2]}, result_partitions=2,
                  result_replication_factor=2),
            topic("a_b|c", "CREATE", "plan", "rejected", error_name="INVALID_MANIFEST_ROW",
                  error_message="topic: 'a_b|c' has characters outside [a-zA-Z0-9._-]"),
            topic("huge", "CREATE", "plan", "blocked", requested_partitions=64,
                  policy_violations=[{"policy": "partitions_range",
                                      "message": "partitions 64 exceeds the maximum of 8"}]),
            topic("made", "CREATE", "verify", "created", topic_id="id-made",
                  requested_partitions=3, requested_replication_factor=1,
                  requested_configs={"retention.ms": "3600000"}, result_partitions=3,
                  result_replication_factor=1),
            topic("odd", "CREATE", "validate", "rejected", requested_partitions=1,
                  requested_replication_factor=1, requested_configs={"cleanup.policy": "x"},
                  error_name="INVALID_CONFIG",
                  error_message="Invalid value x for configuration cleanup.policy"),
            topic("slow", "CREATE", "verify", "unknown", requested_partitions=1,
                  error_name="REQUEST_TIMED_OUT", error_message="no leader after 60000 ms"),
            topic("denied", "CREATE", "apply", "failed", requested_partitions=1,
                  error_name="TOPIC_AUTHORIZATION_FAILED", error_message="not authorized"),
            topic("gone", "DELETE", "verify", "deleted", topic_id="id-gone"),
            topic("old", "DELETE", "plan", "planned", topic_id="id-old"),
            topic("retention", "ALTER", "validate", "validated", topic_id="id-r", drift=[
                {"field": "partitions", "desired": "4", "actual": "1", "supported": True},
                {"field": "config:retention.ms", "desired": "172800000", "actual": "86400000",
                 "supported": True}]),
            topic("grown", "ALTER", "verify", "altered", topic_id="id-g", drift=[
                {"field": "config:max.message.bytes", "desired": "2097152", "actual": None,
                 "supported": True},
                {"field": "config:segment.ms", "desired": None, "actual": "600000",
                 "supported": False}]),
            topic("moved", "DRIFT", "plan", "drift", topic_id="id-moved", drift=[
                {"field": "replication_factor", "desired": "3", "actual": "1",
                 "supported": False},
                {"field": "config:retention.ms", "desired": None, "actual": "1000",
                 "supported": True}]),
            topic(None, None, "plan", "rejected", cluster=None,
                  error_name="INVALID_MANIFEST_ROW", error_message="topic: is null"),
        ],
        topics_not_listed=0,
        deletes_not_allowed=1,
        alters_not_allowed=1,
        unmanaged={"local": 3, "east": 0},
    )})


EXPECTED = """\
### Topic plan `20261122T030000Z-0badcafe`

| cluster | create | delete | alter | drift | unchanged | invalid | unmanaged |
|---|---:|---:|---:|---:|---:|---:|---:|
| `(no cluster)` | 0 | 0 | 0 | 0 | 0 | 1 | 0 |
| `east` | 1 | 0 | 0 | 0 | 0 | 0 | 0 |
| `local` | 7 | 2 | 2 | 1 | 4 | 0 | 3 |

**Outcomes:** already_present 4, altered 1, blocked 1, created 1, deleted 1, drift 1, \
failed 1, planned 1, rejected 2, unknown 1, validated 2 · **5 topic(s) need attention**

#### Create (7)

| | cluster | topic | changes | verdict |
|---|---|---|---|---|
| ✅ | `east` | `pinned` | replica assignment 0: 1, 2; 1: 2, 1 | validated by the broker \
(validateOnly) |
| ❌ | `local` | `a_b\\|c` | - | rejected: invalid manifest row<br>topic: 'a\\_b\\|c' has \
characters outside \\[a-zA-Z0-9.\\_-\\] |
| ⛔ | `local` | `huge` | partitions 64, replication factor: broker default | blocked by \
policy<br>partitions\\_range: partitions 64 exceeds the maximum of 8 |
| ✅ | `local` | `made` | partitions 3, replication factor 1<br>configs: retention.ms=3600000 \
| created |
| ❌ | `local` | `odd` | partitions 1, replication factor 1<br>configs: cleanup.policy=x | \
rejected by the broker's validateOnly pass: INVALID\\_CONFIG<br>Invalid value x for \
configuration cleanup.policy |
| ❓ | `local` | `slow` | partitions 1, replication factor: broker default | unknown in phase \
verify: REQUEST\\_TIMED\\_OUT<br>no leader after 60000 ms |
| ❌ | `local` | `denied` | partitions 1, replication factor: broker default | failed in phase \
apply: TOPIC\\_AUTHORIZATION\\_FAILED<br>not authorized |

#### Delete (2)

| | cluster | topic | changes | verdict |
|---|---|---|---|---|
| ✅ | `local` | `gone` | topic id id-gone | deleted |
| 📝 | `local` | `old` | topic id id-old | planned (made only by apply --allow-deletes) |

#### Alter (2)

| | cluster | topic | changes | verdict |
|---|---|---|---|---|
| ✅ | `local` | `retention` | partitions: 1 -> 4<br>config retention.ms: 86400000 -> 172800000 \
| validated by the broker (validateOnly; made only by apply --allow-alter) |
| ✅ | `local` | `grown` | config max.message.bytes: (not set) -> 2097152<br>config segment.ms: \
600000 -> (not set) (left alone: not listed in the manifest row) | altered |

#### Drift (reported, never changed) (1)

| | cluster | topic | changes | verdict |
|---|---|---|---|---|
| ⚠️ | `local` | `moved` | replication\\_factor: 1 -> 3 (not supported: needs a new topic)<br>\
config retention.ms: 1000 -> (not set) | drift (reported, never changed by this job) |

#### Invalid rows (no action) (1)

| | cluster | topic | changes | verdict |
|---|---|---|---|---|
| ❌ | `-` | `-` | - | rejected: invalid manifest row<br>topic: is null |

1 alter(s) are made only by `apply --allow-alter`.

1 deletion(s) are made only by `apply --allow-deletes`.

Unmanaged topics (live, named by no manifest row) are never changed: `report --unmanaged` \
lists them.
"""


def test_markdown_plan_has_a_summary_table_and_a_section_per_action() -> None:
    assert "\n".join(render_markdown(VIEWS, every_action_and_outcome(), "plan")) + "\n" == EXPECTED


def test_a_long_plan_is_cut_with_a_count_and_a_pointer() -> None:
    result = RunResult(run_id="r9", summaries={"topics": TopicsSummary(
        counts={"validated": 5},
        actions=[{"cluster": "local", "action": "CREATE", "topics": 5}],
        topics=[topic(f"t{i}", "CREATE", "validate", "validated", requested_partitions=1,
                      requested_replication_factor=1) for i in range(3)],
        topics_not_listed=2)})
    # The topics' part of the Markdown (render_markdown joins every kind's, and drops the
    # trailing blank line).
    assert topics_markdown(result, "plan", max_topics=2) == [
        "### Topic plan `r9`",
        "",
        "| cluster | create | delete | alter | drift | unchanged | unmanaged |",
        "|---|---:|---:|---:|---:|---:|---:|",
        "| `local` | 5 | 0 | 0 | 0 | 0 | 0 |",
        "",
        "**Outcomes:** validated 5",
        "",
        "#### Create (2)",
        "",
        "| | cluster | topic | changes | verdict |",
        "|---|---|---|---|---|",
        "| ✅ | `local` | `t0` | partitions 1, replication factor 1 | validated by the broker "
        "(validateOnly) |",
        "| ✅ | `local` | `t1` | partitions 1, replication factor 1 | validated by the broker "
        "(validateOnly) |",
        "",
        "… and 3 more topic(s): `report --run-id r9` lists every one.",
        "",
    ]


def test_a_plans_acl_changes_have_their_own_section(spark: SparkSession) -> None:
    """ACL bindings in the Markdown, from a run's audit rows as an apply without
    --allow-acl-removals leaves them: a grant made, a revoke validated and not made."""
    kind = next(k for k in RUNS if k.name == "acls")
    state = RunState({name: cls() for name, cls in slices(RUNS).items()})
    own: Any = state.slice("acls")

    def rows(principal: str, action: str, *ends: tuple[str, str]) -> list[dict[str, Any]]:
        acl = {"principal": principal, "host": "*", "resource_type": "TOPIC",
               "resource_name": "orders", "pattern_type": "LITERAL", "operation": "READ",
               "permission": "ALLOW"}
        return [{"run_id": "r1", "cluster": "local", "action": action, "phase": phase,
                 "outcome": outcome, "acl": acl} for phase, outcome in ends]

    own.rows.append(audit_df(spark, [
        *rows("User:app", "GRANT", ("plan", "planned"), ("validate", "validated"),
              ("apply", "granted"), ("verify", "granted")),
        *rows("User:old", "REVOKE", ("plan", "planned"), ("validate", "validated"))]))
    own.plan = own.rows[0]
    ctx: Any = type("Context", (), {"options": ApplyOptions()})()
    result = RunResult(run_id="r1", summaries={"acls": kind.summary(ctx, state)})
    lines = render_markdown(VIEWS, result, "apply")
    heading = "#### ACL bindings"
    assert (lines[lines.index(heading):] if heading in lines else []) == [
        "#### ACL bindings",
        "",
        "**Outcomes:** granted 1, validated 1",
        "",
        "| cluster | change | verdict |",
        "|---|---|---|",
        "| `local` | GRANT ALLOW User:app READ TOPIC orders (LITERAL) host \\* | granted |",
        "| `local` | REVOKE ALLOW User:old READ TOPIC orders (LITERAL) host \\* | validated: made "
        "only by apply --allow-acl-removals |",
        "",
        "1 revoke(s) are made only by `apply --allow-acl-removals`.",
    ]


# What a manifest row may hold to turn a plan's comment into something else: a link, an
# image, raw HTML, emphasis, strikethrough, a code span, autolinks, an entity, a cell break.
HOSTILE = ("x](https://evil.example/a) ![p](https://evil.example/p.png) "
           "<img src=x onerror=alert(1)> <a href=\"https://evil.example\">y</a> **b** _e_ "
           "~~s~~ https://evil.example/u www.evil.example me@evil.example &amp; `c` | \\ "
           "<https://evil.example/auto>")


def _html_text(text: str) -> str:
    """`text` as cmark-gfm writes plain text in HTML (an `@` followed by the empty comment
    that keeps an address from becoming a link, which a browser does not show)."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("@", "@<!-- -->"))


def test_a_hostile_manifest_row_renders_as_plain_text_on_github() -> None:
    """The Markdown of a row whose topic, configs and error text a team wrote, rendered by
    GitHub's own renderer (cmark-gfm, raw HTML let through as GitHub's sanitizer would
    judge it): every cell is the text as written, and no link, image, tag or emphasis."""
    import re

    import cmarkgfm
    from cmarkgfm.cmark import Options

    message = f"topic: '{HOSTILE}' has characters outside [a-zA-Z0-9._-]"
    result = RunResult(run_id="r1", summaries={"topics": TopicsSummary(
        counts={"rejected": 1},
        actions=[{"cluster": "local", "action": "CREATE", "topics": 1}],
        topics=[topic(HOSTILE, "CREATE", "validate", "rejected",
                      requested_partitions=1, requested_replication_factor=1,
                      requested_configs={"retention.ms": HOSTILE},
                      error_name="INVALID_CONFIG", error_message=message)])})
    markdown = "\n".join(render_markdown(VIEWS, result, "plan"))
    html = cmarkgfm.github_flavored_markdown_to_html(markdown,
                                                     options=Options.CMARK_OPT_UNSAFE)
    rows = re.findall(r"<tr>\n(.*?)</tr>", html, re.S)
    cells = [re.findall(r"<td>(.*?)</td>", r, re.S) for r in rows if "<td>" in r]
    assert cells[-1] == [
        "❌", "<code>local</code>", _html_text(HOSTILE),
        _html_text("partitions 1, replication factor 1") + "<br>"
        + _html_text(f"configs: retention.ms={HOSTILE}"),
        _html_text("rejected by the broker's validateOnly pass: INVALID_CONFIG") + "<br>"
        + _html_text(message)]
    rendered_rows = "".join(re.findall(r"<tbody>(.*?)</tbody>", html, re.S))
    assert re.findall(r"<(a|img|em|strong|del|script)\b", rendered_rows) == []
