# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Root's proof (issue 40): when the probe's payload ran as uid 0, the same profile's bwrap argv is run once more
with root_witness.py as its command, and what root's capabilities allow there is read from the host's /proc
(facts the sandbox cannot forge): the witness's mount table (a read-only bind it remounted writable, in its own
mount namespace) and its descriptors (a /proc/sys file open for writing - opened, never written). Either one
means the sandbox is no boundary for this service: probe_root_not_contained.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import select
import subprocess
import time
import typing as t

from ..base.diagnostics import Diagnostic, excerpt, make
from ..base.records import Json
from ..host import bwrap
from ..profile import descriptors
from . import root_witness

MAX_LINE = 1 << 16


def _source() -> str:
    """root_witness.py's own source (it runs alone inside the sandbox), from its loader as descriptors.py reads
    its own (the core may be loaded from a zip)."""
    get = getattr(getattr(root_witness, "__loader__", None), "get_source", None)
    text = get(root_witness.__name__) if callable(get) else None
    if not isinstance(text, str):
        with open(root_witness.__file__, "r") as handle:
            text = handle.read()
    return text


def read_only_target(argv: t.Sequence[str]) -> t.Optional[str]:
    """A read-only bind of the argv to try: /usr when the argv binds it, else the first --ro-bind destination."""
    sep = list(argv).index("--") if "--" in argv else len(argv)
    found = [argv[i + 2] for i in range(1, sep - 2) if argv[i] == "--ro-bind"]
    return "/usr" if "/usr" in found else (found[0] if found else None)


def _status_pid(fd: int, deadline: float) -> t.Optional[int]:
    """bwrap's --json-status-fd child-pid (the sandbox's first process, in the probe's pid namespace)."""
    data = b""
    while time.monotonic() < deadline and len(data) < MAX_LINE:
        ready, _w, _x = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
        for line in data.split(b"\n")[:-1]:
            try:
                record = json.loads(line.decode("utf-8", "replace"))
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("child-pid"), int):
                return int(record["child-pid"])
    return None


def _outside(pid: int, target: str) -> Json:
    """What the host sees of the witness: the target's per-mount options and every descriptor that names a
    /proc/sys file with its open flags (fdinfo)."""
    seen: Json = {"pid": pid, "mount_options": root_witness.mount_options(target, "/proc/%d/mountinfo" % pid),
                  "sys_write_fds": []}
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError as exc:
        seen["error"] = exc.strerror or str(exc)
        return seen
    for name in names:
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, name))
            with open("/proc/%d/fdinfo/%s" % (pid, name)) as handle:
                flags = [int(line.split()[1], 8) for line in handle if line.startswith("flags:")]
        except (OSError, ValueError, IndexError):
            continue
        if link.startswith("/proc/sys/") and flags and flags[0] & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR):
            seen["sys_write_fds"].append({"fd": int(name), "path": link, "flags": "%o" % flags[0]})
    return seen


def prove(argv: t.Sequence[str], python: str, held: t.Optional[t.Sequence[t.Any]] = None,
          timeout: float = 20.0) -> Json:
    """Run the argv (``held``: the profile's descriptors, descriptors.py) with the witness and judge it from
    outside: {"target", "inside", "outside", "remounted",
    "sys_writable", "proven", "error"}. Run as this process (root): the witness's changes stay in the sandbox's
    own mount namespace; nothing is written."""
    out: Json = {"target": read_only_target(argv), "inside": None, "outside": None, "remounted": False,
                 "sys_writable": False, "proven": False, "error": None}
    if out["target"] is None:
        out["error"] = "the argv binds nothing read-only"
        return out
    words = list(argv)
    sep = words.index("--")
    status_r, status_w = os.pipe()
    full = words[:sep] + ["--json-status-fd", str(status_w), "--", python, "-I", "-S", "-c", _source(),
                          out["target"]]
    deadline = time.monotonic() + timeout
    try:
        proc = subprocess.Popen(descriptors.launcher_words(full, python, held),  # pylint: disable=ansible-bad-function
                                stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(status_w,),
                                start_new_session=True, env=dict(bwrap.C_ENV, PATH="/usr/bin:/bin"))
    except OSError as exc:
        os.close(status_r)
        os.close(status_w)
        out["error"] = str(exc)
        return out
    os.close(status_w)
    try:
        pid = _status_pid(status_r, deadline)
        line = _line(proc, deadline)
        if pid is None or line is None:
            out["error"] = "the witness did not report (bwrap: %s)" % excerpt(_stderr(proc), 200)
            return out
        try:
            out["inside"] = json.loads(line)
        except ValueError:
            out["error"] = "the witness's report is not JSON"
            return out
        out["outside"] = _outside(pid, out["target"])
        options = out["outside"]["mount_options"] or []
        out["remounted"] = "rw" in options
        out["sys_writable"] = bool(out["outside"]["sys_write_fds"])
        out["proven"] = out["outside"]["mount_options"] is not None
    finally:
        os.close(status_r)
        _release(proc)
    return out


def _line(proc: "subprocess.Popen[bytes]", deadline: float) -> t.Optional[str]:
    """The witness's one line on stdout, within the deadline."""
    if proc.stdout is None:
        raise ValueError("the witness was started without a stdout pipe")
    data = b""
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline and len(data) < MAX_LINE:
        ready, _w, _x = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
        if b"\n" in data:
            return data.split(b"\n", 1)[0].decode("utf-8", "replace")
    return None


def _stderr(proc: "subprocess.Popen[bytes]") -> str:
    if proc.poll() is None:
        return "still running"
    if proc.stderr is None:
        return "no stderr pipe"
    return proc.stderr.read(4096).decode("utf-8", "replace")


def _release(proc: "subprocess.Popen[bytes]") -> None:
    """Let the witness exit (a line on its stdin), then end the whole session: nothing is left behind."""
    try:
        if proc.stdin is not None:
            proc.stdin.write(b"go\n")
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        bwrap.kill_group(proc)
        proc.wait()
    bwrap.kill_group(proc)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def diagnostics(proof: Json, user: str) -> t.List[Diagnostic]:
    """probe_root_not_contained when the outside saw the remount or the writable /proc/sys descriptor."""
    if not (proof.get("remounted") or proof.get("sys_writable")):
        return []
    seen = []
    if proof["remounted"]:
        seen.append("the read-only bind %s was remounted writable in the sandbox's own mount namespace (its "
                    "options seen from the host: %s)" % (proof["target"], ",".join(proof["outside"]["mount_options"])))
    if proof["sys_writable"]:
        fds = proof["outside"]["sys_write_fds"]
        seen.append("%s opened for writing (descriptor %d, flags %s; nothing written)" % (
            fds[0]["path"], fds[0]["fd"], fds[0]["flags"]))
    return [make("probe_root_not_contained", user=user, target=proof["target"],
                 fill={"seen": "; ".join(seen)})]
