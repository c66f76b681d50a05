# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""R-FAIL-2, the undo exception: the pinned undo broker runs direct (no bwrap) only when its files on
disk are the pinned digest, read beneath the executors' folder without following links.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import hashlib
import os
import stat
from typing import (
    List,
    Optional,
    Sequence,
    Tuple,
)

from ..base import diagnostics
from ..base.records import Record
from . import host_context, host_layout, result
from .model import Manifest


# ------------------------------------------------------------------ R-FAIL-2: the pinned undo broker
class Digest(Record):
    """executor_digest's answer: the digest, or None and the problem."""
    digest: Optional[str]
    problem: Optional[str]


class _Read(Record):
    data: Optional[bytes]
    problem: Optional[str]


def executor_digest(directory: str, files: Sequence[str]) -> Digest:
    """sha256 over the executor's files as they are on disk (docs/profile-invariants.md):
    for each listed file in sorted order: name, NUL, size in decimal, NUL, content.

    Files are opened below ``directory`` one component at a time without following symlinks,
    must be regular files, and are read with bounded size. The folder must hold no file that is
    not listed (a planted module next to the broker would run with it). Returns
    (digest or None, problem or None)."""
    hasher = hashlib.sha256()
    total = 0
    try:
        root_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return Digest(None, "cannot open %s: %s" % (directory, exc.strerror))
    try:
        listed = set(files)
        present = _listing(root_fd, "")
        if present is None:
            return Digest(None, "the folder holds more than %d entries" % host_layout.MAX_UNDO_ENTRIES)
        unlisted = sorted(p for p, kind in present if kind != "dir" and p not in listed)
        if unlisted:
            return Digest(None, "%s holds entries that are not listed: %s" % (directory, diagnostics.excerpt(unlisted)))
        for name in sorted(files):
            data, problem = _read_beneath(root_fd, name)
            if problem or data is None:
                return Digest(None, "%s: %s" % (name, problem))
            total += len(data)
            if total > host_layout.MAX_UNDO_TOTAL_BYTES:
                return Digest(None, "the files are larger than %d bytes in total" % host_layout.MAX_UNDO_TOTAL_BYTES)
            hasher.update(name.encode("utf-8") + b"\0" + str(len(data)).encode("ascii") + b"\0")
            hasher.update(data)
    finally:
        os.close(root_fd)
    return Digest("sha256:" + hasher.hexdigest(), None)


def _listing(dir_fd: int, prefix: str, budget: Optional[List[int]] = None) -> Optional[List[Tuple[str, str]]]:
    """(relative path, kind) of every entry below dir_fd, without following symlinks; None if too many."""
    budget = budget if budget is not None else [host_layout.MAX_UNDO_ENTRIES]
    out: List[Tuple[str, str]] = []
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError:
        return out
    for name in names:
        budget[0] -= 1
        if budget[0] < 0:
            return None
        rel = prefix + name
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            out.append((rel, "dir"))
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            try:
                sub = _listing(fd, rel + "/", budget)
            finally:
                os.close(fd)
            if sub is None:
                return None
            out += sub
        else:
            out.append((rel, "file" if stat.S_ISREG(info.st_mode) else "other"))
    return out


def _read_beneath(root_fd: int, name: str) -> _Read:
    parts = name.split("/")
    fds = []
    try:
        current = root_fd
        for part in parts[:-1]:
            current = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=current)
            fds.append(current)
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=current)
        fds.append(fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _Read(None, "not a regular file")
        if info.st_nlink > 1:
            # a second name elsewhere (a data folder a sandbox may write) would change what runs unsandboxed
            return _Read(None, "a file with %d names (hard links): its other names are the same file" % info.st_nlink)
        if info.st_size > host_layout.MAX_UNDO_FILE_BYTES:
            return _Read(None, "larger than %d bytes" % host_layout.MAX_UNDO_FILE_BYTES)
        chunks, size = [], 0
        while size <= host_layout.MAX_UNDO_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, host_layout.MAX_UNDO_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > host_layout.MAX_UNDO_FILE_BYTES:
            return _Read(None, "larger than %d bytes" % host_layout.MAX_UNDO_FILE_BYTES)
        return _Read(b"".join(chunks), None)
    except OSError as exc:
        return _Read(None, "missing, a symlink or unreadable (%s)" % exc.strerror)
    finally:
        for fd in fds:
            os.close(fd)


def undo_decision(manifest: Manifest, host: host_context.HostContext, own_dir: str,
                  command: List[str]) -> result.Profile:
    """R-FAIL-2 / R-SEC-5: the byte-pinned broker runs direct only if everything matches."""
    pinned = host["undo_exception"]
    if manifest.name != host_layout.UNDO_NAME:
        return result.refused(manifest.name, [diagnostics.make("capability_reserved", wording="not_broker",
                                                               fill={"executor": manifest.name,
                                                                     "broker": host_layout.UNDO_NAME})])
    if not pinned:
        fields = ["(no pinned exception on this host)"]
    else:
        caps = pinned.get("capabilities") or ([pinned["capability"]] if pinned.get("capability") else None)
        lacking = [k for k in ("name", "origin", "revision", "owner", "files", "digest") if pinned.get(k) is None]
        lacking += [] if caps else ["capability"]
        if lacking:
            fields = ["the pinned exception lacks %s" % ", ".join(lacking)]
        else:
            have = {"name": manifest.name, "origin": manifest.origin, "owner": manifest.owner,
                    "revision": None if manifest.revision is None else str(manifest.revision),
                    "capabilities": sorted(c.text for c in manifest.capabilities),
                    "files": sorted(manifest.files) if manifest.files is not None else None,
                    "digest": manifest.digest, "entrypoint": manifest.entrypoint or host_layout.UNDO_ENTRYPOINT}
            want = {"name": pinned["name"], "origin": pinned["origin"], "owner": pinned["owner"],
                    "revision": str(pinned["revision"]), "capabilities": sorted(caps or []),
                    "files": sorted(pinned["files"]), "digest": pinned["digest"],
                    # what runs unsandboxed is part of the exception: another listed file is not the broker
                    "entrypoint": pinned.get("entrypoint") or host_layout.UNDO_ENTRYPOINT}
            fields = sorted(k for k in want if want[k] != have[k])
    if fields:
        return result.refused(manifest.name, [diagnostics.make("undo_exception_mismatch", wording="fields", fill={
            "executor": manifest.name, "revision": diagnostics.excerpt(manifest.revision),
            "mismatched": ", ".join(fields)},
            fields=fields)])
    computed, problem = executor_digest(own_dir, pinned["files"])
    if problem:
        return result.refused(manifest.name, [diagnostics.make("undo_files_invalid", wording="unverified", fill={
            "executor": manifest.name, "folder": own_dir, "problem": problem})])
    if computed != pinned["digest"]:
        return result.refused(manifest.name, [diagnostics.make("undo_exception_mismatch", wording="digest", fill={
            "executor": manifest.name, "folder": own_dir, "pinned": pinned["digest"]},
            fields=["digest (computed from disk)"], computed=computed)])
    return {"executor": manifest.name, "decision": "direct", "refusal": None, "argv": list(command),
            "command_line": result.shell_join(command), "mounts": [], "namespaces": [],
            "network": None, "diagnostics": [],
            "exception": {"rule": "R-FAIL-2", "source": "pinned undo_last_turn exception", "digest": computed}}
