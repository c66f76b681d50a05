# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe's payload and what it must see: the in-sandbox witness (payload_text: payload_script.py, stdlib
only, run by the bwrap under test), the expectations a rendered profile sets for it, and the argv the probe starts
(payload_command, the descriptor launcher, argv_deviations).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import functools
import json
import os
import typing as t

from ..base import json_lite, sources
from ..base.paths import under
from ..base.records import Json, Record
from ..host import bwrap_options, procfs
from ..profile import descriptors, result
from . import payload_script

User = t.Dict[str, t.Any]
"""A user to run as: name, uid, gid (groups, home, dynamic)."""


class Stream(Record):
    """split_stream(): the launcher's pid, bwrap's merged status records, the payload's record."""
    launcher: t.Optional[int]
    status: Json
    obs: t.Optional[Json]


class Reference(Record):
    """_reference(): the namespaces the payload is judged against, where they were read, and the kinds in
    which the bwrap that was started has left them."""
    ns: t.Dict[str, str]
    source: str
    moved: t.List[str]
    depth: t.Optional[int] = None
    """How deep the parent context's PID namespace is (the length of its NSpid in this /proc), if known."""


class SystemdReport(Record):
    """_strip_systemd_run(): the command's own stderr, and systemd-run's report (result, main)."""
    stderr: str
    info: t.Dict[str, str]


@functools.lru_cache(maxsize=None)
def payload_text() -> str:
    """The payload's text (``python -c``): payload_script.py, which runs inside the sandbox, after the files that
    define what it uses, base/json_lite.py (it must be one self-contained text: the sandbox does not see the
    core). Read once per process, when first needed."""
    return sources.script(json_lite, payload_script)


SENSITIVE = ("/root", "/home", "/opt", "/srv", "/mnt", "/media", "/var", "/run")
PROC_SUPER_MAGIC = 0x9FA0
TMPFS_MAGIC = 0x01021994
SIGKILL = 9
# What bwrap's --dev creates (bubblewrap.c: devnodes, stdio links, shm, pts, ptmx, core; console
# when its stdout is a terminal, never for the probe). Anything else in /dev came from somewhere else.
DEV_ENTRIES = ("console", "core", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin",
               "stdout", "tty", "urandom", "zero")
# The mounts it makes there: a bind of the parent context's /dev/<node> for each device node (and a
# new devpts on pts). /dev/shm is a plain directory, not a mount.
DEV_NODES = ("full", "null", "random", "tty", "urandom", "zero")
UNSHARE_FLAGS = ("user", "ipc", "uts", "net", "pid", "cgroup")


def host_namespaces(proc: str = "/proc") -> t.Dict[str, str]:
    """The probe's own namespace links (the host's, when the probe runs on the host)."""
    return procfs.namespaces("self", proc=proc)[0]


def expected_absent(profile: result.Profile, candidates: t.Sequence[str], depth: int = 2,
                    limit: int = 60) -> t.List[str]:
    """Host paths that must not be visible: candidates not inside a mount. For a candidate
    that is an ancestor of a mount (it exists as an empty skeleton), check its other children."""
    binds = [m["dest"] for m in profile["mounts"] if m["kind"] in ("ro", "rw", "symlink", "tmpfs", "proc", "dev")]
    out: t.List[str] = []

    def visit(path: str, level: int) -> None:
        if len(out) >= limit or not os.path.lexists(path):
            return
        if any(under(path, b) for b in binds):
            return
        if any(under(b, path) for b in binds):
            if level >= depth:
                return
            try:
                children = sorted(os.listdir(path))
            except OSError:
                return
            for child in children:
                visit(os.path.join(path, child), level + 1)
            return
        out.append(path)

    for cand in candidates:
        visit(os.path.normpath(cand), 0)
    return out


def expectations(profile: result.Profile, extra_absent: t.Sequence[str] = ()) -> Json:
    """The checks a profile promises, as the spec the payload receives. Writes nothing on the host."""
    mounts = profile["mounts"]
    argv = list(profile.get("argv") or [])
    sep = argv.index("--") if "--" in argv else len(argv)
    opts = argv[:sep]
    unshare = ["user", "mnt"] + [k for k in UNSHARE_FLAGS[1:] if "--unshare-" + k in opts]

    def dests(kind: str) -> t.List[str]:
        return [m["dest"] for m in mounts if m["kind"] == kind]

    rules = dict((m["dest"], (m.get("provenance") or [{}])[0].get("rule") or "R-CAP-FS") for m in mounts)
    return {
        "token": os.urandom(6).hex(),
        "unshare": unshare,
        "ns": list(procfs.NS_KINDS),
        "ro": dests("ro"), "rw": dests("rw"), "tmpfs": dests("tmpfs"), "dev": dests("dev"), "proc": dests("proc"),
        "binds": dict((m["dest"], os.path.realpath(m.get("src") or m["dest"])) for m in mounts
                      if m["kind"] in ("ro", "rw")),
        "absent": expected_absent(profile, list(SENSITIVE) + list(extra_absent)),
        "net_unshared": "--unshare-net" in opts,
        "die_with_parent": "--die-with-parent" in opts,
        "rules": rules,
        "argv_options": opts[1:],
        "descriptors": list(profile.get("descriptors") or []),
        # what the profile itself puts on the sandbox's root: every destination (binds, symlinks, --dir, --file
        # ...) and, implied, the directories above it
        "created": sorted(set(m["dest"] for m in mounts)),
        # ... judged by type and content (issue 51): each symlink it makes, with the target it names
        "symlinks": dict((m["dest"], m.get("src")) for m in mounts if m["kind"] == "symlink"),
        # ... and each file it copies onto the root (--file FD DEST), with the size it declares
        "files": dict((m["dest"], m.get("size")) for m in mounts if m["kind"] == "file"),
        # ... and the sha256 of the content the profile gives bwrap for it (the probe hashes what it gives)
        "file_digests": dict((m["dest"], m.get("sha256")) for m in mounts if m["kind"] == "file"),
    }


def descriptor_launcher(words: t.List[str], python: str, spec: Json) -> t.List[str]:
    """The one hook of descriptor binds (descriptors.py): bwrap's argv behind the launcher that opens the
    profile's descriptors race-free, proves each is the object judged, then becomes bwrap (same pid)."""
    return descriptors.launcher_words(words, python, spec.get("descriptors"))


def _option_units(words: t.Sequence[str]) -> t.List[str]:
    return [" ".join([option] + follow) for _index, option, follow in bwrap_options.options(words)]


def argv_deviations(expected: t.Sequence[str], actual: t.Sequence[str]) -> t.Optional[t.Dict[str, t.List[str]]]:
    """What an argv's options add to and remove from the profile's, option by option (an option with
    its arguments is one unit). The probe judges the kernel's evidence, never these words; they are
    reported so that a failed check can be traced to the words that caused it - and so that a pass with
    deviations says which words the evidence found harmless."""
    want, got = _option_units(list(expected)), _option_units(list(actual))
    added: t.List[str] = list(got)
    removed: t.List[str] = []
    for unit in want:
        if unit in added:
            added.remove(unit)
        else:
            removed.append(unit)
    return {"added": added, "removed": removed} if added or removed else None


def payload_command(python: str, spec: t.Optional[Json] = None) -> t.List[str]:
    """The payload's exact argv (the outside finds the payload process by it)."""
    cmd = [python, "-I", "-S", "-c", payload_text()]   # isolated: no PYTHON* variables, no site, no cwd on sys.path
    return cmd + [json.dumps(spec, sort_keys=True)] if spec is not None else cmd
