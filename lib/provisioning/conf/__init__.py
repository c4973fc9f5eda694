"""The job's conf: one YAML file per environment, loaded into typed, frozen objects.

A base room: every other room may read it, it reads none of them (and never
imports Spark). Every problem of a file is reported at once, naming its key.
"""

from provisioning.conf.load import load_conf, parse_conf, resolve_credentials, select_clusters
from provisioning.conf.model import (
    CHECK_SEVERITY_LEVELS,
    DEFAULT_PROTECTED_TOPICS,
    DELTA_SAFE_RETAIN_HOURS,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    AclsConf,
    AltersConf,
    ChecksConf,
    ClusterConf,
    Conf,
    Credentials,
    DeletesConf,
    KafkaConf,
    MaintenanceConf,
    PolicySpec,
    ReassignConf,
    RunConf,
    Secret,
    SparkConf,
    TablesConf,
)

__all__ = [
    "CHECK_SEVERITY_LEVELS",
    "DEFAULT_PROTECTED_TOPICS",
    "DELTA_SAFE_RETAIN_HOURS",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "AclsConf",
    "AltersConf",
    "ChecksConf",
    "ClusterConf",
    "Conf",
    "Credentials",
    "DeletesConf",
    "KafkaConf",
    "MaintenanceConf",
    "PolicySpec",
    "ReassignConf",
    "RunConf",
    "Secret",
    "SparkConf",
    "TablesConf",
    "load_conf",
    "parse_conf",
    "resolve_credentials",
    "select_clusters",
]
