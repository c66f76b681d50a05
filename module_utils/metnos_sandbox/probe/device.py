# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A paired Linux device's profile proven from outside (R-SCOPE-4, the spec's Linux device row): the rendered argv
run as the device's client runs it - bwrap started in a process group of its own, that group killed when the
deadline passes - with a payload that reports what it sees and plants a process that ignores its parent and
outlives it.

The outside judges, from the host's /proc: the payload's PID namespace is not the probe's and every process it
could list in its /proc is one of its own namespace's (host processes invisible); its process group and session are
neither the probe's nor bwrap's, and no process outside the sandbox is in that group; once the deadline killed
bwrap's group, nothing of the sandbox survives (the planted process included); its /tmp is not the host's; its
network namespace is not the probe's unless the profile keeps the host network. A weakened profile fails with its
own code: probe_device_pid_shared, probe_device_group_shared, probe_device_deadline_escaped (the rest:
probe_device_check_failed).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import functools
import json
import os
import select
import signal
import subprocess
import time
import typing as t

from ..base import diagnostics, sources
from ..base.records import Json, Record
from ..host import procfs
from ..profile import descriptors
from . import device_script


@functools.lru_cache(maxsize=None)
def payload_text() -> str:
    """What runs inside the sandbox (device_script.py, a real module): read once per process."""
    return sources.script(device_script)


# How long after the deadline's SIGKILL the sandbox's processes may take to die (the kernel tears a PID namespace
# down once its init is gone).
SETTLE = 2.0
CODE_OF_CHECK = {"device_pid_namespace": "probe_device_pid_shared", "device_process_group": "probe_device_group_shared",
                 "device_deadline_kills_group": "probe_device_deadline_escaped"}


def command(argv: t.Sequence[str], python: str, spec: Json) -> t.List[str]:
    """The rendered argv with the payload as its command (the words after '--' replaced)."""
    words = list(argv)
    sep = words.index("--") if "--" in words else len(words)
    return words[:sep] + ["--", python, "-I", "-S", "-c", payload_text(), json.dumps(spec, sort_keys=True)]


def _stat(pid: int) -> t.Optional[t.Tuple[int, int, int, int]]:
    """(ppid, pgrp, session, start time) of a live process in this /proc, None when it is gone (or a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else (int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]))
    except (OSError, IndexError, ValueError):
        return None


def _comm(pid: int) -> str:
    try:
        with open("/proc/%d/comm" % pid) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _pids() -> t.List[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def _pid_ns(pid: t.Union[int, str]) -> str:
    """The PID namespace link, read with the process's own credentials when root is refused (no CAP_SYS_PTRACE:
    root in a container)."""
    return str(procfs.namespaces(pid, ("pid",))[0]["pid"])


def _marked(token: str) -> t.List[int]:
    """The processes the payload marked (its own and the planted one), by comm."""
    names = ("md-" + token)[:15], ("mg-" + token)[:15]
    return [pid for pid in _pids() if _comm(pid) in names]


def _members(namespace: str, payload: int) -> t.Dict[int, int]:
    """Host pid -> pid in its own namespace, of every process in the payload's PID namespace ``namespace`` (links
    root may not read are read with the payload's credentials: procfs.sharers)."""
    found, _unreadable = procfs.sharers({"pid": namespace}, [payload], limit=4096)
    out = {}
    for pid in [payload] + [p for p in found["pid"] if isinstance(p, int)]:
        nspid = procfs.read_status(pid).get("nspid") or [pid]
        out[pid] = int(nspid[-1])
    return out


def _survivors(token: str, before: t.Mapping[int, t.Optional[t.Tuple[int, int, int, int]]]) -> t.List[int]:
    """The sandbox's processes still alive: marked by the payload, or seen in its own PID namespace before the
    deadline and still the same process (its start time)."""
    found = set(_marked(token))
    found.update(pid for pid, seen in before.items() if seen is not None and _stat(pid) == seen)
    return sorted(pid for pid in found if _stat(pid) is not None)


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> t.Optional[Json]:
    """The payload's one JSON line on bwrap's stdout, within ``timeout``."""
    if proc.stdout is None:
        raise AssertionError("bwrap was started without a stdout pipe")
    data = b""
    end = time.monotonic() + timeout
    while b"\n" not in data and time.monotonic() < end:
        ready, _w, _x = select.select([proc.stdout], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            break
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        data += chunk
    try:
        obs = json.loads(data.split(b"\n", 1)[0].decode("utf-8", "replace"))
    except ValueError:
        return None
    return obs if isinstance(obs, dict) else None


def _as_user(user: t.Optional[t.Mapping[str, t.Any]]) -> t.Optional[t.Callable[[], None]]:
    if user is None or user.get("uid") in (None, os.geteuid()):
        return None
    uid, gid = int(user["uid"]), int(user["gid"])

    def drop() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    return drop


class _Checks(object):
    def __init__(self) -> None:
        self.checks: t.List[Json] = []

    def add(self, name: str, expected: str, observed: Json, problems: t.List[str]) -> None:
        self.checks.append({"name": name, "rule": "R-SCOPE-4", "expected": expected,
                            "observed": dict(observed, problems=problems), "ok": not problems})


class DeviceProfile(Record):
    """What the proof needs of a rendered device profile (or a weakened one in tests): its bwrap ``argv``, whether
    it keeps the host's network (``host_network``), its descriptors (``fds``, descriptors.py: the launcher opens
    them and becomes bwrap) and its declared ``downgrades`` ({flag, reason}: a check that fails only for a flag
    declared left out is reported as that declared downgrade, device_profile_downgraded, a warning)."""
    argv: t.Sequence[str]
    host_network: bool = False
    fds: t.Optional[t.Sequence[t.Any]] = None
    downgrades: t.Sequence[t.Mapping[str, str]] = ()


def prove(profile: DeviceProfile, python: str, timeout: float = 30.0, user: t.Optional[t.Mapping[str, t.Any]] = None,
          env: t.Optional[t.Mapping[str, str]] = None) -> Json:
    """Run ``profile`` as the device's client: bwrap in a process group of its own, SIGKILL to that group at the
    deadline. Returns {checks, diagnostics}: whether it passed is read from the diagnostics alone
    (base/verdicts.probe_passed: none is an error)."""
    argv, fds = profile.argv, profile.fds
    token = os.urandom(6).hex()
    marker = "/tmp/.metnos-host-" + token
    os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))   # never through a link
    words = command(argv, python, {"token": token, "marker": marker})
    if fds:
        words = descriptors.launcher_words(words, python, list(fds))
    checks = _Checks()
    try:
        _run(checks, words, token, profile.host_network, timeout, user, env)
    finally:
        _cleanup(marker, token)
    return judged(checks.checks, argv, profile.downgrades)


def _run(checks: _Checks, words: t.List[str], token: str, host_network: bool, timeout: float,
         user: t.Optional[t.Mapping[str, t.Any]], env: t.Optional[t.Mapping[str, str]]) -> None:
    """Start bwrap in a process group of its own, judge while the payload waits, then the deadline and after."""
    try:
        proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
            words, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, preexec_fn=_as_user(user), cwd="/",
            env=dict(env or {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}))
    except (OSError, subprocess.SubprocessError) as exc:
        checks.add("device_payload", "the payload reports and is found outside", {"error": str(exc)[:300]},
                   ["bwrap could not be started"])
        return
    before: t.Dict[int, t.Optional[t.Tuple[int, int, int, int]]] = {}
    try:
        obs = _read_line(proc, timeout)
        marked = _marked(token)
        payload = next((pid for pid in marked if _comm(pid).startswith("md-")), None)
        if obs is None or payload is None:
            checks.add("device_payload", "the payload reports and is found outside",
                       {"report": obs, "found": marked, "stderr": _stderr(proc)}, ["the payload did not run or report"])
        else:
            before = dict((pid, _stat(pid)) for pid in _judge(checks, obs, payload, proc.pid, host_network, marked))
    finally:
        _deadline(proc)
    survivors = _survivors(token, before)
    checks.add("device_deadline_kills_group", "nothing of the sandbox alive once the deadline killed bwrap's group",
               {"survivors": survivors[:20], "comms": [_comm(pid) for pid in survivors[:20]]},
               ["%d process(es) outlived the deadline" % len(survivors)] if survivors else [])
    for pid in survivors:                       # the probe leaves nothing behind
        _kill(pid)
    end = time.monotonic() + SETTLE
    while any(_stat(pid) is not None for pid in survivors) and time.monotonic() < end:
        time.sleep(0.05)


def _judge(checks: _Checks, obs: Json, payload: int, bwrap: int, host_network: bool,
           marked: t.Sequence[int]) -> t.List[int]:
    """The outside's checks while the payload waits; returns the processes of the payload's own PID namespace."""
    mine = _pid_ns("self")
    theirs = _pid_ns(payload)
    members = _members(theirs, payload) if not procfs.is_error(theirs) and theirs != mine else {}
    listed = obs.get("proc_pids")
    problems = []
    if procfs.is_error(theirs):
        problems.append("not proven: the payload's PID namespace could not be read (%s)" % theirs)
    elif theirs == mine:
        problems.append("the payload is in the probe's PID namespace")
    if not isinstance(listed, list):
        problems.append("not proven: the payload could not list /proc (%s)" % listed)
    else:
        foreign = sorted(set(listed) - set(members.values()))
        if foreign:
            problems.append("%d pid(s) listed inside are not the sandbox's own: %s" % (
                len(foreign), ", ".join(str(p) for p in foreign[:8])))
    checks.add("device_pid_namespace", "a PID namespace of its own; inside, only the sandbox's processes",
               {"outside": theirs, "probe": mine, "listed_inside": listed if not isinstance(listed, list) else
                listed[:20], "own_namespace": sorted(members.values())[:20]}, problems)
    _judge_group(checks, payload, bwrap, set(members) | set(marked))
    interfaces = obs.get("interfaces")
    net_theirs, net_mine = (procfs.namespaces(pid, ("net",))[0].get("net") for pid in (payload, "self"))
    problems = []
    if not host_network and (net_theirs == net_mine or interfaces != ["lo"]):
        problems.append("the network is present: namespace %s (probe's %s), interfaces %s"
                        % (net_theirs, net_mine, interfaces))
    checks.add("device_network", "the host network" if host_network else "no network (only lo, its own namespace)",
               {"outside": net_theirs, "probe": net_mine, "interfaces": interfaces}, problems)
    written = obs.get("tmp_written")
    problems = []
    if obs.get("host_tmp_marker") is not False:
        problems.append("the host's /tmp is visible inside")
    if not isinstance(written, str) or written.startswith("error:"):
        problems.append("not proven: nothing could be written to /tmp inside (%s)" % written)
    elif os.path.lexists(written):
        problems.append("what was written to /tmp inside is in the host's /tmp")
    checks.add("device_private_tmp", "a /tmp of its own",
               {"written": written, "host_marker_seen": obs.get("host_tmp_marker")}, problems)
    return list(members)


def _judge_group(checks: _Checks, payload: int, bwrap: int, sandbox: t.Set[int]) -> None:
    """The payload's process group and session: not the probe's, not bwrap's, and only the sandbox in it (``sandbox``:
    its PID namespace's processes and the ones the payload marked)."""
    seen, mine = _stat(payload), (os.getpgrp(), os.getsid(0))
    started = _stat(bwrap)
    problems = []
    if seen is None:
        problems.append("not proven: the payload's stat could not be read")
    else:
        _ppid, pgrp, session, _start = seen
        if (pgrp, session) == mine or pgrp == mine[0] or session == mine[1]:
            problems.append("the payload is in the probe's process group or session")
        if started is not None and (pgrp == started[1] or session == started[2]):
            problems.append("the payload is in the process group or session of bwrap (pid %d), outside the "
                            "sandbox" % bwrap)
        outside = [pid for pid in _pids() if (_stat(pid) or (0, -1, 0, 0))[1] == pgrp and pid not in sandbox
                   and pid != payload]
        if outside:
            problems.append("processes outside the sandbox are in its process group: %s"
                            % ", ".join(str(p) for p in outside[:8]))
    checks.add("device_process_group", "a process group and session of its own (the sandbox's only)",
               {"payload": {"pgrp": seen[1], "session": seen[2]} if seen else None,
                "probe": {"pgrp": mine[0], "session": mine[1]},
                "bwrap": {"pid": bwrap, "pgrp": started[1], "session": started[2]} if started else None}, problems)


def _stderr(proc: subprocess.Popen[bytes]) -> str:
    if proc.poll() is None or proc.stderr is None:
        return ""
    return proc.stderr.read(4096).decode("utf-8", "replace")


def _deadline(proc: subprocess.Popen[bytes]) -> None:
    """The client's deadline: SIGKILL to the process group bwrap was started in; then the sandbox settles."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    time.sleep(SETTLE)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _cleanup(marker: str, token: str) -> None:
    for path in (marker, "/tmp/.metnos-device-" + token):
        try:
            os.unlink(path)
        except OSError:
            pass


# The flag each check proves (a declared downgrade of that flag excuses its failure, and says so).
FLAG_OF_CHECK = {"device_pid_namespace": "--unshare-pid", "device_deadline_kills_group": "--unshare-pid",
                 "device_process_group": "--new-session"}


def judged(checks: t.List[Json], argv: t.Sequence[str], downgrades: t.Sequence[t.Mapping[str, str]]) -> Json:
    """The device proof's checks as findings (a declared downgrade a warning, every other failure an error, no check
    at all an error too): whether it passed is read from them alone (base/verdicts.probe_passed), no flag beside."""
    diags = []
    declared = dict((d["flag"], d["reason"]) for d in downgrades)
    for check in checks:
        if check["ok"]:
            continue
        flag = FLAG_OF_CHECK.get(check["name"])
        if flag in declared:
            check["declared_downgrade"] = {"flag": flag, "reason": declared[flag]}
            diags.append(diagnostics.make("device_profile_downgraded", wording="probe", fill={
                "flag": flag, "reason": declared[flag], "check": check["name"],
                "problems": "; ".join(check["observed"]["problems"])}, flag=flag, check=check["name"]))
            continue
        code = CODE_OF_CHECK.get(check["name"], "probe_device_check_failed")
        diags.append(diagnostics.make(code, fill={"check": check["name"],
                                                  "problems": "; ".join(check["observed"]["problems"])},
                                      check=check["name"], argv=list(argv)[:64]))
    if not checks:      # nothing proven is a failure, said as one (whether it passed is read from the findings)
        diags.append(diagnostics.make("probe_device_check_failed", fill={"check": "device_payload",
                                                                         "problems": "no check ran"},
                                      check="device_payload", argv=list(argv)[:64]))
    return {"checks": checks, "diagnostics": diagnostics.sort(diags)}   # what it proved: verdicts.probe_passed
