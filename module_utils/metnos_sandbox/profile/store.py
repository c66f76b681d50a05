# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one writer and the one reader of the on-disk profile format.

``<dest>/<executor>.args``: the argv, one element per line (what the runtime and the audit
compare); ``<dest>/<executor>.json``: the structured profile (mounts with provenance, flags,
network decision, diagnostics). The sandbox_profile module writes through ``write``; the
audit's drift check and the module's diff read through ``read_args``/``read_doc``.
"""
from __future__ import absolute_import, annotations, division, print_function

import errno
import hashlib
import json
import os
import pwd
import re
import shlex
import stat
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..base import diagnostics, files
from ..base.records import Record
from . import descriptors

MAX_PROFILES = 4096                # stored profiles read for their grants (stored_grants; the rest are not read)

MAX_PROFILE_BYTES = 4 * 1024 * 1024
DOC_KEYS = ("executor", "decision", "argv", "mounts", "namespaces", "network", "manifest", "exception",
            "descriptors", "placement", "run_as", "channels")
_EXECUTOR = re.compile(r"[a-z0-9_][a-z0-9_.-]{0,127}")
_USER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")


class StoreError(Exception):
    """A profile cannot be written; the message names the path."""


class Paths(Record):
    """The two files of one executor's profile."""
    args: str
    json: str


class Documents(Record):
    """A profile as it is written: the .args text, the .json text, and the document."""
    args: str
    json: str
    doc: Dict[str, Any]


def paths(dest: str, executor: Any) -> Paths:
    if not isinstance(executor, str) or not _EXECUTOR.fullmatch(executor):
        raise StoreError("%s is not an executor name usable as a file name" % diagnostics.excerpt(executor))
    base = os.path.join(dest, executor)
    return Paths(base + ".args", base + ".json")


def documents(result: Dict[str, Any]) -> Documents:
    """A rendered (not refused) profile -> (args text, json text, the document)."""
    argv = result["argv"]
    if any("\n" in a or "\0" in a for a in argv):
        raise StoreError("an argv element contains a newline or NUL: the .args format cannot hold it")
    doc = dict((k, result[k]) for k in DOC_KEYS if k in result)
    doc["diagnostics"] = [dict((k, d[k]) for k in ("code", "severity", "rule", "message"))
                          for d in result["diagnostics"]]
    doc["args_sha256"] = descriptors.args_digest(argv)       # the pair's shared digest (pair_problem)
    if result.get("decision") == "wrapped":    # what the launcher accepts below the grants (recheck_channels)
        try:
            doc["channels"] = descriptors.channels_below(descriptors.granted_folders(result.get("mounts")))
        except ValueError as exc:
            raise StoreError("the granted folders cannot be searched for channels: %s" % exc) from None
    return Documents("\n".join(argv) + "\n", json.dumps(doc, indent=2, sort_keys=True) + "\n", doc)


def _read(path: str) -> Optional[str]:
    """Bounded read of a regular file, not following a symlink in the last component; None if absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_PROFILE_BYTES:
            return None
        data = os.read(fd, MAX_PROFILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_PROFILE_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_args(dest: str, executor: str) -> Optional[List[str]]:
    """The argv on disk as a list, or None when there is no (readable) profile."""
    text = _read(paths(dest, executor).args)
    return None if text is None else text.splitlines()


def read_doc(dest: str, executor: str) -> Any:
    text = _read(paths(dest, executor).json)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def stored_grants(profile_dir: str) -> List[str]:
    """The folders the stored profiles in ``profile_dir`` grant (their R-CAP-* binds: descriptors.granted_folders),
    sorted; each <executor>.json read bounded, the last component not followed (store.read_doc). None there, no
    such folder, or a folder someone but root can change (folder_problem: its profiles could name any folder, and
    root would walk it): []. The audit and service_env report that folder as profile_folder_unsafe already."""
    if folder_problem(profile_dir) is not None:
        return []
    try:
        with os.scandir(profile_dir) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".json") and e.is_file(follow_symlinks=False))
    except OSError:
        return []
    found = set()
    for name in names[:MAX_PROFILES]:
        doc = read_doc(profile_dir, name[:-len(".json")])
        if isinstance(doc, dict):
            found.update(descriptors.granted_folders(doc.get("mounts")))
    return sorted(found)


def run_as(user: str) -> Dict[str, Any]:
    """What a stored profile records of the service user the launcher drops to: {user, uid, gid} of this host's
    user database; root, an unknown name or one that is not a plain user name is refused (StoreError)."""
    if not _USER.fullmatch(user):
        raise StoreError("%s is not a user name" % diagnostics.excerpt(user))
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise StoreError("no user %s on this host" % diagnostics.excerpt(user)) from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise StoreError("%s is uid %d gid %d: executors never run as root" % (user, entry.pw_uid, entry.pw_gid))
    return {"user": user, "uid": entry.pw_uid, "gid": entry.pw_gid}


def folder_problem(dest: str) -> Optional[diagnostics.Diagnostic]:
    """profile_folder_unsafe for the first existing component of ``dest`` (from /, links not followed) that is not
    a folder root owns and no one else can write, else None (a folder still to be made is made by root)."""
    parts = [p for p in dest.split("/") if p]
    done = "/"
    for index, part in enumerate([""] + parts):
        done = os.path.join(done, part) if part else "/"
        try:
            info = os.lstat(done)
        except OSError:
            return None
        if stat.S_ISDIR(info.st_mode) and descriptors.safe_owner(info, index < len(parts)):
            continue
        try:
            owner = pwd.getpwuid(info.st_uid).pw_name
        except KeyError:
            owner = "uid %d" % info.st_uid
        kind = "" if stat.S_ISDIR(info.st_mode) else " (%s)" % ("a symbolic link" if stat.S_ISLNK(info.st_mode)
                                                                else "not a folder")
        return diagnostics.make(descriptors.UNSAFE, path=done, quoted=shlex.quote(done), owner=owner,
                                mode="%04o%s" % (stat.S_IMODE(info.st_mode), kind))
    return None


def pair_problem(dest: str, executor: str) -> Optional[str]:
    """Why <executor>.args and .json on disk are not one profile (an interrupted write, a hand edit), or None when
    they are, or when either is absent or unreadable (missing: read_args says so): the .json's args_sha256 is
    the digest of its own argv and of the .args file's bytes."""
    where = paths(dest, executor)
    args_text, json_text = _read(where.args), _read(where.json)
    if args_text is None or json_text is None:
        return None
    try:
        doc = json.loads(json_text)
    except ValueError:
        return "%s is not JSON" % where.json
    argv = doc.get("argv") if isinstance(doc, dict) else None
    recorded = doc.get("args_sha256") if isinstance(doc, dict) else None
    if not isinstance(argv, list) or not all(isinstance(w, str) for w in argv):
        return "%s holds no argv" % where.json
    if not isinstance(recorded, str):
        return "%s records no args_sha256 (written before the pair carried one)" % where.json
    own, on_disk = descriptors.args_digest(argv), hashlib.sha256(args_text.encode("utf-8")).hexdigest()
    if recorded != own or recorded != on_disk:
        return "%s records argv sha256 %s, its own argv has %s, %s has %s" % (
            where.json, diagnostics.excerpt(recorded, 80), own, where.args, on_disk)
    return None


def review_lines(doc: Optional[Dict[str, Any]]) -> str:
    """A reviewer's view of a profile: network decision, then one mount per line with its rules."""
    if not doc:
        return ""
    net = doc.get("network") or {}
    lines = ["network: %s" % ("host (%s)" % ", ".join(net.get("because") or []) if net.get("host")
                              else "isolated (--unshare-net)")]
    device = doc.get("placement")
    if device:
        lines.append("placement: device (%s)%s" % (" ".join(device.get("flags") or []), "".join(
            "; without %s: %s" % (d["flag"], d["reason"]) for d in device.get("downgrades") or [])))
    for m in doc.get("mounts") or []:
        src = "" if m.get("src") in (None, m["dest"]) else " <- %s" % m["src"]
        rules = ", ".join(sorted(set(p["rule"] for p in m.get("provenance") or [])))
        lines.append("%-7s %s%s  [%s]" % (m["kind"], m["dest"], src, rules))
    return "\n".join(lines) + "\n"


Move = Callable[[str, str], Any]


def write(dest: str, result: Dict[str, Any], check_mode: bool = False, move: Optional[Move] = None) -> Dict[str, Any]:
    """Write <executor>.args and .json atomically (only when content changes).

    ``move(tmp, path)``: how to put a temp file in place (the module passes AnsibleModule.atomic_move).
    Returns {"changed", "files", "diff"} where diff is a list of before/after views. Raises StoreError."""
    args_path, json_path = paths(dest, result["executor"])
    args_text, json_text, doc = documents(result)
    if not os.path.isdir(dest) and not check_mode:
        try:
            os.makedirs(dest, 0o755)
        except OSError as exc:
            raise StoreError("cannot create dest %s: %s" % (dest, exc.strerror)) from None
    before_doc = read_doc(dest, result["executor"])
    diffs = []
    if before_doc != json.loads(json_text):
        diffs.append({"before": review_lines(before_doc), "after": review_lines(doc),
                      "before_header": "%s (mounts, before)" % result["executor"],
                      "after_header": "%s (mounts, after)" % result["executor"]})
    mismatch = pair_problem(dest, result["executor"])
    changed = False
    replaced: List[Tuple[str, Optional[str]]] = []      # (path, its text before): what a failed second write puts back
    removed: List[str] = []                             # temp files a killed earlier write left (files.remove_debris)
    for path, content in ((args_path, args_text), (json_path, json_text)):
        before = _read(path)
        if before == content:
            continue
        changed = True
        if not check_mode:
            try:
                removed.extend(files.replace(path, content, 0o644, move))
            except (IOError, OSError) as exc:
                raise StoreError(_write_failure(dest, path, exc, _put_back(replaced))) from None
            replaced.append((path, before))
        if path == args_path:
            diffs.append({"before": before or "", "after": content,
                          "before_header": path if before is not None else "(absent)", "after_header": path})
    if not changed and not check_mode and os.path.isdir(dest):
        try:
            removed.extend(files.clean_folder(dest))     # the pair was current: debris is removed all the same
        except (IOError, OSError) as exc:
            raise StoreError("cannot clean the profile folder %s: %s" % (dest, exc)) from None
    healed = []
    if mismatch is not None and changed:
        healed.append("%s: re-rendered the mismatched pair (%s)" % (result["executor"], mismatch))
    if removed:
        healed.append("%s: removed what an interrupted write left: %s" % (result["executor"], " ".join(removed)))
    return {"changed": changed, "files": [args_path, json_path], "diff": diffs, "healed": healed}


def _put_back(replaced: List[Tuple[str, Optional[str]]]) -> Optional[str]:
    """Put the files this write already replaced back as they were (removed when they were absent), so that a
    failed second file never leaves a half-written pair. Returns why that failed, or None."""
    for path, before in replaced:
        try:
            if before is None:
                os.unlink(path)
            else:
                files.replace(path, before, 0o644)
        except (IOError, OSError) as exc:
            return "%s could not be put back (%s): the launcher refuses the pair (profile_pair_mismatch)" % (
                path, exc.strerror or exc)
    return None


def _write_failure(dest: str, path: str, exc: Any, not_restored: Optional[str]) -> str:
    """The error of a failed write: the folder named when it is full, and what stays in use."""
    full = getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT)
    reason = ("the profile folder %s is full (%s)" % (dest, exc.strerror) if full
              else "%s" % (exc.strerror or exc))
    kept = not_restored or "nothing half-written, the previous pair (if any) is still the one used"
    return "cannot write %s: %s; %s" % (path, reason, kept)
