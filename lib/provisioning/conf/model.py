"""The typed, frozen conf: what the job's YAML file says, as data classes.

Each class is the model of its part of the file: pydantic validates the file against them
(`conf.validate`) and generates the JSON Schema from them (`conf.schema`), each key with
its type, default and `description`. They are plain frozen dataclasses so they pickle to
Spark workers that have no pydantic: the annotations are strings only the loader reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

from provisioning.names import OFF, SEVERITIES

try:  # the loader's side only: a Spark worker unpickling a conf object never needs them
    from pydantic import Field
    from pydantic.json_schema import SkipJsonSchema

    from provisioning.conf.keys import (
        ArnText,
        Bootstrap,
        Count,
        EnvName,
        PerRequest,
        Positive,
        Principal,
        ReadableFile,
        SaslExtension,
        SecretFile,
        Severity,
        SparkValue,
        TableList,
        Text,
        TokenUrl,
    )
except ImportError:  # pragma: no cover - a worker without pydantic
    if TYPE_CHECKING:
        raise

SECURITY_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "AWS_MSK_IAM")
# The mechanisms that log in with a user name and a password.
PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# What every part of the file refuses: a key it does not know.
STRICT: Any = {"extra": "forbid"}


class Secret:
    """A credential value that never shows itself in a repr, a log line or a traceback."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


@dataclass(frozen=True)
class ClusterConf:
    """One cluster under `clusters` (its key is its name): how the job connects to it."""

    __pydantic_config__ = STRICT
    # The key under `clusters`, set by the loader: never written inside the cluster's block.
    name: Annotated[str, SkipJsonSchema()]
    bootstrap_servers: Annotated[Bootstrap, Field(
        description="The brokers to bootstrap from: host:port[,host:port...]. The whole "
                    "value may be ${VAR} or ${VAR:-default}, read from the environment.")]
    security_protocol: Annotated[Literal["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL"],
                                 Field(description="How the job talks to the brokers.")
                                 ] = "PLAINTEXT"
    sasl_mechanism: Annotated[
        Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "AWS_MSK_IAM"] | None,
        Field(description="The SASL mechanism; required with a SASL_* security_protocol, "
              "refused otherwise. OAUTHBEARER: tokens from an OIDC client-credentials "
              "endpoint (KIP-768); AWS_MSK_IAM: tokens signed with the AWS credentials of "
              "the default chain, sent over OAUTHBEARER (SASL_SSL only).")] = None
    sasl_username_env: Annotated[EnvName | None, Field(
        description="The NAME of the environment variable holding the SASL user (never the "
                    "user itself); PLAIN and SCRAM need it or sasl_username_file.")] = None
    sasl_password_env: Annotated[EnvName | None, Field(
        description="The NAME of the environment variable holding the SASL password (never "
                    "the password itself); PLAIN and SCRAM need it or sasl_password_file."
    )] = None
    ssl_cafile: Annotated[ReadableFile | None, Field(
        description="A readable PEM file of the CAs to trust (SSL and SASL_SSL only); "
                    "relative paths are taken from the directory the job runs in.")] = None
    cluster_id: Annotated[Text | None, Field(
        description="The cluster id the brokers must report; any other cluster answering at "
                    "this address is refused.")] = None
    client_id: Annotated[Text, Field(description="The Kafka client id of the job's "
                                     "connections.")] = "topic-provisioning"
    # Keys below: issue 51 (mTLS, OAUTHBEARER, MSK IAM, secrets from files). Every `*_file`
    # key names a file holding the secret (a Kubernetes or Vault agent mount; its trailing
    # newline stripped), read on the driver; exactly one of a `*_env` and its `*_file`.
    sasl_username_file: Annotated[SecretFile | None, Field(
        description="A file holding the SASL user (instead of sasl_username_env).")] = None
    sasl_password_file: Annotated[SecretFile | None, Field(
        description="A file holding the SASL password (instead of sasl_password_env)."
    )] = None
    ssl_certfile: Annotated[ReadableFile | None, Field(
        description="The job's client certificate (PEM, with its chain) for brokers that "
                    "require one (mTLS; SSL and SASL_SSL only); needs ssl_keyfile.")] = None
    ssl_keyfile: Annotated[ReadableFile | None, Field(
        description="The private key of ssl_certfile (PEM; encrypted: give "
                    "ssl_key_password_env or ssl_key_password_file).")] = None
    ssl_key_password_env: Annotated[EnvName | None, Field(
        description="The NAME of the environment variable holding the password of an "
                    "encrypted ssl_keyfile.")] = None
    ssl_key_password_file: Annotated[SecretFile | None, Field(
        description="A file holding the password of an encrypted ssl_keyfile.")] = None
    ssl_check_hostname: Annotated[bool, Field(
        strict=True, description="Whether the broker's certificate must name the host the "
        "job connects to (SSL and SASL_SSL).")] = True
    sasl_oauthbearer_token_endpoint_url: Annotated[TokenUrl | None, Field(
        description="The OIDC token endpoint the job asks for tokens with its client "
                    "credentials (OAUTHBEARER only): https:// (http:// only for a loopback "
                    "host); a redirect it answers is an error, never followed.")] = None
    sasl_oauthbearer_ca_file: Annotated[ReadableFile | None, Field(
        description="A readable PEM file of the CAs to trust for the token endpoint "
                    "(OAUTHBEARER with an https:// endpoint; left out: the system's CAs).")
                                        ] = None
    sasl_oauthbearer_client_id_env: Annotated[EnvName | None, Field(
        description="The NAME of the environment variable holding the OAuth client id "
                    "(OAUTHBEARER: it or sasl_oauthbearer_client_id_file).")] = None
    sasl_oauthbearer_client_id_file: Annotated[SecretFile | None, Field(
        description="A file holding the OAuth client id.")] = None
    sasl_oauthbearer_client_secret_env: Annotated[EnvName | None, Field(
        description="The NAME of the environment variable holding the OAuth client secret "
                    "(OAUTHBEARER: it or sasl_oauthbearer_client_secret_file).")] = None
    sasl_oauthbearer_client_secret_file: Annotated[SecretFile | None, Field(
        description="A file holding the OAuth client secret.")] = None
    sasl_oauthbearer_scope: Annotated[Text | None, Field(
        description="The scope the job asks the token endpoint for (optional).")] = None
    sasl_oauthbearer_extensions: Annotated[Mapping[str, SaslExtension], Field(
        description="SASL extensions sent with the token (KIP-342), name -> value: e.g. "
                    "Confluent Cloud's logicalCluster and identityPoolId.")
                                           ] = field(default_factory=dict, hash=False)
    aws_region: Annotated[Text | None, Field(
        min_length=1, description="The AWS region of the MSK cluster (AWS_MSK_IAM: "
        "required).")] = None
    aws_role_arn: Annotated[ArnText | None, Field(
        description="An IAM role the driver assumes (STS) to sign the tokens (AWS_MSK_IAM; "
                    "left out: the default credentials chain).")] = None
    aws_profile: Annotated[Text | None, Field(
        min_length=1, description="A named profile of the AWS config files to sign the "
        "tokens with (AWS_MSK_IAM; left out: the default credentials chain).")] = None
    principal: Annotated[Principal | None, Field(
        description="The job's principal as the brokers' authorizer names it (e.g. "
                    "`User:CN=provisioning-job`), where the job cannot tell it itself "
                    "(a client certificate, MSK IAM); used in messages about what it may "
                    "do.")] = None


@dataclass(frozen=True)
class TablesConf:
    """The `tables` mapping: the Delta tables the job reads and writes (Delta paths or
    catalog names)."""

    __pydantic_config__ = STRICT
    manifests: Annotated[TableList, Field(description="The topic manifest tables: a Delta "
                                          "path or catalog name, or a non-empty list of them.")]
    audit: Annotated[Text, Field(description="The audit table: every row each run planned, "
                                 "sent and verified.")]
    # The defaults of the tables below are named after it.
    runs: Annotated[Text, Field(description="The runs table: one row per run.")]
    snapshots: Annotated[Text, Field(description="The snapshots of the live topics, recorded "
                                     "when a cluster changed.")]
    locks: Annotated[Text, Field(description="The lock log of the clusters' leases (empty: "
                                 "`<tables.runs>_locks`).")] = ""
    violations: Annotated[Text, Field(description="`check`'s violations (empty: "
                                      "`<tables.runs>_violations`).")] = ""
    inventory: Annotated[Text, Field(description="The inventory of the live topics (empty: "
                                     "`<tables.runs>_inventory`).")] = ""
    disks: Annotated[Text, Field(description="The brokers' log dir usage (empty: "
                                 "`<tables.runs>_disks`).")] = ""


@dataclass(frozen=True)
class KafkaConf:
    """The `kafka` mapping: how the admin requests are sized, timed and retried."""

    __pydantic_config__ = STRICT
    request_timeout_ms: Annotated[Positive, Field(
        description="How long one admin request may take, in milliseconds.")] = 30000
    # A KIP-4 timeout of 0 means "start the operation, do not wait for it".
    operation_timeout_ms: Annotated[Count, Field(
        description="The brokers' operation timeout of creates, deletes and alters, in "
                    "milliseconds (0: start the operation, do not wait).")] = 30000
    batch_size: Annotated[Positive, Field(description="Topics per request.")] = 1000
    max_partitions_per_request: Annotated[PerRequest, Field(
        description="Partitions per CreateTopics request (the broker refuses "
                              "more than 10000).")] = 10000
    max_records_per_request: Annotated[PerRequest, Field(
        description="Config records per request (the broker refuses more than "
                              "10000).")] = 10000
    throttle_retries: Annotated[Count, Field(
        description="Retries of a request the broker throttled.")] = 8
    verify_timeout_ms: Annotated[Positive, Field(
        description="How long verify waits for the brokers to show a change, in "
                    "milliseconds.")] = 60000
    max_in_flight_requests: Annotated[Positive, Field(
        description="CreateTopics requests one task keeps in flight to one cluster (1: one "
                    "at a time).")] = 4


@dataclass(frozen=True)
class SparkConf:
    """The `spark` mapping: the Spark session the job runs on."""

    __pydantic_config__ = STRICT
    app_name: Annotated[Text, Field(description="The Spark application's name.")
                        ] = "topic-provisioning"
    settings: Annotated[Mapping[str, SparkValue], Field(
        description="Spark properties set on the session (property -> value).")
                        ] = field(default_factory=dict)
    remote: Annotated[Text | None, Field(
        pattern=r"^sc://", description="A Spark Connect server (sc://HOST:PORT) to run on; "
        "left out: classic Spark (spark-submit).")] = None


@dataclass(frozen=True)
class PolicySpec:
    """One configured policy: its registered name and its parameter block."""

    name: str
    params: Mapping[str, Any]
    key: str  # where it was written, e.g. "policies.create[2]"


@dataclass(frozen=True)
class RunConf:
    """The `run` mapping: the lease a run holds on its clusters."""

    __pydantic_config__ = STRICT
    lock_ttl_seconds: Annotated[Positive, Field(
        description="How long a run's lock lives without a heartbeat (a killed driver's "
                    "lock frees itself), in seconds.")] = 600
    lock_clock_skew_seconds: Annotated[Count, Field(
        description="How far two machines' clocks may differ: another run takes an expired "
                    "lease over only this many seconds after its expiry.")] = 30


# The levels `checks.severity` may give a rule (names.CHECK_RULES).
CHECK_SEVERITY_LEVELS = (*SEVERITIES, OFF)


@dataclass(frozen=True)
class ChecksConf:
    """The `checks` mapping: how `check` judges the live topics and brokers."""

    __pydantic_config__ = STRICT
    # rule -> level; the rules and levels are checked by the loader (conf.validate), which
    # knows every kind's rules.
    severity: Annotated[Mapping[str, Severity], Field(
        description="A rule's severity (error, warning, info or off), overriding its own; "
                    "a rule not named keeps its own.")] = field(default_factory=dict)
    idle_days: Annotated[Positive, Field(
        description="A topic with records, none newer than this many days, is idle "
                    "(`idle_topic`).")] = 30
    disk_used_ratio: Annotated[float, Field(
        strict=True, gt=0, le=1, description="A broker log dir whose used share is over "
        "this gives `disk_usage`.")] = 0.85
    disk_days: Annotated[Positive, Field(
        description="How many days ahead `disk_forecast` looks.")] = 14
    usage: Annotated[bool, Field(
        description="Whether `check` measures usage (the inventory and disks tables) and "
                    "judges the usage rules (idle_topic, empty_topic, disk_usage, "
                    "disk_forecast).")] = True


# Delta refuses a shorter VACUUM retention unless its safety check is turned off.
DELTA_SAFE_RETAIN_HOURS = 168


@dataclass(frozen=True)
class MaintenanceConf:
    """The `maintenance` mapping: what `maintain` keeps."""

    __pydantic_config__ = STRICT
    vacuum_retain_hours: Annotated[Count, Field(
        description="`maintain` removes the files no table version within this many hours "
                    "needs (below 168 only with Delta's retention check turned off).")
                                   ] = DELTA_SAFE_RETAIN_HOURS
    snapshot_retention_days: Annotated[Positive | None, Field(
        description="`maintain` deletes snapshot rows older than this many days (left out: "
                    "kept forever).")] = None


S = TypeVar("S")


@dataclass(frozen=True)
class Conf:
    source: str
    digest: str
    clusters: Mapping[str, ClusterConf]
    tables: TablesConf
    kafka: KafkaConf = KafkaConf()
    spark: SparkConf = SparkConf()
    run: RunConf = RunConf()
    maintenance: MaintenanceConf = MaintenanceConf()
    checks: ChecksConf = ChecksConf()
    # Each registered kind's section (conf.section.Section), by kind name.
    sections: Mapping[str, object] = field(default_factory=dict)

    def section(self, kind: type[S]) -> S:
        """The section of type `kind` (its defaults when the conf was built without it)."""
        for value in self.sections.values():
            if isinstance(value, kind):
                return value
        return kind()


@dataclass(frozen=True)
class TlsKeys:
    """What a cluster's TLS files hold, read on the driver: it travels in memory to the
    executors, which have none of the conf's files."""

    ca: str | None = None            # PEM certificates to trust (ssl_cafile)
    certificate: str | None = None   # the client certificate chain (ssl_certfile)
    key: Secret | None = None        # its private key (ssl_keyfile)
    key_password: Secret | None = None


@dataclass(frozen=True)
class OAuthClient:
    """An OIDC client's credentials (OAUTHBEARER, KIP-768's client credentials grant), and
    the CAs its token endpoint's certificate is checked against (PEM; None: the
    system's)."""

    client_id: Secret
    client_secret: Secret
    ca: str | None = None


class TokenSource(Protocol):
    """Gives the bearer token a connection sends (OAUTHBEARER, AWS_MSK_IAM): the Kafka
    package's token sources (`kafka.tokens`)."""

    def token(self) -> str: ...


@dataclass(frozen=True)
class Credentials:
    """What the driver read for one cluster (from the environment and the conf's files)
    and every process that connects to it needs: the SASL user and password, the TLS
    material, the OAuth client, and the source of its bearer tokens."""

    username: Secret | None = None
    password: Secret | None = None
    tls: TlsKeys | None = None
    oauth: OAuthClient | None = None
    tokens: TokenSource | None = field(default=None, compare=False)
