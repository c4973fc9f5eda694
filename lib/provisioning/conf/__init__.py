"""The job's conf: one YAML file per environment, loaded into typed, frozen objects.

A base package: every other package may read it, it reads none of them (and never
imports Spark). Every problem of a file is reported at once, naming its key. What is
shared by every run is here (`model`); each kind's section is its kind's own
(`kinds/<kind>/conf.py`), handed to the loader by the command line. The data classes are the models
pydantic reads the file against (`validate`, only when a conf loads: the objects travel
to Spark workers that have no pydantic) and the JSON Schema is made from (`schema`).
"""

from provisioning.conf.load import load_conf, parse_conf, resolve_credentials, select_clusters
from provisioning.conf.model import (
    CHECK_SEVERITY_LEVELS,
    DELTA_SAFE_RETAIN_HOURS,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    ChecksConf,
    ClusterConf,
    Conf,
    Credentials,
    KafkaConf,
    MaintenanceConf,
    OAuthClient,
    PolicySpec,
    RunConf,
    Secret,
    SparkConf,
    TablesConf,
    TlsKeys,
    TokenSource,
)

__all__ = [
    "CHECK_SEVERITY_LEVELS",
    "DELTA_SAFE_RETAIN_HOURS",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "ChecksConf",
    "ClusterConf",
    "Conf",
    "Credentials",
    "KafkaConf",
    "MaintenanceConf",
    "OAuthClient",
    "PolicySpec",
    "RunConf",
    "Secret",
    "SparkConf",
    "TablesConf",
    "TlsKeys",
    "TokenSource",
    "load_conf",
    "parse_conf",
    "resolve_credentials",
    "select_clusters",
]
