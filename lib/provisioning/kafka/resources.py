"""DescribeConfigs and IncrementalAlterConfigs of config resources of any type (a group, a
broker, a topic: KIP-4, KIP-339), each resource with its own answer.

Both are sent again while they could not be sent or their answer was lost, for up to
`kafka.request_timeout_ms` from the first loss (`kafka.requests.send_resending`): reading
configs again changes nothing, and setting configs to the same values again sets nothing
new. A change still unanswered then has an answer of its own (code -1, the attempts that
may have reached a broker), which the caller's outcome reads as `unknown` or `failed`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kafka.protocol.admin import DescribeConfigsRequest, IncrementalAlterConfigsRequest

from provisioning import names
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import error_name
from provisioning.kafka.compat import send_to_node
from provisioning.kafka.requests import Unanswered, send_resending

_USE = "DescribeConfigs and IncrementalAlterConfigs with each resource's answer"


def answer(code: int, message: str | None, attempts: int = 1) -> dict[str, Any]:
    """One resource's answer, as a result row's error columns."""
    return {"error_code": code, "error_name": error_name(code),
            "error_message": message or None, "attempts": attempts}


def _send(admin: ClusterAdmin, request: Any, what: str) -> tuple[Any, int]:
    return send_resending(admin, lambda: send_to_node(admin.client, None, request, use=_USE),
                          what)


def read_configs(admin: ClusterAdmin, resource_type: int, resources: Sequence[str],
                 source: int, refused: Callable[[str, str | None], Exception],
                 batch_size: int = 200) -> dict[str, dict[str, str]]:
    """resource -> its configs of `source` (a resource without any: {}), `batch_size`
    resources a request. A resource the broker will not describe raises `refused(error
    name, message)`; an answer lost past the deadline raises its error."""
    resource_cls = DescribeConfigsRequest.DescribeConfigsResource
    found: dict[str, dict[str, str]] = {}
    for start in range(0, len(resources), batch_size):
        request = DescribeConfigsRequest(resources=[
            resource_cls(resource_type=resource_type, resource_name=r, configuration_keys=None)
            for r in resources[start:start + batch_size]], include_synonyms=False)
        try:
            response, _ = _send(admin, request, "a DescribeConfigs request")
        except Unanswered as lost:
            raise lost.cause from None
        for result in response.results:
            if result.error_code:
                raise refused(error_name(int(result.error_code)), result.error_message)
            found[result.resource_name] = {c.name: c.value for c in result.configs
                                           if int(c.config_source) == source
                                           and c.value is not None}
    return found


def set_configs(admin: ClusterAdmin, resource_type: int,
                changes: Sequence[tuple[str, Mapping[str, str]]], validate_only: bool,
                batch_size: int, sent: Callable[[Sequence[str]], None] = lambda _: None,
                noun: str = "resource") -> Iterator[tuple[str, dict[str, Any]]]:
    """(resource, answer) for each (resource, configs to set), `batch_size` resources a
    request; a resource's configs are set together or not at all. `sent` is told of each
    request's resources just before it goes; an answer's messages call it a `noun`."""
    resource_cls = IncrementalAlterConfigsRequest.AlterConfigsResource
    config_cls = resource_cls.AlterableConfig
    for start in range(0, len(changes), batch_size):
        batch = changes[start:start + batch_size]
        request = IncrementalAlterConfigsRequest(resources=[resource_cls(
            resource_type=resource_type, resource_name=resource,
            configs=[config_cls(name=k, config_operation=names.CONFIG_OPS[names.SET], value=v)
                     for k, v in sorted(configs.items())]) for resource, configs in batch],
            validate_only=validate_only)
        sent([r for r, _ in batch])
        try:
            response, sends = _send(admin, request, "an IncrementalAlterConfigs request")
        except Unanswered as lost:
            gone = type(lost.cause).__name__
            for resource, _ in batch:
                yield resource, {**answer(-1, f"no answer within kafka.request_timeout_ms "
                                              f"({gone})", lost.sends), "error_name": gone}
            continue
        answers = {r.resource_name: r for r in response.responses}
        for resource, _ in batch:
            r = answers.get(resource)
            yield resource, (answer(-1, f"the broker's response did not answer this {noun}",
                                    sends) if r is None
                             else answer(int(r.error_code), r.error_message, sends))
