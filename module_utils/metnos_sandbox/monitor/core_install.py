# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The core the monitor runs, installed on the host as one release: a versioned, root-owned folder.

``release(directory)`` names the core in ``directory``: the toolkit's version plus a digest of its
sources (sha256 over each file's name and content), the same on the controller (the role's filter
``metnos_monitor_release``, which also packs the sources into one ``bundle``) and on the host (the
monitor checks the folder it runs from). ``install()`` (the ``metnos_monitor_install`` module) unpacks a
bundle into ``<prefix>/<version>/`` - the core in ``metnos_sandbox/``, the entry point next to it -
only after checking that the sources are the release the bundle names, writes it in a hidden folder
first and renames it into place (a half-written release is never the one a run finds), and removes
every other release. Check mode reports the same changes and makes none. Pure Python, no Ansible
imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import base64
import binascii
import hashlib
import json
import os
import shutil
import tempfile
import zlib
from typing import Any, Dict, List, Mapping

from ..base import owners
from ..base.records import Json
from ..base.sources import SOURCE, files

TOOLKIT_VERSION = "1.0.0"      # galaxy.yml's version (tests/unit/test_monitor_install.py holds them equal)
DIGEST_CHARS = 12
ENTRY_POINT = "metnos-sandbox-monitor.py"
PACKAGE = "metnos_sandbox"
MAX_BUNDLE_BYTES = 16 * 1024 * 1024          # the sources unpacked


class ReleaseError(ValueError):
    """A bundle that is not a release, or a release that cannot be installed; the message says which."""


def core_files(directory: str) -> List[str]:
    """The core's source files in ``directory`` (relative paths such as ``base/diagnostics.py``, sorted):
    what a release holds."""
    return files(directory)


def digest(sources: Mapping[str, bytes]) -> str:
    total = hashlib.sha256()
    for name in sorted(sources):
        total.update(("%s\0%s\n" % (name, hashlib.sha256(sources[name]).hexdigest())).encode("utf-8"))
    return total.hexdigest()[:DIGEST_CHARS]


def version_of(sources: Mapping[str, bytes]) -> str:
    return "%s+%s" % (TOOLKIT_VERSION, digest(sources))


def _read(directory: str) -> Dict[str, bytes]:
    out = {}
    for name in core_files(directory):
        with open(os.path.join(directory, name), "rb") as handle:
            out[name] = handle.read()
    return out


def release(directory: str, bundle: bool = False) -> Json:
    """{version, digest, files} of the core in ``directory``; with ``bundle`` also its sources packed as one
    text (base64 of zlib-compressed JSON {name: source}) for the install module."""
    sources = _read(directory)
    out: Json = {"version": version_of(sources), "digest": digest(sources), "files": sorted(sources)}
    if bundle:
        packed = json.dumps({"version": out["version"], "sources": dict(
            (n, s.decode("utf-8")) for n, s in sources.items())}, sort_keys=True).encode("utf-8")
        out["bundle"] = base64.b64encode(zlib.compress(packed, 9)).decode("ascii")
    return out


def unpack(bundle: str) -> Json:
    """{version, sources: {name: bytes}} of a bundle; ReleaseError unless its sources are the release it names."""
    try:
        packed = zlib.decompressobj().decompress(base64.b64decode(bundle, validate=True), MAX_BUNDLE_BYTES + 1)
        if len(packed) > MAX_BUNDLE_BYTES:
            raise ReleaseError("the bundle unpacks to more than %d bytes" % MAX_BUNDLE_BYTES)
        data = json.loads(packed.decode("utf-8"))
    except (binascii.Error, zlib.error, UnicodeDecodeError, TypeError) as exc:
        raise ReleaseError("the bundle cannot be read: %s" % exc) from None
    except ValueError as exc:     # json (ReleaseError is a ValueError too: re-raised as it is)
        if isinstance(exc, ReleaseError):
            raise
        raise ReleaseError("the bundle cannot be read: %s" % exc) from None
    if not isinstance(data, dict) or not isinstance(data.get("sources"), dict) or not data["sources"]:
        raise ReleaseError("the bundle holds no sources")
    sources = {}
    for name, text in data["sources"].items():
        if not isinstance(name, str) or not SOURCE.match(name) or not isinstance(text, str):
            raise ReleaseError("the bundle holds %r, not a source file of the core" % (str(name)[:80],))
        sources[name] = text.encode("utf-8")
    if data.get("version") != version_of(sources):
        raise ReleaseError("the bundle names release %r, its sources are %s" % (
            str(data.get("version"))[:80], version_of(sources)))
    return {"version": data["version"], "sources": sources}


def _installed(folder: str, version: str, entry: bytes) -> bool:
    """Whether ``folder`` holds exactly that release and entry point, root's alone."""
    core = os.path.join(folder, PACKAGE)
    try:
        if version_of(_read(core)) != version or sorted(os.listdir(folder)) != sorted([ENTRY_POINT, PACKAGE]):
            return False
        with open(os.path.join(folder, ENTRY_POINT), "rb") as handle:
            if handle.read() != entry:
                return False
        paths = [folder, os.path.join(folder, ENTRY_POINT)] + tree(core)
        return all(_owned(p) for p in paths)
    except OSError:
        return False


def tree(top: str) -> List[str]:
    """``top`` and everything below it (the release's core: its package folders included)."""
    out = [top]
    for base, dirs, names in os.walk(top):
        out.extend(os.path.join(base, n) for n in sorted(dirs) + sorted(names))
    return out


def _owned(path: str) -> bool:
    st = os.lstat(path)
    want = 0o755 if os.path.isdir(path) or path.endswith(ENTRY_POINT) else 0o644
    return st.st_uid == 0 and st.st_gid == 0 and (st.st_mode & 0o7777) == want


def _write(tmp: str, sources: Mapping[str, bytes], entry: bytes) -> None:
    """The release in the fresh folder ``tmp``: 0755 folders and entry point, 0644 sources, all root's."""
    core = os.path.join(tmp, PACKAGE)
    folders = [tmp, core] + sorted(set(os.path.join(core, n.split("/")[0]) for n in sources if "/" in n))
    for path in folders[1:]:
        os.mkdir(path, 0o755)
    written = [(os.path.join(core, name), content, 0o644) for name, content in sources.items()]
    for path, content, mode in written + [(os.path.join(tmp, ENTRY_POINT), entry, 0o755)]:
        with open(path, "wb") as handle:
            handle.write(content)
        os.chmod(path, mode)
    for path in folders:
        os.chmod(path, 0o755)
    for path in folders + [os.path.join(tmp, ENTRY_POINT)] + [p for p, _c, _m in written]:
        os.lchown(path, 0, 0)


def python_findings(python: str) -> List[Any]:
    """The monitor's interpreter (its unit's ExecStart=): an absolute path root alone can change, else the
    findings of monitor_python_not_roots (base/owners.py; a relative name such as ``env python`` is unknown)."""
    return owners.findings("monitor_python_not_roots", python, owners.python_problems(python))


def install(prefix: str, bundle: str, entry_point: str, check_mode: bool = False) -> Json:
    """Make ``<prefix>/<version>`` the one release there; {changed, folder, version, installed, removed}."""
    if not os.path.isabs(prefix) or os.path.normpath(prefix) != prefix.rstrip("/") or prefix == "/":
        raise ReleaseError("prefix must be a normalised absolute path other than /, not %r" % prefix[:200])
    rel = unpack(bundle)
    entry = entry_point.encode("utf-8")
    folder = os.path.join(prefix, rel["version"])
    present = _installed(folder, rel["version"], entry)
    others = sorted(n for n in (os.listdir(prefix) if os.path.isdir(prefix) else []) if n != rel["version"])
    out: Json = {"changed": not present or bool(others), "folder": folder, "version": rel["version"],
                 "installed": not present, "removed": [os.path.join(prefix, n) for n in others]}
    if check_mode or not out["changed"]:
        return out
    os.makedirs(prefix, 0o755, exist_ok=True)
    if not present:
        tmp = tempfile.mkdtemp(prefix=".%s." % rel["version"], dir=prefix)
        try:
            _write(tmp, rel["sources"], entry)
            if os.path.lexists(folder):
                _remove(folder)
            os.rename(tmp, folder)
        finally:
            if os.path.lexists(tmp):
                shutil.rmtree(tmp)
    for path in out["removed"]:
        if os.path.lexists(path):
            _remove(path)
    return out


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)
