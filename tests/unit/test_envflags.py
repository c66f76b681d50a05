"""METNOS_SANDBOX semantics (R-FAIL-1, R-DIAG-1)."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import envflags

DISABLED = ["0", "off", "OFF", "Off", "no", "NO", "false", "False", "FALSE"]
ENABLED_PLAIN = [None, "1", "on", "yes", "true", "enabled", "whatever"]
AMBIGUOUS = [" OFF", "off ", " 0", "n", "N", "f", "F", "disabled", "none", ""]


@pytest.mark.parametrize("value", DISABLED)
@pytest.mark.rule("R-FAIL-1")
def test_disabling_values(value):
    assert envflags.classify_value(value) == (True, None)
    st = envflags.status("/usr/bin/bwrap", {"METNOS_SANDBOX": value})
    assert st == {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap",
                  "disabled_via_env": True, "active": False}


@pytest.mark.parametrize("value", ENABLED_PLAIN)
@pytest.mark.rule("R-FAIL-1")
def test_other_values_keep_sandbox_on(value):
    assert envflags.classify_value(value) == (False, None)


@pytest.mark.parametrize("value", AMBIGUOUS)
def test_ambiguous_values_are_reported_not_guessed(value):
    disabled, reason = envflags.classify_value(value)
    assert disabled is False
    assert reason
    diags = envflags.diagnose(envflags.status("/usr/bin/bwrap", {"METNOS_SANDBOX": value}),
                              {"METNOS_SANDBOX": value}, "/usr/bin")
    assert [d["code"] for d in diags] == ["sandbox_env_value_ambiguous"]


@pytest.mark.rule("R-DIAG-1", "R-FAIL-1")
def test_missing_bwrap_fails_closed():
    st = envflags.status(None, {})
    assert st["active"] is False
    codes = [d["code"] for d in envflags.diagnose(st, {}, "/nonexistent")]
    assert codes == ["bwrap_missing", "executor_os_sandbox_unavailable"]


def test_disabled_and_missing_both_named():
    env = {"METNOS_SANDBOX": "no"}
    diags = envflags.diagnose(envflags.status(None, env), env, "/x")
    assert [d["code"] for d in diags] == ["bwrap_missing", "sandbox_disabled_via_env",
                                          "executor_os_sandbox_unavailable"]
    assert "'no'" in diags[-1]["message"]
