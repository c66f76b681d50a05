# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Only the packaged bwrap is trusted (issue 20).

The bwrap the service would run is verified against the package database of the family that owns it -
``dpkg --verify PKG`` (the md5sums dpkg keeps), ``rpm -V PKG``, ``pacman -Qkk PKG`` - and by its own
sha256 against the digests an administrator accepted explicitly for a self-built bwrap
(``accept_sha256``). ``for_run`` also verifies the package's own ``/usr/bin/bwrap`` (where every supported
family installs it) when the service's path is another file: a wrapper that executes the packaged bwrap
starts a trusted binary even though its own path is not one. The probe then compares the executable of the
process that really started (its device and inode, read from outside through /proc/PID/exe) with the
trusted files (run.py's bwrap_exe_verified check): a unit whose mount namespace shows another file at the
same path (BindReadOnlyPaths=, RootDirectory=), or a file swapped after it was verified, is not the bwrap
that was verified.

States: ``packaged`` (owned by a package that says it is unchanged), ``accepted`` (its sha256 is
accepted), ``unpackaged`` (owned by no package, not accepted), ``modified`` (the package database says
its content, size, mode or owner differ, or that the file is missing), ``unverifiable`` (no verifier, a
verifier that failed or said something this parser does not know, or a file that changed while it was
verified): only the first two are trusted. The output formats are those the tools print in the C locale
(dpkg src/main/verify.c, rpm lib/verify.c, pacman src/pacman/check.c); tests/unit/test_bwrap_trust.py holds
them, and dpkg's runs for real here.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import hashlib
import os
import re
import typing as t

from ..base.diagnostics import Diagnostic, make
from ..base.records import Json
from . import bwrap, package_owner, trust_store

PACKAGED_BWRAP = "/usr/bin/bwrap"
MAX_BINARY = 64 << 20
TRUSTED = ("packaged", "accepted")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def identity(path: str) -> t.Optional[t.List[int]]:
    """[st_dev, st_ino, size, mtime_ns, ctime_ns] of the file ``path`` resolves to; None when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def sha256_file(path: str, limit: int = MAX_BINARY) -> t.Optional[str]:
    """The file's sha256 (hex), None when unreadable or larger than ``limit``."""
    digest = hashlib.sha256()
    size = 0
    try:
        with open(path, "rb") as handle:
            while True:
                chunk = handle.read(1 << 16)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    return None
                digest.update(chunk)
    except (IOError, OSError):
        return None
    return str(digest.hexdigest())


def normalise_accepted(values: t.Iterable[t.Any]) -> t.Tuple[t.List[str], t.List[str]]:
    """(valid lowercase sha256 digests, refused values): an accepted digest is exactly 64 hex digits."""
    good: t.List[str] = []
    bad: t.List[str] = []
    for value in values:
        text = str(value).strip().lower()
        if _SHA256.match(text):
            good.append(text)
        else:
            bad.append(str(value)[:80])
    return good, bad


# --------------------------------------------------------------------------- the verifiers' outputs

Verdict = t.Tuple[str, str]
"""(ok | modified | missing | unverifiable, what the tool said about the path)."""

_DPKG_LINE = re.compile(r"^(?P<what>missing|[?.0-9A-Za-z]{9})\s+(?:c\s+)?(?P<path>/.*)$")
_RPM_LINE = re.compile(r"^(?P<what>missing|[?.A-Za-z0-9]{9})\s+(?:[cdglrma]\s+)?(?P<path>/.*)$")
_PACMAN_LINE = re.compile(r"^(?:warning: )?(?P<pkg>[^\s:]+): (?P<path>/.*) \((?P<why>[^()]*)\)$")


def parse_dpkg_verify(out: str, path: str) -> Verdict:
    """``dpkg --verify PKG`` (rpm-like format): one line per file that failed a check, ``??5??????   /path``
    (only the digest, position 3, is checked; ``?`` = not checked) or ``missing     /path``; nothing for a
    file that passed. Exit status 0 either way (dpkg 1.21)."""
    for line in out.splitlines():
        m = _DPKG_LINE.match(line.rstrip())
        if m and m.group("path") == path:
            what = m.group("what")
            if what == "missing":
                return "missing", line.strip()
            return ("modified" if what[2] == "5" else "unverifiable"), line.strip()
    return "ok", ""


def parse_rpm_verify(out: str, path: str) -> Verdict:
    """``rpm -V PKG``: ``S.5....T.  c /path`` (S size, M mode, 5 digest, D device, L link, U user, G group,
    T mtime, P capabilities; ``.`` passed, ``?`` not checked; then the file's attribute) or ``missing   /path``.
    A binary whose only difference is its mtime has the package's content."""
    for line in out.splitlines():
        m = _RPM_LINE.match(line.rstrip())
        if m and m.group("path") == path:
            what = m.group("what")
            if what == "missing":
                return "missing", line.strip()
            if set(what) & set("SM5DLUGP"):
                return "modified", line.strip()
            if what[2] == "?":
                return "unverifiable", line.strip()
            return "ok", line.strip()
    return "ok", ""


def parse_pacman_verify(out: str, err: str, path: str) -> Verdict:
    """``pacman -Qkk PKG``: ``warning: PKG: /path (WHY)`` on stderr per difference (SHA256 checksum mismatch,
    Size mismatch, Permissions mismatch, UID mismatch, GID mismatch, File type mismatch, Symlink path mismatch,
    Modification time mismatch, No such file or directory, failed to calculate SHA256 checksum, SHA256
    checksum information not available), then ``PKG: N total files, M altered files`` on stdout; ``PKG: no
    mtree file`` when there is nothing to verify against."""
    whys = []
    for line in (err + "\n" + out).splitlines():
        m = _PACMAN_LINE.match(line.rstrip())
        if m and m.group("path") == path:
            whys.append(m.group("why"))
    if re.search(r"^\S+: no mtree file$", out, re.M):
        return "unverifiable", "no mtree file"
    if not whys and not re.search(r"^\S+: \d+ total files?, \d+ altered files?$", out, re.M):
        return "unverifiable", (out.strip() or err.strip())[:200]
    said = "; ".join(whys)
    if any(w in ("No such file or directory",) for w in whys):
        return "missing", said
    if any("failed to calculate" in w or "information not available" in w for w in whys):
        return "unverifiable", said
    if [w for w in whys if w != "Modification time mismatch"]:
        return "modified", said
    return "ok", said


def package_state(manager: str, name: str, path: str, runner: bwrap.Runner = bwrap.default_runner) -> Verdict:
    """Ask ``manager``'s verifier about package ``name`` and judge what it says about ``path``."""
    if manager == "dpkg":
        rc, out, err = runner(["dpkg", "--verify", name])
        return parse_dpkg_verify(out, path) if rc == 0 else ("unverifiable", "dpkg --verify: rc %d %s" % (
            rc, err.strip()[:160]))
    if manager == "rpm":
        rc, out, err = runner(["rpm", "-V", name])
        if rc not in (0, 1) or (rc == 1 and not out.strip()):
            return "unverifiable", "rpm -V: rc %d %s" % (rc, err.strip()[:160])
        return parse_rpm_verify(out, path)
    if manager == "pacman":
        _rc, out, err = runner(["pacman", "-Qkk", name])
        return parse_pacman_verify(out, err, path)
    return "unverifiable", "no verifier for %s" % manager


# --------------------------------------------------------------------------- one binary, a run's set

class Verifications(object):
    """The verifications of one audit, so that a file is asked of its package manager once per audit (the
    host's facts, the service's bwrap and the probe's run verify the same file, often). A verification is
    reused only for the same path, resolving to the same file with the same identity (device, inode, size,
    mtime and ctime: a file written, replaced or re-linked since is verified again). With a ``store``
    (trust_store.Store), "packaged" verifications are also kept from one audit to the next, under the
    conditions that module states (the same content and the same package databases)."""

    def __init__(self, store: t.Optional[trust_store.Store] = None) -> None:
        self._seen: t.Dict[trust_store.Key, trust_store.Verified] = {}
        self._store = store
        self._asked: t.Dict[trust_store.Key, t.Optional[str]] = {}    # the databases when the verification began

    def seen(self, path: str, real: str, ident: t.Sequence[int]) -> t.Optional[trust_store.Verified]:
        """(sha256, package, state, detail) of an earlier verification of that file, or None."""
        key = (path, real, tuple(ident))
        found = self._seen.get(key)
        if found is None and self._store is not None:
            found = self._store.find(key, sha256_file(real))
            if found is None:
                self._asked[key] = self._store.state()
            else:
                self._seen[key] = found
        return found

    def keep(self, path: str, real: str, ident: t.Sequence[int], verified: trust_store.Verified) -> None:
        key = (path, real, tuple(ident))
        self._seen[key] = verified
        before = self._asked.pop(key, None)
        if self._store is not None and before is not None and before == self._store.state():
            self._store.add(key, verified)

    def answers(self, path: str, real: str, ident: t.Sequence[int]) -> t.Optional[trust_store.Answers]:
        """What that file answered to --version and --help, kept with its verification (trust_store), or None."""
        return self._store.answers((path, real, tuple(ident))) if self._store is not None else None

    def keep_answers(self, path: str, real: str, ident: t.Sequence[int], answers: trust_store.Answers) -> None:
        if self._store is not None:
            self._store.add_answers((path, real, tuple(ident)), answers)


def _verified(path: str, real: str, runner: bwrap.Runner,
              tool_on: t.Callable[[str], t.Optional[str]]) -> t.Tuple[t.Optional[str], Json, str, str]:
    """(sha256, package, state, detail) of the file at ``real`` (``path`` resolved), asked now."""
    digest = sha256_file(real)
    pkg = package_owner.package_facts(path, runner=runner, tool_on=tool_on)
    if not pkg:
        return digest, pkg, "unpackaged", ""
    state, detail = package_state(pkg["manager"], pkg["name"], real, runner)
    return digest, pkg, {"ok": "packaged"}.get(state, state), detail


def verify(path: str, runner: bwrap.Runner = bwrap.default_runner, accepted: t.Sequence[str] = (),
           tool_on: t.Callable[[str], t.Optional[str]] = package_owner.find_tool,
           verifications: t.Optional[Verifications] = None) -> Json:
    """The trust of one bwrap path: {path, realpath, ident [dev, ino], sha256, package, state, detail,
    trusted}. The file is identified before and after it is verified: a file that changed meanwhile is not
    verified. ``verifications``: the audit's earlier verifications (the same file is not asked about again)."""
    real = os.path.realpath(path)
    before = identity(real)
    out: Json = {"path": path, "realpath": real, "ident": before[:2] if before else None, "sha256": None,
                 "package": {}, "state": "unverifiable", "detail": "", "trusted": False}
    if before is None:
        out["detail"] = "%s does not exist" % real
        return out
    found = verifications.seen(path, real, before) if verifications is not None else None
    if found is None:
        found = _verified(path, real, runner, tool_on)
        if verifications is not None and identity(real) == before:
            verifications.keep(path, real, before, found)
    out["sha256"], out["package"], out["state"], out["detail"] = found
    out["package"] = dict(out["package"])
    if out["state"] != "packaged" and out["sha256"] and out["sha256"] in set(accepted):
        out["state"], out["detail"] = "accepted", "its sha256 is accepted"
    if identity(real) != before:
        out["state"], out["detail"] = "unverifiable", "%s changed while it was verified" % real
    out["trusted"] = out["state"] in TRUSTED
    return out


def for_run(bwrap_path: str, runner: bwrap.Runner = bwrap.default_runner, accepted: t.Sequence[str] = (),
            path_text: t.Optional[str] = None, verifications: t.Optional[Verifications] = None) -> Json:
    """What a run trusts: {"bwrap": verify(the path the service runs), "packaged": verify(/usr/bin/bwrap) when
    that is another file, "ids": [[dev, ino] of every trusted one]}. A bare name is resolved through
    ``path_text`` (default: this process's PATH) as execvp resolves it."""
    if "/" not in bwrap_path:
        bwrap_path = bwrap.which(bwrap_path, path_text if path_text is not None
                                 else os.environ.get("PATH")) or bwrap_path
    main = verify(bwrap_path, runner, accepted, verifications=verifications)
    out: Json = {"bwrap": main, "packaged": None}
    if os.path.realpath(bwrap_path) != os.path.realpath(PACKAGED_BWRAP) and os.path.exists(PACKAGED_BWRAP):
        out["packaged"] = verify(PACKAGED_BWRAP, runner, accepted, verifications=verifications)
    out["ids"] = [v["ident"] for v in (main, out["packaged"]) if v and v["trusted"] and v["ident"]]
    return out


def trusted_ids(trust: t.Optional[Json]) -> t.Set[t.Tuple[int, int]]:
    return set((int(i[0]), int(i[1])) for i in (trust or {}).get("ids") or [] if isinstance(i, list) and len(i) == 2)


def started_ids(trust: t.Optional[Json]) -> t.Set[t.Tuple[int, int]]:
    """The trusted files plus the file the probe executes itself, trusted or not: what a process of the bwrap
    that was started executes (a bwrap that died at once may leave its child, executing it, behind)."""
    out = trusted_ids(trust)
    ident = ((trust or {}).get("bwrap") or {}).get("ident")
    if isinstance(ident, list) and len(ident) == 2:
        out.add((int(ident[0]), int(ident[1])))
    return out


def diagnostics(trust: t.Optional[Json]) -> t.List[Diagnostic]:
    """The bwrap the service runs, judged: one code per state that is not "packaged"."""
    main = (trust or {}).get("bwrap")
    if not main:
        return [make("probe_bwrap_unverified", bwrap_path="?", detail="the bwrap was not verified")]
    path, pkg = main["path"], main.get("package") or {}
    state = main["state"]
    if state == "packaged":
        return []
    if state == "accepted":
        return [make("probe_bwrap_accepted", bwrap_path=path, sha256=main["sha256"])]
    if state == "unpackaged":
        return [make("probe_bwrap_unpackaged", bwrap_path=path, sha256=main.get("sha256")
                     or "unreadable")]
    if state in ("modified", "missing"):
        return [make("probe_bwrap_modified", bwrap_path=path, package=pkg.get("name"),
                     manager=pkg.get("manager"),
                     detail=main.get("detail") or state, sha256=main.get("sha256") or "unreadable")]
    return [make("probe_bwrap_unverified", bwrap_path=path, detail=main.get("detail")
                 or "not verified")]


def view(trust: Json) -> Json:
    """The trust of a run as a result shows it: for the bwrap and the packaged one, what was verified and how."""
    return dict((k, dict((f, (trust[k] or {}).get(f)) for f in ("path", "realpath", "sha256", "package", "state",
                                                                "detail")) if trust.get(k) else None)
                for k in ("bwrap", "packaged"))
