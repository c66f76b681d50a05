"""Only the packaged bwrap is trusted (issue 20): the verifiers' output formats, parsed exactly as the tools
print them in the C locale (dpkg src/main/verify.c, rpm lib/verify.c, pacman src/pacman/check.c; rpm and
pacman are not on this Debian host, so their runs are fake runners returning those formats - said so where
used), the states verify() derives, and dpkg for real on this host's own bubblewrap (a modified copy bound
over /usr/bin/bwrap in a private mount namespace is caught by the matrix's bwrap_modified row)."""
import hashlib
import os
import shutil

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap_trust
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec

BWRAP = "/usr/bin/bwrap"


@pytest.mark.parametrize("out,state", [
    ("", "ok"),
    ("??5??????   /usr/bin/bwrap\n", "modified"),
    ("??5?????? c /etc/foo\n", "ok"),                       # another file of the package
    ("missing     /usr/bin/bwrap\n", "missing"),
    ("?????????   /usr/bin/bwrap\n", "unverifiable"),        # dpkg could not read it: not proof
])
def test_dpkg_verify_lines(out, state):
    assert bwrap_trust.parse_dpkg_verify(out, BWRAP)[0] == state


@pytest.mark.parametrize("out,state", [
    ("", "ok"),
    (".......T.    /usr/bin/bwrap\n", "ok"),                  # touched: the package's content
    ("S.5....T.    /usr/bin/bwrap\n", "modified"),
    (".M.......    /usr/bin/bwrap\n", "modified"),            # mode (setuid added)
    ("missing     /usr/bin/bwrap\n", "missing"),
    ("..?......    /usr/bin/bwrap\n", "unverifiable"),
    ("S.5....T.  c /etc/bwrap.conf\n", "ok"),
])
def test_rpm_verify_lines(out, state):
    assert bwrap_trust.parse_rpm_verify(out, BWRAP)[0] == state


@pytest.mark.parametrize("out,err,state", [
    ("bubblewrap: 12 total files, 0 altered files\n", "", "ok"),
    ("bubblewrap: 12 total files, 1 altered file\n",
     "warning: bubblewrap: /usr/bin/bwrap (SHA256 checksum mismatch)\n", "modified"),
    ("bubblewrap: 12 total files, 1 altered file\n",
     "warning: bubblewrap: /usr/bin/bwrap (Modification time mismatch)\n", "ok"),
    ("bubblewrap: 12 total files, 1 altered file\n",
     "warning: bubblewrap: /usr/bin/bwrap (Permissions mismatch)\n", "modified"),
    ("bubblewrap: 12 total files, 1 altered file\n",
     "warning: bubblewrap: /usr/bin/bwrap (No such file or directory)\n", "missing"),
    ("bubblewrap: 12 total files, 1 altered file\n",
     "warning: bubblewrap: /usr/bin/bwrap (SHA256 checksum information not available)\n", "unverifiable"),
    ("bubblewrap: no mtree file\n", "", "unverifiable"),
    ("", "error: package 'bubblewrap' was not found\n", "unverifiable"),
])
def test_pacman_verify_lines(out, err, state):
    assert bwrap_trust.parse_pacman_verify(out, err, BWRAP)[0] == state


class FakeDb(object):
    """A package database that cannot exist here (rpm, pacman hosts): each tool's answer in its format."""

    def __init__(self, manager, verify_out, verify_rc=0, verify_err=""):
        self.manager, self.out, self.rc, self.err = manager, verify_out, verify_rc, verify_err

    def tool_on(self, tool):
        return {"rpm": "/usr/bin/rpm", "pacman": "/usr/bin/pacman"}.get(tool) if tool in (
            "rpm", "pacman") and tool == self.manager else None

    def run(self, argv, **_kw):
        if argv[:2] == ["rpm", "-qf"]:
            return 0, "bubblewrap\t0:0.10.0-2.el10\n", ""
        if argv[:2] == ["pacman", "-Qo"]:
            return 0, "%s is owned by bubblewrap 0.11.0-1\n" % argv[2], ""
        if argv[:2] in (["rpm", "-V"], ["pacman", "-Qkk"]):
            return self.rc, self.out, self.err
        return 127, "", "not here"


def _binary(tmp_path, content=b"\x7fELF fake bwrap\n"):
    tmp_path.chmod(0o755)
    path = tmp_path / "bwrap"
    path.write_bytes(content)
    path.chmod(0o755)
    return str(path)


def test_rpm_host_packaged_and_modified(tmp_path):
    path = _binary(tmp_path)
    ok = bwrap_trust.verify(path, FakeDb("rpm", "").run, tool_on=FakeDb("rpm", "").tool_on)
    assert ok["state"] == "packaged" and ok["trusted"] and ok["package"]["manager"] == "rpm"
    db = FakeDb("rpm", "S.5....T.    %s\n" % path, verify_rc=1)
    bad = bwrap_trust.verify(path, db.run, tool_on=db.tool_on)
    assert bad["state"] == "modified" and not bad["trusted"]
    assert [d["code"] for d in bwrap_trust.diagnostics({"bwrap": bad})] == ["probe_bwrap_modified"]


def test_pacman_host_modified(tmp_path):
    path = _binary(tmp_path)
    db = FakeDb("pacman", "bubblewrap: 12 total files, 1 altered file\n", 1,
                "warning: bubblewrap: %s (SHA256 checksum mismatch)\n" % path)
    assert bwrap_trust.verify(path, db.run, tool_on=db.tool_on)["state"] == "modified"


def test_unpackaged_is_refused_unless_its_sha256_is_accepted(tmp_path):
    path = _binary(tmp_path)
    nobody = FakeDb("none", "")
    got = bwrap_trust.verify(path, nobody.run, tool_on=nobody.tool_on)
    assert got["state"] == "unpackaged" and not got["trusted"]
    (diag,) = bwrap_trust.diagnostics({"bwrap": got})
    assert diag["code"] == "probe_bwrap_unpackaged" and got["sha256"] in diag["message"]
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    got = bwrap_trust.verify(path, nobody.run, accepted=[digest], tool_on=nobody.tool_on)
    assert got["state"] == "accepted" and got["trusted"]
    (diag,) = bwrap_trust.diagnostics({"bwrap": got})
    assert diag["code"] == "probe_bwrap_accepted" and diag["severity"] == "info" and digest in diag["message"]


def test_a_verifier_that_fails_is_not_proof(tmp_path):
    path = _binary(tmp_path)
    db = FakeDb("rpm", "", verify_rc=2, verify_err="error: rpmdb: damaged\n")
    got = bwrap_trust.verify(path, db.run, tool_on=db.tool_on)
    assert got["state"] == "unverifiable" and not got["trusted"]
    assert [d["code"] for d in bwrap_trust.diagnostics({"bwrap": got})] == ["probe_bwrap_unverified"]


def test_accepted_digests_are_exactly_64_hex_digits():
    good, bad = bwrap_trust.normalise_accepted(["A" * 64, " " + "b" * 64 + " ", "c" * 63, "sha256:" + "d" * 64])
    assert good == ["a" * 64, "b" * 64] and len(bad) == 2
    spec.sha256_list(["a" * 64])
    with pytest.raises(spec.OptionError, match="is not a sha256 digest"):
        spec.sha256_list(["a" * 64, "nope"])


@pytest.mark.skipif(not shutil.which("dpkg"), reason="needs dpkg (Debian)")
def test_dpkg_for_real_this_hosts_bwrap_is_packaged_and_a_copy_is_not(tmp_path):
    """The real dpkg database of this host: /usr/bin/bwrap is bubblewrap's and unchanged; a copy of it (the
    same bytes) elsewhere is not packaged, but is trusted once its sha256 is accepted."""
    trust = bwrap_trust.for_run(BWRAP)
    assert trust["bwrap"]["state"] == "packaged", trust
    assert trust["bwrap"]["package"]["name"] == "bubblewrap" and trust["packaged"] is None
    st = os.stat(BWRAP)
    assert trust["ids"] == [[st.st_dev, st.st_ino]]
    copy = _binary(tmp_path, open(BWRAP, "rb").read())
    trust = bwrap_trust.for_run(copy)
    assert trust["bwrap"]["state"] == "unpackaged" and trust["packaged"]["state"] == "packaged"
    assert trust["ids"] == [[st.st_dev, st.st_ino]]                  # the packaged one only
    trust = bwrap_trust.for_run(copy, accepted=[trust["bwrap"]["sha256"]])
    assert trust["bwrap"]["state"] == "accepted" and len(trust["ids"]) == 2


@pytest.mark.skipif(not shutil.which("dpkg"), reason="needs dpkg (Debian)")
def test_the_audits_verifications_ask_the_package_manager_once_per_file_until_the_file_changes(tmp_path):
    """The audit's Verifications, with this host's real dpkg: the packaged bwrap verified twice asks dpkg once and
    says the same; a copy elsewhere is another file (asked about); once the copy is written again (its mtime
    and ctime move) it is asked about again, and a copy made packaged-looking by nothing stays unpackaged."""
    calls = []

    def counting(argv, *args, **kwargs):
        calls.append(" ".join(argv))
        return bwrap_trust.bwrap.default_runner(argv, *args, **kwargs)

    verifications = bwrap_trust.Verifications()
    first = bwrap_trust.verify(BWRAP, counting, verifications=verifications)
    asked = list(calls)
    assert first["state"] == "packaged" and "dpkg --verify bubblewrap" in asked
    again = bwrap_trust.verify(BWRAP, counting, verifications=verifications)
    assert again == first and calls == asked                       # nothing asked the second time
    assert bwrap_trust.verify(BWRAP, counting) == first and len(calls) == 2 * len(asked)   # none kept: asked again
    copy = _binary(tmp_path, open(BWRAP, "rb").read())
    del calls[:]
    assert bwrap_trust.verify(copy, counting, verifications=verifications)["state"] == "unpackaged" and calls
    del calls[:]
    assert bwrap_trust.verify(copy, counting, verifications=verifications)["state"] == "unpackaged" and not calls
    with open(copy, "ab") as handle:
        handle.write(b"\0")
    changed = bwrap_trust.verify(copy, counting, verifications=verifications)
    assert changed["state"] == "unpackaged" and calls   # changed: asked again
