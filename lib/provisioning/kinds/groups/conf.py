"""The consumer groups' section of the conf: `groups` (with `check`'s lag threshold), the
group tables (`tables.group_manifests`, `tables.group_snapshots`) and `policies.group`; and
the row of a group manifest file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from provisioning.conf import Conf
from provisioning.conf.entity import EntityConf, EntityKeys, EntitySection
from provisioning.conf.model import STRICT
from provisioning.conf.policies import Custom
from provisioning.kinds.groups.names import GROUP_LAGGING, NOUNS, STALE_GROUP, UNMANAGED_GROUP

try:  # the loader's side only (conf.model says why)
    from pydantic import Field

    from provisioning.conf.keys import Count, Positive, StringList
    from provisioning.conf.manifests import Configs, ForceColumn
    from provisioning.conf.manifests import Text as Cell
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise


@dataclass(frozen=True)
class GroupsKeys(EntityKeys):
    """The `groups` mapping: how consumer groups are planned and sent."""

    __pydantic_config__ = STRICT
    batch_size: Annotated[Positive, Field(
        description="Groups per IncrementalAlterConfigs or DeleteGroups request.")] = 200
    protected_groups: Annotated[StringList, Field(
        description="The policy protected_groups: group ids (globs) whose configs the job "
                    "never changes and that it never deletes.")] = ()
    lag_threshold: Annotated[Count, Field(
        description="`check`: a group whose lag on a topic (the log end offsets minus its "
                    "committed offsets, summed over the partitions) is over this many records "
                    "gives `group_lagging`.")] = 10000


@dataclass(frozen=True)
class GroupsConf(GroupsKeys, EntityConf):
    """The consumer groups' section as built."""


# Group policies judge GROUP_PLAN rows; their registry (kinds.groups.policies.GROUP_POLICIES)
# is kept equal to this one by a unit test.
GROUP_POLICY_MODELS: dict[str, type] = {"custom": Custom}


@dataclass(frozen=True)
class GroupManifestRow:
    """One consumer group of a group manifest file (the columns of
    kinds.groups.schema.GROUP_MANIFEST)."""

    __pydantic_config__ = STRICT
    cluster: Annotated[Cell, Field(description="The cluster (a name under `clusters`).")
                       ] = None
    group: Annotated[Cell, Field(description="The group id.")] = None
    state: Annotated[Cell, Field(description="`present` (left out: present) or `absent` "
                                 "(deleted with group removals allowed, when it has no "
                                 "members).")] = None
    configs: Annotated[Configs, Field(description="The group's own configs (name -> value, "
                                      "e.g. consumer.session.timeout.ms); the ones listed "
                                      "are set, others left as they are.")] = None
    owner: Annotated[Cell, Field(description="The team that owns the group.")] = None
    force: ForceColumn = None


def inventory_table(conf: Conf) -> str:
    """The group inventory `check` appends to: `<tables.inventory>_groups`."""
    return f"{conf.tables.inventory}_groups"


class GroupsSection(EntitySection):
    nouns, conf_class, keys_class = NOUNS, GroupsConf, GroupsKeys
    policy_catalogue = GROUP_POLICY_MODELS
    check_rules = (UNMANAGED_GROUP, GROUP_LAGGING, STALE_GROUP)
    manifest_row = GroupManifestRow


SECTION = GroupsSection()
