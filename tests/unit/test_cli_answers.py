"""What the command line answers without Spark (provisioning.cli.answers): help, the version
and usage errors, each with click's exit code; arguments that name a run are left alone."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import provisioning
from provisioning.cli import main
from provisioning.cli.answers import answer
from tests.helpers import REPO


def test_help_and_the_version_are_answered_with_exit_0(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    assert answer(main, ["--version"], "provision-topics") == 0
    assert capsys.readouterr().out == f"provision-topics {provisioning.package_version()}\n"
    assert answer(main, ["--help"], "provision-topics") == 0
    assert capsys.readouterr().out.startswith("Usage: provision-topics [OPTIONS] COMMAND")
    assert answer(main, ["apply", "--conf", "c.yaml", "--help"], "provision-topics") == 0
    assert capsys.readouterr().out.startswith("Usage: provision-topics apply [OPTIONS]\n")


@pytest.mark.parametrize(("args", "error"), [
    ([], None),  # click's help for a group run bare, as a usage error
    (["bogus"], "Error: No such command 'bogus'."),
    (["apply"], "Error: Missing option '--conf'."),
    (["plan", "--conf", "c.yaml", "--format", "pdf"],
     "Error: Invalid value for '--format': 'pdf' is not one of 'text', 'markdown'."),
    (["apply", "--conf", "c.yaml", "--remote", "http://h:1"],
     "Error: Invalid value for '--remote': expected sc://HOST:PORT, got 'http://h:1'"),
], ids=["bare", "no-such-command", "missing-conf", "bad-choice", "bad-remote"])
def test_usage_errors_are_answered_with_exit_2_on_stderr(
        args: list[str], error: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    assert answer(main, args, "provision-topics") == 2
    shown = capsys.readouterr()
    assert shown.out == ""
    if error is None:
        assert shown.err.startswith("Usage: provision-topics [OPTIONS] COMMAND [ARGS]...\n")
    else:
        assert shown.err.splitlines()[-1] == error


def test_arguments_that_name_a_run_are_left_to_the_driver(
        capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["apply", "--conf", "c.yaml", "--allow-deletes", "--json"],
                 ["report", "--conf", "c.yaml", "--topic", "t", "--limit", "3"]):
        assert answer(main, args, "provision-topics") is None
    assert capsys.readouterr() == ("", "")


def test_the_version_is_the_one_pyproject_declares() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert (provisioning.package_version(), provisioning.__version__) == (declared, declared)


def test_an_old_removal_flag_is_taken_with_a_warning_naming_the_new_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--allow-revokes` is still taken, hidden from the help, and warns before the run
    starts (which here stops at its missing conf)."""
    missing = tmp_path / "missing.yaml"
    with pytest.raises(SystemExit) as done:
        main.main(["apply", "--conf", str(missing), "--allow-revokes"],
                  prog_name="provision-topics")
    assert done.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("warning: --allow-revokes is deprecated and will be removed; use "
                      "--allow-acl-removals")
    assert err[1:] == [f"error: invalid conf {missing}: 1 problem(s)",
                       "  - cannot read the file: No such file or directory"]
    assert answer(main, ["apply", "--conf", "c.yaml", "--help"], "provision-topics") == 0
    shown = capsys.readouterr().out
    assert "--allow-acl-removals" in shown and "--allow-revokes" not in shown
