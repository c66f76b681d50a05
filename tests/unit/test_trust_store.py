"""bwrap verifications kept from one audit to the next (host/trust_store.py, bwrap_trust.Verifications(store)).

Real dpkg verifies this host's /usr/bin/bwrap. The package database whose changes must invalidate a kept
verification is, in most tests, a stand-in folder (``folders=``): a test cannot install, remove or rewrite
packages in this machine's /var/lib/dpkg. One test runs against the real database folders to prove the
reuse as the audit has it."""
import json
import os
import shutil

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap_trust, facts, trust_store

BWRAP = "/usr/bin/bwrap"
pytestmark = pytest.mark.skipif(not (shutil.which("dpkg") and os.path.exists(BWRAP)),
                                reason="needs dpkg and the packaged /usr/bin/bwrap (Debian)")


class Counting(object):
    """The real runner, every command it runs recorded."""

    def __init__(self, during=None):
        self.calls = []
        self.during = during

    def __call__(self, argv, *args, **kwargs):
        self.calls.append(" ".join(argv))
        if self.during and argv[:2] == ["dpkg", "--verify"]:
            self.during()
        return bwrap_trust.bwrap.default_runner(argv, *args, **kwargs)


def _folders(tmp_path):
    cache, db = tmp_path / "cache", tmp_path / "db"
    cache.mkdir(mode=0o700)
    db.mkdir()
    (db / "status").write_text("Package: bubblewrap\n")
    return str(cache / "x-3.trust"), str(db)


def _audit(store, db, runner=None):
    """One audit's verification of the packaged bwrap with its own Verifications on the store: (result, commands)."""
    runner = runner or Counting()
    verifications = bwrap_trust.Verifications(trust_store.Store(store, folders=(db,)))
    return bwrap_trust.verify(BWRAP, runner, verifications=verifications), runner.calls


def test_the_next_audit_reuses_a_packaged_verification_without_asking_dpkg(tmp_path):
    """As the audit has it (the real database folders): the first audit asks dpkg and keeps the answer in a
    root-only file; the next audit (a new Verifications) asks nothing and says exactly the same."""
    store = str(tmp_path / "x-3.trust")
    os.chmod(str(tmp_path), 0o700)
    first_calls, second_calls = Counting(), Counting()
    first = bwrap_trust.verify(BWRAP, first_calls, verifications=bwrap_trust.Verifications(trust_store.Store(store)))
    assert first["state"] == "packaged" and "dpkg --verify bubblewrap" in first_calls.calls
    st = os.stat(store)
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o600
    second = bwrap_trust.verify(BWRAP, second_calls, verifications=bwrap_trust.Verifications(trust_store.Store(store)))
    assert second == first and second_calls.calls == []
    assert bwrap_trust.verify(BWRAP, Counting(),
                              verifications=bwrap_trust.Verifications()) == first           # no store: the same answer


def test_a_changed_package_database_is_asked_again(tmp_path):
    """Any entry of a database folder written, added or removed since: the verification is not reused."""
    store, db = _folders(tmp_path)
    assert _audit(store, db)[1]
    assert _audit(store, db)[1] == []
    changes = [lambda: open(os.path.join(db, "status"), "a").write("Status: install ok installed\n"),
               lambda: open(os.path.join(db, "bubblewrap.md5sums"), "w").write("x"),
               lambda: os.unlink(os.path.join(db, "bubblewrap.md5sums")),
               lambda: os.chmod(os.path.join(db, "status"), 0o600)]
    for change in changes:
        change()
        result, calls = _audit(store, db)
        assert result["state"] == "packaged" and "dpkg --verify bubblewrap" in calls, change
        assert _audit(store, db)[1] == []                     # kept again, for the database as it is now


def test_the_packages_own_files_written_in_place_are_asked_again(tmp_path):
    """dpkg --verify reads info/NAME.md5sums: that file rewritten in place (its folder's entries unchanged)
    or removed is another database; so is the list file. The manager's files of the package are read with
    the stand-in layout ``package_files`` (this machine's /var/lib/dpkg/info is not the test's to write)."""
    store, db = _folders(tmp_path)
    info = tmp_path / "info"
    info.mkdir()
    for suffix in ("md5sums", "list"):
        (info / ("bubblewrap." + suffix)).write_text("original\n")
    layout = {"dpkg": (str(info / "{name}.md5sums"), str(info / "{name}.list"))}

    def audit():
        runner = Counting()
        kept = bwrap_trust.Verifications(trust_store.Store(store, folders=(db,), package_files=layout))
        out = bwrap_trust.verify(BWRAP, runner, verifications=kept)
        assert out["state"] == "packaged"
        return runner.calls

    assert audit() and audit() == []
    for change in (lambda: open(str(info / "bubblewrap.md5sums"), "r+").write("O"),
                   lambda: open(str(info / "bubblewrap.list"), "a").write("/usr/bin/x\n"),
                   lambda: os.unlink(str(info / "bubblewrap.list"))):
        change()
        assert "dpkg --verify bubblewrap" in audit() and audit() == []


def test_files_that_readers_write_are_no_change_but_a_commit_is(tmp_path):
    """rpm's SQLite database: every reader writes the -shm index and truncates the -wal journal to its size
    (only its ctime moves); Berkeley DB's __db.NNN regions likewise: none is a change of the database. A
    commit (the journal's size and mtime) is. A stand-in folder; the real rpm does this in
    tests/system/test_trust_store_pkghosts.py."""
    store, db = _folders(tmp_path)
    for name in ("rpmdb.sqlite-shm", "rpmdb.sqlite-wal", "__db.001"):
        open(os.path.join(db, name), "w").close()
    assert _audit(store, db)[1]
    for name in ("rpmdb.sqlite-shm", "__db.001"):
        with open(os.path.join(db, name), "w") as handle:
            handle.write("what a reader writes")
    os.chmod(os.path.join(db, "rpmdb.sqlite-wal"), 0o644)          # its ctime alone
    assert _audit(store, db)[1] == []
    with open(os.path.join(db, "rpmdb.sqlite-wal"), "a") as handle:
        handle.write("a commit")
    assert "dpkg --verify bubblewrap" in _audit(store, db)[1]


def test_a_verification_during_which_the_database_changed_is_not_kept(tmp_path):
    """dpkg ran while the database was being written (an upgrade in progress): its answer is used for this
    audit but not kept, so the next audit asks again."""
    store, db = _folders(tmp_path)
    result, calls = _audit(store, db, Counting(during=lambda: open(os.path.join(db, "status"), "a").write("x")))
    assert result["state"] == "packaged" and calls
    assert not os.path.exists(store)
    assert _audit(store, db)[1]


def _entry(store):
    with open(store) as handle:
        doc = json.load(handle)
    return doc


def _rewrite(store, doc):
    with open(store, "w") as handle:
        json.dump(doc, handle)
    os.chmod(store, 0o600)


def test_a_kept_verification_of_other_content_or_another_file_is_not_reused(tmp_path):
    """The entry must name the same file (path, real path, device, inode, size, mtime, ctime) and the same
    sha256, computed again at reuse: an entry whose digest or ctime differs (content swapped with the
    metadata restored, or another file) is not reused; dpkg is asked and the entry is replaced."""
    store, db = _folders(tmp_path)
    first, _calls = _audit(store, db)
    good = _entry(store)
    for field, value in (("sha256", "0" * 64), ("ident", good["entries"][0]["ident"][:4] + [1]),
                         ("real", "/usr/bin/other"), ("path", "/usr/local/bin/bwrap")):
        doc = json.loads(json.dumps(good))
        doc["entries"][0][field] = value
        _rewrite(store, doc)
        result, calls = _audit(store, db)
        assert result == first and "dpkg --verify bubblewrap" in calls, field
    assert _entry(store)["entries"][0] == good["entries"][0]


def test_a_store_anyone_else_could_write_or_of_another_shape_is_ignored(tmp_path):
    """Planted faults, each ignored as a whole (dpkg asked, the same answer): the store owned by a service
    user, group-readable/writable, hard-linked, a symlink, in a folder others can write, oversized, not JSON,
    another schema, an extra field, a wrong type, a kept state other than packaged-by-a-known-manager."""
    store, db = _folders(tmp_path)
    first, _calls = _audit(store, db)
    good = _entry(store)
    folder = os.path.dirname(store)

    def shape(change):
        def plant():
            doc = json.loads(json.dumps(good))
            change(doc)
            _rewrite(store, doc)
        return plant

    plants = [
        lambda: os.chown(store, 65534, 65534),
        lambda: os.chmod(store, 0o640),
        lambda: os.link(store, os.path.join(folder, "link")),
        lambda: (os.rename(store, store + ".real"), os.symlink(store + ".real", store)),
        lambda: os.chmod(folder, 0o777),
        lambda: open(store, "a").write(" " * trust_store.MAX_BYTES),
        lambda: open(store, "w").write("{not json"),
        shape(lambda d: d.update(schema="metnos-sandbox-trust/0")),
        shape(lambda d: d["entries"][0].update(extra=1)),
        shape(lambda d: d["entries"][0].update(ident=[str(i) for i in d["entries"][0]["ident"]])),
        shape(lambda d: d["entries"][0]["package"].update(manager="apk")),
        shape(lambda d: d["entries"][0]["package"].update(name="")),
        shape(lambda d: d.update(entries=d["entries"] * (trust_store.MAX_ENTRIES + 1))),
    ]
    for number, plant in enumerate(plants):
        plant()
        assert trust_store.read(store) == [], number
        result, calls = _audit(store, db)
        assert result == first and "dpkg --verify bubblewrap" in calls, number
        for name in os.listdir(folder):                     # undo: a fresh, good store
            path = os.path.join(folder, name)
            os.unlink(path)
        os.chmod(folder, 0o700)
        _rewrite(store, good)
        assert _audit(store, db)[1] == [], number


def _kept(store, db):
    """One audit's verifications, kept on the store."""
    return bwrap_trust.Verifications(trust_store.Store(store, folders=(db,)))


def _facts(store, db):
    """One audit's bwrap facts (facts.bwrap_info with its own Verifications on the store): (info, commands)."""
    runner = Counting()
    info = facts.bwrap_info(BWRAP, runner, verifications=_kept(store, db))
    return info, runner.calls


def test_the_answers_to_version_and_help_are_kept_with_the_verification(tmp_path):
    """The facts of the next audit come without running bwrap --version or --help, and are the same; once the
    package database changes they are asked again (with the verification); answers that do not parse as
    bwrap's (a planted entry) refuse the whole store. The facts without any store are the same too."""
    store, db = _folders(tmp_path)
    alone = facts.bwrap_info(BWRAP, Counting())
    first, calls = _facts(store, db)
    assert "%s --version" % BWRAP in calls and "%s --help" % BWRAP in calls
    assert first == alone and first["version"] and "--bind-fd" in first["features"]
    kept = _entry(store)["entries"][0]["answers"]
    assert kept == {"version": first["version"], "features": first["features"]}
    second, calls = _facts(store, db)
    assert second == first and calls == []
    with open(os.path.join(db, "status"), "a") as handle:
        handle.write("Status: install ok installed\n")
    third, calls = _facts(store, db)
    assert third == first and "%s --version" % BWRAP in calls and "dpkg --verify bubblewrap" in calls
    good = _entry(store)
    for answers in ({"version": "0.8.0", "features": ["--bind", "-x"]}, {"version": "", "features": []},
                    {"version": "0.8.0", "features": ["--b", "--a"]}, {"version": "0.8.0"}, ["0.8.0", []]):
        doc = json.loads(json.dumps(good))
        doc["entries"][0]["answers"] = answers
        _rewrite(store, doc)
        assert trust_store.read(store) == [], answers
        again, calls = _facts(store, db)
        assert again == first and "%s --help" % BWRAP in calls, answers


def test_answers_of_a_failed_command_are_not_kept(tmp_path):
    """bwrap --help that fails (here: a runner standing in for a bwrap whose --help exits 1, what the kernel
    cannot be made to do to the real one) leaves no answers kept: the next audit runs both again."""
    store, db = _folders(tmp_path)

    class HelpFails(Counting):
        def __call__(self, argv, *args, **kwargs):
            out = Counting.__call__(self, argv, *args, **kwargs)
            return (1,) + tuple(out[1:]) if argv[1:] == ["--help"] else out

    facts.bwrap_info(BWRAP, HelpFails(), verifications=_kept(store, db))
    assert _entry(store)["entries"][0]["answers"] is None
    _info, calls = _facts(store, db)
    assert "%s --version" % BWRAP in calls and "%s --help" % BWRAP in calls and "dpkg --verify bubblewrap" not in calls


def test_answers_of_a_file_that_changed_meanwhile_are_not_kept(tmp_path):
    """The file's ctime moves while it answers --help (its times set again to what they were: only the ctime
    changes, as with any write or chmod): the answers may be another file's, and are not kept."""
    store, db = _folders(tmp_path)

    class Touching(Counting):
        def __call__(self, argv, *args, **kwargs):
            if argv[1:] == ["--help"]:
                st = os.stat(BWRAP)
                os.utime(BWRAP, ns=(st.st_atime_ns, st.st_mtime_ns))
            return Counting.__call__(self, argv, *args, **kwargs)

    facts.bwrap_info(BWRAP, Touching(), verifications=_kept(store, db))
    assert all(e["answers"] is None for e in _entry(store)["entries"])


def test_only_packaged_verifications_are_kept_and_only_by_root(tmp_path):
    """A copy of bwrap elsewhere is unpackaged: asked again at every audit, never kept."""
    store, db = _folders(tmp_path)
    copy = str(tmp_path / "bwrap")
    shutil.copy(BWRAP, copy)
    for _audit_number in range(2):
        runner = Counting()
        out = bwrap_trust.verify(copy, runner, verifications=_kept(store, db))
        assert out["state"] == "unpackaged" and runner.calls
    assert not os.path.exists(store)


def test_database_state_moves_with_every_entry_and_stays_when_nothing_moves(tmp_path):
    db = tmp_path / "db"
    db.mkdir()
    (db / "status").write_text("a")
    state = trust_store.database_state((str(db), str(tmp_path / "absent")))
    assert state == trust_store.database_state((str(db),)) and len(state) == 64
    (db / "info").mkdir()
    assert trust_store.database_state((str(db),)) != state
