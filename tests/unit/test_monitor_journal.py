"""The monitor's journal entries: journald's native protocol, sent over a real AF_UNIX datagram socket and
decoded here by the protocol's rules; one entry per run, a second one with its own MESSAGE_ID only when the
verdict changed. journald itself reads them in tests/system/test_monitor.py (no journald on this machine)."""
import socket
import struct

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import journald


def decode(data):
    """Native protocol -> {field: value}: FIELD=value lines, or FIELD\\n<le64 length><value>\\n."""
    out, i = {}, 0
    while i < len(data):
        end = data.index(b"\n", i)
        line = data[i:end]
        if b"=" in line:
            key, value = line.split(b"=", 1)
            i = end + 1
        else:
            key = line
            (size,) = struct.unpack("<Q", data[end + 1:end + 9])
            value = data[end + 9:end + 9 + size]
            assert data[end + 9 + size:end + 10 + size] == b"\n"
            i = end + 10 + size
        assert key not in out
        out[key.decode("ascii")] = value.decode("utf-8")
    return out


def rec(proven, verdict, codes=()):
    return {"proven": proven, "verdict": verdict, "unit": "metnos.service", "duration": 1.25,
            "toolkit_version": "0.1.0+0123456789ab",
            "audit": {"diagnostics": [diagnostics.make(c, unit="metnos.service") if c != "bwrap_not_packaged" else
                                      diagnostics.make(c, bwrap_path="/opt/b") for c in codes]}}


@pytest.fixture
def journal_socket(tmp_path):
    """A datagram socket where journald's would be: what send() writes arrives here."""
    path = str(tmp_path / "socket")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    yield path, sock
    sock.close()


def test_entries_travel_as_one_datagram_each(journal_socket):
    path, sock = journal_socket
    fields = journald.run_entry(rec(False, "fail", ["unit_blocks_namespaces"]))
    fields["METNOS_SANDBOX_NOTE"] = "two\nlines"         # a value with a newline takes the binary form
    assert journald.send(fields, path) is None
    got = decode(sock.recv(65536))
    assert got == dict((k, str(v)) for k, v in fields.items())
    assert got["MESSAGE_ID"] == journald.RUN_ID
    assert got["PRIORITY"] == "3" and got["METNOS_SANDBOX_PROVEN"] == "0"
    assert got["SYSLOG_IDENTIFIER"] == "metnos-sandbox-monitor"
    assert got["METNOS_SANDBOX_ERRORS"] == "unit_blocks_namespaces"
    assert got["MESSAGE"] == ("Metnos sandbox NOT proven for metnos.service (verdict fail): unit_blocks_namespaces; "
                              "1.2 s.")


def test_no_journal_is_said_not_raised(tmp_path):
    assert "No such file or directory" in journald.send({"MESSAGE": "x"}, str(tmp_path / "none"))


def test_values_are_bounded_and_field_names_fixed(journal_socket):
    path, sock = journal_socket
    assert journald.send({"MESSAGE": "x" * 100000}, path) is None
    assert len(decode(sock.recv(200000))["MESSAGE"]) == journald.MAX_VALUE
    with pytest.raises(ValueError):
        journald.encode({"MESSAGE\nPRIORITY": "0"})
    with pytest.raises(ValueError):
        journald.encode({"_PID": "1"})               # trusted fields are journald's own


@pytest.mark.parametrize("previous,now,changed,priority", [
    (None, rec(True, "pass"), True, "5"),
    ({"proven": True, "verdict": "pass"}, rec(True, "pass"), False, None),
    ({"proven": True, "verdict": "pass"}, rec(True, "warn", ["bwrap_not_packaged"]), True, "5"),
    ({"proven": True, "verdict": "pass"}, rec(False, "fail", ["unit_blocks_namespaces"]), True, "2"),
    ({"proven": False, "verdict": "fail"}, rec(False, "fail", ["sandbox_disabled_via_env"]), False, None),
    ({"proven": False, "verdict": "fail"}, rec(True, "pass"), True, "5"),
])
def test_a_change_entry_only_when_the_verdict_changes(previous, now, changed, priority):
    assert journald.changed(now, previous) is changed
    if changed:
        entry = journald.change_entry(now, previous)
        assert entry["MESSAGE_ID"] == journald.CHANGED_ID != journald.RUN_ID
        assert entry["PRIORITY"] == priority
        assert entry["METNOS_SANDBOX_PREVIOUS_PROVEN"] == ("none" if previous is None else
                                                          ("1" if previous["proven"] else "0"))


def test_change_message_says_from_what_to_what():
    entry = journald.change_entry(rec(False, "fail", ["unit_blocks_namespaces"]), {"proven": True, "verdict": "pass"})
    assert entry["MESSAGE"] == ("Metnos sandbox proof changed for metnos.service: proven (pass) -> NOT proven (fail) "
                                "(unit_blocks_namespaces).")
