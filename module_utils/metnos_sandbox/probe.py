# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real wrapped probe: run a rendered profile for real and check, from inside, that
what the profile promises holds (R-DIAG-3). It must be able to fail.

``expectations(profile, ...)`` derives the checks from the *intended* profile; ``run``
executes an argv (normally that profile's, possibly weakened by a test) with the payload
as the command, and ``evaluate`` turns the payload's observations into checks.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import uuid

from . import bwrap as B
from . import diagnostics as D

# Runs inside the sandbox on the runtime's interpreter (Python 3.6+, stdlib only).
PAYLOAD = r'''
import ctypes, errno, json, os, socket, sys
spec = json.loads(sys.argv[1])
obs = {"ns": {}, "errors": []}
for ns in ("user", "ipc", "uts", "net", "pid", "mnt"):
    try:
        obs["ns"][ns] = os.readlink("/proc/self/ns/" + ns)
    except OSError as exc:
        obs["ns"][ns] = "error:%d" % exc.errno
try:
    obs["tmp_entries"] = sorted(os.listdir("/tmp"))
except OSError as exc:
    obs["tmp_entries"] = ["error:%d" % exc.errno]
obs["marker_visible"] = os.path.lexists(spec["marker"]) if spec.get("marker") else None
try:
    obs["interfaces"] = sorted(name for _i, name in socket.if_nameindex())
except OSError as exc:
    obs["interfaces"] = ["error:%d" % exc.errno]
def try_write(path):
    target = path
    try:
        if os.path.isdir(path):
            target = os.path.join(path, ".metnos-probe-" + spec["token"])
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            os.unlink(target)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            os.close(fd)
        return "writable"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
obs["ro"] = dict((p, try_write(p)) for p in spec.get("ro", []))
obs["rw"] = dict((p, try_write(p)) for p in spec.get("rw", []))
obs["absent"] = dict((p, os.path.lexists(p)) for p in spec.get("absent", []))
try:
    libc = ctypes.CDLL(None, use_errno=True)
    sig = ctypes.c_int(0)
    libc.prctl(2, ctypes.byref(sig), 0, 0, 0)   # PR_GET_PDEATHSIG
    obs["pdeathsig"] = sig.value
except Exception as exc:
    obs["pdeathsig"] = "error:%s" % exc
obs["uid"] = os.getuid()
sys.stdout.write(json.dumps(obs))
'''

SENSITIVE = ("/root", "/home", "/opt", "/srv", "/mnt", "/media", "/var", "/run")


def host_namespaces(proc="/proc"):
    out = {}
    for ns in ("user", "ipc", "uts", "net", "pid", "mnt"):
        try:
            out[ns] = os.readlink(os.path.join(proc, "self/ns", ns))
        except OSError:
            out[ns] = None
    return out


def _under(path, root):
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def expected_absent(profile, candidates, depth=2, limit=60):
    """Host paths that must not be visible: candidates not inside a mount. For a candidate
    that is an ancestor of a mount (it exists as an empty skeleton), check its other children."""
    binds = [m["dest"] for m in profile["mounts"] if m["kind"] in ("ro", "rw", "symlink", "tmpfs", "proc", "dev")]
    out = []

    def visit(path, level):
        if len(out) >= limit or not os.path.lexists(path):
            return
        if any(_under(path, b) for b in binds):
            return
        if any(_under(b, path) for b in binds):
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


def expectations(profile, extra_absent=(), marker=None):
    """The checks a profile promises, as the spec the payload receives."""
    ro = [m["dest"] for m in profile["mounts"] if m["kind"] == "ro"]
    rw = [m["dest"] for m in profile["mounts"] if m["kind"] == "rw"]
    net_unshared = "--unshare-net" in (profile.get("argv") or [])
    return {
        "token": uuid.uuid4().hex[:12],
        "marker": marker,
        "ro": ro, "rw": rw,
        "absent": expected_absent(profile, list(SENSITIVE) + list(extra_absent)),
        "net_unshared": net_unshared,
    }


def payload_command(python):
    return [python, "-c", PAYLOAD]


def replace_command(argv, command):
    """argv with everything after the first '--' replaced by command."""
    sep = argv.index("--")
    return argv[:sep + 1] + list(command)


def evaluate(spec, obs, host_ns):
    """Observations -> checks [{name, rule, expected, observed, ok}]."""
    checks = []

    def add(name, rule, expected, observed, ok):
        checks.append({"name": name, "rule": rule, "expected": expected, "observed": observed, "ok": bool(ok)})

    ns = obs.get("ns", {})
    for kind in ("user", "ipc", "uts"):
        add("%s_namespace_private" % kind, "R-BASE-6", "differs from host %s" % host_ns.get(kind),
            ns.get(kind), ns.get(kind) and ns.get(kind) != host_ns.get(kind))
    if spec["net_unshared"]:
        add("net_namespace_private", "R-BASE-7", "differs from host %s" % host_ns.get("net"), ns.get("net"),
            ns.get("net") and ns.get("net") != host_ns.get("net"))
        add("only_loopback", "R-BASE-7", ["lo"], obs.get("interfaces"), obs.get("interfaces") == ["lo"])
    else:
        add("host_network", "R-NET-1", "same as host %s" % host_ns.get("net"), ns.get("net"),
            ns.get("net") == host_ns.get("net"))
    add("no_pid_namespace", "R-BASE-8", "same as host %s" % host_ns.get("pid"), ns.get("pid"),
        ns.get("pid") == host_ns.get("pid"))
    add("tmp_private_and_empty", "R-BASE-3", [], obs.get("tmp_entries"), obs.get("tmp_entries") == [])
    if spec.get("marker"):
        add("host_tmp_hidden", "R-BASE-3", False, obs.get("marker_visible"), obs.get("marker_visible") is False)
    for path, result in sorted((obs.get("ro") or {}).items()):
        add("read_only:%s" % path, "R-BASE-1" if not path.startswith("/var/lib/metnos") else "R-CAP-FS",
            "EROFS/EACCES/EPERM", result, result in ("EROFS", "EACCES", "EPERM"))
    for path, result in sorted((obs.get("rw") or {}).items()):
        add("writable:%s" % path, "R-CAP-FS", "writable", result, result == "writable")
    for path, present in sorted((obs.get("absent") or {}).items()):
        add("hidden:%s" % path, "R-SEC-1", False, present, present is False)
    add("parent_death_signal", "R-BASE-6", 9, obs.get("pdeathsig"), obs.get("pdeathsig") == 9)
    return checks


def make_marker(tmpdir="/tmp"):
    """A file in the host's /tmp that must not be visible inside (private /tmp)."""
    path = os.path.join(tmpdir, ".metnos-probe-marker-%s" % uuid.uuid4().hex[:12])
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.close(fd)
    return path


def run(argv, spec, python, user=None, env=None, timeout=30.0, cwd="/"):
    """Run argv (a bwrap profile) with the payload as its command. Returns a verdict dict."""
    argv = list(argv)
    sep = argv.index("--")
    full = argv[:sep] + ["--json-status-fd", "{status_fd}", "--"] + payload_command(python) + [json.dumps(spec)]
    host_ns = host_namespaces()
    result = B.run_bwrap(full, user=user, env=env, timeout=timeout, cwd=cwd)
    verdict = {"argv": [a if a != "{status_fd}" else "FD" for a in full[:len(full) - 2]] + ["<payload>", "<spec>"],
               "rc": result["rc"], "timed_out": result["timed_out"], "setup_failed": result["setup_failed"],
               "stderr": result["stderr"].strip()[-2000:], "duration": result["duration"], "checks": [],
               "diagnostics": []}
    if result["timed_out"]:
        verdict["diagnostics"].append(D.make("probe_timeout", message="the probe did not finish within %ss; its "
                                             "whole process group was killed" % timeout, timeout=timeout))
        verdict["passed"] = False
        return verdict
    if result["setup_failed"]:
        cls = B.classify(result["stderr"], result["rc"])
        verdict["classification"] = cls
        text = cls["cause_text"] + (" (bwrap said: %s)" % cls["stderr_line"] if cls.get("stderr_line") else "")
        verdict["diagnostics"].append(D.make("bwrap_smoke_failed", user=(user or {}).get("name", "current user"),
                                             cause=cls["cause"], cause_text=text, remediation=cls["remediation"],
                                             points_at=cls.get("points_at")))
        verdict["passed"] = False
        return verdict
    try:
        obs = json.loads(result["stdout"])
    except ValueError:
        verdict["diagnostics"].append(D.make("probe_payload_failed", message="the payload exited %s without a "
                                             "result: %s" % (result["rc"], verdict["stderr"][-300:] or "no output")))
        verdict["passed"] = False
        return verdict
    verdict["observed_uid"] = obs.get("uid")
    verdict["checks"] = evaluate(spec, obs, host_ns)
    failed = [c for c in verdict["checks"] if not c["ok"]]
    for check in failed:
        verdict["diagnostics"].append(D.make(
            "probe_check_failed", message="%s (%s): expected %s, observed %s" % (
                check["name"], check["rule"], check["expected"], check["observed"]),
            check=check["name"], check_rule=check["rule"]))
    verdict["passed"] = not failed
    return verdict
