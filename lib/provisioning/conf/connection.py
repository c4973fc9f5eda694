"""The rules across a cluster's connection keys: which keys go with which security protocol
and SASL mechanism, and exactly one place for each secret (its `*_env` or its `*_file`).

Each rule reads the cluster's block as written, so it still holds when a key it looks at
was refused on its own: every problem of a file is reported at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.conf.model import PASSWORD_MECHANISMS, SECURITY_PROTOCOLS

# Each secret a cluster may need, by the stem of its two keys (`<stem>_env`, `<stem>_file`).
SECRET_STEMS = ("sasl_username", "sasl_password", "ssl_key_password",
                "sasl_oauthbearer_client_id", "sasl_oauthbearer_client_secret")
_OAUTH_KEYS = ("sasl_oauthbearer_token_endpoint_url", "sasl_oauthbearer_client_id_env",
               "sasl_oauthbearer_client_id_file", "sasl_oauthbearer_client_secret_env",
               "sasl_oauthbearer_client_secret_file", "sasl_oauthbearer_scope",
               "sasl_oauthbearer_extensions", "sasl_oauthbearer_ca_file")
_AWS_KEYS = ("aws_region", "aws_role_arn", "aws_profile")
_PASSWORD_KEYS = ("sasl_username_env", "sasl_username_file", "sasl_password_env",
                  "sasl_password_file")
_TLS_KEYS = ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_key_password_env",
             "ssl_key_password_file", "ssl_check_hostname")


def cluster_rules(top: Mapping[str, Any]) -> list[str]:
    """Every cluster's connection keys: SASL settings exactly when the protocol is SASL_*,
    each mechanism's own keys, TLS keys only with SSL, one source per secret."""
    clusters = top.get("clusters")
    problems: list[str] = []
    for name, body in (clusters.items() if isinstance(clusters, Mapping) else ()):
        if isinstance(body, Mapping):
            problems += _cluster(f"clusters.{name}", body)
    return problems


def _given(body: Mapping[str, Any], key: str) -> bool:
    return body.get(key) is not None


def _cluster(key: str, body: Mapping[str, Any]) -> list[str]:
    protocol = body.get("security_protocol", "PLAINTEXT")
    if not isinstance(protocol, str) or protocol not in SECURITY_PROTOCOLS:
        return []
    problems = [f"{key}.{stem}_file: give {stem}_env or {stem}_file, not both"
                for stem in SECRET_STEMS
                if _given(body, f"{stem}_env") and _given(body, f"{stem}_file")]
    sasl = protocol.startswith("SASL")
    mechanism = body.get("sasl_mechanism")
    if sasl and mechanism is None:
        problems.append(f"{key}.sasl_mechanism: required when security_protocol is {protocol}")
    if not sasl:
        # Credentials named for a cluster that never sends them are a mistake.
        problems += [f"{key}.{k}: only used when security_protocol is SASL_PLAINTEXT or "
                     f"SASL_SSL, not {protocol}"
                     for k in ("sasl_mechanism", *_PASSWORD_KEYS, *_OAUTH_KEYS, *_AWS_KEYS)
                     if _given(body, k)]
    elif mechanism is None or mechanism in PASSWORD_MECHANISMS:
        problems += _required(key, body, protocol, ("sasl_username", "sasl_password"))
        problems += _refused(key, body, (*_OAUTH_KEYS, *_AWS_KEYS), mechanism,
                             "OAUTHBEARER or AWS_MSK_IAM")
    elif mechanism == "OAUTHBEARER":
        problems += _extensions(key, body.get("sasl_oauthbearer_extensions"))
        if not _given(body, "sasl_oauthbearer_token_endpoint_url"):
            problems.append(f"{key}.sasl_oauthbearer_token_endpoint_url: required when "
                            "sasl_mechanism is OAUTHBEARER")
        problems += _required(key, body, "OAUTHBEARER", (
            "sasl_oauthbearer_client_id", "sasl_oauthbearer_client_secret"), "sasl_mechanism")
        endpoint = body.get("sasl_oauthbearer_token_endpoint_url")
        if _given(body, "sasl_oauthbearer_ca_file") and isinstance(endpoint, str) \
                and not endpoint.lower().startswith("https://"):
            problems.append(f"{key}.sasl_oauthbearer_ca_file: only used with an https:// "
                            "sasl_oauthbearer_token_endpoint_url")
        problems += _refused(key, body, (*_PASSWORD_KEYS, *_AWS_KEYS), mechanism,
                             "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or AWS_MSK_IAM")
    elif mechanism == "AWS_MSK_IAM":
        problems += _aws(key, body, protocol)
    if protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
        problems += [f"{key}.{k}: only used when security_protocol is SSL or SASL_SSL, not "
                     f"{protocol}" for k in _TLS_KEYS if _given(body, k)]
    else:
        problems += _client_certificate(key, body)
    return problems


def _extensions(key: str, extensions: Any) -> list[str]:
    """Kafka's rule for extension names (KIP-342): letters only, and never `auth`."""
    if not isinstance(extensions, Mapping):
        return []
    return [f"{key}.sasl_oauthbearer_extensions.{name}: an extension's name is letters "
            "only, and not `auth`" for name in extensions
            if not isinstance(name, str) or not name.isascii() or not name.isalpha()
            or name == "auth"]


def _required(key: str, body: Mapping[str, Any], when: str, stems: tuple[str, ...],
              what: str = "security_protocol") -> list[str]:
    return [f"{key}.{stem}_env: required when {what} is {when} (or {stem}_file)"
            for stem in stems
            if not _given(body, f"{stem}_env") and not _given(body, f"{stem}_file")]


def _refused(key: str, body: Mapping[str, Any], keys: tuple[str, ...], mechanism: str | None,
             needs: str) -> list[str]:
    if mechanism is None:
        return []
    return [f"{key}.{k}: only used when sasl_mechanism is {needs}, not {mechanism}"
            for k in keys if _given(body, k)]


def _aws(key: str, body: Mapping[str, Any], protocol: str) -> list[str]:
    problems = []
    if protocol != "SASL_SSL":
        problems.append(f"{key}.security_protocol: AWS_MSK_IAM needs SASL_SSL (MSK's IAM "
                        f"listeners are TLS), not {protocol}")
    if not _given(body, "aws_region"):
        problems.append(f"{key}.aws_region: required when sasl_mechanism is AWS_MSK_IAM")
    if _given(body, "aws_role_arn") and _given(body, "aws_profile"):
        problems.append(f"{key}.aws_profile: give aws_role_arn or aws_profile, not both")
    problems += _refused(key, body, (*_PASSWORD_KEYS, *_OAUTH_KEYS), "AWS_MSK_IAM",
                         "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
    return problems


def _client_certificate(key: str, body: Mapping[str, Any]) -> list[str]:
    problems = []
    if _given(body, "ssl_certfile") and not _given(body, "ssl_keyfile"):
        problems.append(f"{key}.ssl_keyfile: required with ssl_certfile (the certificate's "
                        "private key, PEM)")
    if _given(body, "ssl_keyfile") and not _given(body, "ssl_certfile"):
        problems.append(f"{key}.ssl_certfile: required with ssl_keyfile (the client "
                        "certificate, PEM)")
    problems += [f"{key}.{k}: only used with ssl_keyfile (an encrypted key's password)"
                 for k in ("ssl_key_password_env", "ssl_key_password_file")
                 if _given(body, k) and not _given(body, "ssl_keyfile")]
    return problems
