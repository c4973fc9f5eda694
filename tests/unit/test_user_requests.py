"""The SCRAM credential requests' pure parts: a user once a request, each answer's outcome,
and where a password is read from (naming the variable or file, never the value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from provisioning.conf import Secret
from provisioning.kinds.users.conf import PasswordSources, SourceRules, read_password
from provisioning.kinds.users.requests import Change, outcome, rounds

PW = Secret("s3cret-value")


def test_no_request_names_a_user_twice_and_none_is_over_batch_size() -> None:
    changes = [Change("a", "SCRAM-SHA-256"), Change("a", "SCRAM-SHA-512"),
               Change("b", "SCRAM-SHA-512"), Change("c", "SCRAM-SHA-512"),
               Change("b", "SCRAM-SHA-256")]
    assert list(rounds(changes, 2)) == [[0, 2], [3], [1, 4]]
    assert list(rounds(changes, 10)) == [[0, 2, 3], [1, 4]]
    assert list(rounds([], 10)) == []


@pytest.mark.parametrize(("change", "error", "attempts", "expected"), [
    (Change("a", "SCRAM-SHA-512", 8192, PW), "NONE", 1, "upserted"),
    (Change("a", "SCRAM-SHA-512"), "NONE", 1, "deleted"),
    # A deletion the broker found done (resent after a lost answer, or gone by hand).
    (Change("a", "SCRAM-SHA-512"), "RESOURCE_NOT_FOUND", 2, "deleted"),
    (Change("a", "SCRAM-SHA-512", 8192, PW), "UNACCEPTABLE_CREDENTIAL", 1, "rejected"),
    (Change("a", "SCRAM-SHA-512", 8192, PW), "CLUSTER_AUTHORIZATION_FAILED", 1, "rejected"),
    (Change("a", "SCRAM-SHA-512", 8192, PW), "DUPLICATE_RESOURCE", 1, "rejected"),
    (Change("a", "SCRAM-SHA-512", 8192, PW), "KafkaConnectionError", 1, "unknown"),
    (Change("a", "SCRAM-SHA-512", 8192, PW), "NOT_SENT", 0, "failed"),
    (Change("a", "SCRAM-SHA-512", 8192, PW), "KafkaConnectionError", 0, "failed"),
])
def test_each_answer_has_one_outcome(change: Change, error: str, attempts: int,
                                     expected: str) -> None:
    assert outcome(change, {"error_name": error, "attempts": attempts}) == expected


def test_a_change_shows_no_password() -> None:
    assert "s3cret" not in repr(Change("a", "SCRAM-SHA-512", 8192, PW))


def test_a_password_is_read_from_its_variable_or_file_and_problems_name_the_source(
        tmp_path: Path) -> None:
    good, empty, crlf = tmp_path / "pw", tmp_path / "empty", tmp_path / "crlf"
    good.write_text("from-file-password\n")
    empty.write_text("\n")
    crlf.write_text("windows-password\r\n")
    env = {"KUP_PW": "from-env-password", "KUP_BLANK": ""}
    rules = SourceRules(PasswordSources(env_prefix="KUP_", folders=(str(tmp_path),)))

    def read(var: str | None, file: Path | None) -> Secret | str:
        return read_password(var, None if file is None else str(file), env, rules, 8)

    assert read("KUP_PW", None) == Secret("from-env-password")
    assert read(None, good) == Secret("from-file-password")
    assert read(None, crlf) == Secret("windows-password")
    assert read("KUP_NOPE", None) == read("KUP_BLANK", None) == (
        "password_env: the variable it names holds no password (not set, or empty)")
    assert read(None, empty) == read(None, tmp_path / "missing") == (
        "password_file: the file it names gives no password (missing, unreadable, not a "
        "regular file, empty or over 4096 bytes)")
    assert read(None, None) == "password: no password_env or password_file"
