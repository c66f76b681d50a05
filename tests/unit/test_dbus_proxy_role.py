"""The role's filtering proxy (issue 40): its policy is exactly the core's (channels.proxy_words), and its unit
holds the policy and the hardening as written (rendered with the role's own variables)."""
import os

import jinja2
import pytest
import yaml

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import bus_proxy, channels

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "metnos_sandbox")


def _vars():
    with open(os.path.join(ROLE, "vars", "main.yml")) as handle:
        return yaml.safe_load(handle)


def test_the_role_policy_is_the_core_policy():
    assert _vars()["__metnos_sandbox_dbus_proxy_rules"] == channels.proxy_words("bus", "listen")[2:]


def test_the_unit_runs_the_policy_as_its_own_user_hardened():
    with open(os.path.join(ROLE, "templates", "metnos-dbus-proxy.service.j2")) as handle:
        template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(handle.read())
    variables = dict(_vars(), ansible_managed="managed", metnos_sandbox_unit="metnos.service",
                     metnos_sandbox_dbus_proxy_user="metnos-dbus-proxy")
    unit = template.render(**variables)
    start = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert start == ["ExecStart=/usr/bin/xdg-dbus-proxy " + " ".join(
        channels.proxy_words("unix:path=" + channels.SYSTEM_BUS, "/run/metnos-dbus-proxy/system_bus_socket"))]
    for line in ("User=metnos-dbus-proxy", "NoNewPrivileges=yes", "CapabilityBoundingSet=",
                 "RestrictAddressFamilies=AF_UNIX", "PrivateNetwork=yes", "ProtectSystem=strict"):
        assert line in unit.splitlines(), line
    assert "--talk" not in unit and "--own" not in unit and "--see" not in unit


def test_the_proxy_user_is_its_own_system_user_never_the_executors():
    """The role makes the proxy's user (a system user, no login) and refuses root and the executors' user
    (metnos_sandbox_run_as): a proxy of the executors' uid can be stopped by any sandbox
    (tests/integration/test_bus_proxy_own_user_real.py)."""
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    assert defaults["metnos_sandbox_dbus_proxy_user"] == "metnos-dbus-proxy"
    assert defaults["metnos_sandbox_dbus_proxy_user"] != defaults["metnos_sandbox_run_as"]
    with open(os.path.join(ROLE, "tasks", "dbus_proxy.yml")) as handle:
        tasks = yaml.safe_load(handle)
    checks = tasks[0]["ansible.builtin.assert"]["that"]
    assert "metnos_sandbox_dbus_proxy_user != 'root'" in checks
    assert "metnos_sandbox_dbus_proxy_user != metnos_sandbox_run_as" in checks
    made = [t["ansible.builtin.user"] for t in tasks if "ansible.builtin.user" in t]
    assert made == [{"name": "{{ metnos_sandbox_dbus_proxy_user }}", "system": True, "create_home": False,
                     "home": "/nonexistent", "shell": "/usr/sbin/nologin"}], made
    names = [t["name"] for t in tasks]
    assert names.index("D-Bus proxy | its own system user (no login, no home)") < names.index("D-Bus proxy | its unit")


ADDRESSES = [   # (DBUS_SYSTEM_BUS_ADDRESS, the socket paths it names)
    ("unix:path=/run/dbus/system_bus_socket", ["/run/dbus/system_bus_socket"]),
    ("unix:path=/run/my%20bus/sock%2c1,guid=x", ["/run/my bus/sock,1"]),       # %-escaped (the lazy unquote)
    ("tcp:host=x;unix:path=/a/../b/s;unix:abstract=/x", ["/b/s"]),
    ("unix:path=relative/s;unix:path=/x%00y", []),                            # not absolute; a NUL
]


@pytest.mark.parametrize("address,expected", ADDRESSES)
def test_the_bus_address_names_its_socket_paths(address, expected):
    assert bus_proxy.address_paths(address) == expected
