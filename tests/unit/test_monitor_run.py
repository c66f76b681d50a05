"""One monitor run on this machine, for real: the audit's checks and a real bwrap probe (as nobody: no
systemd here, so no service unit), the textfile, the stored result (root's alone) and the journal entries
(to a datagram socket standing in for journald's, which does not exist here), and every refusal of the
configuration and of its own install with its own code. The entry point runs as the unit runs it
(`/usr/bin/python3 -I -B`, the host's Python). The same on real systemd hosts: tests/system/test_monitor.py."""
import json
import os
import socket
import subprocess

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import monitor_state
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import core_install, proof
from helpers.paths import CORE, ROOT

ENTRY = os.path.join(ROOT, "roles", "metnos_sandbox", "files", "metnos-sandbox-monitor.py")
GOOD = {"schema": proof.CONFIG_SCHEMA, "audit": {"unit": "", "probe": True, "timeout": 30.0}}


def write(path, doc, mode=0o644):
    with open(str(path), "w") as handle:
        handle.write(doc if isinstance(doc, str) else json.dumps(doc))
    os.chmod(str(path), mode)
    return str(path)


class Journal(object):
    """A datagram socket where journald's would be; entries() decodes what arrived (FIELD=value lines only:
    the monitor's values have no newline)."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.setblocking(False)

    def entries(self):
        out = []
        while True:
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                return out
            out.append(dict(line.split("=", 1) for line in data.decode("utf-8").splitlines()))


@pytest.fixture
def place(tmp_path):
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import journald
    (tmp_path / "textfile").mkdir()
    journal = Journal(str(tmp_path / "journal.socket"))
    outputs = proof.Outputs(str(tmp_path / "textfile"), str(tmp_path / "last.json"),
                            lambda f: journald.send(f, journal.path))
    yield tmp_path, outputs, journal
    journal.sock.close()


def codes(record):
    return diagnostics.codes(record["audit"]["diagnostics"])


@pytest.mark.rule("R-DIAG-3")
def test_a_proven_run_writes_its_three_outputs_and_a_second_run_no_change_entry(place, bwrap_path):
    tmp, outputs, journal = place
    config = write(tmp / "config.json", GOOD)
    status, record = proof.run(config, outputs)
    assert status == 0 and record["proven"] is True, codes(record)
    assert record["audit"]["probe"]["passed"] is True and record["audit"]["probe"]["checks"]
    text = open(str(tmp / "textfile" / "metnos_sandbox.prom")).read()
    assert "metnos_sandbox_proven 1\n" in text
    stored = json.load(open(outputs.result))
    assert stored["proven"] is True and stored["previous"] is None and stored["changed"] is True
    assert oct(os.stat(outputs.result).st_mode & 0o777) == "0o600"
    assert monitor_state.check_record(stored, stored["finished"]) == stored               # what the audit collects
    first = journal.entries()
    assert [e["MESSAGE_ID"] for e in first] == ["d481d1a4e1fd4a90b5403a7166f36850",
                                                "b62d4811bc5e4898828471fdc99a2b73"]
    status, record = proof.run(config, outputs)
    assert status == 0 and record["previous"]["proven"] is True and record["changed"] is False
    assert [e["MESSAGE_ID"] for e in journal.entries()] == ["d481d1a4e1fd4a90b5403a7166f36850"]


@pytest.mark.parametrize("doc,why", [
    (None, "cannot be opened: No such file or directory"),
    ("{", "is not JSON"),
    ([], "it is not a metnos-sandbox-monitor-config/1 document"),
    ({"schema": "x", "audit": {}}, "it is not a metnos-sandbox-monitor-config/1 document"),
    ({"schema": proof.CONFIG_SCHEMA}, "it has no audit options"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {}, "run_as": "root"}, "unknown keys ['run_as']"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"python": "/usr/bin/python3"}}, "unknown audit options ['python']"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"timeout": "60"}}, "audit.timeout must be a float, not '60'"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"probe": 1}}, "audit.probe must be a bool, not 1"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"probe": False}}, "the monitor always runs the probe"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"scope": "global"}}, "audit.scope must be one of system, user"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"profile_dir": "rel/dir"}},
     "audit.profile_dir must be an absolute path"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"unit": "../../etc/x.service"}}, "is not a unit name"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"timeout": -1}}, "must be a positive number of seconds"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"timeout": 1e9}}, "audit.timeout is more than 3600 s"),
    ({"schema": proof.CONFIG_SCHEMA, "audit": {"manifests": "read_notes.yml"}}, "audit.manifests must be a list"),
])
def test_a_refused_configuration_runs_nothing_and_is_not_proven(place, doc, why):
    tmp, outputs, journal = place
    path = str(tmp / "config.json")
    if doc is not None:
        write(path, doc)
    status, record = proof.run(path, outputs)
    assert status == 1 and record["proven"] is False and record["audit"]["probe"] is None
    assert codes(record) == ["monitor_config_invalid"] and why in record["audit"]["diagnostics"][0]["message"]
    text = open(str(tmp / "textfile" / "metnos_sandbox.prom")).read()
    assert 'metnos_sandbox_check_ok{check="monitor"} 0' in text and "metnos_sandbox_proven 0" in text
    assert journal.entries()[0]["METNOS_SANDBOX_ERRORS"] == "monitor_config_invalid"


def test_a_too_large_configuration_is_refused_unread(place, monkeypatch):
    tmp, outputs, _journal = place
    monkeypatch.setattr(proof, "MAX_CONFIG_BYTES", 64)
    status, record = proof.run(write(tmp / "config.json", dict(GOOD, audit=dict(GOOD["audit"],
                                                                                host={"x": "y" * 64}))),
                               outputs)
    assert status == 1 and codes(record) == ["monitor_config_invalid"]
    assert "bytes; the limit is 64" in record["audit"]["diagnostics"][0]["message"]


@pytest.mark.parametrize("plant", ["mode", "owner", "dir"])
def test_a_configuration_others_can_change_is_not_used(place, plant):
    tmp, outputs, _journal = place
    folder = tmp / "etc"
    folder.mkdir()
    path = write(folder / "config.json", GOOD)
    if plant == "mode":
        os.chmod(path, 0o666)
    elif plant == "owner":
        os.chown(path, 65534, 65534)
    else:
        os.chmod(str(folder), 0o777)
    status, record = proof.run(path, outputs)
    assert status == 1 and codes(record) == ["monitor_config_unsafe"], codes(record)
    assert record["audit"]["probe"] is None


def install(tmp_path):
    """The role's layout, by the role's module's core: <prefix>/<release>/{entry point, metnos_sandbox/}."""
    return core_install.install(str(tmp_path / "prefix"), core_install.release(CORE, bundle=True)["bundle"],
                                open(ENTRY).read())["folder"]


def test_its_own_install_is_checked(tmp_path):
    folder = install(tmp_path)
    assert proof.install_findings(folder, "h") == []
    core = os.path.join(folder, "metnos_sandbox")
    os.chmod(os.path.join(core, "probe", "run.py"), 0o664)
    found = proof.install_findings(folder, "h")
    assert diagnostics.codes(found) == ["monitor_core_writable"]
    assert "run.py is writable by group" in found[0]["message"]
    os.chmod(os.path.join(core, "probe", "run.py"), 0o644)
    os.chown(folder, 65534, 0)
    assert diagnostics.codes(proof.install_findings(folder, "h")) == ["monitor_core_writable"]
    os.chown(folder, 0, 0)
    with open(os.path.join(core, "host", "facts.py"), "a") as handle:
        handle.write("# changed\n")
    found = proof.install_findings(folder, "h")
    assert diagnostics.codes(found) == ["monitor_core_modified"] and os.path.basename(folder) in found[0]["message"]
    assert diagnostics.codes(proof.install_findings(str(tmp_path / "prefix"), "h")) == ["monitor_core_modified"]


def test_the_entry_point_runs_as_the_unit_runs_it(tmp_path, bwrap_path):
    """/usr/bin/python3 -I -B: the host's interpreter, no environment, no user site, no bytecode; the core is
    imported by its bare name from the release folder only."""
    folder = install(tmp_path)
    config = write(tmp_path / "config.json", GOOD)
    (tmp_path / "textfile").mkdir()
    proc = subprocess.run(["/usr/bin/python3", "-I", "-B", os.path.join(folder, "metnos-sandbox-monitor.py"),
                           "--config", config, "--textfile-dir", str(tmp_path / "textfile"),
                           "--result", str(tmp_path / "last.json")], capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONPATH": "/nonexistent"}, cwd="/")
    assert proc.returncode == 0, proc.stderr
    stored = json.load(open(str(tmp_path / "last.json")))
    assert stored["proven"] is True and stored["toolkit_version"] == os.path.basename(folder)
    assert "Metnos sandbox proven for none" in proc.stderr                     # no journal here: said on stderr
    assert not [n for _b, _d, names in os.walk(folder) for n in names if n.endswith(".pyc")]
    bad = subprocess.run(["/usr/bin/python3", "-I", "-B", os.path.join(folder, "metnos-sandbox-monitor.py"),
                          "--result", "relative.json"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--result must be an absolute path" in bad.stderr


def test_an_output_that_cannot_be_written_is_exit_2_and_said(place):
    tmp, outputs, journal = place
    outputs.textfile_dir = str(tmp / "no-such-dir")
    status, record = proof.run(write(tmp / "config.json", GOOD), outputs)
    assert status == 2 and record["proven"] is False
    assert "monitor_output_failed" in codes(record)
    assert "monitor_output_failed" in json.load(open(outputs.result))["audit"]["diagnostics"][0]["code"]
    assert journal.entries()[0]["METNOS_SANDBOX_PROVEN"] == "0"


def test_a_defect_of_the_checks_is_a_finding_not_a_traceback(place):
    tmp, outputs, _journal = place

    def broken(argv, **_kw):
        raise RuntimeError("boom")
    status, record = proof.run(write(tmp / "config.json", GOOD), outputs, runner=broken)
    assert status == 1 and codes(record) == ["monitor_run_failed"]
    assert record["audit"]["diagnostics"][0]["message"] == "The monitor's run failed: 'RuntimeError: boom'."


def test_an_error_is_not_proven_even_when_the_probe_passed(place, bwrap_path):
    """Proven is the probe AND no error: here the probe passes but the monitor's own install is not root's alone."""
    tmp, outputs, journal = place
    folder = install(tmp)
    os.chmod(os.path.join(folder, "metnos_sandbox", "audit", "host_audit.py"), 0o666)
    status, record = proof.run(write(tmp / "config.json", GOOD), outputs, folder)
    assert record["audit"]["probe"]["passed"] is True
    assert status == 1 and record["proven"] is False and record["verdict"] == "fail"
    assert codes(record)[0] == "monitor_core_writable" and record["toolkit_version"] == os.path.basename(folder)
    assert journal.entries()[0]["METNOS_SANDBOX_ERRORS"] == "monitor_core_writable"
