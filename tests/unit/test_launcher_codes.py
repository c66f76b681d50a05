"""metnos-sandbox-exec prints its codes without the registry (descriptors.py runs alone on a host, stdlib only):
every code it can print is registered, its printed fix is the registry's remediation, and its environment
allow-list keeps nothing else (the launcher's real runs: tests/integration/test_stored_profile_exec.py)."""
import hashlib

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import descriptors


@pytest.mark.parametrize("code", sorted(descriptors.FIXES))
def test_the_launchers_fix_is_the_registrys(code):
    assert " && ".join(diagnostics.spec(code).remediation) == descriptors.FIXES[code]
    assert code in descriptors.HELP


ENVIRONMENTS = [   # (the caller's, what bwrap gets)
    ({"AWS_SECRET_ACCESS_KEY": "s", "LD_PRELOAD": "x.so", "HOME": "/root"}, {"PATH": descriptors.DEFAULT_PATH}),
    ({"PATH": "/usr/bin", "LANG": "C", "LC_ALL": "C", "METNOS_TURN": "t"},
     {"PATH": "/usr/bin", "LANG": "C", "LC_ALL": "C", "METNOS_TURN": "t"}),
    ({"METNOS_X": "v" * (descriptors.MAX_ENV_VALUE + 1), "lc_all": "C", "LC_-X": "C"},
     {"PATH": descriptors.DEFAULT_PATH}),
    ({"LISTEN_FDS": "1", "NOTIFY_SOCKET": "/run/n", "PYTHONPATH": "/p"}, {"PATH": descriptors.DEFAULT_PATH}),
]


@pytest.mark.parametrize("caller,given", ENVIRONMENTS)
def test_only_the_allow_list_reaches_bwrap(caller, given):
    assert descriptors.clean_environment(caller) == given


def test_the_pairs_digest_is_the_args_files_sha256():
    assert descriptors.args_digest(["/usr/bin/bwrap", "--", "x"]) == hashlib.sha256(
        b"/usr/bin/bwrap\n--\nx\n").hexdigest()
