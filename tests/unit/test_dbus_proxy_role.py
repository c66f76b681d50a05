"""The role's filtering proxy (issue 40): its policy is exactly the core's (channels.proxy_words), and its unit
holds the policy and the hardening as written (rendered with the role's own variables)."""
import os

import jinja2
import yaml

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import channels

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
