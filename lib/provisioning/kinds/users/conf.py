"""The SCRAM credentials' section of the conf (KIP-554): `users`, the user tables
(`tables.user_manifests`, `tables.user_snapshots`) and `policies.user`, with the models of
the user policies' parameter blocks; the row of a user manifest file; and how the driver
reads a credential's password.

A manifest row names where its password is, never the password: `password_env` (an
environment variable of the process that runs the job) or `password_file` (a file on that
machine, its trailing newline stripped). Manifests are the teams'; the conf is the
operator's, and says where passwords may come from (`users.password_sources`: variables
under a prefix, files under folders): a row naming anything else is rejected at plan,
before any request, and a variable or file that holds one of the job's own secrets for any
cluster is never read as a user's password (`SourceRules`). The driver reads a password
only to send it: a regular file of at most PASSWORD_FILE_LIMIT bytes, within
`conf.secrets.READ_TIMEOUT_S`, and whatever keeps it from being read is one message (no
telling a missing file from an unreadable one). It travels to the executors in memory with
the admin tasks of its own cluster (`Secret`: never shown in a repr, a log line or a
traceback). A password shorter than `users.password_min_length` is refused (a security
policy: `force` does not lift it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from provisioning.conf.entity import EntityConf, EntityKeys, EntitySection
from provisioning.conf.model import STRICT, Conf, Credentials, Secret
from provisioning.conf.policies import Custom
from provisioning.conf.secrets import ReadError, read_file
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

    from provisioning.conf.keys import EnvPrefix, FolderList, Positive, StringList
    from provisioning.conf.manifests import ForceColumn, Integer
    from provisioning.conf.manifests import Text as Cell
    from provisioning.conf.policies import RequiredStringList
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise


# A password file larger than this is not a password.
PASSWORD_FILE_LIMIT = 4096


@dataclass(frozen=True)
class PasswordSources:
    """`users.password_sources`: where a user manifest row may say its password is. A row
    naming any other variable or file is rejected at plan; left out, no row may name any."""

    __pydantic_config__ = STRICT
    env_prefix: Annotated[EnvPrefix | None, Field(
        description="The environment variables a row's password_env may name: those whose "
                    "name starts with this (e.g. KAFKA_USER_PASSWORD_); left out: none.")
                          ] = None
    folders: Annotated[FolderList, Field(
        description="The folders (absolute paths) a row's password_file may be in, at any "
                    "depth; left out: none.")] = ()


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
    password_sources: Annotated[PasswordSources, Field(
        description="Where a user manifest row may say its password is (environment "
                    "variables under a prefix, files under folders); nothing else is ever "
                    "read as a password.")] = field(default_factory=PasswordSources)
    password_min_length: Annotated[int, Field(
        strict=True, ge=1, le=PASSWORD_FILE_LIMIT,
        description="The policy password_min_length: no credential is set with a shorter "
                    "password, in characters (never lifted by `force`).")] = 16


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
    kinds.users.schema.USER_MANIFEST)."""

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


@dataclass(frozen=True)
class SourceRules:
    """What a user manifest row's password source is judged by: the conf's
    `users.password_sources`, and where the job's own secrets are (every cluster's `*_env`
    variables; its `*_file` files and TLS key, as written and as resolved), which no row may
    name."""

    sources: PasswordSources = PasswordSources()
    job_variables: frozenset[str] = frozenset()
    job_files: frozenset[str] = frozenset()


def source_rules(conf: Conf, sources: PasswordSources) -> SourceRules:
    """The rules of `sources` against every cluster of `conf`."""
    variables, files = set(), set()
    for cluster in conf.clusters.values():
        for key, value in vars(cluster).items():
            if not isinstance(value, str):
                continue
            if key.endswith("_env"):
                variables.add(value)
            elif key.endswith("_file") or key in ("ssl_keyfile", "ssl_certfile"):
                files.update({os.path.normpath(os.path.abspath(value)),
                              os.path.realpath(value)})
    return SourceRules(sources, frozenset(variables), frozenset(files))


class PolicyRefusal(str):
    """A password a policy refuses (`password_min_length`): the row is refused by policy,
    not as invalid."""


# What keeps a row's password from being had, whatever it is (one message, so the audit of
# a row tells nothing of the driver's files).
FILE_UNREADABLE = (f"password_file: the file it names gives no password (missing, "
                   f"unreadable, not a regular file, empty or over {PASSWORD_FILE_LIMIT} "
                   "bytes)")
VARIABLE_UNSET = "password_env: the variable it names holds no password (not set, or empty)"
JOB_SECRET = ("password: the variable or file it names holds a secret the job itself uses "
              "for a cluster; a user's password never comes from there")


NO_VARIABLES = ("password_env: users.password_sources allows no environment variable (its "
                "env_prefix is not set)")
NO_FILES = "password_file: users.password_sources allows no file (its folders are not set)"


def variable_not_allowed(prefix: str) -> str:
    return ("password_env: not a variable users.password_sources allows (a name starting "
            f"with {prefix})")


def file_not_allowed(folders: tuple[str, ...]) -> str:
    return ("password_file: not in a folder users.password_sources allows "
            f"({', '.join(folders)})")


def source_problem(env: str | None, file: str | None, rules: SourceRules) -> str | None:
    """Why a row may not name this password source (by the conf's rules alone, before
    anything is read), or None. Never repeats the row's value: a password typed into the
    wrong column would be. `transforms.users.plan.with_source_errors` is the same judgement
    over manifest rows."""
    sources = rules.sources
    if env is not None:
        if sources.env_prefix is None:
            return NO_VARIABLES
        if not env.startswith(sources.env_prefix) or env == sources.env_prefix:
            return variable_not_allowed(sources.env_prefix)
        if env in rules.job_variables:
            return JOB_SECRET
    if file is not None:
        if not sources.folders:
            return NO_FILES
        if not in_folders(file, sources.folders):
            return file_not_allowed(sources.folders)
        if file in rules.job_files:
            return JOB_SECRET
    return None


def in_folders(path: str, folders: tuple[str, ...]) -> bool:
    """Whether `path`, as written (absolute, no `.` or `..` step, no `//`), is inside one of
    `folders`, at any depth."""
    return (path.startswith("/") and "//" not in path and os.path.normpath(path) == path
            and any(path.startswith(f.rstrip("/") + "/") for f in folders))


def read_password(env: str | None, file: str | None, environ: Mapping[str, str],
                  rules: SourceRules, min_length: int,
                  job_secrets: Mapping[str, Credentials] | None = None
                  ) -> Secret | str:
    """The password a row names (its `password_env` or `password_file`), or why it cannot
    be had: a source the conf does not allow, or that holds one of the job's own secrets;
    a variable not set or empty, a file that cannot be read (one message, whatever the
    reason); a password shorter than `min_length` (a `PolicyRefusal`). Never a value."""
    if env is None and file is None:
        return "password: no password_env or password_file"
    refused = source_problem(env, file, rules)
    if refused is not None:
        return refused
    if file is not None:
        # Links are followed before reading: one that leads out of the folders is refused.
        real = os.path.realpath(file)
        if not in_folders(real, tuple(os.path.realpath(f) for f in rules.sources.folders)):
            return file_not_allowed(rules.sources.folders)
        if real in rules.job_files:
            return JOB_SECRET
        text = read_file(real, PASSWORD_FILE_LIMIT)
        if isinstance(text, ReadError):
            return FILE_UNREADABLE
        value = text[:-1] if text.endswith("\n") else text
        value = value[:-1] if value.endswith("\r") else value
        if not value:
            return FILE_UNREADABLE
    else:
        value = environ.get(env or "", "")
        if not value:
            return VARIABLE_UNSET
    if value in _secret_values(job_secrets or {}):
        return JOB_SECRET
    if len(value) < min_length:
        return PolicyRefusal(f"password_min_length: the password is shorter than the "
                             f"{min_length} characters users.password_min_length asks for")
    return Secret(value)


def _secret_values(credentials: Mapping[str, Credentials]) -> set[str]:
    """The secret values the job itself logs in with, on every cluster."""
    found = set()
    for c in credentials.values():
        for secret in (c.password, c.oauth.client_secret if c.oauth else None,
                       c.tls.key_password if c.tls else None):
            if secret is not None:
                found.add(secret.reveal())
    return found
