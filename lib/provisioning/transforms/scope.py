"""Which rows a run looks at: the selected clusters and the `--topics` glob."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

_GLOB_LITERAL_ESCAPES = set("\\.[]{}()<>*+-=!?^$|&~#")


def glob_to_regex(glob: str) -> str:
    """A Java regex matching exactly the names `glob` matches.

    `*` is any run of characters (also none), `?` exactly one, everything else
    stands for itself; the regex is anchored at both ends.
    """
    out = []
    for ch in glob:
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch in _GLOB_LITERAL_ESCAPES:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "^" + "".join(out) + "$"


def matching_globs(value: Column, globs: Sequence[str]) -> Column:
    """The globs (in the given order) that `value` matches, as array<string>."""
    if not globs:
        return F.array().cast("array<string>")
    return F.filter(
        F.array(*[F.when(value.rlike(glob_to_regex(g)), F.lit(g)) for g in globs]),
        lambda g: g.isNotNull(),
    )


def in_scope(clusters: Sequence[str], topics_glob: str | None,
             known_clusters: Sequence[str]) -> Callable[[DataFrame], DataFrame]:
    """Keep the rows of the selected clusters whose topic matches the glob.

    Rows without a cluster or topic, or naming a cluster the conf lacks, stay:
    they are invalid and every run reports them, whatever was selected.
    """

    def transform(df: DataFrame) -> DataFrame:
        unnamed = (F.col("cluster").isNull() | F.col("topic").isNull()
                   | ~F.col("cluster").isin(*known_clusters))
        selected = F.col("cluster").isin(*clusters)
        if topics_glob:
            selected = selected & F.col("topic").rlike(glob_to_regex(topics_glob))
        return df.where(unnamed | selected)

    return transform


def of_clusters(clusters: Sequence[str]) -> Callable[[DataFrame], DataFrame]:
    """Keep the rows of `clusters` (all when empty)."""
    return topics_matching(clusters, None)


def topics_matching(clusters: Sequence[str], topics_glob: str | None
                    ) -> Callable[[DataFrame], DataFrame]:
    """Keep the rows of `clusters` (all when empty) whose topic matches the glob (a view's
    narrowing: rows without a cluster are left out)."""

    def transform(df: DataFrame) -> DataFrame:
        if clusters:
            df = df.where(F.col("cluster").isin(*clusters))
        if topics_glob:
            df = df.where(F.col("topic").rlike(glob_to_regex(topics_glob)))
        return df

    return transform
