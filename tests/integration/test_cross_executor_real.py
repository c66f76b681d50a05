"""A folder writable by one executor and readable by another is a channel between them (issue 50 item 5), planted
for real: executor A (fs:write:<data>/shared) and executor B (fs:read:<data>/shared, no network) rendered as the
audit renders them (host_audit.profile_drift); then, in real bwrap, A listens on a socket it makes in the shared
folder and B - rendered before the socket existed, so no channel search saw it - connects and sends a token
that A receives. The audit's warning names both executors."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import cross_executor, host_audit
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    descriptors,
    host_context,
    renderer,
)
from helpers import trees

ACTIVE = {"bwrap_available": True, "bwrap_path": shutil.which("bwrap") or "/usr/bin/bwrap",
          "disabled_via_env": False, "active": True}
LISTEN = r'''
import json, os, socket, sys
spec = json.loads(sys.argv[1])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(spec["socket"])
os.chmod(spec["socket"], 0o777)
s.listen(1)
s.settimeout(30)
print("listening", flush=True)
conn, _ = s.accept()
sys.stdout.write(conn.recv(256).decode())
'''
CONNECT = r'''
import json, socket, sys
spec = json.loads(sys.argv[1])
try:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(spec["socket"])
    c.sendall(spec["token"].encode())
    out = "sent"
except OSError as exc:
    out = str(exc)
sys.stdout.write(json.dumps(out))
'''


def test_a_folder_one_executor_writes_and_another_reads_is_a_warning_naming_both():
    """Canary: B reaches A's socket from inside its sandbox, A receives the token (outside, its output). The
    audit gives cross_executor_channel naming A and B and the folder; a third executor with its own folder is in
    no finding. Mutation run: findings() skipping read-only binds of the other executor - the test fails."""
    base = tempfile.mkdtemp(prefix="metnos-xexec-", dir="/var/tmp")
    os.chmod(base, 0o755)
    shared = os.path.join(base, "data", "shared")
    own = os.path.join(base, "data", "own")
    for folder in (shared, own):
        os.makedirs(folder)
        os.chown(folder, 65534, 65534)
    host = {"python_executable": "/usr/bin/python3", "writable_roots": [os.path.join(base, "data")],
            "python_package_roots": [], "python_installation": []}
    manifests = [{"name": "exa", "origin": "t", "capabilities": ["fs:write:" + shared]},
                 {"name": "exb", "origin": "t", "capabilities": ["fs:read:" + shared]},
                 {"name": "exc", "origin": "t", "capabilities": ["fs:write:" + own]}]
    try:
        rendered = []
        drift = host_audit.profile_drift(manifests, host, os.path.join(base, "profiles"), ACTIVE, rendered=rendered)
        assert [d["decision"] for d in drift] == ["wrapped"] * 3, drift
        found = cross_executor.findings(rendered)
        assert [(d["code"], d["severity"]) for d in found] == [("cross_executor_channel", "warning")], found
        assert "'exa' writes '%s' and 'exb' reads" % shared in found[0]["message"], found[0]["message"]
        assert "exc" not in json.dumps(found)

        profs = dict((m["name"], renderer.render_safe(m, host_context.HostContext(host), {}, ACTIVE))
                     for m in manifests[:2])
        sock = os.path.join(shared, "a.sock")
        token = uuid.uuid4().hex
        words = profs["exa"]["argv"]
        sep = words.index("--")
        full = descriptors.launcher_words(words[:sep + 1] + ["/usr/bin/python3", "-c", LISTEN,
                                                                      json.dumps({"socket": sock})],
                                          "/usr/bin/python3", profs["exa"]["descriptors"])
        writer = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + full,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert writer.stdout.readline().strip() == "listening", writer.stderr.read()
            deadline = time.time() + 10
            while not os.path.exists(sock) and time.time() < deadline:
                time.sleep(0.05)
            inside = trees.run_inside(profs["exb"]["argv"], CONNECT, {"socket": sock, "token": token}, "nobody",
                                      descriptors=profs["exb"]["descriptors"])
            received, _err = writer.communicate(timeout=30)
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        assert inside == "sent" and received == token, (inside, received)
    finally:
        shutil.rmtree(base, ignore_errors=True)
