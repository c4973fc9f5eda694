"""User manifest rows validated as data, and joined with the live credentials into USER_PLAN
rows: one per (cluster, user, mechanism).

AlterUserScramCredentials has no validateOnly, so what the broker would refuse is checked
here, as rows (`with_user_row_errors`): the cluster, the state, the user name's shape, the
mechanism, the iterations (4096 to 16384), and that a present row names where its password
is (`password_env` or `password_file`, one of them). Two rows naming one credential are
both refused. Whether the password can be read is the driver's check at validate.

UPSERT  a present row, and the credential is missing, has other iterations, or its
        `password_version` is not the one the audit last recorded as applied (a rotation:
        Kafka never returns the salted password, so the version is how the job knows)
DELETE  an absent row and the credential is live; or a live credential no row names and
        `users.remove_unlisted` is on (`source_table` null, a note)
NOOP    anything else (a note says why an unlisted credential is left alone)

A rejected row keeps the action it would have had, so the audit shows what it asked; it is
never sent. An unlisted credential of a user a rejected row names is never removed.
"""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.users.conf import (
    JOB_SECRET,
    NO_FILES,
    NO_VARIABLES,
    SourceRules,
    file_not_allowed,
    variable_not_allowed,
)
from provisioning.kinds.users.names import (
    DEFAULT_ITERATIONS,
    DELETE,
    MAX_ITERATIONS,
    MECHANISMS,
    MIN_ITERATIONS,
    UPSERT,
)
from provisioning.kinds.users.schema import (
    USER_DESIRED,
    USER_KEY,
    USER_LIVE,
    USER_MANIFEST,
    USER_PLAN,
)
from provisioning.names import ABSENT, NOOP, PRESENT, STATES
from provisioning.transforms.policies.base import Transform
from provisioning.transforms.validation import (
    cluster_reasons,
    is_valid,
    reason_when,
    unnamed,
    with_copies_refused,
    with_reasons,
)
from schemas import column_names

KEY = list(USER_KEY)
# A user name the job sets: 1 to 255 characters, none of them whitespace, a control
# character, `,` or `=` (SCRAM escapes those two, and clients that do not cannot log in),
# and not the wildcard `*`.
USER_NAME = r"^[^\s\p{Cntrl},=]{1,255}$"
UNLISTED_KEPT = "unlisted: left alone (users.remove_unlisted removes it)"
UNLISTED_REMOVED = "unlisted: removed (users.remove_unlisted)"
UNLISTED_GUARDED = ("unlisted: left alone, as a rejected user manifest row names its user "
                    "(a rejected row never removes a live credential; fix the row)")


def credential_text() -> Column:
    """A credential as one line: "orders-app SCRAM-SHA-512"."""
    return F.concat_ws(" ", F.coalesce("user", F.lit("(no user)")),
                       F.coalesce("mechanism", F.lit("(no mechanism)")))


def _absent() -> Column:
    return F.coalesce(F.col("state") == ABSENT, F.lit(False))


def row_reasons(known_clusters: tuple[str, ...]) -> list[Column]:
    """The reasons a USER_DESIRED row is refused (null when fine)."""
    user, mechanism, iterations = F.col("user"), F.col("mechanism"), F.col("iterations")
    env, file, state = F.col("password_env"), F.col("password_file"), F.col("state")
    present = ~_absent()
    return [
        *cluster_reasons(known_clusters),
        reason_when(state.isNotNull() & ~state.isin(*STATES), F.format_string(
            "state: '%s' must be present or absent", state)),
        reason_when(user.isNull(), "user: is missing"),
        reason_when(user.isNotNull() & ((user == "*") | ~user.rlike(USER_NAME)), F.format_string(
            "user: '%s' is not a user name the job sets (1 to 255 characters, no "
            "whitespace, control character, `,` or `=`, not `*`)", user)),
        reason_when(mechanism.isNull(), "mechanism: is missing (SCRAM-SHA-256 or SCRAM-SHA-512)"),
        reason_when(mechanism.isNotNull() & ~mechanism.isin(*MECHANISMS), F.format_string(
            "mechanism: '%s' is not SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)),
        reason_when(iterations.isNotNull() & ((iterations < MIN_ITERATIONS)
                                        | (iterations > MAX_ITERATIONS)), F.format_string(
            f"iterations: %d is outside what the broker takes ({MIN_ITERATIONS} to "
            f"{MAX_ITERATIONS})", iterations)),
        reason_when(present & env.isNull() & file.isNull(),
              "password: no password source; set password_env or password_file (the job "
              "reads the password there; never put it in the table)"),
        reason_when(env.isNotNull() & file.isNotNull(),
              "password: both password_env and password_file are set; keep one"),
    ]


def with_source_errors(rules: SourceRules) -> Transform:
    """USER_DESIRED rows with a reason appended when their password source is one the conf
    does not allow (`conf.users.source_problem`, as columns): a variable not under
    `users.password_sources.env_prefix`, a file not in its folders (as written: absolute,
    no `.` or `..` step), either one of the job's own secrets."""
    env, file = F.col("password_env"), F.col("password_file")
    sources = rules.sources
    job = F.lit(JOB_SECRET)
    if sources.env_prefix is None:
        env_reason = F.when(env.isNotNull(), F.lit(NO_VARIABLES))
    else:
        env_reason = (F.when(~env.startswith(sources.env_prefix) | (env == sources.env_prefix),
                             F.lit(variable_not_allowed(sources.env_prefix)))
                      .when(env.isin(*sorted(rules.job_variables)), job))
    if not sources.folders:
        file_reason = F.when(file.isNotNull(), F.lit(NO_FILES))
    else:
        under = functools.reduce(Column.__or__, [file.startswith(f.rstrip("/") + "/")
                                                 for f in sources.folders])
        inside = file.startswith("/") & ~file.rlike(r"(^|/)\.\.?(/|$)|//|/$") & under
        file_reason = (F.when(~inside, F.lit(file_not_allowed(sources.folders)))
                       .when(file.isin(*sorted(rules.job_files)), job))

    def transform(df: DataFrame) -> DataFrame:
        return with_reasons(df, [F.coalesce(env_reason, file_reason)])

    return transform


def with_user_row_errors(known_clusters: tuple[str, ...]) -> Transform:
    """USER_DESIRED rows with their reasons, defaults filled (iterations 8192), and every
    row whose credential another row names too refused, naming the other rows' sources."""

    def transform(df: DataFrame) -> DataFrame:
        checked = with_reasons(df, row_reasons(known_clusters)).withColumn(
            "iterations", F.coalesce("iterations", F.lit(DEFAULT_ITERATIONS)))
        named = F.col("cluster").isNotNull() & F.col("user").isNotNull() \
            & F.col("mechanism").isNotNull()
        return with_copies_refused(checked, KEY, named, lambda others: F.format_string(
            "duplicate: credential %s on cluster %s is also named by %s; no copy is applied "
            "(one row per user and mechanism)", credential_text(), F.col("cluster"), others)
        ).select(*column_names(USER_DESIRED))

    return transform


def _empty(column: str) -> Column:
    return F.array().cast(USER_PLAN[column].dataType).alias(column)


def _live(live: DataFrame) -> DataFrame:
    return live.where(F.col("mechanism").isNotNull()).select(*column_names(USER_LIVE))


def _listed_rows(desired: DataFrame, live: DataFrame) -> DataFrame:
    d, lv = desired.alias("d"), _live(live).alias("l")
    joined = d.join(lv, on=[F.col(f"d.{c}").eqNullSafe(F.col(f"l.{c}")) for c in KEY],
                    how="left")
    is_live = F.col("l.mechanism").isNotNull()
    absent = F.coalesce(F.col("d.state") == ABSENT, F.lit(False))
    asked, found = F.col("d.iterations"), F.col("l.iterations")
    version, applied = F.col("d.password_version"), F.col("l.applied_version")
    rotated = ~F.coalesce(version, F.lit("")).eqNullSafe(F.coalesce(applied, F.lit("")))
    other_iterations = asked != found
    why = F.concat_ws("; ", reason_when(~is_live, "new credential"),
                      reason_when(is_live & other_iterations, F.format_string(
                          "iterations %d -> %d", found, asked)),
                      reason_when(is_live & rotated, F.format_string(
                          "password_version %s -> %s (the password is set again)",
                          F.coalesce(applied, F.lit("(none applied)")),
                          F.coalesce(version, F.lit("(none)")))))
    upsert = ~absent & (~is_live | other_iterations | rotated)
    action = (F.when(absent & is_live, F.lit(DELETE)).when(upsert, F.lit(UPSERT))
              .otherwise(F.lit(NOOP)))
    return joined.select(
        *[F.col(f"d.{c}").alias(c) for c in KEY],
        action.alias("action"),
        F.coalesce(F.col("d.state"), F.lit(PRESENT)).alias("state"),
        F.when(~absent, asked).alias("iterations"),
        found.alias("live_iterations"),
        *[F.col(f"d.{c}").alias(c) for c in ("password_env", "password_file",
                                             "password_version")],
        applied.alias("applied_version"),
        *[F.col(f"d.{c}").alias(c) for c in ("owner", "force", "source_table",
                                             "source_version", "row_errors")],
        _empty("policy_violations"),
        F.when(upsert, why).alias("note"),
    )


def _unlisted_rows(live: DataFrame, desired: DataFrame, remove_unlisted: bool) -> DataFrame:
    unlisted = unnamed(_live(live), desired, KEY)
    guarded = (desired.where(~is_valid()).select("cluster", "user").distinct()
               .withColumn("_guarded", F.lit(True)))
    facts = unlisted.join(guarded, on=["cluster", "user"], how="left")
    is_guarded = F.coalesce(F.col("_guarded"), F.lit(False))
    removed = ~is_guarded & F.lit(remove_unlisted)
    note = F.when(is_guarded, F.lit(UNLISTED_GUARDED)).otherwise(
        F.lit(UNLISTED_REMOVED if remove_unlisted else UNLISTED_KEPT))
    nulls = {"password_env": "string", "password_file": "string",
             "password_version": "string", "owner": "string", "force": "boolean",
             "source_table": "string", "source_version": "long", "iterations": "int"}
    return facts.select(
        *KEY,
        F.when(removed, F.lit(DELETE)).otherwise(F.lit(NOOP)).alias("action"),
        F.when(removed, F.lit(ABSENT)).otherwise(F.lit(PRESENT)).alias("state"),
        F.col("iterations").alias("live_iterations"),
        "applied_version",
        *[F.lit(None).cast(t).alias(c) for c, t in nulls.items()],
        _empty("row_errors"), _empty("policy_violations"), note.alias("note"),
    ).select(*column_names(USER_PLAN))


def plan_users(desired: DataFrame, live: DataFrame, remove_unlisted: bool) -> DataFrame:
    """USER_PLAN rows: every USER_DESIRED row joined with its live credential, then every
    live credential no row names (kept, or removed with `remove_unlisted` unless a
    rejected row names its user)."""
    return (_listed_rows(desired, live).select(*column_names(USER_PLAN))
            .unionByName(_unlisted_rows(live, desired, remove_unlisted)))


def unmanaged_users(live: DataFrame, desired: DataFrame) -> DataFrame:
    """The USER_LIVE rows no valid USER_DESIRED row names (what `report --unmanaged-users`
    lists, `check` reports and `import --users` writes)."""
    return unnamed(_live(live), desired.where(is_valid()), KEY).select(*column_names(USER_LIVE))


def user_manifest_rows(live: DataFrame, owner: str | None) -> DataFrame:
    """USER_MANIFEST rows for USER_LIVE rows (`import --users`): each credential with its
    iterations and the password_version last applied, and no password source: a plan
    rejects the row until `password_env` or `password_file` is filled in."""
    return (_live(live).select(
        *KEY, "iterations", F.lit(None).cast("string").alias("password_env"),
        F.lit(None).cast("string").alias("password_file"),
        F.col("applied_version").alias("password_version"),
        F.lit(PRESENT).alias("state"), F.lit(owner).cast("string").alias("owner"),
        F.lit(None).cast("boolean").alias("force"))
        .select(*column_names(USER_MANIFEST)).orderBy(*KEY))
