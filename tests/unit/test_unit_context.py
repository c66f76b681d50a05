"""unit_context offline: the plan (copy everything minus the deny list), specifiers, systemd-run
refusals treated as data (with a fake systemd-run), the show <-> assignment forms, the comparison."""
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import runners
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import (
    context_deny,
    unit_context,
    unit_preflight,
)


def items(text, path="/etc/systemd/system/m.service"):
    return unit_context.read_assignments([path], read=lambda _p: text)[0]


def test_every_directive_is_carried_but_the_deny_list():
    plan = unit_context.plan(items("[Unit]\nDescription=x\nAfter=net.target\nJoinsNamespaceOf=a.service\n[Service]\n"
                                   "Type=notify\nExecStart=/bin/x\nUser=metnos\nRestrictAddressFamilies=AF_UNIX\n"
                                   "FutureDirective=yes\nKillMode=process\nStateDirectory=m\n[Install]\n"
                                   "WantedBy=multi-user.target\n"))
    assert unit_context.directives(plan) == ["JoinsNamespaceOf", "User", "RestrictAddressFamilies", "FutureDirective"]
    assert [e["directive"] for e in plan["excluded"]] == ["ExecStart", "KillMode", "Type"]
    assert [(n["directive"], n["category"]) for n in plan["not_carried"]] == [("StateDirectory",
                                                                               context_deny.SIDE_EFFECT)]
    assert plan["assignments"][1] == ["User", "metnos", "/etc/systemd/system/m.service:8"]


def test_order_and_resets_are_kept():
    plan = unit_context.plan(items("[Service]\nSystemCallFilter=@system-service\nSystemCallFilter=\n"
                                   "SystemCallFilter=~@mount\n"))
    assert [a[1] for a in plan["assignments"]] == ["@system-service", "", "~@mount"]


def test_specifiers_are_expanded_for_the_service_and_unknown_ones_named():
    table = unit_context.specifier_table("metnos@a\\x2db-c.service", fragment="/etc/systemd/system/metnos@.service")
    assert table["n"] == "metnos@a\\x2db-c.service" and table["i"] == "a\\x2db-c" and table["I"] == "a-b/c"
    assert table["p"] == "metnos" and table["t"] == "/run" and table["h"] == "/root" and table["%"] == "%"
    plan = unit_context.plan(items("[Service]\nEnvironment=U=%n P=100%%\nWorkingDirectory=/srv/%i\nBindPaths=/x/%Q\n"),
                             table)
    assert plan["assignments"][0][1] == "U=metnos@a\\x2db-c.service P=100%"
    assert plan["assignments"][1][1] == "/srv/a\\x2db-c"
    assert [n["directive"] for n in plan["not_carried"]] == ["BindPaths"] and "%Q" in plan["not_carried"][0]["reason"]


@pytest.mark.parametrize("stderr,expected", [
    ("Unknown assignment: PrivateBPF=yes", "PrivateBPF"),
    ("Failed to parse PrivateTmp: disconnected", "PrivateTmp"),
    ("Failed to start transient service unit: Cannot set property StandardInputText, or unknown property.",
     "StandardInputText"),
    ("Failed to start transient service unit: Invalid Personality setting: ", "Personality"),
    ("Missing argument to SetCredential=.", "SetCredential"),
    ("Failed to start transient service unit: Source path  is not absolute.", None),
])
def test_a_refusal_names_its_directive(stderr, expected):
    keys = ["PrivateBPF", "PrivateTmp", "StandardInputText", "Personality", "SetCredential", "BindPaths", "User"]
    assert unit_preflight.rejected_directive(stderr, keys) == expected


class FakeSystemd(object):
    """A systemd-run that refuses some directives (named or not) and a systemctl show."""

    def __init__(self, refuse_named=(), refuse_silent=(), shown=None):
        self.refuse_named, self.refuse_silent, self.shown = refuse_named, refuse_silent, shown or {}
        self.calls = []

    def __call__(self, argv, env=None, timeout=30):
        self.calls.append(argv)
        if argv[0] == "systemd-run":
            keys = [argv[i + 1].split("=", 1)[0] for i, a in enumerate(argv) if a == "-p"]
            for key in keys:
                if key in self.refuse_named:
                    return 1, "", "Unknown assignment: %s=x\n" % key
                if key in self.refuse_silent:
                    return 1, "", "Failed to start transient service unit: Invalid argument\n"
            self.last = keys
            return 0, "", "Running as unit: x.service\n"
        if argv[:2] == ["systemctl", "show"]:
            return 0, "\n".join("%s=%s" % kv for kv in sorted(self.shown.items())), ""
        return 0, "", ""


def test_refused_directives_are_retried_without_and_named():
    fake = FakeSystemd(refuse_named=("Foo",), refuse_silent=("Bar",), shown={"User": "metnos"})
    show = {"FragmentPath": "/u", "User": "metnos"}
    ctx = unit_preflight.build(show, fake, unit_preflight.UnitAddress(unit="m.service"),
                               read=lambda _p: "[Service]\nUser=metnos\nFoo=1\nBar=2\nBaz=3\n")
    assert ctx["carried"] == ["User", "Baz"]
    assert [n["directive"] for n in ctx["not_carried"]] == ["Foo", "Bar"]
    assert "Unknown assignment" in ctx["not_carried"][0]["reason"]
    assert ctx["verified"] and ctx["confidence"] == "reduced" and len(ctx["reasons"]) == 2
    assert any(a[:2] == ["systemctl", "stop"] for a in fake.calls)          # the preflight unit is removed


def test_a_difference_is_retried_in_the_form_show_prints_it():
    class Merging(FakeSystemd):
        def __call__(self, argv, env=None, timeout=30):
            rc = FakeSystemd.__call__(self, argv, env, timeout)
            if argv[0] == "systemd-run":
                values = [argv[i + 1] for i, a in enumerate(argv) if a == "-p"]
                caps = [v.split("=", 1)[1] for v in values if v.startswith("CapabilityBoundingSet=")]
                self.shown = {"CapabilityBoundingSet": caps[-1] if caps else ""}   # transient: last one wins
            return rc
    fake = Merging()
    service = {"FragmentPath": "/u", "CapabilityBoundingSet": "cap_net_admin"}
    ctx = unit_preflight.build(service, fake, unit_preflight.UnitAddress(unit="m.service"),
                               read=lambda _p: "[Service]\nCapabilityBoundingSet=CAP_NET_ADMIN CAP_CHOWN\n"
                                   "CapabilityBoundingSet=~CAP_CHOWN\n")
    assert ctx["differences"] == [] and ctx["confidence"] == "full"
    assert [a[:2] for a in ctx["assignments"]] == [["CapabilityBoundingSet", "cap_net_admin"]]


@pytest.mark.parametrize("prop,show,expected", [
    ("LimitNOFILESoft", {"LimitNOFILE": "4096", "LimitNOFILESoft": "1024"}, ["LimitNOFILE", "1024:4096"]),
    ("WorkingDirectory", {"WorkingDirectory": "!/srv/x"}, ["WorkingDirectory", "-/srv/x"]),
    ("CPUQuotaPerSecUSec", {"CPUQuotaPerSecUSec": "500ms"}, ["CPUQuota", "50%"]),
    ("TimerSlackNSec", {"TimerSlackNSec": "1000"}, ["TimerSlackNSec", "1000"]),
    ("PrivateTmpEx", {"PrivateTmpEx": "disconnected"}, ["PrivateTmpEx", "disconnected"]),
])
def test_show_form_to_assignment(prop, show, expected):
    assert unit_context.show_assignment(prop, show) == expected


def test_compare_ignores_identity_state_and_lifecycle_only():
    a = {"Id": "a.service", "MainPID": "12", "ActiveEnterTimestamp": "x", "KillMode": "mixed", "UMask": "0022",
         "NewProperty257": "1"}
    b = {"Id": "b.service", "MainPID": "0", "ActiveEnterTimestamp": "y", "KillMode": "control-group",
         "UMask": "0077"}
    assert [d["property"] for d in unit_context.compare(a, b)] == ["NewProperty257", "UMask"]
    sets = {"IPAddressDeny": "0.0.0.0/0 ::/0", "RestrictAddressFamilies": "~AF_NETLINK AF_PACKET", "BindPaths": "/a /b"}
    assert unit_context.compare(sets, {"IPAddressDeny": "::/0 0.0.0.0/0",
                                       "RestrictAddressFamilies": "~AF_PACKET AF_NETLINK",
                                       "BindPaths": "/a /b"}) == []
    assert [d["property"] for d in unit_context.compare(sets, {"IPAddressDeny": "::/0", "RestrictAddressFamilies":
                                                               "AF_PACKET AF_NETLINK", "BindPaths": "/b /a"})] == [
        "BindPaths", "IPAddressDeny", "RestrictAddressFamilies"]          # order kept where it means something


def test_probe_argv_carries_the_context_and_no_setenv():
    ctx = {"assignments": [["User", "metnos", "u:2"], ["RestrictAddressFamilies", "AF_UNIX", "u:3"]]}
    argv = runners.systemd_run_argv("metnos-probe-x", {"name": "other"}, ctx, {}, 30)
    assert "User=metnos" in argv and "User=other" not in argv
    assert argv[argv.index("RestrictAddressFamilies=AF_UNIX") - 1] == "-p"
    assert not any(a.startswith("--setenv") for a in argv)
    bare = runners.systemd_run_argv("metnos-probe-y", {"name": "metnos"}, {}, {"PATH": "/usr/bin"}, 30)
    assert "User=metnos" in bare and "--setenv=PATH=/usr/bin" in bare


def test_an_unreadable_unit_file_is_named_not_skipped():
    def read(path):
        if path == "/run/systemd/system/m.service.d/50-x.conf":
            raise OSError(13, "Permission denied")
        return "[Service]\nUser=metnos\n"
    show = {"FragmentPath": "/u", "DropInPaths": "/run/systemd/system/m.service.d/50-x.conf", "User": "metnos"}
    address = unit_preflight.UnitAddress(unit="m.service")
    ctx = unit_preflight.build(show, FakeSystemd(shown={"User": "metnos"}), address, read=read)
    assert ctx["confidence"] == "reduced"
    assert ctx["not_carried"][0]["reason"] == "the unit file could not be read: Permission denied"


def test_directories_of_a_static_user_are_carried_as_their_mounts():
    text = "[Service]\nUser=metnos\nStateDirectory=metnos metnos/sub\nRuntimeDirectory=metnos\nRuntimeDirectory=\n" \
           "CacheDirectory=../x\nConfigurationDirectory=metnos\n"
    plan = unit_context.plan(items(text), static_user=True)
    assert [a[:2] for a in plan["assignments"]][1:] == [["ReadWritePaths", "-/var/lib/metnos -/var/lib/metnos/sub"]]
    assert [c["directive"] for c in plan["carried_as"]] == ["StateDirectory"]          # RuntimeDirectory was reset
    assert [n["directive"] for n in plan["not_carried"]] == ["CacheDirectory", "ConfigurationDirectory"]
    dynamic = unit_context.plan(items(text.replace("User=metnos", "DynamicUser=yes")), static_user=True)
    assert sorted(n["directive"] for n in dynamic["not_carried"]) == ["CacheDirectory", "ConfigurationDirectory",
                                                                      "StateDirectory"]
    diffs = [{"property": "ReadWritePaths", "service": "/srv", "probe": "/srv -/var/lib/metnos -/var/lib/metnos/sub"}]
    assert unit_preflight.expected_mounts(diffs, plan) == []
    assert unit_preflight.expected_mounts([dict(diffs[0], probe="-/var/lib/metnos")],
                                          plan) != []      # /srv lost: reported


def test_own_programs_stay_executable_only_where_the_unit_restricts_execution():
    a = [["NoExecPaths", "/", "u:1"], ["ExecPaths", "/usr/lib /lib", "u:2"]]
    assert unit_context.own_exec_paths(a, ["/bin/sh"]) == ["-p", "ExecPaths=%s" % os.path.realpath("/bin/sh")]
    assert unit_context.own_exec_paths([["ExecPaths", "/usr/lib", "u:1"]], ["/bin/sh"]) == []
    assert unit_context.own_exec_paths(a + [["NoExecPaths", "", "u:3"]], ["/bin/sh"]) == []          # reset
    covered = a + [["ExecPaths", "-%s" % os.path.dirname(os.path.realpath("/bin/sh")), "u:3"]]
    assert unit_context.own_exec_paths(covered,
                                       ["/bin/sh"]) == []                                   # ExecPaths= names it
