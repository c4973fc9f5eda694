"""The one use of kafka-python internals: checked against the installed release before a run
reads any cluster."""

from __future__ import annotations

import logging

import pytest
from kafka import KafkaAdminClient

from provisioning.kafka.compat import KafkaPythonIncompatible, check_installed


class MovedInternals:
    """An admin client class of a release that renamed the private controller call."""

    def _send_to_controller(self) -> None:  # not the name the job uses
        pass


def test_the_installed_release_passes_without_a_warning(caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    with caplog.at_level(logging.WARNING, logger="provisioning.kafka.compat"):
        check_installed()
    assert caplog.records == []


def test_a_release_whose_internals_moved_stops_the_run_naming_what_moved() -> None:
    with pytest.raises(KafkaPythonIncompatible) as err:
        check_installed(client_class=MovedInternals)
    assert err.value.exit_code == 2
    assert "has no KafkaAdminClient._send_request_to_controller, which this job uses" \
        in str(err.value)
    assert "install that version (pyproject.toml pins it)" in str(err.value)


def test_an_untested_release_is_named_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="provisioning.kafka.compat"):
        check_installed(version="3.1.0", client_class=KafkaAdminClient)
    assert [r.getMessage() for r in caplog.records] == [
        "kafka-python 3.1.0 is installed; the job was written against 3.0.x: its use of the "
        "admin client's internals is checked, not tested"]
