"""The per-node send the ACL requests use: the internals it needs are checked by name."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.kafka.compat import KafkaPythonIncompatible, send_to_node


class _Manager:
    def __init__(self, with_send: bool) -> None:
        self.sent: list[tuple[Any, ...]] = []
        if with_send:
            self.send = lambda request, node_id: ("future", request, node_id)

    def run(self, fn: Any, *args: Any) -> Any:
        self.sent.append(args)
        return fn(*args)


class _Client:
    def __init__(self, manager: _Manager | None) -> None:
        if manager is not None:
            self._manager = manager


def test_the_request_goes_through_the_connection_manager_to_the_node() -> None:
    manager = _Manager(with_send=True)
    assert send_to_node(_Client(manager), None, "req") == ("future", "req", None)  # type: ignore[arg-type]
    assert manager.sent == [("req", None)]


@pytest.mark.parametrize(("client", "missing"), [
    (_Client(None), "KafkaAdminClient()._manager"),
    (_Client(_Manager(with_send=False)), "KafkaAdminClient()._manager.send")])
def test_a_release_without_the_internals_is_named(client: _Client, missing: str) -> None:
    with pytest.raises(KafkaPythonIncompatible) as err:
        send_to_node(client, 3, "req")  # type: ignore[arg-type]
    assert str(err.value).startswith(f"kafka-python 3.0.12 has no {missing}, which this job "
                                     "uses to send admin requests to one broker with a "
                                     "result per item;")
