"""Root never tells the service user which folders exist where the user cannot look (issue 49, item 3; attack
report finding 8), planted for real: a user made here with useradd (removed after) owns the "interpreter" the
service names (a real #! script in the user's folder, as a user's venv python would be: owners.problems finds it
the user's, so it runs as the user with -I -S) that answers the question ask_python asks with paths of its
choosing - a folder root made below /root (mode 0700: the user cannot search it), one that does not exist there,
and a folder the user can reach. Proven from outside: the folders python_roots.discover_python (what
sandbox_profile runs) keeps are judged as the user - the existing /root folder is treated exactly as the absent
one (both dropped), the reachable one is kept (canary: the judgement still sees folders).

Mutation run by hand: python_roots._folders always using existing_folders (root's own isdir): the test fails
(the /root folder is kept, the absent one is not)."""
import json
import os
import shutil
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import python_roots
from helpers import real_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"), reason="needs root and useradd")


def test_folders_a_users_interpreter_names_are_judged_as_that_user():
    top = tempfile.mkdtemp(prefix="metnos-oracle-", dir="/var/tmp")
    secret = tempfile.mkdtemp(prefix="metnos-secret-dir-", dir="/root")
    absent = secret + "-absent"
    try:
        os.chmod(top, 0o755)
        assert os.stat("/root").st_mode & 0o005 == 0, "the test needs a /root others cannot search"
        visible = os.path.join(top, "visible")
        os.makedirs(visible)
        with real_user.made("msoorc") as user:
            folder = os.path.join(top, "venv", "bin")
            os.makedirs(folder)
            python = os.path.join(folder, "python3")
            answer = json.dumps({"path": [secret, absent, visible], "install": [secret, visible]})
            with open(python, "w") as handle:
                handle.write("#!/bin/sh\ncat <<'EOF'\n%s\nEOF\n" % answer)
            os.chmod(python, 0o755)
            for path in (python, folder, os.path.dirname(folder)):
                os.chown(path, user.uid, user.gid)
            found = python_roots.discover_python(python, bwrap.default_runner)
            assert found.ran_as == user.uid, found
            assert os.path.isdir(secret) and not os.path.exists(absent)
            assert found.roots == [visible] and found.installation == [visible], found
    finally:
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(secret, ignore_errors=True)
