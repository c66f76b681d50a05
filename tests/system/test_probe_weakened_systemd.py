"""The probe can fail inside a real systemd container too: deliberately weakened profiles, run as
the service user in a transient unit, each make their own check fail (the probe core is copied
into the container and driven directly; the weakening is what no module option allows)."""
import json
import os

import pytest

from conftest import ROOT, podman

SCRIPT = r'''
import json, sys
sys.path.insert(0, "/opt/metnos-core")
from metnos_sandbox import probe as PR, profile as P, manifest as M
how = sys.argv[1]
prof = P.render(M.from_dict({"name": "weak", "origin": "t", "capabilities": ["fs:read:/srv/data/**"]}),
                P.HostContext({"python_executable": "/usr/bin/python3", "i18n_dbs": [], "lexicon_dbs": []}))
argv = list(prof["argv"])
sep = argv.index("--")
if how == "drop_unshare_net": argv.remove("--unshare-net")
if how == "drop_unshare_ipc": argv.remove("--unshare-ipc")
if how == "bind_home": argv[sep:sep] = ["--ro-bind", "/home", "/home"]
if how == "ro_made_writable": argv[argv.index("/srv/data") - 1] = "--bind"
user = {"name": "metnos", "uid": int(sys.argv[2]), "gid": int(sys.argv[3])}
spec = PR.expectations(prof, extra_absent=["/home/metnos"])
v = PR.run_systemd(argv, spec, "/usr/bin/python3", user, {}, {"PATH": "/usr/bin:/bin"}, 30, "metnos-weak-" + how)
print(json.dumps({"passed": v["passed"], "failed": [c["name"] for c in v["checks"] if not c["ok"]],
                  "codes": [d["code"] for d in v["diagnostics"]]}))
'''


@pytest.fixture(scope="module")
def weak_host(host):
    podman("cp", os.path.join(ROOT, "module_utils"), "%s:/opt/metnos-core" % host.name)
    host.write("/opt/weak.py", SCRIPT)
    host.sh("mkdir -p /srv/data && chown metnos /srv/data")
    return host


@pytest.mark.parametrize("how,check", [(None, None), ("drop_unshare_net", "only_loopback"),
                                       ("drop_unshare_ipc", "ipc_namespace_private"),
                                       ("bind_home", "hidden:/home"), ("ro_made_writable", "read_only:/srv/data")])
def test_weakened_profile_in_service_context(weak_host, how, check):
    ids = weak_host.sh("id -u metnos; id -g metnos").stdout.split()
    out = weak_host.sh("python3 /opt/weak.py %s %s %s" % (how or "none", ids[0], ids[1])).stdout
    res = json.loads(out.strip().splitlines()[-1])
    if how is None:
        assert res["passed"] is True, res
        return
    assert res["passed"] is False and check in res["failed"], res
    assert set(res["codes"]) == {"probe_check_failed"}
