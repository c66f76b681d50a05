"""ExecStart= env(1) and sh -c prefixes: what they do to METNOS_SANDBOX/PATH, and the rewrite enforce
writes when a drop-in can neutralise them."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import exec_env, systemd_unit

KEYS = ("METNOS_SANDBOX", "PATH")
ENV = {"PATH": "/usr/bin", "X": "0"}


@pytest.mark.parametrize("line,sets,unsets,clears,determinable", [
    ("/usr/bin/env METNOS_SANDBOX=0 /usr/bin/python3 -m metnos", {"METNOS_SANDBOX": "0"}, [], False, True),
    ("-/usr/bin/env METNOS_SANDBOX=$X app", {"METNOS_SANDBOX": "0"}, [], False, True),
    ("env -u PATH --unset=METNOS_SANDBOX -uHOME app", {}, ["PATH", "METNOS_SANDBOX", "HOME"], False, True),
    ("env -i METNOS_SANDBOX=1 app", {"METNOS_SANDBOX": "1"}, [], True, True),
    ("@/usr/bin/env env PATH=/opt/x app", {"PATH": "/opt/x"}, [], False, True),
    ("env -C /srv -- PATH=/x app", {}, [], False, True),
    ("/bin/sh -c 'METNOS_SANDBOX=0 exec /usr/bin/app'", {"METNOS_SANDBOX": "0"}, [], False, True),
    ("/bin/sh -c 'export PATH=/opt/x:$PATH; exec app'", {"PATH": "/opt/x:/usr/bin"}, [], False, True),
    ("/bin/sh -c 'unset METNOS_SANDBOX; exec app'", {}, ["METNOS_SANDBOX"], False, True),
    ("/bin/sh -c 'cd /srv && exec app'", {}, [], False, True),
    ("/bin/bash -c 'if true; then export METNOS_SANDBOX=0; fi; exec app'", {}, [], False, False),
    ("/usr/bin/env -S 'METNOS_SANDBOX=0 app'", {}, [], False, False),
    ("/usr/bin/app --flag", {}, [], False, True),
])
def test_effect(line, sets, unsets, clears, determinable):
    effect = exec_env.exec_env_effect(line, ENV, KEYS)
    assert (effect["sets"], effect["unsets"], effect["clears"], effect["determinable"]) == (
        sets, unsets, clears, determinable), effect


def test_applied_effect():
    effect = exec_env.exec_env_effect("env -i -u X METNOS_SANDBOX=0 app", ENV, KEYS)
    assert exec_env.apply_exec_effect(ENV, effect) == {"METNOS_SANDBOX": "0"}


@pytest.mark.parametrize("line,healed", [
    ("/usr/bin/env METNOS_SANDBOX=0 /usr/bin/python3 -m metnos", "/usr/bin/env /usr/bin/python3 -m metnos"),
    ('/usr/bin/env -u PATH X=1 /bin/app --a "b c"', '/usr/bin/env X=1 /bin/app --a "b c"'),
    ("-@/usr/bin/env env PATH=/x app %i", "-@/usr/bin/env env app %i"),
    ("/usr/bin/app", "/usr/bin/app"),
])
def test_neutralised(line, healed):
    assert exec_env.neutralised_exec(line, KEYS) == (healed, None)


@pytest.mark.parametrize("line", ["env -i METNOS_SANDBOX=0 app", "/bin/sh -c 'METNOS_SANDBOX=0 exec app'",
                                  "/usr/bin/env -S 'METNOS_SANDBOX=0 app'"])
def test_not_neutralisable_by_a_dropin(line):
    value, reason = exec_env.neutralised_exec(line, KEYS)
    assert value is None and "by hand" in reason


def test_quoting_round_trip():
    for word in ("plain", "two words", 'q"uote', "back\\slash", "tab\there", "%i", "$VAR"):
        words, ok = systemd_unit.split_words(exec_env.quote_exec_word(word))
        assert ok and words == [word]
