"""The SCRAM credentials' part of the run package, on the entity base (`run.entity`): their
requests (`kinds.users.requests`, `kinds.users.tasks`), the passwords read on the driver, and their
findings in `check`.

AlterUserScramCredentials has no validateOnly: the manifest rows are checked as data at
plan (`kinds.users.plan`: mechanism, iterations, the user name's shape, a password
source, and that source one `users.password_sources` allows: `planned_rows`), and
`validate` reads each UPSERT's password on the driver, from the variable or file its row
names (`kinds.users.conf.read_password`): one that cannot be had is `rejected`, one shorter than
`users.password_min_length` is `rejected` as a POLICY_VIOLATION, never naming the value.
`apply` reads them again and hands each cluster's task its own rows' in memory; nothing
writes them anywhere. Rotation: a live credential's `applied_version` is the
password_version the audit last recorded `upserted` for it (`read_live`), which the plan
compares with the row's.
`check` reports each credential no manifest row names (`unmanaged_user`), and, when
`checks.severity` turns it on, each ACL binding of a `User:` principal without a credential
(`acl_without_user`: for clusters whose listeners authenticate by SCRAM alone).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.kinds.acls.requests import acl_states
from provisioning.kinds.users.conf import (
    PolicyRefusal,
    SourceRules,
    UsersConf,
    read_password,
    source_rules,
)
from provisioning.kinds.users.model import MODEL
from provisioning.kinds.users.names import ACL_WITHOUT_USER, UNMANAGED_USER, UPSERT, UPSERTED
from provisioning.kinds.users.plan import with_source_errors
from provisioning.kinds.users.policies import UserPolicyContext
from provisioning.kinds.users.requests import user_states
from provisioning.kinds.users.schema import USER_KEY, USER_RESULT
from provisioning.kinds.users.tasks import APPLY, VERIFY, Passwords, user_results
from provisioning.run.engine import Phase, RunContext, require
from provisioning.run.entity import ClusterRead, EntityRunKind, EntitySlice
from provisioning.run.entity.phases import EntityPhase, findings
from provisioning.run.kind import CHECK, PlanLayer
from provisioning.run.state import RunState
from provisioning.session import job_label

KEY = list(USER_KEY)
REQUEST_COLUMNS = (*USER_KEY, "action", "iterations")


class UserSlice(EntitySlice):
    """The SCRAM credentials' slice of the run's state."""


def _rules(ctx: RunContext) -> SourceRules:
    return source_rules(ctx.conf, ctx.conf.section(UsersConf).password_sources)


def _passwords(ctx: RunContext, requests: DataFrame) -> Passwords:
    """Each UPSERT's password (or why it cannot be had), read on the driver."""
    rows = requests.where(F.col("action") == UPSERT).select(
        *KEY, "password_env", "password_file").collect()
    rules, least = _rules(ctx), ctx.conf.section(UsersConf).password_min_length
    return {tuple(r[c] for c in KEY): read_password(r["password_env"], r["password_file"],
                                                    os.environ, rules, least,
                                                    ctx.credentials) for r in rows}


class _AclWithoutUser(EntityPhase):
    """`check`'s `acl_without_user`: an ACL binding of a `User:` principal (not `User:*`)
    with no SCRAM credential on its cluster. Off unless `checks.severity` names a
    severity: a principal may also come from a certificate or OAuth."""

    step = "check bindings"
    own_reads = ("@live", "@violations")
    own_writes = ("@violations",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return (ctx.conf.checks.severity.get(ACL_WITHOUT_USER, names.OFF) != names.OFF
                and self.own(state).live is not None)

    def run(self, ctx: RunContext, state: RunState) -> None:
        own = self.own(state)
        severity = ctx.conf.checks.severity[ACL_WITHOUT_USER]
        with job_label(ctx.spark, f"{ctx.command}: read ACL bindings"):
            found = acl_states(ctx.clusters, ctx.credentials, ctx.conf.kafka)
        bindings = [(c, b["principal"].split(":", 1)[1], b["principal"], b["operation"],
                     b["resource_type"], b["resource_name"]) for c, s in sorted(found.items())
                    for b in s.bindings if b["principal"].startswith("User:")
                    and b["principal"] != "User:*"]
        rows = ctx.spark.createDataFrame(bindings, "cluster string, user string, "
                                         "principal string, operation string, "
                                         "resource_type string, resource_name string")
        users = require(own.live, "live").where(F.col("mechanism").isNotNull()).select(
            "cluster", "user").distinct()
        loose = rows.join(users, on=["cluster", "user"], how="left_anti")
        judged = findings(ctx, loose, ACL_WITHOUT_USER, severity, F.format_string(
            "ACL binding %s %s %s %s: the principal has no SCRAM credential on this cluster",
            "principal", "operation", "resource_type", "resource_name"))
        judged = judged if own.violations is None else own.violations.unionByName(judged)
        own.violations = judged.localCheckpoint(eager=True)
        ctx.steps.done(f"{self.nouns.noun} {self.step}")


class UsersKind(EntityRunKind):
    name, State, model, conf_class = "users", UserSlice, MODEL, UsersConf
    requests_named = ("password check", "AlterUserScramCredentials",
                      "verify SCRAM credentials")
    summary_keys = ("removals_not_allowed", "clusters_not_readable")
    check_rule = UNMANAGED_USER

    def applied_versions(self, ctx: RunContext) -> dict[tuple[str, ...], str | None]:
        """Per credential, the password_version of its last `upserted` audit row, unless a
        later row says `deleted`."""
        ref = TableRef(ctx.conf.tables.audit)
        if not table_exists(ctx.spark, ref):
            return {}
        audit = read_table(ctx.spark, ref)
        if "credential" not in audit.columns:
            return {}
        made = audit.where(F.col("credential").isNotNull()
                           & F.col("outcome").isin(UPSERTED, self.model.removed)
                           & F.col("cluster").isin(*ctx.cluster_names))
        last = made.groupBy("cluster", "credential.user", "credential.mechanism").agg(
            F.max_by(F.struct("outcome", "credential.password_version"),
                     F.struct("recorded_at", F.col("phase") == names.VERIFY)).alias("last"))
        return {(r["cluster"], r["user"], r["mechanism"]): r["last"]["password_version"]
                for r in last.collect() if r["last"]["outcome"] == UPSERTED}

    def read_live(self, ctx: RunContext) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        applied = self.applied_versions(ctx)
        return self.live_frame(ctx, {c: ([
            (c, user, mechanism, iterations, applied.get((c, user, mechanism)))
            for user, held in sorted(s.users.items())
            for mechanism, iterations in sorted(held.items())], s.problem)
            for c, s in user_states(ctx.clusters, ctx.credentials, ctx.conf.kafka).items()})

    def planned_rows(self, ctx: RunContext, state: RunState, desired: DataFrame,
                     live: DataFrame) -> DataFrame:
        # A source the conf does not allow is refused with the row's other reasons, before
        # any request (the manifest cache keeps rows validated without the conf's sources).
        checked = desired.transform(with_source_errors(_rules(ctx)))
        return super().planned_rows(ctx, state, checked, live)

    def validate(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        """No validateOnly exists: each UPSERT's password read on the driver now."""
        passwords = _passwords(ctx, requests)
        rows = []
        for r in requests.select(*KEY, "action").collect():
            problem = passwords.get(tuple(r[c] for c in KEY)) if r["action"] == UPSERT \
                else None
            bad = isinstance(problem, str)
            name = names.POLICY_VIOLATION if isinstance(problem, PolicyRefusal) \
                else names.INVALID_MANIFEST_ROW
            rows.append((*(r[c] for c in KEY), names.VALIDATE,
                         names.REJECTED if bad else names.VALIDATED, -1 if bad else 0,
                         name if bad else "NONE", problem if bad else None, 0, None))
        return ctx.spark.createDataFrame(rows, USER_RESULT)

    def change(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        passwords, kafka = _passwords(ctx, requests), ctx.conf.kafka
        size = self.conf(ctx).batch_size
        # Each cluster's task is given the passwords of its own rows only.
        own = {c.name: {"passwords": {k: v for k, v in passwords.items() if k[0] == c.name}}
               for c in ctx.clusters}
        return self.tasks(ctx, requests.select(*REQUEST_COLUMNS),
                          lambda rows, named, creds, passwords: user_results(
                              rows, named, creds, kafka, APPLY, passwords, size), own)

    def read_back(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        kafka = ctx.conf.kafka
        return self.tasks(ctx, requests.select(*REQUEST_COLUMNS, "live_iterations",
                                               "applied_outcome"),
                          lambda rows, named, creds: user_results(rows, named, creds, kafka,
                                                                  VERIFY, {}))

    def policy_context(self, ctx: RunContext, state: RunState) -> Any:
        conf = self.conf(ctx)
        assert isinstance(conf, UsersConf)
        return UserPolicyContext(
            max_changes_per_cluster=conf.max_changes_per_cluster,
            protected_users=conf.protected_users, iterations_min=conf.iterations_min,
            own_users={c: creds.username.reveal() for c, creds in ctx.credentials.items()
                       if creds.username is not None})

    def phases(self, step: str, layers: Sequence[PlanLayer] = ()) -> tuple[Phase, ...]:
        found = tuple(super().phases(step, layers))
        return (*found, _AclWithoutUser(self)) if step == CHECK else found

    def finding(self) -> Column:
        return F.format_string("credential %s %s (%d iterations): named by no user manifest "
                               "row (import --users adopts it)", F.col("user"),
                               F.col("mechanism"), F.col("iterations"))


RUN = UsersKind()
