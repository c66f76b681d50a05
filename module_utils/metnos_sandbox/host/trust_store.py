# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A bwrap file's package verification kept from one audit to the next (issue 22).

Asking the package manager (``dpkg-query -L``, ``dpkg-query -W``, ``dpkg --verify``) costs an audited host
CPU at every audit (docs/benchmarks.md), for an answer that only changes when the file or the package database
does. A verification whose state is ``packaged`` is therefore kept in a file of the audit's cache folder
(``/run/metnos-audit``, beside the compiled core and named after it: another toolkit version never reads
it), and reused only while everything it was drawn from is as it was:

- the file: the same path, resolving to the same real path, with the same device, inode, size, mtime and
  ctime (no process can set a ctime back: a file written, replaced, re-linked or re-moded since has
  another), and the same sha256, computed again at each reuse (evidence from the file itself, not from
  its metadata alone);
- the package databases: the same identity (device, inode, size, mtime, ctime) of each database folder
  that exists (dpkg ``/var/lib/dpkg``, rpm ``/var/lib/rpm`` and ``/usr/lib/sysimage/rpm``, pacman
  ``/var/lib/pacman/local``), of every entry directly in it, and of the files the manager reads for that
  package (dpkg ``info/NAME.md5sums``, ``.list``, ``.conffiles``; pacman ``local/NAME-REVISION/desc``,
  ``files``, ``mtree``; rpm keeps everything in the files directly in its folder): an install, a removal,
  an upgrade, a rewritten status, list or checksum file changes one of them. Not counted: the files that
  readers write (``READERS_WRITE``: SQLite's ``-shm`` index beside rpm's rpmdb.sqlite, Berkeley DB's
  ``__db.NNN`` regions of older rpm databases): every ``rpm -V`` changes them, and the content they
  describe lives in the files that are counted; nor the ctime of SQLite's ``-wal`` journal (a reader that
  closes the database truncates it to its size: only the ctime moves; a commit changes its size and
  mtime). The folders are read before the verification and again after it; a verification during which
  they changed is not kept.

The store is read only when it is a regular file of root's, mode 0600, with one link, every folder above it
root's and writable by no one else (sticky root folders excepted), at most ``MAX_BYTES``, and exactly of the
shape ``write`` gives it; anything else is ignored as a whole (the file is then verified as if there were
no store). Only root writes it, atomically. Other states (modified, unpackaged, unverifiable) are never
kept: they are asked again at every audit.

With a kept verification the entry also keeps what the file answered to ``--version`` and ``--help`` in that
audit (``answers``: the version and the options its help lists, as host/bwrap.py parses them, asked at every
audit otherwise): bwrap prints both from constants compiled into it, so the same content (the sha256 above) gives
the same answers, and they are dropped with the entry whenever the file or the package databases change.
Answers are kept only when both commands succeeded. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import hashlib
import json
import os
import re
import stat
import types
import typing as t

from ..base import files
from ..base.records import Json
from . import bwrap

Key = t.Tuple[str, str, t.Tuple[int, ...]]
Verified = t.Tuple[t.Any, ...]
Answers = t.Tuple[t.Optional[str], t.List[str]]
"""(version, features): bwrap's --version and --help, parsed (host/bwrap.py parse_version, parse_features)."""

SCHEMA = "metnos-sandbox-trust/2"
DATABASES = ("/var/lib/dpkg", "/var/lib/rpm", "/usr/lib/sysimage/rpm", "/var/lib/pacman/local")
MAX_BYTES = 64 << 10
MAX_ENTRIES = 16
MAX_DATABASE_ENTRIES = 8192
MAX_TEXT = 512
MAX_FEATURES = 256
MANAGERS = ("dpkg", "rpm", "pacman")
READERS_WRITE = re.compile(r"(.*-shm|__db\.[0-9]{3})\Z")
READERS_TOUCH = re.compile(r".*-wal\Z")            # their ctime
PACKAGE_FILES: t.Mapping[str, t.Tuple[str, ...]] = types.MappingProxyType({
    "dpkg": ("/var/lib/dpkg/info/{name}.md5sums", "/var/lib/dpkg/info/{name}.list",
             "/var/lib/dpkg/info/{name}.conffiles"),
    "pacman": ("/var/lib/pacman/local/{name}-{revision}/desc", "/var/lib/pacman/local/{name}-{revision}/files",
               "/var/lib/pacman/local/{name}-{revision}/mtree"),
})
_HEX64 = re.compile(r"[0-9a-f]{64}")
_OPTION = re.compile(r"--[a-z0-9][a-z0-9-]{0,62}")
_ENTRY_KEYS = ("answers", "databases", "detail", "ident", "package", "path", "real", "sha256")
_PACKAGE_KEYS = ("manager", "name", "revision")


def database_state(folders: t.Sequence[str] = DATABASES, package: t.Optional[t.Mapping[str, str]] = None,
                   package_files: t.Mapping[str, t.Sequence[str]] = PACKAGE_FILES) -> t.Optional[str]:
    """A digest of the package databases as they are now (see the module's text), with the files of
    ``package`` ({manager, name, revision}) when given; None when a folder cannot be listed or has more than
    MAX_DATABASE_ENTRIES entries (nothing is then reused or kept)."""
    rows = []
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
            top = os.stat(folder)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if len(names) > MAX_DATABASE_ENTRIES:
            return None
        rows.append(_row(folder, top))
        rows.extend(_row(name, os.path.join(folder, name)) for name in names if not READERS_WRITE.match(name))
    if package:
        rows.extend(_row(f, f) for f in _package_files(package, package_files))
    return hashlib.sha256("\n".join(rows).encode("utf-8", "surrogateescape")).hexdigest()


def _package_files(package: t.Mapping[str, str], package_files: t.Mapping[str, t.Sequence[str]]) -> t.List[str]:
    name, revision = package.get("name") or "", package.get("revision") or ""
    if "/" in name + revision or name in ("", ".", ".."):
        return []
    return [f.format(name=name, revision=revision) for f in package_files.get(package.get("manager") or "", ())]


def _row(name: str, path: t.Union[str, os.stat_result]) -> str:
    """One line of the state: the identity of the entry at ``path`` (not followed), or that there is none."""
    try:
        st = path if isinstance(path, os.stat_result) else os.lstat(path)
    except OSError as exc:
        return "%s %s" % (name, exc.errno)
    ctime = 0 if READERS_TOUCH.match(name) else st.st_ctime_ns
    return "%s %d %d %d %d %d %o" % (name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, ctime, st.st_mode)


class Store(object):
    """The kept verifications in the file ``path``, read once, when first asked."""

    def __init__(self, path: str, folders: t.Sequence[str] = DATABASES,
                 package_files: t.Mapping[str, t.Sequence[str]] = PACKAGE_FILES) -> None:
        self.path = path
        self.folders = tuple(folders)
        self.package_files = package_files
        self._entries: t.Optional[t.List[Json]] = None
        self._found: t.Dict[Key, Json] = {}      # the entry reused or added for a key in this audit

    def state(self, package: t.Optional[t.Mapping[str, str]] = None) -> t.Optional[str]:
        return database_state(self.folders, package, self.package_files)

    def entries(self) -> t.List[Json]:
        if self._entries is None:
            self._entries = read(self.path)
        return self._entries

    def find(self, key: Key, sha256: t.Optional[str]) -> t.Optional[Verified]:
        """The kept (sha256, package, "packaged", detail) for ``key`` and the same content (``sha256``,
        computed now), drawn from the package databases as they are now; or None."""
        if sha256 is None:
            return None
        for entry in self.entries():
            if (entry["path"], entry["real"], tuple(entry["ident"])) == key and entry["sha256"] == sha256 \
                    and entry["databases"] == self.state(entry["package"]):
                self._found[key] = entry
                return entry["sha256"], dict(entry["package"]), "packaged", entry["detail"]
        return None

    def answers(self, key: Key) -> t.Optional[Answers]:
        """The kept answers of the entry ``find`` reused for ``key`` in this audit, or None."""
        entry = self._found.get(key)
        if entry is None or entry["answers"] is None:
            return None
        return entry["answers"]["version"], list(entry["answers"]["features"])

    def add_answers(self, key: Key, answers: Answers) -> None:
        """Keep ``answers`` with the entry this audit reused or added for ``key`` (root only, never an error)."""
        entry = self._found.get(key)
        if entry is None or os.geteuid() != 0:
            return
        version, features = answers
        new = dict(entry, answers={"version": version, "features": sorted(features)})
        if _entry_problem(new):
            return
        self._found[key] = new
        self._entries = [new if e is entry else e for e in self.entries()]
        write(self.path, self._entries)

    def add(self, key: Key, verified: Verified) -> None:
        """Keep a "packaged" verification (newest first, at most MAX_ENTRIES); root only, never an error."""
        sha, package, state, detail = verified
        databases = self.state(package) if isinstance(package, dict) else None
        if state != "packaged" or os.geteuid() != 0 or databases is None:
            return
        entry = {"path": key[0], "real": key[1], "ident": list(key[2]), "databases": databases, "sha256": sha,
                 "package": dict(package), "detail": detail, "answers": None}
        if _entry_problem(entry):
            return
        kept = [e for e in self.entries() if (e["path"], e["real"], tuple(e["ident"])) != key]
        self._entries = [entry] + kept[:MAX_ENTRIES - 1]
        self._found[key] = entry
        write(self.path, self._entries)


def read(path: str) -> t.List[Json]:
    """The entries of the store at ``path``; [] when it is missing or not to be trusted (module's text)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and st.st_uid == 0 and st.st_nlink == 1 and not st.st_mode & 0o077
                and st.st_size <= MAX_BYTES) or bwrap.file_facts(path)["ownership_problems"]:
            return []
        data = os.read(fd, MAX_BYTES + 1)
    except OSError:
        return []
    finally:
        os.close(fd)
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:
        return []
    if not (isinstance(doc, dict) and sorted(doc) == ["entries", "schema"] and doc["schema"] == SCHEMA
            and isinstance(doc["entries"], list) and len(doc["entries"]) <= MAX_ENTRIES):
        return []
    if any(_entry_problem(e) for e in doc["entries"]):
        return []
    return list(doc["entries"])


def _text(value: t.Any) -> bool:
    return isinstance(value, str) and len(value) <= MAX_TEXT


def _entry_problem(entry: t.Any) -> bool:
    """True unless ``entry`` has exactly the shape ``add`` gives it."""
    if not (isinstance(entry, dict) and tuple(sorted(entry)) == _ENTRY_KEYS):
        return True
    ident, package = entry["ident"], entry["package"]
    return not (_text(entry["path"]) and _text(entry["real"]) and _text(entry["detail"])
                and os.path.isabs(entry["path"]) and os.path.isabs(entry["real"])
                and isinstance(ident, list) and len(ident) == 5
                and all(type(i) is int and i >= 0 for i in ident)                # pylint: disable=unidiomatic-typecheck
                and _hex64(entry["databases"]) and _hex64(entry["sha256"])
                and isinstance(package, dict) and tuple(sorted(package)) == _PACKAGE_KEYS
                and all(_text(v) and v and "/" not in v and "\0" not in v for v in package.values())
                and package["manager"] in MANAGERS and _answers_ok(entry["answers"]))


def _answers_ok(answers: t.Any) -> bool:
    if answers is None:
        return True
    if not (isinstance(answers, dict) and sorted(answers) == ["features", "version"]):
        return False
    version, features = answers["version"], answers["features"]
    return (version is None or (_text(version) and version != "")) and isinstance(features, list) \
        and len(features) <= MAX_FEATURES and all(isinstance(f, str) and _OPTION.fullmatch(f) for f in features) \
        and features == sorted(set(features))


def _hex64(value: t.Any) -> bool:
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def write(path: str, entries: t.Sequence[Json]) -> None:
    """Write the store atomically (mode 0600) when its folder is root's and no one else's to change;
    nothing (and no error) otherwise: the store only saves work."""
    folder = os.path.dirname(path)
    try:
        if not os.path.isdir(folder) or bwrap.file_facts(folder)["ownership_problems"]:
            return
        files.replace(path, json.dumps({"schema": SCHEMA, "entries": list(entries)}, sort_keys=True), mode=0o600)
    except OSError:
        return
