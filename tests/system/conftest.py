"""Real systemd hosts for the system tests: podman containers from the locally built Debian
images (scripts/build-images.sh), systemd as PID 1, bubblewrap installed with apt inside.

Podman settings for restricted build machines (runc, ulimits) come from
tests/podman/containers.conf; `unmask=ALL` because bwrap's --proc needs an unmasked /proc.

``systemd_host`` is one host per Debian release (12: systemd 252, bubblewrap 0.8; 13: systemd 257,
bubblewrap 0.12) started with CAP_SYS_ADMIN: without it systemd silently skips every
mount-namespace directive (ProtectSystem=, InaccessiblePaths=, ...), so a test would "prove"
harmless a directive that breaks bwrap on a real host.

``KEYRINGS`` (podman options) lets a container's processes use keyrings as on a real host: podman's default
seccomp profile answers add_key and request_key with ENOSYS (keyctl is allowed), so systemd in the container makes
no invocation_id key for a unit and no test can plant a key. tests/podman/seccomp-keyrings.json is podman's default
(/usr/share/containers/seccomp.json, podman 4.3) plus one rule allowing those two calls, nothing else
(test_probe_weakened_systemd.py checks it against the installed default). Only the hosts that judge keyrings use it:
keys are kernel state, and while such a container runs its services' root-owned invocation_id keys are visible to
root on the machine (a direct probe run as root there reports them, probe_keyring_keys).
"""
import json
import os
import subprocess
import sys
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from helpers import ansible_run  # noqa: E402
from helpers.ansible_run import adhoc  # noqa: E402

PODMAN_ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(ROOT, "tests", "podman", "containers.conf"))
IMAGE = os.environ.get("METNOS_TEST_IMAGE", "localhost/metnos-debian:12")
KEYRING_SECCOMP = os.path.join(ROOT, "tests", "podman", "seccomp-keyrings.json")
KEYRINGS = ("--security-opt", "seccomp=" + KEYRING_SECCOMP)


def podman(*args, check=True, input_text=None, timeout=300):
    proc = subprocess.run(["podman"] + list(args), capture_output=True, text=True, env=PODMAN_ENV,
                          input=input_text, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError("podman %s failed (%d): %s" % (" ".join(args[:3]), proc.returncode, proc.stderr))
    return proc


class Host(object):
    """One running systemd container."""

    def __init__(self, name):
        self.name = name

    def sh(self, script, check=True, timeout=300):
        proc = podman("exec", self.name, "sh", "-c", script, check=False, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError("in %s: %s\n-> rc=%d\n%s%s" % (self.name, script, proc.returncode,
                                                                proc.stdout, proc.stderr))
        return proc

    def write(self, path, text, mode="0644"):
        self.sh("mkdir -p \"$(dirname '%s')\"" % path)
        proc = podman("exec", "-i", self.name, "sh", "-c", "cat > '%s' && chmod %s '%s'" % (path, mode, path),
                      input_text=text)
        return proc

    def write_many(self, files, mode="0644"):
        """Write {path: text} in one exec (creating parent directories)."""
        script = ("import json, os, sys\nfor path, text in json.load(sys.stdin).items():\n"
                  "    os.makedirs(os.path.dirname(path), exist_ok=True)\n"
                  "    open(path, 'w').write(text)\n    os.chmod(path, 0o%s)\n" % mode.lstrip("0"))
        return podman("exec", "-i", self.name, "python3", "-c", script, input_text=json.dumps(files))

    def install_unit(self, name, text, files=()):
        """Write metnos-<name>.service and its companion files (no daemon-reload)."""
        for path, content in dict(files).items():
            self.write(path, content, mode="0755" if path.endswith("bwrap") else "0644")
        self.write("/etc/systemd/system/metnos-%s.service" % name, text)

    def module(self, module, args, check=False, diff=False):
        """Run one of our modules on this host through Ansible's podman connection."""
        return adhoc(self.name, module, args, options=("-i", self.name + ",", "-c", "containers.podman.podman"),
                     env=ansible_env(ANSIBLE_PYTHON_INTERPRETER="/usr/bin/python3"), check=check, diff=diff,
                     timeout=300)[0]

    def snapshot(self):
        """A fingerprint of the host's persistent files (paths, sizes, mtimes, modes, owners, content hashes of
        /etc), /tmp included. Excluded: /proc /sys /dev /run (runtime state, not files of the host) and the
        journal."""
        script = ("find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /var/log/journal "
                  "\\) -prune -o -printf '%p %s %T@ %m %U %G\\n' | sort -S 64M | sha256sum; "
                  "find /etc /usr/local /srv /home -xdev -type f -exec sha256sum {} + 2>/dev/null | sort | sha256sum")
        return self.sh(script).stdout


def bwrap_image(base=IMAGE):
    """The Debian image plus bubblewrap (apt, real) and a `metnos` user, committed once and reused."""
    base_id = podman("image", "inspect", "--format", "{{.Id}}", base, check=False).stdout.strip()
    if not base_id:
        pytest.fail("image %s is missing: run scripts/build-images.sh (make test does)" % base)
    tag = "localhost/metnos-debian-bwrap:%s" % base_id[:12]
    if podman("image", "exists", tag, check=False).returncode == 0:
        return tag
    host = start_host("metnos-img", image=base)
    try:
        host.sh("DEBIAN_FRONTEND=noninteractive apt-get -qq update && "
                "DEBIAN_FRONTEND=noninteractive apt-get -qq install -y bubblewrap >/dev/null && apt-get clean",
                timeout=600)
        host.sh("useradd --system --create-home --shell /usr/sbin/nologin metnos")
        podman("commit", "-q", host.name, tag)
    finally:
        stop_host(host)
    return tag




def ansible_env(**extra):
    """Ansible's environment for these hosts: podman's settings (the collections: helpers/ansible_run)."""
    return ansible_run.ansible_env(CONTAINERS_CONF=PODMAN_ENV["CONTAINERS_CONF"], **extra)


def start_host(prefix="metnos-sys", extra=(), image=None):
    image = image or bwrap_image()
    name = "%s-%s" % (prefix, uuid.uuid4().hex[:8])
    podman("run", "-d", "--name", name, "--hostname", name, "--systemd=always", "--security-opt", "unmask=ALL",
           *extra, image, "/sbin/init")
    host = Host(name)
    for _ in range(120):
        state = host.sh("systemctl is-system-running 2>/dev/null || true", check=False).stdout.strip()
        if state in ("running", "degraded"):
            break
        time.sleep(0.5)
    else:
        podman("rm", "-f", name, check=False)
        pytest.fail("systemd did not come up in %s (state %r)" % (name, state))
    return host


def stop_host(host):
    podman("rm", "-f", "-t", "2", host.name, check=False)


SYSTEMD_IMAGES = {"12": "localhost/metnos-debian:12", "13": "localhost/metnos-debian:13"}


@pytest.fixture(scope="session", params=sorted(SYSTEMD_IMAGES), ids=lambda v: "debian%s" % v)
def systemd_host(request):
    """One systemd host per Debian release, with CAP_SYS_ADMIN so that mount-namespace directives
    really apply; shared by the tests of a session (they use their own unit names)."""
    h = start_host("metnos-sys%s" % request.param, extra=("--cap-add", "SYS_ADMIN"),
                   image=bwrap_image(SYSTEMD_IMAGES[request.param]))
    h.debian = request.param
    h.systemd = int(h.sh("systemctl --version | head -1 | awk '{print $2}'").stdout.strip())
    h.bwrap = h.sh("bwrap --version | awk '{print $2}'").stdout.strip()
    try:
        yield h
    finally:
        stop_host(h)


@pytest.fixture(scope="module")
def host():
    h = start_host()
    try:
        yield h
    finally:
        stop_host(h)


TRIAL_DIR = "/opt/metnos-trial"


def install_trial_tools(host):
    """The toolkit's core and tests/system/directive_trial.py in TRIAL_DIR (readable by everyone), plus
    the host's own namespace inodes (host.json) the trial compares with."""
    host.sh("rm -rf %s && mkdir -p %s/core" % (TRIAL_DIR, TRIAL_DIR))
    podman("cp", os.path.join(ROOT, "module_utils", "metnos_sandbox"), "%s:%s/core/metnos_sandbox" % (host.name,
                                                                                                     TRIAL_DIR))
    podman("cp", os.path.join(ROOT, "tests", "system", "directive_trial.py"), "%s:%s/" % (host.name, TRIAL_DIR))
    host.sh("python3 %s/directive_trial.py host > %s/host.json && chmod -R a+rX %s" % (TRIAL_DIR, TRIAL_DIR,
                                                                                     TRIAL_DIR))
    return TRIAL_DIR


def run_site(host, hosts, tmpdir, *args):
    """playbooks/site.yml against ``host`` under several inventory names at once (one per unit):
    ``hosts`` is {inventory name: host vars}. Returns (process, {name: recap counts})."""
    import re
    inventory = {"all": {"hosts": dict((name, dict(hostvars, ansible_host=host.name)) for name, hostvars in
                                       hosts.items()),
                         "vars": {"ansible_connection": "containers.podman.podman",
                                  "ansible_python_interpreter": "/usr/bin/python3"}}}
    path = os.path.join(str(tmpdir), "inventory-%s.json" % uuid.uuid4().hex[:6])
    with open(path, "w") as handle:
        json.dump(inventory, handle)
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", path, "playbooks/site.yml"]
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, cwd=ROOT, env=ansible_env(), timeout=1200)
    recap = {}
    for name, ok, changed, unreachable, failed in re.findall(
            r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", proc.stdout, re.M):
        recap[name] = {"ok": int(ok), "changed": int(changed), "unreachable": int(unreachable), "failed": int(failed)}
    return proc, recap


def core_probe(host, units):
    """The toolkit's probe (the core, as the modules run it) for several units at once, in the host."""
    out = host.sh("cd %s && TRIAL_WORKERS=8 python3 directive_trial.py probe %s" % (TRIAL_DIR, " ".join(units)),
                  timeout=900).stdout
    return json.loads(out)
