"""The SCRAM credentials' section of the conf (KIP-554): `users`, the user tables
(`tables.user_manifests`, `tables.user_snapshots`) and `policies.user`, with the models of
the user policies' parameter blocks; the row of a user manifest file; and how the driver
reads a credential's password.

A manifest row names where its password is, never the password: `password_env` (an
environment variable of the process that runs the job) or `password_file` (a file on that
machine, its trailing newline stripped, as the connection secrets of `conf.secrets`). The
driver reads it only to send it, and it travels to the executors in memory with the admin
tasks (`Secret`: never shown in a repr, a log line or a traceback).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from provisioning.conf.entity import EntityConf, EntityKeys, EntitySection
from provisioning.conf.model import STRICT, Secret
from provisioning.conf.policies import Custom
from provisioning.conf.secrets import secret_from
from provisioning.kinds.users.names import (
    ACL_WITHOUT_USER,
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    NOUNS,
    UNMANAGED_USER,
)

try:  # the loader's side only (conf.model says why)
    from pydantic import Field

    from provisioning.conf.keys import Positive, StringList
    from provisioning.conf.manifests import ForceColumn, Integer
    from provisioning.conf.manifests import Text as Cell
    from provisioning.conf.policies import RequiredStringList
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise


@dataclass(frozen=True)
class UsersKeys(EntityKeys):
    """The `users` mapping: how SCRAM credentials are planned and sent."""

    __pydantic_config__ = STRICT
    batch_size: Annotated[Positive, Field(
        description="Credentials per AlterUserScramCredentials request (a user once a "
                    "request: its two mechanisms go in two).")] = 200
    iterations_min: Annotated[int, Field(
        strict=True, ge=MIN_ITERATIONS, le=MAX_ITERATIONS,
        description="The policy user_iterations_min: no credential is set with fewer "
                    "PBKDF2 iterations.")] = DEFAULT_ITERATIONS
    protected_users: Annotated[StringList, Field(
        description="The policy protected_users: user names (globs) whose credentials "
                    "the job never changes or removes (the job's own user always is).")] = ()


@dataclass(frozen=True)
class UsersConf(UsersKeys, EntityConf):
    """The SCRAM credentials' section as built."""


@dataclass(frozen=True)
class UserMechanism:
    """Only these mechanisms may be set."""

    __pydantic_config__ = STRICT
    allowed: Annotated[RequiredStringList, Field(
        description="The mechanisms a credential may be set with (SCRAM-SHA-256, "
                    "SCRAM-SHA-512).")]


# User policies judge USER_PLAN rows; their registry (kinds.users.policies.USER_POLICIES)
# is kept equal to this one by a unit test.
USER_POLICY_MODELS: dict[str, type] = {
    "user_mechanism": UserMechanism,
    "custom": Custom,
}


@dataclass(frozen=True)
class UserManifestRow:
    """One SCRAM credential of a user manifest file (the columns of
    schemas.users.USER_MANIFEST)."""

    __pydantic_config__ = STRICT
    cluster: Annotated[Cell, Field(description="The cluster (a name under `clusters`).")
                       ] = None
    user: Annotated[Cell, Field(description="The user name.")] = None
    mechanism: Annotated[Cell, Field(description="SCRAM-SHA-256 or SCRAM-SHA-512.")] = None
    iterations: Annotated[Integer, Field(description="PBKDF2 iterations, 4096 to 16384 "
                                         "(left out: 8192).")] = None
    password_env: Annotated[Cell, Field(description="The environment variable the job "
                                        "reads the password from.")] = None
    password_file: Annotated[Cell, Field(description="The file the job reads the password "
                                         "from (instead of password_env).")] = None
    password_version: Annotated[Cell, Field(description="Any text; a new value sets the "
                                            "password again (a rotation).")] = None
    state: Annotated[Cell, Field(description="`present` (left out: present) or `absent` "
                                 "(removed with user removals allowed).")] = None
    owner: Annotated[Cell, Field(description="The team that owns the credential.")] = None
    force: ForceColumn = None


class UsersSection(EntitySection):
    nouns, conf_class, keys_class = NOUNS, UsersConf, UsersKeys
    policy_catalogue = USER_POLICY_MODELS
    check_rules = (UNMANAGED_USER, ACL_WITHOUT_USER)
    manifest_row = UserManifestRow


SECTION = UsersSection()


def read_password(env: str | None, file: str | None, environ: Mapping[str, str]
                  ) -> Secret | str:
    """The password a row names (its `password_env` or `password_file`), or why it cannot
    be had, naming the variable or the file, never a value."""
    if env is None and file is None:
        return "password: no password_env or password_file"
    found = secret_from(env, file, environ)
    return found if isinstance(found, Secret) else f"password_{found[0]}: {found[1]}"
