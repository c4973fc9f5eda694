"""Quota manifest rows validated as data, per entity: each problem a reason in `row_errors`.

Kafka answers every refusal of an AlterClientQuotas entry with the same INVALID_REQUEST, and
the job would learn of it only at validate, one entity at a time; so what it can know before
sending is checked here, as rows: the cluster, the state (null reads as present, as for
topics), that an entity names at least one type, that an ip stands alone, that no name is
empty, that an ip is an IP literal (Kafka also resolves host names, which would tie a quota
to whatever a name resolves to on the broker: refused), and that a present row asks for a
quota. The keys and values of `quotas` are judged per key by the plan
(`plan.key_reasons`), so one bad key does not stop the entity's other keys. Two rows naming
one entity are both refused (`with_duplicate_entity_errors`). A row with reasons is rejected
in the plan; the other rows go on.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning.kinds.quotas.names import DEFAULT
from provisioning.kinds.quotas.plan import entity_text
from provisioning.kinds.quotas.schema import ENTITY_COLUMNS, QUOTA_DESIRED
from provisioning.names import ABSENT, STATES
from provisioning.transforms.validation import cluster_reasons, reason_when, with_reasons
from schemas import column_names

# IP literals as Java's regex (Spark's rlike) reads them. IPv4: four decimal octets 0-255,
# no leading zero (010 is octal to some tools and decimal to others). IPv6: RFC 3986's
# grammar, the `::` forms and a trailing IPv4 included; no zone id, no brackets.
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4 = rf"^{_OCTET}(\.{_OCTET}){{3}}$"
_H16 = "[0-9a-fA-F]{1,4}"
_LS32 = rf"({_H16}:{_H16}|{_OCTET}(\.{_OCTET}){{3}})"


def _ipv6_pattern() -> str:
    """RFC 3986's IPv6address: six groups and ls32, or `::` after i groups (0 <= i <= 7)
    followed by what leaves the address 128 bits at most."""
    forms = [f"({_H16}:){{6}}{_LS32}"]
    for before in range(8):
        head = "" if before == 0 else f"(({_H16}:){{0,{before - 1}}}{_H16})?"
        tail = (f"({_H16}:){{{5 - before}}}{_LS32}" if before <= 5
                else _H16 if before == 6 else "")
        forms.append(f"{head}::{tail}")
    return "^(" + "|".join(forms) + ")$"


IPV6 = _ipv6_pattern()


def is_ip_literal(ip: Column) -> Column:
    """`ip` is an IPv4 or IPv6 literal (IPV4, IPV6)."""
    return ip.rlike(IPV4) | ip.rlike(IPV6)


def _entity_reasons() -> list[Column]:
    user, client, ip = (F.col(c) for c in ENTITY_COLUMNS)
    none_set = user.isNull() & client.isNull() & ip.isNull()
    reasons = [
        reason_when(none_set, "entity: names no entity type; set entity_user, entity_client_id or "
              f"entity_ip (`{DEFAULT}` for a type's default entity)"),
        reason_when(ip.isNotNull() & (user.isNotNull() | client.isNotNull()), F.format_string(
            "entity: %s combines an ip with a user or client-id, which Kafka refuses; an ip "
            "entity stands alone: split it into an ip row and a user / client-id row",
            entity_text())),
    ]
    reasons += [reason_when(F.col(c) == "", f"{c}: is empty; name the {kind}, or `{DEFAULT}` for "
                      f"the default {kind}")
                for c, kind in zip(ENTITY_COLUMNS, ("user", "client-id", "ip"), strict=True)]
    reasons.append(reason_when((ip != "") & (ip != DEFAULT) & ~is_ip_literal(ip), F.format_string(
        "entity_ip: '%s' is not an IPv4 or IPv6 address nor `%s`; name one address (host "
        "names and CIDR ranges are refused)", ip, F.lit(DEFAULT))))
    return reasons


def _row_reasons() -> list[Column]:
    state = F.col("state")
    quotas = F.col("quotas")
    wants_absent = F.coalesce(state == ABSENT, F.lit(False))
    no_quota = quotas.isNull() | (F.size(quotas) == 0)
    return [
        reason_when(state.isNotNull() & ~state.isin(*STATES), F.format_string(
            "state: '%s' must be present or absent", state)),
        reason_when(~wants_absent & no_quota, "quotas: a present row asks for at least one quota "
              "(e.g. {producer_byte_rate: 1048576}); to remove the entity's quotas, say "
              "`state: absent`"),
    ]


def with_quota_row_errors(known_clusters: tuple[str, ...]
                          ) -> Callable[[DataFrame], DataFrame]:
    """Append a reason to `row_errors` for every entity-level problem of QUOTA_DESIRED rows
    (the rows themselves unchanged).

    known_clusters: the clusters of the conf; a row naming another is refused.
    """

    def transform(df: DataFrame) -> DataFrame:
        checks = [*cluster_reasons(known_clusters), *_entity_reasons(), *_row_reasons()]
        return with_reasons(df, checks).select(*column_names(QUOTA_DESIRED))

    return transform


_RANK = "_quota_copy"
_COPIES = "_quota_copies"


def _source() -> Column:
    return F.concat_ws("@", F.col("source_table"), F.col("source_version").cast("string"))


def with_duplicate_entity_errors(df: DataFrame) -> DataFrame:
    """Reject every QUOTA_DESIRED row whose (cluster, entity) another row names too, each
    naming the other rows' sources.

    Which row is meant cannot be guessed (and an AlterClientQuotas request naming an entity
    twice applies the first entry and refuses the second), so no copy goes on. Rows without
    a cluster or an entity type are refused already and are not compared.
    """
    entity = ["cluster", *ENTITY_COLUMNS]
    same = Window.partitionBy(*entity)
    ranked = df.withColumn(_RANK, F.row_number().over(
        same.orderBy(F.col("source_table").asc_nulls_last(),
                     F.col("source_version").asc_nulls_last())))
    copies = ranked.withColumn(_COPIES, F.collect_list(F.struct(
        F.col(_RANK).alias("rank"), _source().alias("source"))).over(same))
    others = F.array_sort(F.transform(
        F.filter(_COPIES, lambda c: c["rank"] != F.col(_RANK)), lambda c: c["source"]))
    named = F.col("cluster").isNotNull() & F.greatest(
        *[F.col(c).isNotNull() for c in ENTITY_COLUMNS])
    duplicate = named & (F.size(_COPIES) > 1)
    reason = F.format_string(
        "duplicate: entity %s on cluster %s is also named by %s; no copy is applied (one "
        "row per entity)", entity_text(), F.col("cluster"), F.array_join(others, ", "))
    return (with_reasons(copies, [reason_when(duplicate, reason)])
            .select(*column_names(QUOTA_DESIRED)))
