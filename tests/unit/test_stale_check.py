"""`apply --plan`: every kind's section of the saved plan is compared with that kind's fresh
plan, and a saved section whose kind planned nothing in the run refuses the plan."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.views.planfile import PlanDocument, SavedPlan, StalePlan, sections, stale_check
from tests.builders import acl_plan_df, plan_df
from tests.helpers import VIEWS

CREATE = {"cluster": "local", "topic": "orders", "action": "CREATE", "state": "present",
          "partitions": 3, "row_errors": [], "source_table": "m", "source_version": 1}
GRANT = {"cluster": "local", "principal": "User:app", "resource_type": "TOPIC",
         "resource_name": "orders", "operation": "READ", "action": "GRANT",
         "state": "present", "source_table": "a", "source_version": 1}


def _saved(spark: Any, with_acls: bool) -> SavedPlan:
    from provisioning.views.planfile import recorder

    hooks, document = recorder(sections(VIEWS), "d1", ["local"], None)
    hooks["topics"](plan_df(spark, [CREATE]))
    if with_acls:
        hooks["acls"](acl_plan_df(spark, [GRANT]))
    return SavedPlan("p.json", document(), {})


def test_a_saved_plan_whose_every_kind_planned_the_same_passes(spark: Any) -> None:
    saved = _saved(spark, with_acls=True)
    hooks, done = stale_check(saved, "d1", ["local"], None)
    hooks["topics"](plan_df(spark, [CREATE]))
    hooks["acls"](acl_plan_df(spark, [GRANT]))
    done()


def test_a_kind_whose_fresh_plan_differs_is_stale_at_its_own_plan(spark: Any) -> None:
    saved = _saved(spark, with_acls=True)
    hooks, _ = stale_check(saved, "d1", ["local"], None)
    hooks["topics"](plan_df(spark, [CREATE]))
    with pytest.raises(StalePlan) as err:
        hooks["acls"](acl_plan_df(spark, [{**GRANT, "operation": "WRITE"}]))
    assert err.value.diff.lines() == [
        "+ local ACL ALLOW User:app WRITE TOPIC orders (LITERAL) host * GRANT: in the fresh "
        "plan, not in the saved one",
        "- local ACL ALLOW User:app READ TOPIC orders (LITERAL) host * GRANT: in the saved "
        "plan, not in the fresh one",
        "0 added, 0 removed, 0 changed",
        "ACL bindings: 1 added, 1 removed, 0 changed"]


def test_a_saved_section_no_fresh_plan_of_the_run_compared_refuses_the_plan(
        spark: Any) -> None:
    # Say the run is narrowed with --topics: the ACL phases do not run, and the saved
    # bindings would otherwise pass unchecked.
    saved = _saved(spark, with_acls=True)
    hooks, done = stale_check(saved, "d1", ["local"], None)
    hooks["topics"](plan_df(spark, [CREATE]))
    with pytest.raises(StalePlan) as err:
        done()
    assert err.value.diff.as_dict() == {
        "conf_digest": None, "scope": None, "added": [], "removed": [], "changed": [],
        "acl_added": [],
        "acl_removed": [saved.document.entries["acls"][0]],
        "acl_changed": []}


def test_a_saved_plan_without_a_kinds_section_passes_when_that_kind_plans_nothing(
        spark: Any) -> None:
    saved = _saved(spark, with_acls=False)
    hooks, done = stale_check(saved, "d1", ["local"], None)
    hooks["topics"](plan_df(spark, [CREATE]))
    done()
    assert saved.document.canonical().keys() == {"conf_digest", "scope", "changes", "needs"}


def test_a_document_reads_back_as_the_sections_it_was_built_from() -> None:
    doc = PlanDocument.build(sections(VIEWS), "d1", ["b", "a"], "o*", {"acls": []})
    assert doc.canonical() == {"conf_digest": "d1",
                               "scope": {"clusters": ["a", "b"], "topics": "o*"},
                               "changes": [], "needs": []}
