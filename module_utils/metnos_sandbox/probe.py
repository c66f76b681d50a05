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
try:
    st = os.stat("/tmp")
    obs["tmp_id"] = [st.st_dev, st.st_ino]
except OSError as exc:
    obs["tmp_id"] = "error:%d" % exc.errno
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


def host_tmp_id(path="/tmp"):
    st = os.stat(path)
    return [st.st_dev, st.st_ino]


def expectations(profile, extra_absent=()):
    """The checks a profile promises, as the spec the payload receives. Writes nothing on the host."""
    ro = [m["dest"] for m in profile["mounts"] if m["kind"] == "ro"]
    rw = [m["dest"] for m in profile["mounts"] if m["kind"] == "rw"]
    net_unshared = "--unshare-net" in (profile.get("argv") or [])
    return {
        "token": uuid.uuid4().hex[:12],
        "host_tmp": host_tmp_id(),
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
    if spec.get("host_tmp"):
        add("host_tmp_hidden", "R-BASE-3", "a /tmp other than the host's %s" % spec["host_tmp"], obs.get("tmp_id"),
            isinstance(obs.get("tmp_id"), list) and obs.get("tmp_id") != spec["host_tmp"])
    for path, result in sorted((obs.get("ro") or {}).items()):
        add("read_only:%s" % path, "R-BASE-1" if not path.startswith("/var/lib/metnos") else "R-CAP-FS",
            "EROFS/EACCES/EPERM", result, result in ("EROFS", "EACCES", "EPERM"))
    for path, result in sorted((obs.get("rw") or {}).items()):
        add("writable:%s" % path, "R-CAP-FS", "writable", result, result == "writable")
    for path, present in sorted((obs.get("absent") or {}).items()):
        add("hidden:%s" % path, "R-SEC-1", False, present, present is False)
    add("parent_death_signal", "R-BASE-6", 9, obs.get("pdeathsig"), obs.get("pdeathsig") == 9)
    return checks


def run(argv, spec, python, user=None, env=None, timeout=30.0, cwd="/"):
    """Run argv (a bwrap profile) with the payload as its command. Returns a verdict dict."""
    argv = list(argv)
    sep = argv.index("--")
    full = argv[:sep] + ["--json-status-fd", "{status_fd}", "--"] + payload_command(python) + [json.dumps(spec)]
    host_ns = host_namespaces()
    result = B.run_bwrap(full, user=user, env=env, timeout=timeout, cwd=cwd)
    return _verdict(full, result, spec, host_ns, user, timeout)


def _verdict(full, result, spec, host_ns, user, timeout):
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
        verdict["diagnostics"].append(D.make("probe_setup_failed", user=(user or {}).get("name", "current user"),
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


# --------------------------------------------------------------------------- in the service's context

PROBE_MANIFEST = {"name": "sandbox_probe", "origin": "metnos-sandbox-ops", "revision": 1, "capabilities": []}


def systemd_run_argv(unit_name, user, settings, env, timeout):
    """systemd-run around a command: a transient unit carrying the service's execution context.

    ``settings`` is a unit_context result (every directive of the unit minus its documented
    deny list, as ``assignments``) or {} for none. ``user`` applies only when the context names
    no User=/DynamicUser=; ``env`` adds --setenv values (none when the unit's own Environment=
    directives are carried).
    """
    from . import unit_context as UC
    argv = ["systemd-run", "--wait", "--pipe", "--collect", "--service-type=exec", "--unit=" + unit_name,
            "-p", "KillMode=mixed", "-p", "RuntimeMaxSec=%d" % max(1, int(timeout))]
    assignments = (settings or {}).get("assignments") or []
    keys = set(a[0] for a in assignments)
    if not keys & {"User", "DynamicUser"}:
        if user.get("dynamic"):
            argv += ["-p", "DynamicUser=yes"]
        elif user.get("name") not in (None, "root"):
            argv += ["-p", "User=%s" % user["name"]]
    argv += UC.property_args(assignments)
    for key in sorted(env):
        argv += ["--setenv=%s=%s" % (key, env[key])]
    return argv


_SYSTEMD_RUN_LINES = ("Running as unit", "Finished with result:", "Main processes terminated with:",
                      "Service runtime:", "CPU time consumed:", "Memory peak:", "Press ^]")


def _strip_systemd_run(stderr):
    """Separate systemd-run's own report lines from the command's stderr."""
    keep, info = [], {}
    for line in stderr.splitlines():
        if line.startswith(_SYSTEMD_RUN_LINES):
            if line.startswith("Finished with result:"):
                info["result"] = line.split(":", 1)[1].strip()
            if line.startswith("Main processes terminated with:"):
                info["main"] = line.split(":", 1)[1].strip()
            continue
        keep.append(line)
    return "\n".join(keep), info


def run_systemd(argv, spec, python, user, settings, env, timeout, runner_unit):
    """Like run(), inside a transient systemd unit. The status fd is redirected to stdout."""
    import subprocess
    import time
    sep = argv.index("--")
    inner = argv[:sep] + ["--json-status-fd", "3", "--"] + payload_command(python) + [json.dumps(spec)]
    full = systemd_run_argv(runner_unit, user, settings, env, timeout) + \
        ["/bin/sh", "-c", 'exec "$@" 3>&1', "sh"] + inner
    host_ns = host_namespaces()
    start = time.time()
    timed_out = False
    try:
        proc = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout + 15,
                              env=dict(os.environ, SYSTEMD_COLORS="0", LC_ALL="C"))
        rc, out, err = proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        subprocess.run(["systemctl", "kill", "--signal=SIGKILL", runner_unit], capture_output=True)
        subprocess.run(["systemctl", "stop", runner_unit], capture_output=True)
        rc, out, err, timed_out = None, "", "", True
    subprocess.run(["systemctl", "reset-failed", runner_unit], capture_output=True)
    stderr, info = _strip_systemd_run(err)
    if info.get("result") == "timeout":
        timed_out = True
    objects = B.parse_json_objects(out)
    status = {}
    obs = None
    for obj in objects:
        if "ns" in obj and "pdeathsig" in obj:
            obs = obj
        else:
            status.update(obj)
    main = info.get("main", "")
    if "status=SYS" in main or "status=31" in main:
        rc = 128 + 31
    result = {"rc": rc, "stdout": json.dumps(obs) if obs else "", "stderr": stderr, "json_status": status,
              "setup_failed": "exit-code" not in status and not timed_out, "timed_out": timed_out,
              "duration": round(time.time() - start, 3), "systemd_result": info}
    verdict = _verdict(full, result, spec, host_ns, user, timeout)
    verdict["argv"] = full[:len(full) - 1] + ["<spec>"]
    return verdict


def probe_service(params, runner):
    """The whole probe: service environment -> fail-closed check -> render -> run in context -> verdict.

    ``params``: unit (or None), scope, user, manifest (mapping/text or None), invocation, host,
    python, timeout, context (auto/systemd/direct), extra_absent.
    """
    import pwd

    from . import envflags
    from . import manifest as M
    from . import profile as P
    from . import service_env as S

    out = {"passed": False, "checks": [], "diagnostics": [], "context": None}
    svc = None
    unit = params.get("unit")
    if unit:
        svc = S.inspect({"unit": unit, "scope": params.get("scope") or "system", "user": params.get("user"),
                         "mode": "auto"}, runner)
        if svc is None:
            out["diagnostics"].append(D.make("unit_not_found", unit=unit,
                                             message="%s does not exist: the probe ran in the admin context "
                                                     "instead." % unit))
    if svc is not None and "_env" in svc:
        env = dict(svc["_env"])
        user = svc["user"]
        status = svc["status"]
        out["service"] = dict((k, v) for k, v in svc.items() if not k.startswith("_"))
        out["status_view"] = svc.get("status_view")
    else:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if envflags.ENV_VAR in os.environ:
            env[envflags.ENV_VAR] = os.environ[envflags.ENV_VAR]
        entry = pwd.getpwnam(params.get("probe_user") or "nobody")
        user = {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": [entry.pw_gid]}
        status = envflags.status(B.which("bwrap", env["PATH"]), env)
        out["status_view"] = "runtime status() in the admin's environment (no service unit)"
    out["status"] = status
    if params.get("probe_user") and svc is not None and "_env" in svc:
        entry = pwd.getpwnam(params["probe_user"])
        user = {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": [entry.pw_gid]}

    # Fail closed exactly like the runtime: no bwrap is started (R-FAIL-1).
    if not status["active"]:
        out["context"] = "not started: the runtime would fail closed"
        out["diagnostics"].extend(svc["diagnostics"] if svc is not None and "_env" in svc else
                                  envflags.diagnose(status, env, env.get("PATH"), where="probe environment"))
        if not any(d["code"] == "executor_os_sandbox_unavailable" for d in out["diagnostics"]):
            out["diagnostics"].append(D.make("executor_os_sandbox_unavailable"))
        out["diagnostics"] = D.sort(out["diagnostics"])
        return out

    host_over = dict(params.get("host") or {})
    python = params.get("python") or host_over.get("python_executable") or "/usr/bin/python3"
    if not os.path.exists(python):
        python = "/usr/bin/python3"
    host_over.setdefault("python_executable", python)
    host = P.HostContext(host_over)     # P.ContextError names the bad key
    source = params.get("manifest") or PROBE_MANIFEST
    if isinstance(source, dict):
        prof = P.render_safe(dict(source), host, params.get("invocation") or {}, status)
    else:
        try:
            prof = P.render(M.loads(source), host, params.get("invocation") or {}, status)
        except M.ManifestError as exc:
            prof = P.refused(None, exc.diagnostics)
    out["profile"] = {"executor": prof["executor"], "decision": prof["decision"], "argv": prof["argv"]}
    if prof["decision"] != "wrapped":
        out["context"] = "not started: profile %s" % prof["decision"]
        out["diagnostics"] = D.sort(prof["diagnostics"])
        return out

    extra = list(params.get("extra_absent") or [])
    if user.get("home") and user.get("home") not in ("/", "/nonexistent"):
        extra.append(user["home"])
    spec = expectations(prof, extra_absent=extra)
    context = params.get("context") or "auto"
    use_systemd = context == "systemd" or (context == "auto" and svc is not None and svc.get("mode") == "systemd")
    timeout = float(params.get("timeout") or 60)
    if use_systemd:
        unit_name = "metnos-probe-%s" % uuid.uuid4().hex[:10]
        settings, run_env = {}, env
        if svc is not None and "_env" in svc:
            # The unit's whole execution context, minus the documented deny list (unit_context.py);
            # its own Environment= directives travel with it, so no --setenv.
            try:
                ctx = S.execution_context({"unit": unit, "scope": params.get("scope") or "system",
                                           "user": params.get("user")}, runner,
                                          probe_user=user if params.get("probe_user") else None)
            except S.SystemctlError as exc:     # run anyway, as the user, and say how much less it proves
                ctx = {"assignments": [], "carried": [], "excluded": [], "not_carried": [], "carried_as": [],
                       "differences": [], "verified": False, "confidence": "reduced",
                       "reasons": ["the unit's execution context could not be read (%s): only its user is "
                                   "applied" % exc]}
            settings, run_env = ctx, {}
            out["unit_context"] = dict((k, ctx[k]) for k in ("carried", "excluded", "not_carried", "carried_as",
                                                             "differences", "verified", "confidence", "reasons"))
            out["confidence"] = ctx["confidence"]
        verdict = run_systemd(prof["argv"], spec, python, user, settings, run_env, timeout, unit_name)
        out["context"] = ("systemd transient unit %s as %s with the execution context of %s" %
                          (unit_name, user.get("name"), unit) if settings else
                          "systemd transient unit %s as %s (no service unit)" % (unit_name, user.get("name")))
    else:
        run_user = None if user.get("uid") in (None, os.geteuid()) else user
        verdict = run(prof["argv"], spec, python, user=run_user, env=env, timeout=timeout)
        if svc is not None and "_env" in svc:
            out["context"] = ("direct as %s with the service's environment (weaker: the unit's systemd "
                              "restrictions are not applied)" % user.get("name"))
            out["confidence"] = "reduced"
        else:
            out["context"] = "direct as %s in the admin's environment (no service unit%s)" % (
                user.get("name"), " %s" % unit if unit else "")
    out.update(dict((k, v) for k, v in verdict.items() if k != "diagnostics"))
    diags = list(verdict["diagnostics"])
    if verdict.get("setup_failed") and svc is not None:
        blamed = [d for d in svc.get("diagnostics", []) if d["code"].startswith("unit_")]
        for d in blamed:
            d = dict(d, message=d["message"] + " The probe failed in this unit's context.")
            diags.append(d)
        if blamed:
            out["blamed_directives"] = [d.get("details", {}).get("directive") for d in blamed]
    ctx = out.get("unit_context") or {}
    if ctx.get("reasons"):
        diags.append(D.make("probe_context_incomplete", unit=unit, reasons=ctx["reasons"],
                            message="%s: the probe's transient unit does not carry the service's whole execution "
                                    "context, so a pass proves less: %s." % (unit, "; ".join(ctx["reasons"]))))
    out["diagnostics"] = D.sort(diags)
    out["passed"] = verdict["passed"]
    out["verdict_view"] = "probe: proven by a real wrapped invocation (%s)" % out["context"]
    return out
