# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc`` as bwrap makes it: the read-only covers it adds for the caller (issue 20).

bubblewrap.c, SETUP_MOUNT_PROC (the same in 0.4.1, 0.8.0, 0.10.0, 0.11.1, read in source; 0.12.0's
binary carries the same four names in the same order): after mounting ``/proc`` (a new procfs with a PID
namespace, else a recursive bind of the parent's), bwrap covers each of ``sys``, ``sysrq-trigger``,
``irq``, ``bus`` with a read-only bind of itself - but only when ``access(path, W_OK)`` succeeds for
bwrap at that moment (EACCES, ENOENT and, from 0.5, EROFS skip it). So the covers depend on the caller:
bwrap run by root (root in the sandbox's user namespace, mapped to the host's root: every capability
there) covers ``irq`` and ``bus`` (``sys`` never: procfs refuses write access to its root for anyone,
and ``sysrq-trigger`` when it exists); run by another user it covers nothing, since those are root's and
not writable.

``expected`` asks the kernel the question bwrap asks - ``access(W_OK)`` of each name, with the caller's
credentials, in bwrap's parent context (the probe's own view when it runs bwrap directly; the unit's
mount namespace through /proc/PID/root when bwrap runs in a transient unit) - before bwrap runs.
``judge`` then proves the covers from outside: in the payload's mount table every expected cover is a
read-only procfs mount at exactly that place, and no cover name carries a mount the parent context does
not have there and bwrap did not make (a read-write bind over /proc/irq, a host /proc bound instead of
--proc, a missing cover).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import errno
import os
import typing as t

from ..base.records import Json
from ..host import procfs

COVER_NAMES = ("sys", "sysrq-trigger", "irq", "bus")


def _ask(paths: t.Sequence[str]) -> t.Dict[str, str]:
    """{path: "writable" | "absent" | "read-only" | "not writable" | "error:…"}: access(W_OK) of each."""
    out = {}
    for path in paths:
        if os.access(path, os.W_OK):
            out[path] = "writable"
            continue
        try:
            os.lstat(path)
        except OSError as exc:
            out[path] = "absent" if exc.errno in (errno.ENOENT, errno.ENOTDIR) else procfs.errname(exc)
            continue
        try:
            ro = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
        except OSError:
            ro = False
        out[path] = "read-only" if ro else "not writable"
    return out


def expected(uid: int, gid: int, root: str = "", names: t.Sequence[str] = COVER_NAMES) -> Json:
    """What bwrap will cover for a caller (uid, gid): {"asked": {name: answer}, "covers": [names], "as",
    "root"}. ``root``: "" for the probe's own view, "/proc/PID" + "/root" for another process's mount
    namespace. Asked as root directly, otherwise by a reader that takes exactly uid/gid (procfs.call_as),
    since access() answers for the real uid."""
    paths = [root + "/proc/" + n for n in names]
    if uid == os.getuid():
        answers = _ask(paths)
    elif os.geteuid() == 0:
        answers = procfs.call_as(uid, gid, _ask, paths) or {}
    else:
        answers = {}
    asked = dict((n, answers.get(root + "/proc/" + n, "error:not asked")) for n in names)
    if root and any(procfs.is_error(a) for a in asked.values()):
        # the unit's mount namespace could not be walked (a unit with PrivateUsers= refuses it even to its own
        # uid): asked in the probe's own view instead, with the same credentials, and said so
        again = expected(uid, gid, "", names)
        again["root"] = "/ (the unit's view was refused: %s)" % ", ".join(sorted(set(
            a for a in asked.values() if procfs.is_error(a))))
        return again
    return {"asked": asked, "covers": [n for n in names if asked[n] == "writable"], "as": [uid, gid],
            "root": root or "/"}


def judge(visible: t.Sequence[procfs.Mount], dest: str, proc_mount: procfs.Mount, exp: t.Optional[Json],
          ctx: t.Optional[t.Sequence[procfs.Mount]]) -> t.List[str]:
    """Problems with the covers at ``dest`` (the sandbox's /proc) in the payload's visible mount table
    (``proc_mount``: the procfs there), against ``exp`` (expected()) and the parent context's mounts ``ctx``
    (what it has at /proc/<name> comes along with a recursive bind)."""
    if not exp or not isinstance(exp.get("asked"), dict):
        return ["not proven: the covers bwrap adds for the caller were not asked before the run"]
    problems = []
    unknown = [n for n, a in exp["asked"].items() if procfs.is_error(a)]
    if unknown:
        problems.append("not proven: access(W_OK) of %s could not be asked (%s)" % (
            ", ".join(unknown), ", ".join(exp["asked"][n] for n in unknown)))
    for name in exp["asked"]:
        at = procfs.mount_at(visible, dest.rstrip("/") + "/" + name)
        parents = procfs.mount_at(ctx, "/proc/" + name) if ctx else None
        if name in exp["covers"]:
            if at is None:
                problems.append("no read-only cover at %s/%s (bwrap adds one: the caller may write it)" % (
                    dest.rstrip("/"), name))
            elif at["fstype"] != "proc" or not procfs.read_only(at) or at["dev"] != proc_mount["dev"]:
                problems.append("%s/%s is %s %s %s (%s), not bwrap's read-only cover" % (
                    dest.rstrip("/"), name, at["fstype"], at["dev"], at["root"], ",".join(at["opts"][:2])))
        elif at is not None and (parents is None or (at["dev"], at["root"]) != (parents["dev"], parents["root"])):
            problems.append("%s/%s carries a mount bwrap does not make there (%s %s %s, %s)" % (
                dest.rstrip("/"), name, at["fstype"], at["dev"], at["root"], ",".join(at["opts"][:2])))
    return problems
