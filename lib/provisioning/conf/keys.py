"""The value types of conf keys, as pydantic reads them: bounds, formats and the checks
a single key's value must pass.

Only the loader imports this module (and pydantic). The conf's data classes name these
types in their annotations, which stay strings nobody evaluates in a Spark worker: a stock
Spark Connect server's Python has no pydantic, and the conf's objects travel there.
A check raises ValueError with the message the problem is reported with.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

from provisioning.names import OFF, SEVERITIES

CHECK_SEVERITY_LEVELS = (*SEVERITIES, OFF)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):\d{1,5}$")


def _env_name(v: str) -> str:
    if not _ENV_NAME.match(v):
        raise ValueError("must be the NAME of an environment variable (letters, digits, _), "
                         "not the secret itself")
    return v


def _bootstrap(v: str) -> str:
    bad = [p for p in (p.strip() for p in v.split(",")) if not _HOST_PORT.match(p)]
    if bad or not v:
        raise ValueError(f"expected host:port[,host:port...], bad entries: {bad}")
    return v


def _readable_file(v: str) -> str:
    path = Path(v)
    if not path.is_file():
        raise ValueError(f"no such file: {v} (relative paths are taken from the directory "
                         "the job runs in)")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot read {v}: {exc.strerror or exc}") from None
    return v


# A value of a key that names where a secret is may be the secret itself, written in the
# wrong key: a problem with it never repeats it.
NOT_REPEATED = "its value is not repeated here, in case it is a secret written in this key"


def _secret_file(v: str) -> str:
    path = Path(v)
    if not path.is_file():
        raise ValueError(f"names no file ({NOT_REPEATED}; relative paths are taken from the "
                         "directory the job runs in)")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise ValueError(f"names a file the job cannot read ({exc.strerror or 'OSError'}; "
                         f"{NOT_REPEATED})") from None
    return v


def url_host(url: str) -> str:
    """The host of an http(s) URL, lower case, without brackets or port."""
    netloc = url.partition("://")[2].split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
    if netloc.startswith("["):
        return netloc[1:].split("]", 1)[0].lower()
    return netloc.rsplit(":", 1)[0].lower() if netloc.count(":") == 1 else netloc.lower()


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine's loopback."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token_url(v: str) -> str:
    scheme, _, rest = v.partition("://")
    if scheme.lower() not in ("http", "https") or not rest or any(c.isspace() for c in v):
        raise ValueError("expected an https:// URL")
    if "@" in rest.split("/", 1)[0]:
        raise ValueError("a URL with a user or password in it would put a secret in the "
                         "conf; name the client's *_env or *_file keys instead")
    if scheme.lower() == "http" and not is_loopback(url_host(v)):
        raise ValueError("the client secret is sent to it: https:// is required (http:// only "
                         "for a loopback host: 127.0.0.1, ::1, localhost); an identity "
                         "provider with a CA of its own: sasl_oauthbearer_ca_file")
    return v


def _folder_list(v: Any) -> Any:
    """Absolute paths of existing folders, never the root (which would allow every file)."""
    folders = as_string_list(v)
    for folder in folders:
        if folder.rstrip("/") == "":
            raise ValueError("'/' would allow every file of the driver")
        if not folder.startswith("/") or os.path.normpath(folder) != folder.rstrip("/"):
            raise ValueError(f"{folder!r}: expected an absolute path without `.` or `..`")
        if not Path(folder).is_dir():
            raise ValueError(f"{folder!r}: no such folder")
    return tuple(f.rstrip("/") for f in folders)


def as_string_list(v: Any) -> Any:
    if not isinstance(v, list | tuple) or not all(isinstance(x, str) for x in v):
        raise ValueError("expected a list of strings")
    return tuple(v)


def _table_list(v: Any) -> Any:
    if isinstance(v, str):
        return (v,)
    if isinstance(v, list | tuple) and v and all(isinstance(x, str) and x for x in v):
        return tuple(v)
    raise ValueError("expected a table path or name, or a non-empty list of them")


def _broker_cap(v: int) -> int:
    if v > 10000:
        raise ValueError("the broker rejects more than 10000 per request")
    return v


def _spark_value(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    return v if isinstance(v, str) else str(v) if isinstance(v, int | float) else v


FolderList = Annotated[tuple[str, ...], BeforeValidator(_folder_list),
                       WithJsonSchema({"type": "array", "items": {"type": "string"}})]
# The start of the names of environment variables (letters, digits, _; at least 3).
EnvPrefix = Annotated[str, Field(strict=True, min_length=3,
                                 pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Count = Annotated[int, Field(strict=True, ge=0)]
Positive = Annotated[int, Field(strict=True, gt=0)]
Flag = Annotated[bool, Field(strict=True)]
Text = Annotated[str, Field(strict=True)]
EnvName = Annotated[str, Field(strict=True), AfterValidator(_env_name)]
Bootstrap = Annotated[str, Field(strict=True), AfterValidator(_bootstrap)]
ReadableFile = Annotated[str, Field(strict=True), AfterValidator(_readable_file)]
SecretFile = Annotated[str, Field(strict=True), AfterValidator(_secret_file)]
TokenUrl = Annotated[str, Field(strict=True, json_schema_extra={"format": "uri"}),
                     AfterValidator(_token_url)]
ArnText = Annotated[str, Field(strict=True, pattern=r"^arn:[^:\s]+:iam::\d{12}:role/\S+$")]
# A SASL/OAUTHBEARER extension's value (RFC 7628: printable ASCII, no \x01 separator).
SaslExtension = Annotated[str, Field(strict=True, pattern=r"^[\x21-\x7E \t\r\n]+$")]
# Kafka's principal: its type, ':', its name (User:CN=job,O=team; User:alice).
Principal = Annotated[str, Field(strict=True, pattern=r"^[A-Za-z][A-Za-z0-9]*:\S.*$")]
PerRequest = Annotated[int, Field(strict=True, gt=0, json_schema_extra={"maximum": 10000}),
                       AfterValidator(_broker_cap)]
StringList = Annotated[tuple[str, ...], BeforeValidator(as_string_list),
                       WithJsonSchema({"type": "array", "items": {"type": "string"}})]
TableList = Annotated[tuple[str, ...], BeforeValidator(_table_list), WithJsonSchema(
    {"anyOf": [{"type": "string", "minLength": 1},
               {"type": "array", "items": {"type": "string", "minLength": 1},
                "minItems": 1}]})]
SparkValue = Annotated[str, BeforeValidator(_spark_value), WithJsonSchema(
    {"type": ["string", "number", "boolean"]})]


def _severity(v: Any) -> Any:
    # YAML 1.1 reads a bare `off` as false.
    return "off" if v is False else v


Severity = Annotated[
    Literal[CHECK_SEVERITY_LEVELS],  # type: ignore[valid-type]
    BeforeValidator(_severity),
    # A bare `off` is YAML 1.1's false, read as "off".
    WithJsonSchema({"enum": [*CHECK_SEVERITY_LEVELS, False]})]
