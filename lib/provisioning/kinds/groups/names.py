"""The vocabulary of consumer groups: the plan actions and outcomes, and how Kafka names a
group's types and states (ListGroups v5, KIP-848)."""

from __future__ import annotations

# Plan actions: ALTER (a config the row lists differs from the group's own), DELETE (the
# row is `absent` and the group is live; or an unlisted group with `groups.remove_unlisted`),
# NOOP; and their outcomes.
from provisioning.names import ALTER as ALTER
from provisioning.names import ALTERED as ALTERED
from provisioning.names import DELETE as DELETE
from provisioning.names import DELETED as DELETED
from provisioning.names import Nouns

# How the job names consumer groups (`names.Nouns`): phases `group plan`, conf `groups`,
# `tables.group_manifests`, `policies.group`, `apply --allow-group-removals`.
NOUNS = Nouns(name="groups", prefix="group", noun="group", one="group", many="groups",
              title="consumer groups")


# A group's states with no member (ListGroups' word): the only ones a group is deleted in.
EMPTY = "Empty"
DEAD = "Dead"
MEMBERLESS = (EMPTY, DEAD)
CLASSIC = "classic"
# A share group (KIP-932): its offsets are not consumer offsets (OffsetFetch has none).
SHARE = "share"

# The rule of `check` that reports a live group no manifest row names (`info` unless
# `checks.severity` says otherwise).
UNMANAGED_GROUP = "unmanaged_group"

# `check`'s rules over the group inventory: a group's lag on a topic over
# `groups.lag_threshold`, and an empty group whose offsets all point at topics that are gone
# (deleted, or deleted and created again); `warning` unless `checks.severity` says otherwise.
GROUP_LAGGING = "group_lagging"
STALE_GROUP = "stale_group"

# Whether the topic a group committed offsets on is still the one it committed on.
LIVE_TOPIC = "live"
DELETED_TOPIC = "deleted"
RECREATED_TOPIC = "recreated"
