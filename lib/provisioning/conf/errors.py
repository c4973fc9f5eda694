"""How a pydantic error reads as a conf problem: the wording every problem has had, so a
person reading it knows the key, what it holds and what it should hold."""

from __future__ import annotations

from typing import Any

from provisioning.session import redact_remote


def type_name(value: Any) -> str:
    """How a problem names the type of a value the file holds."""
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer",
            float: "a number", bool: "a boolean"}.get(type(value), type(value).__name__)


# Keys that would hold a secret itself rather than the name of a variable holding it.
INLINE_SECRET_KEYS = (
    "password",
    "sasl_password",
    "sasl_plain_password",
    "sasl_username",
    "sasl_plain_username",
    "ssl_password",
    "secret",
    "ssl_key_password",
    "client_secret",
    "sasl_oauthbearer_client_secret",
    "aws_secret_access_key",
    "aws_session_token",
)
# The keys that name where such a secret is, for those not about the SASL user or password.
SECRET_KEY_HINTS = {
    "ssl_password": "ssl_key_password_env / ssl_key_password_file",
    "ssl_key_password": "ssl_key_password_env / ssl_key_password_file",
    "client_secret": "sasl_oauthbearer_client_secret_env / sasl_oauthbearer_client_secret_file",
    "sasl_oauthbearer_client_secret":
        "sasl_oauthbearer_client_secret_env / sasl_oauthbearer_client_secret_file",
    "aws_secret_access_key": "the AWS credentials chain: aws_profile, aws_role_arn or the "
                             "AWS_* environment variables",
    "aws_session_token": "the AWS credentials chain: aws_profile, aws_role_arn or the "
                         "AWS_* environment variables",
}
# What a cluster key with a pattern expects.
_PATTERNS = {
    "aws_role_arn": "expected an IAM role's ARN, arn:aws:iam::ACCOUNT:role/NAME",
    "principal": "expected a principal as Kafka names it, TYPE:NAME (User:CN=job)",
}
_EXPECTED = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "bool_type": "a boolean", "bool_parsing": "a boolean",
    "string_type": "a string",
    "float_type": "a number", "float_parsing": "a number",
    "list_type": "a list", "tuple_type": "a list", "iterable_type": "a list",
    "dict_type": "a mapping", "mapping_type": "a mapping", "dataclass_type": "a mapping",
    "dataclass_exact_type": "a mapping", "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}
_MAPPINGS: dict[tuple[str | int, ...], str] = {
    ("clusters",): "expected a mapping of cluster name -> connection settings",
    ("spark", "settings"): "expected a mapping of Spark property -> value",
}


def describe(error: Any, loc: tuple[str | int, ...]) -> str:
    """The problem's message (without its key) for one of pydantic's `errors()`."""
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return "required key is missing"
    if loc[:1] == ("policies",) and len(loc) == 2 and kind in _EXPECTED:
        return f"expected a list of policies, got {type_name(value)}"
    if loc in _MAPPINGS and kind in (*_EXPECTED, "too_short"):
        return _MAPPINGS[loc]
    if loc == ("checks", "severity") and kind in _EXPECTED:
        return ("expected a mapping of rule -> error | warning | info | off, got "
                f"{type_name(value)}")
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {type_name(value)}"
    if kind == "greater_than_equal":
        return f"must be >= {_bound(ctx['ge'])}, got {value}"
    if kind == "greater_than":
        return f"must be > {_bound(ctx['gt'])}, got {value}"
    if kind == "less_than_equal":
        return f"must be <= {_bound(ctx['le'])}, got {value}"
    if kind == "literal_error":
        if not isinstance(value, str) and loc[:2] == ("checks", "severity"):
            return f"{type_name(value)} is not one of error, warning, info, off"
        if not isinstance(value, str):
            return f"expected a string, got {type_name(value)}"
        choices = [c.strip().strip("'") for c in
                   str(ctx["expected"]).replace(" or ", ", ").split(", ")]
        return f"{value!r} is not one of {', '.join(choices)}"
    if kind == "value_error":
        return str(ctx["error"])
    if kind == "string_pattern_mismatch" and loc[:1] == ("clusters",) and loc[-1] in _PATTERNS:
        return _PATTERNS[str(loc[-1])]
    if kind == "string_pattern_mismatch" and "sasl_oauthbearer_extensions" in loc:
        return "an extension's value is printable ASCII, blanks allowed (RFC 7628)"
    if kind == "string_pattern_mismatch" and loc[:1] == ("clusters",):
        return "cluster names use letters, digits, '.', '_', '-'"
    if kind == "string_pattern_mismatch" and loc == ("spark", "remote"):
        return ("expected a Spark Connect address sc://HOST:PORT, got "
                f"{redact_remote(str(value))!r}")
    return str(error["msg"])


def _bound(value: Any) -> Any:
    """A bound as the conf's reference writes it: 1, not 1.0."""
    return int(value) if isinstance(value, float) and value.is_integer() else value
