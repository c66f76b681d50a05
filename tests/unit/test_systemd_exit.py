"""systemd's own exit statuses and signals, as systemd-run reports them (systemd 252 and 257 forms, copied from
runs in tests/system containers); whose failure each is. tests/system/test_blame_fleet.py compares the table with
`systemd-analyze exit-status` of real Debian 12 and 13 hosts."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import systemd_exit


@pytest.mark.parametrize("text,expected", [
    ("code=exited, status=203/EXEC", ("exited", 203, "EXEC")),          # systemd 257
    ("code=exited/status=203", ("exited", 203, "EXEC")),                # systemd 252: the name from the table
    ("code=exited, status=226/NAMESPACE", ("exited", 226, "NAMESPACE")),
    ("code=exited/status=217", ("exited", 217, "USER")),
    ("code=killed, status=31/SYS", ("killed", 31, "SYS")),
    ("code=killed/status=SYS", ("killed", 31, "SYS")),
    ("code=dumped, status=11/SEGV", ("dumped", 11, "SEGV")),
    ("code=exited, status=1/FAILURE", ("exited", 1, "FAILURE")),
    ("code=exited/status=126", ("exited", 126, None)),
])
def test_parse_main(text, expected):
    assert tuple(systemd_exit.parse_main(text)) == expected


def test_unreadable_is_none():
    assert systemd_exit.parse_main("") is None and systemd_exit.parse_main(None) is None
    assert systemd_exit.parse_main("whatever") is None


def test_a_systemd_status_before_the_launcher_reported_is_systemds():
    failure = systemd_exit.unit_failure("code=exited/status=203", launcher_reported=False)
    assert failure["kind"] == "systemd_status" and failure["name"] == "EXEC" and "executing" in failure["meaning"]
    diag = systemd_exit.diagnostic(failure, "metnos")
    assert diag["code"] == "probe_unit_start_failed" and "203/EXEC" in diag["message"]
    assert "bwrap never ran" in diag["message"] and "bwrap exited" not in diag["message"]


def test_the_same_status_after_the_launcher_reported_is_the_commands():
    assert systemd_exit.unit_failure("code=exited, status=203/EXEC", launcher_reported=True) is None
    assert systemd_exit.unit_failure("code=exited, status=1/FAILURE",
                                     launcher_reported=False) is None    # not systemd's


def test_a_signal_before_bwrap_started_is_the_units():
    failure = systemd_exit.unit_failure("code=killed, status=31/SYS", launcher_reported=False)
    assert failure["kind"] == "signal_before_bwrap" and failure["name"] == "SYS"
    diag = systemd_exit.diagnostic(failure, "metnos")
    assert diag["code"] == "probe_unit_killed" and "SIGSYS before it started bwrap" in diag["message"]
    assert systemd_exit.unit_failure("code=killed, status=31/SYS", launcher_reported=True) is None
    assert systemd_exit.signal_number("code=killed/status=SYS") == systemd_exit.SIGSYS
    assert systemd_exit.signal_number("code=exited/status=0") is None


def test_the_table_covers_systemds_range():
    statuses = systemd_exit.EXIT_STATUSES
    assert min(statuses) == 200 and 243 in statuses and 223 not in statuses
    assert statuses[203] == "EXEC" and statuses[226] == "NAMESPACE" and statuses[217] == "USER"
