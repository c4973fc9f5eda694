"""Bearer tokens for SASL/OAUTHBEARER: from an OIDC client-credentials endpoint (KIP-768),
or signed for AWS MSK IAM.

OIDC (`OidcTokens`): every process that talks to Kafka (the driver, each executor's Python
worker) asks the endpoint itself, once, and keeps the token until 80% of its lifetime has
passed (Kafka's own `sasl.login.refresh.window.factor`); a connection that re-authenticates
(KIP-368) or opens after that gets the renewed one. What travels to an executor is the
endpoint and the client's id and secret (`conf.OAuthClient`, in memory with the task), never
a file. The endpoint is asked with the standard library (urllib), HTTP Basic client
authentication as Kafka's own client does, and with care for the secret it sends:

- no redirect is followed (the secret would go with it): a 3xx is an error naming the
  endpoint; the URL is https (http only on loopback: `conf.keys`), its certificate checked
  against the system's CAs or `sasl_oauthbearer_ca_file`'s;
- what an endpoint answers never reaches a message beyond its HTTP status and its OAuth
  `error` code (a registered one): an endpoint that echoes the request would put the
  secret there, in whatever encoding;
- a fetch, retries included, ends within its bound: the first of a process within
  `timeout_s` (min(kafka.request_timeout_ms, 30 s)), a renewal within RENEW_TIMEOUT_S, as
  it runs on the Kafka client's I/O thread; a renewal that fails leaves the token held in
  use until it expires, with a warning;
- every failure, an answer that is not HTTP included, is ClusterUnreachable (exit 3)
  naming the cluster and the endpoint.

MSK IAM (`MskIamTokens`): the driver signs tokens with `aws-msk-iam-sasl-signer-python`
and the AWS credentials of the default chain (or `aws_profile`, or `aws_role_arn`
assumed through STS). An executor never gets the AWS credentials, nor needs botocore:
what a pickled source carries is a token signed for it on the driver when the task was
made, valid for the signer's 15 minutes.

A refused token or an unreachable endpoint raises ClusterUnreachable (exit 3) naming the
cluster and the endpoint; no message quotes the client secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import http.client
import json
import logging
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka.net.sasl.oauth import AbstractTokenProvider

from provisioning import retry
from provisioning.conf import ClusterConf, Credentials, OAuthClient, Secret
from provisioning.errors import ClusterUnreachable

log = logging.getLogger(__name__)


class _BelowInfo(logging.Filter):
    """Drops DEBUG records: the signer's botocore logs what makes a token at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.INFO


# botocore's loggers whose DEBUG records carry a token or keys: the canonical request and
# signature of a token (auth), STS answers with an assumed role's keys (parsers), signed
# requests (endpoint, httpsession, awsrequest). A filter on each (set when this module is
# imported, before anything signs) keeps them out of every handler, whatever level is set.
_SIGNER_LOGGERS = ("botocore", "botocore.auth", "botocore.parsers", "botocore.endpoint",
                   "botocore.httpsession", "botocore.awsrequest", "botocore.credentials",
                   "botocore.hooks", "botocore.utils", "boto3", "aws_msk_iam_sasl_signer")
_FILTER = _BelowInfo()
for _name in _SIGNER_LOGGERS:
    logging.getLogger(_name).addFilter(_FILTER)

# A token is renewed once this share of its lifetime has passed (Kafka's default window).
RENEW_AFTER = 0.8
# A token with no expiry of its own (no `exp`, no `expires_in`) is asked again after this.
UNKNOWN_LIFETIME_S = 300.0
# How long a renewal may take, retries included: it runs on the Kafka client's I/O thread,
# and a token still held stands in for it when it fails.
RENEW_TIMEOUT_S = 10.0
# After a failed renewal, the held token is used this long before the endpoint is asked
# again (at most: never past the token's expiry).
RENEW_RETRY_S = 30.0
# The OAuth error codes an endpoint's refusal may show (RFC 6749 5.2, RFC 6750 3.1): any
# other text it answered may echo the request, and is dropped.
OAUTH_ERRORS = frozenset(("invalid_request", "invalid_client", "invalid_grant",
                          "unauthorized_client", "unsupported_grant_type", "invalid_scope",
                          "access_denied", "server_error", "temporarily_unavailable",
                          "invalid_token", "insufficient_scope"))


def _transient(exc: BaseException) -> bool:
    """An endpoint's failure worth asking it again for: a server error (5xx), an answer that
    is not HTTP, an endpoint not reached; never a refusal or a redirect."""
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500
    return isinstance(exc, http.client.HTTPException | urllib.error.URLError | OSError)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the request carries the client secret. The 3xx answer is
    raised as an HTTPError."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass(frozen=True)
class _Held:
    token: Secret
    fetched_at: float   # time.time()
    expires_at: float   # time.time() of its expiry

    def fresh(self, now: float, keep: float = RENEW_AFTER) -> bool:
        return now < self.fetched_at + keep * (self.expires_at - self.fetched_at)


# The tokens this process holds, by the digest of what asks for them (endpoint, client,
# scope): one fetch per process and client, whatever number of connections ask; and when a
# failed renewal lets the endpoint be asked again (time.time()).
_HELD: dict[str, _Held] = {}
_RETRY_AT: dict[str, float] = {}
_LOCKS: dict[str, threading.Lock] = {}
_GUARD = threading.Lock()


def _lock(key: str) -> threading.Lock:
    with _GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


class OidcTokens(AbstractTokenProvider):  # type: ignore[misc]
    """The tokens of one cluster's OIDC client (client credentials grant)."""

    def __init__(self, cluster: str, endpoint: str, client: OAuthClient,
                 scope: str | None = None, timeout_s: float = 30.0,
                 extensions: Mapping[str, str] | None = None) -> None:
        self.cluster = cluster
        self.endpoint = endpoint
        self.client = client
        self.scope = scope
        self.timeout_s = timeout_s
        self._extensions = dict(extensions or {})

    def extensions(self) -> dict[str, str]:
        """The SASL extensions sent with each token (KIP-342)."""
        return dict(self._extensions)

    def __repr__(self) -> str:
        return f"OidcTokens(cluster={self.cluster!r}, endpoint={self.endpoint!r})"

    @property
    def _key(self) -> str:
        parts = (self.endpoint, self.client.client_id.reveal(),
                 self.client.client_secret.reveal(), self.scope or "")
        return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()

    def token(self) -> str:
        """The token this process holds for the client, asked for when it has none or it is
        due for renewal. A renewal that fails while the token held is still valid leaves
        that token in use (until it expires), with a warning."""
        key = self._key
        with _lock(key):
            held = _HELD.get(key)
            now = time.time()
            if held is not None and (held.fresh(now) or now < _RETRY_AT.get(key, 0.0)):
                return held.token.reveal()
            if held is None or now >= held.expires_at:
                held = self._fetch(self.timeout_s)
            else:
                try:
                    held = self._fetch(min(self.timeout_s, RENEW_TIMEOUT_S))
                except ClusterUnreachable as exc:
                    _RETRY_AT[key] = min(now + RENEW_RETRY_S, held.expires_at)
                    log.warning("%s; the token held is used until it expires, in %.0f s",
                                exc, held.expires_at - now)
                    return held.token.reveal()
            _HELD[key] = held
            _RETRY_AT.pop(key, None)
        return held.token.reveal()

    def subject(self) -> str | None:
        """The `sub` claim of the current token (Kafka's default principal name for it), or
        None when the token is not a JWT."""
        return _claims(self.token()).get("sub")

    def _opener(self) -> urllib.request.OpenerDirector:
        context = ssl.create_default_context(cadata=self.client.ca) if self.client.ca \
            else ssl.create_default_context()
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return urllib.request.build_opener(_NoRedirect, urllib.request.HTTPSHandler(
            context=context))

    def _fetch(self, within_s: float) -> _Held:
        """A new token, asked for up to `retry.TOKEN`'s attempts within `within_s` seconds."""
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        # Kafka's client sends the id and secret as they are (sasl.oauthbearer.header.urlencode
        # is false by default); so does this.
        pair = f"{self.client.client_id.reveal()}:{self.client.client_secret.reveal()}"
        request = urllib.request.Request(
            self.endpoint, data=urllib.parse.urlencode(form).encode("ascii"), method="POST",
            headers={"Authorization": "Basic " + base64.b64encode(pair.encode()).decode(),
                     "Content-Type": "application/x-www-form-urlencoded",
                     "Accept": "application/json"})
        opener = self._opener()
        deadline = retry.deadline_in(within_s)
        where = f"cluster {self.cluster}: the token endpoint {self.endpoint}"

        def ask() -> _Held:
            left = deadline - retry.now()
            with opener.open(request, timeout=max(left, 0.001)) as answer:
                body = answer.read(1 << 20)
            return self._held(body)

        def again(attempt: int, _exc: BaseException) -> None:
            log.info("cluster %s: asking %s for a token again (attempt %d of %d)",
                     self.cluster, self.endpoint, attempt + 1, retry.TOKEN.attempts)

        try:
            return retry.tries(retry.TOKEN, ask, _transient, deadline=deadline, again=again)
        except ClusterUnreachable:
            raise
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                raise ClusterUnreachable(
                    f"{where} answered a redirect (HTTP {exc.code}), which the job never "
                    "follows: the client secret would go with it. Name the endpoint "
                    "itself in sasl_oauthbearer_token_endpoint_url") from None
            raise ClusterUnreachable(
                f"{where} refused the client credentials "
                f"({self._error_text(exc)})") from None
        except http.client.HTTPException as exc:
            raise ClusterUnreachable(
                f"{where} answered with something that is not HTTP "
                f"({type(exc).__name__})") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ClusterUnreachable(
                f"{where} is unreachable "
                f"({type(reason).__name__}: {self._clean(str(reason))})") from None
        except Exception as exc:  # whatever else urllib raises: still exit 3, named
            raise ClusterUnreachable(
                f"{where} could not be asked ({type(exc).__name__})") from None

    def _held(self, body: bytes) -> _Held:
        try:
            answer = json.loads(body)
            token = answer["access_token"]
            if not isinstance(token, str) or not token:
                raise ValueError("no access_token")
        except (ValueError, KeyError, TypeError):
            raise ClusterUnreachable(
                f"cluster {self.cluster}: the token endpoint {self.endpoint} answered without "
                "an access_token") from None
        now = time.time()
        ends = []
        expires_in = answer.get("expires_in")
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
            ends.append(now + float(expires_in))
        exp = _claims(token).get("exp")
        if isinstance(exp, int | float) and not isinstance(exp, bool):
            ends.append(float(exp))
        return _Held(Secret(token), now, min(ends) if ends else now + UNKNOWN_LIFETIME_S)

    @staticmethod
    def _error_text(exc: urllib.error.HTTPError) -> str:
        """The status of a refusal and its OAuth `error` code when it is a registered one;
        nothing else the endpoint answered (it may echo the request, secret and all)."""
        try:
            doc = json.loads(exc.read(4096).decode("utf-8", errors="replace"))
        except (OSError, ValueError):
            doc = None
        code = doc.get("error") if isinstance(doc, Mapping) else None
        return f"HTTP {exc.code}" + (f": {code}" if code in OAUTH_ERRORS else "")

    def _clean(self, text: str) -> str:
        """`text` (a local error's) without the client secret, as it is, or as the request
        encoded it."""
        secret = self.client.client_secret.reveal()
        if not secret:
            return text
        pair = f"{self.client.client_id.reveal()}:{secret}".encode()
        for form in (secret, base64.b64encode(pair).decode(),
                     base64.b64encode(secret.encode()).decode(),
                     urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)):
            text = text.replace(form, "***")
        return text


def _claims(token: str) -> dict[str, Any]:
    """The claims of a JWT (not verified: the broker does that), or {} for another token."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except (ValueError, binascii.Error):
        return {}
    return claims if isinstance(claims, dict) else {}


class MskIamTokens(AbstractTokenProvider):  # type: ignore[misc]
    """MSK IAM tokens: signed in the process that made this source (the driver); a copy
    unpickled elsewhere holds only the token signed for it."""

    # The signer's tokens live 15 minutes: a copy made for a task gets one with at least
    # this much of it left.
    SHIPPED_LEFT = 0.75

    def __init__(self, cluster: str, region: str, role_arn: str | None = None,
                 profile: str | None = None) -> None:
        self.cluster = cluster
        self.region = region
        self.role_arn = role_arn
        self.profile = profile
        self._held: _Held | None = None
        self._signs = True
        self._guard = threading.Lock()

    def __repr__(self) -> str:
        return f"MskIamTokens(cluster={self.cluster!r}, region={self.region!r})"

    def __getstate__(self) -> dict[str, Any]:
        held = self._current(1 - self.SHIPPED_LEFT) if self._signs else self._held
        return {"cluster": self.cluster, "region": self.region, "held": held}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["cluster"], state["region"])  # type: ignore[misc]
        self._held = state["held"]
        self._signs = False

    def token(self) -> str:
        return self._current(RENEW_AFTER).token.reveal()

    def _current(self, keep: float) -> _Held:
        with self._guard:
            now = time.time()
            if self._held is not None and self._held.fresh(now, keep):
                return self._held
            if self._signs:
                self._held = self._sign()
                return self._held
            if self._held is not None and now < self._held.expires_at:
                return self._held
            raise ClusterUnreachable(
                f"cluster {self.cluster}: the MSK IAM token the driver signed for this task "
                "has expired (tokens live 15 minutes; a task this long needs a shorter "
                "kafka.batch_size)")

    def _sign(self) -> _Held:
        # Imported here: only the driver signs, and an executor has no boto3.
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider as signer

        now = time.time()
        try:
            if self.role_arn:
                token, expiry_ms = signer.generate_auth_token_from_role_arn(
                    self.region, self.role_arn)
            elif self.profile:
                token, expiry_ms = signer.generate_auth_token_from_profile(
                    self.region, self.profile)
            else:
                token, expiry_ms = signer.generate_auth_token(self.region)
        except AttributeError:
            # The signer reads `access_key` of what the chain found: None when it found none.
            raise ClusterUnreachable(
                f"cluster {self.cluster}: no AWS credentials to sign an MSK IAM token with "
                "(the default chain found none: environment, profile, instance or container "
                "role)") from None
        except Exception as exc:  # botocore's and STS's errors, whatever their kind
            raise ClusterUnreachable(
                f"cluster {self.cluster}: could not sign an MSK IAM token "
                f"({type(exc).__name__}: {str(exc)[:300]})") from None
        return _Held(Secret(token), now, expiry_ms / 1000)


def token_sources(credentials: Mapping[str, Credentials], clusters: Mapping[str, ClusterConf],
                  timeout_s: float = 30.0) -> dict[str, Credentials]:
    """`credentials` with the token source of every OAUTHBEARER and AWS_MSK_IAM cluster
    (made here, in the driver: an MSK source signs where it was made)."""
    out = dict(credentials)
    for name, cluster in clusters.items():
        found = out.get(name) or Credentials()
        if cluster.sasl_mechanism == "OAUTHBEARER" and found.oauth is not None:
            source: Any = OidcTokens(name, cluster.sasl_oauthbearer_token_endpoint_url or "",
                                     found.oauth, cluster.sasl_oauthbearer_scope, timeout_s,
                                     cluster.sasl_oauthbearer_extensions)
        elif cluster.sasl_mechanism == "AWS_MSK_IAM" and cluster.aws_region:
            source = MskIamTokens(name, cluster.aws_region, cluster.aws_role_arn,
                                  cluster.aws_profile)
        else:
            continue
        out[name] = Credentials(found.username, found.password, found.tls, found.oauth,
                                source)
    return out
