"""Copy everything, minus a documented list: the probe's transient unit carries the service's whole
execution context (module_utils/metnos_sandbox/service/unit_context.py, unit_preflight.py).

On Debian 12 (systemd 252) and 13 (systemd 257), with CAP_SYS_ADMIN so that every directive really
applies: a running service with more than 40 directives (systemd-analyze security's list, resource
limits, a root directory with bind mounts, address families, IP and socket policy, NoExecPaths=,
UMask=, SupplementaryGroups=, PrivateIPC=, specifiers, multi-line merges) and the probe's own
transient unit (the argv probe/runners.py systemd_run_argv builds from the context) running side by side:
`systemctl show` of both must be equal on every property but the documented ignored ones. Then
what cannot be carried is named, never dropped in silence.
"""
import json

import pytest

from conftest import install_trial_tools

BIG = """[Unit]
Description=the service whose context the probe must carry
After=network.target
[Service]
Type=simple
User=metnos
Group=metnos
SupplementaryGroups=users
ExecStart=/bin/sleep infinity
Restart=on-failure
TimeoutStopSec=5
StandardOutput=journal
RootDirectory=/srv/bigroot
MountAPIVFS=yes
BindReadOnlyPaths=/usr /etc
BindPaths=/srv/big/data:/srv/data
BindReadOnlyPaths=/srv/big/data:/srv/rodata
WorkingDirectory=/srv/data
TemporaryFileSystem=/var:ro
ReadOnlyPaths=-/srv/rodata
ReadWritePaths=-/srv/data
InaccessiblePaths=-/srv/secret
NoExecPaths=/srv/data /tmp
ExecPaths=/usr
UMask=0027
Environment=A=1 "B=two words" UNIT=%n PCT=100%%
UnsetEnvironment=C
PrivateTmp=yes
PrivateDevices=yes
PrivateNetwork=yes
PrivateIPC=yes
PrivateMounts=yes
ProtectSystem=strict
ProtectHome=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
ProcSubset=pid
NoNewPrivileges=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
RestrictNamespaces=user mnt
RestrictNamespaces=ipc uts net
LockPersonality=yes
MemoryDenyWriteExecute=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
SystemCallErrorNumber=EPERM
CapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_CHOWN
CapabilityBoundingSet=~CAP_CHOWN
AmbientCapabilities=
RestrictAddressFamilies=AF_UNIX AF_INET
RestrictAddressFamilies=AF_INET6
IPAddressDeny=any
IPAddressAllow=localhost
IPAddressAllow=10.0.0.0/8
SocketBindDeny=any
SocketBindAllow=tcp:8080
DevicePolicy=closed
DeviceAllow=/dev/null rw
KeyringMode=private
RemoveIPC=yes
LimitNOFILE=1024:4096
LimitNPROC=512
LimitCORE=0
LimitMEMLOCK=0
TasksMax=64
MemoryMax=512M
CPUQuota=50%
Nice=5
OOMScoreAdjust=100
IOSchedulingClass=best-effort
CPUSchedulingPolicy=batch
SecureBits=noroot
CoredumpFilter=default
TimerSlackNSec=1ms
LoadCredential=host:/etc/hostname
"""

# Runs in the container: the service running, the probe's transient unit running with the context
# unit_context built (preflight included), `systemctl show --all` of both.
CHECK = r'''
import importlib, json, subprocess, sys, time
sys.path.insert(0, "/opt/metnos-trial/core")
# No Ansible in the container: the core under its bare package name (imported by name: a string, never an
# import statement of this file).
B, RUN, S, UC = (importlib.import_module("metnos_sandbox." + m)
                for m in ("host.bwrap", "probe.runners", "service.environment", "service.unit_context"))
unit, name = sys.argv[1], sys.argv[2]
def show(u):
    return UC.parse_show_all(subprocess.run(["systemctl", "show", "--all", u], capture_output=True, text=True).stdout)
ctx = S.execution_context({"unit": unit}, B.default_runner)
argv = RUN.systemd_run_argv(name, {"name": "root"}, ctx, {}, 120) + ["/bin/sleep", "60"]
proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
for _ in range(100):
    if subprocess.run(["systemctl", "show", "-p", "ActiveState", "--value", name], capture_output=True,
                      text=True).stdout.strip() in ("active", "failed"):
        break
    time.sleep(0.1)
probe = show(name + ".service")
subprocess.run(["systemctl", "stop", name], capture_output=True)
proc.wait(timeout=30)
print(json.dumps({"ctx": dict((k, ctx[k]) for k in ("carried", "excluded", "not_carried", "carried_as",
                                                  "differences", "verified", "confidence", "reasons")),
                  "service": show(unit), "probe": probe, "argv": argv}))
'''


@pytest.fixture(scope="module")
def big(systemd_host):
    h = systemd_host
    install_trial_tools(h)
    h.write("/opt/metnos-trial/ctxcheck.py", CHECK)
    h.sh("mkdir -p /srv/big/data /srv/bigroot/usr /srv/bigroot/etc /srv/bigroot/srv/data /srv/bigroot/srv/rodata "
         "/srv/bigroot/srv/secret /srv/bigroot/proc /srv/bigroot/dev /srv/bigroot/sys /srv/bigroot/tmp "
         "/srv/bigroot/run /srv/bigroot/var && chown metnos /srv/big/data && "
         "for d in bin sbin lib lib64; do [ -e /srv/bigroot/$d ] || ln -s usr/$d /srv/bigroot/$d; done")
    h.install_unit("big", BIG)
    h.sh("systemctl daemon-reload && systemctl start metnos-big.service")
    try:
        yield h
    finally:
        h.sh("systemctl stop metnos-big.service", check=False)


def directives_set(text):
    out = []
    section = None
    for line in text.splitlines():
        if line.startswith("["):
            section = line
        elif "=" in line and section == "[Service]":
            out.append(line.split("=", 1)[0])
    return list(dict.fromkeys(out))


def test_big_unit_runs_with_every_directive_applied(big):
    assert big.sh("systemctl is-active metnos-big.service").stdout.strip() == "active"
    pid = big.sh("systemctl show -p MainPID --value metnos-big.service").stdout.strip()
    status = big.sh("grep -E '^(NoNewPrivs|CapBnd|Umask|Groups)' /proc/%s/status" % pid).stdout
    assert "NoNewPrivs:\t1" in status and "CapBnd:\t0000000000000400" in status and "Umask:\t0027" in status


def test_probe_unit_equals_the_service_on_every_copied_property(big):
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import (
        context_deny,
        unit_context,
    )
    out = json.loads(big.sh("python3 /opt/metnos-trial/ctxcheck.py metnos-big.service metnos-probe-ctxtest",
                            timeout=180).stdout)
    ctx = out["ctx"]
    lifecycle = {"Type", "ExecStart", "Restart", "TimeoutStopSec", "StandardOutput", "RemoveIPC"}
    wanted = [d for d in directives_set(BIG) if d not in lifecycle]
    assert len(wanted) >= 40, len(wanted)
    assert set(wanted) <= set(ctx["carried"]), sorted(set(wanted) - set(ctx["carried"]))
    assert sorted(e["directive"] for e in ctx["excluded"]) == sorted(lifecycle)
    assert ctx["not_carried"] == [] and ctx["verified"] and ctx["confidence"] == "full", ctx["reasons"]
    # the round trip, for real: every property systemd shows, but identity/lifecycle/runtime state
    diffs = unit_context.compare(out["service"], out["probe"])
    assert diffs == [], diffs
    compared = [p for p in out["service"] if not context_deny.ignored_property(p)]
    assert len(compared) > 150
    for prop, value in (("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"), ("LimitNOFILESoft", "1024"),
                        ("CapabilityBoundingSet", "cap_net_bind_service"), ("IPAddressDeny", "0.0.0.0/0 ::/0"),
                        ("BindPaths", "/srv/big/data:/srv/data:rbind"), ("SocketBindAllow", "tcp8080")):
        assert out["probe"][prop] == out["service"][prop], prop
        assert sorted(out["service"][prop].split()) == sorted(value.split()), (prop, out["service"][prop])
    assert "UNIT=metnos-big.service" in out["probe"]["Environment"]      # the service's specifiers, expanded


NOT_CARRIED = """[Service]
User=metnos
ExecStart=/bin/sleep infinity
RemoveIPC=yes
ProtectSystem=strict
StateDirectory=metnos-nc
RuntimeDirectory=metnos-nc
NoSuchDirective=1
"""


def context_of(h, unit):
    return json.loads(h.sh("cd /opt/metnos-trial && python3 -c 'import json,sys; sys.path.insert(0,\"core\"); "
                           "from metnos_sandbox.service import environment as S; "
                           "from metnos_sandbox.host import bwrap as B; "
                           "c=S.execution_context({\"unit\":\"%s\"}, B.default_runner); "
                           "print(json.dumps(c))'" % unit).stdout)


def test_what_cannot_be_carried_is_named_and_lowers_confidence(systemd_host):
    h = systemd_host
    install_trial_tools(h)
    text = NOT_CARRIED
    if h.systemd >= 257:
        # valid in a 257 unit, but systemd-run 257's client cannot parse these values: carried in the form
        # `systemctl show` prints them (PrivateTmpEx=...) or named
        text += "PrivateTmp=disconnected\nProtectControlGroups=private\n"
    h.install_unit("nc", text)
    h.install_unit("ncdyn", "[Service]\nDynamicUser=yes\nExecStart=/bin/sleep infinity\nStateDirectory=metnos-ncd\n")
    h.sh("systemctl daemon-reload && systemctl start metnos-nc.service && "
         "touch /dev/shm/metnos-nc-ipc && chown metnos /dev/shm/metnos-nc-ipc")     # an IPC object of the user
    try:
        ctx = context_of(h, "metnos-nc.service")
        dyn = context_of(h, "metnos-ncdyn.service")
        # the preflight unit came and went: the running service's RuntimeDirectory and its user's IPC
        # objects (RemoveIPC=) are still there
        assert h.sh("test -d /run/metnos-nc && test -e /dev/shm/metnos-nc-ipc", check=False).returncode == 0
        # and with the service stopped (nothing else holds the user), its IPC objects survive the probe
        h.sh("systemctl stop metnos-nc.service")
        context_of(h, "metnos-nc.service")
        assert h.sh("test -e /dev/shm/metnos-nc-ipc", check=False).returncode == 0
    finally:
        h.sh("systemctl stop metnos-nc.service; rm -f /dev/shm/metnos-nc-ipc", check=False)
    named = dict((n["directive"], n["reason"]) for n in ctx["not_carried"])
    assert list(named) == ["NoSuchDirective"] and "Unknown assignment" in named["NoSuchDirective"], ctx
    assert ctx["confidence"] == "reduced" and len(ctx["reasons"]) == 1
    as_shown = dict((c["directive"], c["as"]) for c in ctx["carried_as"])
    # a static user's directories: their writable mount, and nothing done to the service's own directory
    assert as_shown["StateDirectory"] == ["ReadWritePaths=-/var/lib/metnos-nc"]
    assert as_shown["RuntimeDirectory"] == ["ReadWritePaths=-/run/metnos-nc"]
    if h.systemd >= 257:
        assert "PrivateTmpEx=disconnected" in as_shown["PrivateTmp"], ctx
    assert ctx["differences"] == [], ctx["differences"]
    assert [n["directive"] for n in dyn["not_carried"]] == ["StateDirectory"]     # DynamicUser: a different uid
    assert h.sh("systemctl list-units --all --no-legend 'metnos-probe-*' | wc -l").stdout.strip() == "0"
