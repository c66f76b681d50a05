"""The offline unit parser: focused cases here, plus the shared corpus (tests/corpus/systemd_units.py)
whose expected environments tests/system/test_service_env_systemd.py proves against a real systemd
(the environment of the started unit's process)."""
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import (
    restrictions,
    systemd_unit,
    unit_environment,
)
from corpus.systemd_units import CORPUS


def write(root, rel, text):
    path = os.path.join(str(root), rel.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    return path


def env_of(root, unit="metnos.service"):
    state = systemd_unit.load_unit(unit, root=str(root))
    env, prov, problems = unit_environment.compose_environment(state, str(root))
    return state, env, prov, problems


@pytest.mark.parametrize("value,words", [
    ('A=1 B=2', ["A=1", "B=2"]),
    ('"A=1 2" B=3', ["A=1 2", "B=3"]),
    ("'A=x y' \"B=\\\"q\\\"\"", ["A=x y", 'B="q"']),
    ("A=tab\\there", ["A=tab\there"]),
    ("A=\\x41\\101", ["A=AA"]),
    ('A="mid"dle', ["A=middle"]),
])
def test_split_words_quotes_and_escapes(value, words):
    assert systemd_unit.split_words(value) == (words, True)


def test_split_words_rejects_unbalanced():
    assert systemd_unit.split_words('A="open')[1] is False
    assert systemd_unit.split_words('A=bad\\q')[1] is False


def test_line_continuation_and_comments():
    items = systemd_unit.parse_unit_text("[Service]\nEnvironment=A=1 \\\n# a comment inside\n  B=2\n; x\nUser = svc\n")
    assert items[0][:3] == ("Service", "Environment", "A=1  B=2")
    assert items[1][:3] == ("Service", "User", "svc")


def test_invalid_assignments_are_ignored_like_systemd(tmp_path):
    write(tmp_path, "/etc/systemd/system/metnos.service",
          "[Service]\nEnvironment=METNOS_SANDBOX= 0\nEnvironment=1BAD=x SANDBOX-X=1 ok_lower=1\n")
    state, env, _prov, _p = env_of(tmp_path)
    assert env["METNOS_SANDBOX"] == ""
    assert env["ok_lower"] == "1" and "1BAD" not in env
    assert [r["text"] for r in state["rejected_assignments"]] == ["0", "1BAD=x", "SANDBOX-X=1"]


def test_empty_assignment_resets(tmp_path):
    write(tmp_path, "/usr/lib/systemd/system/metnos.service",
          "[Service]\nEnvironment=A=1 METNOS_SANDBOX=off\nEnvironmentFile=/etc/a\n")
    write(tmp_path, "/etc/systemd/system/metnos.service.d/10-reset.conf",
          "[Service]\nEnvironment=\nEnvironment=B=2\nEnvironmentFile=\n")
    state, env, _prov, problems = env_of(tmp_path)
    assert "A" not in env and "METNOS_SANDBOX" not in env and env["B"] == "2"
    assert state["environment_files"] == [] and problems == []


def test_dropin_order_and_masking_across_directories(tmp_path):
    write(tmp_path, "/usr/lib/systemd/system/metnos-api.service", "[Service]\nEnvironment=X=unit\n")
    write(tmp_path, "/usr/lib/systemd/system/metnos-api.service.d/20-x.conf", "[Service]\nEnvironment=X=usr20\n")
    write(tmp_path, "/etc/systemd/system/metnos-api.service.d/20-x.conf", "[Service]\nEnvironment=X=etc20\n")
    write(tmp_path, "/run/systemd/system/metnos-api.service.d/30-x.conf", "[Service]\nEnvironment=X=run30\n")
    write(tmp_path, "/usr/lib/systemd/system/metnos-.service.d/40-prefix.conf", "[Service]\nEnvironment=Y=prefix\n")
    write(tmp_path, "/etc/systemd/system/service.d/10-all.conf", "[Service]\nEnvironment=Y=all Z=all\n")
    state = systemd_unit.load_unit("metnos-api.service", root=str(tmp_path))
    names = [os.path.relpath(p, str(tmp_path)) for p in state["dropins"]]
    assert names == ["etc/systemd/system/service.d/10-all.conf",
                     "etc/systemd/system/metnos-api.service.d/20-x.conf",
                     "run/systemd/system/metnos-api.service.d/30-x.conf",
                     "usr/lib/systemd/system/metnos-.service.d/40-prefix.conf"]
    env, _prov, _p = unit_environment.compose_environment(state, str(tmp_path))
    assert env["X"] == "run30" and env["Y"] == "prefix" and env["Z"] == "all"


def test_etc_fragment_wins_and_alias_symlink(tmp_path):
    write(tmp_path, "/usr/lib/systemd/system/metnos.service", "[Service]\nUser=vendor\n")
    write(tmp_path, "/etc/systemd/system/real.service", "[Service]\nUser=admin\n")
    os.symlink("/etc/systemd/system/real.service", os.path.join(str(tmp_path), "etc/systemd/system/metnos.service"))
    state = systemd_unit.load_unit("metnos.service", root=str(tmp_path))
    assert state["settings"]["User"] == "admin"


def test_template_instance_uses_template_and_its_dropins(tmp_path):
    write(tmp_path, "/usr/lib/systemd/system/metnos@.service", "[Service]\nEnvironment=A=t\n")
    write(tmp_path, "/etc/systemd/system/metnos@.service.d/x.conf", "[Service]\nEnvironment=B=tpl\n")
    write(tmp_path, "/etc/systemd/system/metnos@prod.service.d/y.conf", "[Service]\nEnvironment=C=inst\n")
    _state, env, _prov, _p = env_of(tmp_path, "metnos@prod.service")
    assert (env["A"], env["B"], env["C"]) == ("t", "tpl", "inst")


def test_environment_file_grammar_and_override_order(tmp_path):
    write(tmp_path, "/etc/systemd/system/metnos.service",
          "[Service]\nEnvironment=METNOS_SANDBOX=1 PATH=/opt/x\nEnvironmentFile=/etc/metnos/a\n"
          "EnvironmentFile=-/etc/metnos/missing\nEnvironmentFile=/etc/metnos/b\n")
    write(tmp_path, "/etc/metnos/a", "# comment\n; also\nMETNOS_SANDBOX = off  \nQ=\"a \\\"b\\\" \\\\c\"\n"
                                     "S='lit \\n'\nCONT=one\\\ntwo\nexport_X=1\nbad line\n")
    write(tmp_path, "/etc/metnos/b", "PATH=/usr/bin:/bin\r\n")
    state, env, prov, problems = env_of(tmp_path)
    assert env["METNOS_SANDBOX"] == "off" and prov["METNOS_SANDBOX"] == "EnvironmentFile=/etc/metnos/a"
    assert env["Q"] == 'a "b" \\c' and env["S"] == "lit \\n" and env["CONT"] == "onetwo"
    assert env["PATH"] == "/usr/bin:/bin"              # CR stripped; later file wins
    missing = [p for p in problems if "error" in p]
    assert [(p["path"], p["optional"]) for p in missing] == [("/etc/metnos/missing", True)]


def test_unset_environment_applied_last(tmp_path):
    write(tmp_path, "/etc/systemd/system/metnos.service",
          "[Service]\nUnsetEnvironment=METNOS_SANDBOX A=keep-not\nEnvironmentFile=/etc/e\nEnvironment=A=keep\n")
    write(tmp_path, "/etc/e", "METNOS_SANDBOX=0\n")
    _state, env, prov, _p = env_of(tmp_path)
    assert "METNOS_SANDBOX" not in env and env["A"] == "keep"
    assert prov["METNOS_SANDBOX"].startswith("UnsetEnvironment=")


def test_masked_unit(tmp_path):
    os.makedirs(os.path.join(str(tmp_path), "etc/systemd/system"))
    os.symlink("/dev/null", os.path.join(str(tmp_path), "etc/systemd/system/metnos.service"))
    assert systemd_unit.load_unit("metnos.service", root=str(tmp_path))["masked"] is True


def test_not_found(tmp_path):
    with pytest.raises(systemd_unit.UnitError):
        systemd_unit.load_unit("metnos.service", root=str(tmp_path))


def test_manager_default_environment(tmp_path):
    write(tmp_path, "/etc/systemd/system.conf", "[Manager]\nDefaultEnvironment=METNOS_SANDBOX=no \"P=a b\"\n")
    assert unit_environment.manager_default_environment(str(tmp_path)) == {"METNOS_SANDBOX": "no", "P": "a b"}


def test_parse_show_and_state():
    show = systemd_unit.parse_show('Environment=A=1 "B=two words" METNOS_SANDBOX=off\n'
                                   "EnvironmentFiles=/etc/metnos/env (ignore_errors=yes)\n"
                                   "EnvironmentFiles=/etc/other (ignore_errors=no)\nRestrictNamespaces=yes\n"
                                   "NeedDaemonReload=yes\nUser=metnos\nUnsetEnvironment=\n")
    state = systemd_unit.state_from_show(show)
    assert [e["name"] for e in state["environment"]] == ["A", "B", "METNOS_SANDBOX"]
    assert state["environment"][1]["value"] == "two words"
    assert state["environment_files"] == [
        {"path": "/etc/metnos/env", "optional": True, "where": "systemctl show"},
        {"path": "/etc/other", "optional": False, "where": "systemctl show"}]
    assert state["settings"]["RestrictNamespaces"] == ["yes"]


@pytest.mark.parametrize("lines,missing", [
    (["yes"], {"user", "mnt", "ipc", "uts", "net"}), (["no"], set()), ([], set()),
    (["~user"], {"user"}), (["net ipc"], {"user", "mnt", "uts"}),
    (["cgroup ipc mnt net pid user uts"], set()), (["~user net", "~mnt"], {"user", "net", "mnt"}),
    # systemd merges later lists (OR; ~ lists remove), a boolean replaces, empty resets
    (["yes", "user mnt ipc uts net"], set()), (["user", "mnt ipc uts net"], set()),
    (["~user", "user"], set()), (["user mnt ipc uts net", "no"], set()), (["yes", ""], set()),
    (["user mnt ipc uts net", "~net"], {"net"}),
])
def test_restrict_namespaces_semantics(lines, missing):
    allowed = restrictions.allowed_namespaces(lines)
    assert {n for n in restrictions.BWRAP_NAMESPACES if n not in allowed} == missing


@pytest.mark.parametrize("lines,blocked", [
    ([], []), (["@system-service"], ["mount", "pivot_root", "umount2"]),
    (["@system-service", "@mount"], []), (["~@mount"], ["mount", "pivot_root", "umount2"]),
    (["@system-service", "~@mount"], ["mount", "pivot_root", "umount2"]),
    (["~@privileged"], ["pivot_root"]), (["~@clock @debug"], []), (["@known"], []),
    (["read write"], ["mount", "pivot_root", "umount2", "unshare", "clone"]),
    (["~unshare:EPERM"], ["unshare"]),
])
def test_syscall_filter_semantics(lines, blocked):
    assert restrictions.syscalls_blocked(lines) == blocked


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_shared_corpus_offline(tmp_path, name):
    case = CORPUS[name]
    for path, text in case["files"].items():
        write(tmp_path, path, text)
    write(tmp_path, "/etc/systemd/system/metnos-%s.service" % name, case["unit"])
    state = systemd_unit.load_unit("metnos-%s.service" % name, root=str(tmp_path))
    env, _prov, _problems = unit_environment.compose_environment(state, str(tmp_path), {}, "DEFAULT")
    if env.get("PATH") == "DEFAULT":
        env.pop("PATH")
    assert env == case["expected"]


@pytest.mark.parametrize("lines,blocked", [
    ([], []), (["AF_UNIX AF_INET AF_INET6"], ["AF_NETLINK"]), (["AF_UNIX", "AF_NETLINK"], []),
    (["~AF_NETLINK"], ["AF_NETLINK"]), (["~AF_NETLINK AF_PACKET", "AF_NETLINK"], []), (["none"], ["AF_NETLINK"]),
    (["none", "AF_NETLINK"], []), (["AF_UNIX", ""], []), (["~"], []), (["AF_INET AF_UNIX"], ["AF_NETLINK"]),
    (["~AF_PACKET"], []),
])
def test_restrict_address_families_semantics(lines, blocked):
    assert restrictions.families_blocked(lines) == blocked
