#!/usr/bin/env python3
"""Benchmark the fleet audit on a simulated fleet (not a test; figures go in docs/benchmarks.md).

    python scripts/bench-audit.py [--sizes 1,10,50,200] [--forks 50] [--repeat 1] [--ssh 10]

For each fleet size N, in the same run, it measures wall time and controller CPU of:
  ours   playbooks/audit.yml (metnos_audit: one self-contained payload per host, pipelined)
  naive  the same checks "the usual way": full fact gathering + one command/stat task per check
  floor  the checks as a Python script per host, 2 at a time, no Ansible at all
Hosts are local-connection aliases of this machine (each runs the checks for real). With
--ssh K, K hosts in network namespaces (own addresses on a veth bridge, sshd in each, key auth)
are audited over SSH too (needs iproute2 and openssh-server; created and removed by the script).
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.dirname(sys.executable)
sys.path.insert(0, os.path.join(ROOT, "action_plugins"))

NAIVE = """---
- name: Naive audit (full facts + one task per check)
  hosts: all
  gather_facts: true
  tasks:
    - name: Stat bwrap
      ansible.builtin.stat: {path: /usr/bin/bwrap}
    - name: Version
      ansible.builtin.command: bwrap --version
      changed_when: false
      failed_when: false
    - name: User namespace limit
      ansible.builtin.command: cat /proc/sys/user/max_user_namespaces
      changed_when: false
    - name: Service environment
      ansible.builtin.command: systemctl show metnos.service -p Environment -p EnvironmentFiles -p User
      changed_when: false
      failed_when: false
    - name: Smoke test as an unprivileged user
      ansible.builtin.command: >-
        setpriv --reuid=65534 --regid=65534 --clear-groups bwrap --unshare-user --unshare-ipc --unshare-uts
        --unshare-net --die-with-parent --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp true
      changed_when: false
      failed_when: false
"""


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, env=None, cwd=ROOT):
    cpu0, t0 = children_cpu(), time.time()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return time.time() - t0, children_cpu() - cpu0, proc


def inventory(path, n, ssh_hosts=()):
    lines = ["all:", "  hosts:"]
    for i in range(n):
        lines.append("    h%03d: {ansible_connection: local, ansible_python_interpreter: /usr/bin/python3}" % i)
    for name, addr, key in ssh_hosts:
        lines.append("    %s: {ansible_host: %s, ansible_user: root, ansible_ssh_private_key_file: %s, "
                     "ansible_python_interpreter: /usr/bin/python3, ansible_ssh_common_args: "
                     "'-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'}" % (name, addr, key))
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


def ansible_env(forks):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORKS=str(forks),
               ANSIBLE_PIPELINING="True", ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_NOCOLOR="1",
               ANSIBLE_DEPRECATION_WARNINGS="False")
    return env


def run_ours(inv, forks, dest):
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inv, os.path.join(ROOT, "playbooks", "audit.yml"),
           "-e", "metnos_audit_dest=%s" % dest, "-e", '{"metnos_audit_manifests": []}']
    return timed(cmd, ansible_env(forks))


def run_naive(inv, forks, tmp):
    play = os.path.join(tmp, "naive.yml")
    with open(play, "w") as handle:
        handle.write(NAIVE)
    return timed([os.path.join(VENV_BIN, "ansible-playbook"), "-i", inv, play], ansible_env(min(forks, 5)))


def run_floor(n, tmp):
    """The same payload the audit ships, run directly: N times, 2 at a time."""
    import metnos_audit as A
    script = os.path.join(tmp, "floor.sh")
    data = os.path.join(tmp, "payload")
    with open(data, "wb") as handle:
        handle.write(json.dumps({"unit": "metnos.service", "manifests": [], "probe": True}).encode() + b"\n"
                     + A.payload())
    with open(script, "w") as handle:
        handle.write("#!/bin/sh\nexec /usr/bin/python3 -c %s %s >/dev/null\n" % (
            shlex_quote(A.BOOTSTRAP), data))
    os.chmod(script, 0o755)
    cmd = ["sh", "-c", "seq %d | xargs -P 2 -I{} %s" % (n, script)]
    return timed(cmd)


def shlex_quote(text):
    import shlex
    return shlex.quote(text)


def ssh_fleet(k, tmp):
    """K network namespaces on a bridge, each running sshd on its own address. Returns (hosts, cleanup)."""
    if not shutil.which("sshd") and not os.path.exists("/usr/sbin/sshd"):
        raise SystemExit("--ssh needs openssh-server (apt-get install openssh-server)")
    key = os.path.join(tmp, "id_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    authorized = os.path.join(tmp, "authorized_keys")
    shutil.copy(key + ".pub", authorized)
    os.chmod(authorized, 0o600)
    hostkey = os.path.join(tmp, "hostkey")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostkey], check=True)
    sh = ["mkdir -p /run/sshd", "ip link add mbr0 type bridge", "ip addr add 10.231.0.1/24 dev mbr0",
          "ip link set mbr0 up"]
    hosts = []
    for i in range(k):
        ns, addr = "mso%d" % i, "10.231.0.%d" % (i + 10)
        sh += ["ip netns add %s" % ns, "ip link add v%d type veth peer name eth0 netns %s" % (i, ns),
               "ip link set v%d master mbr0 up" % i, "ip -n %s addr add %s/24 dev eth0" % (ns, addr),
               "ip -n %s link set eth0 up" % ns, "ip -n %s link set lo up" % ns,
               "ip netns exec %s /usr/sbin/sshd -o ListenAddress=%s -o HostKey=%s -o AuthorizedKeysFile=%s "
               "-o PermitRootLogin=prohibit-password -o PidFile=%s/sshd-%d.pid -o StrictModes=no"
               % (ns, addr, hostkey, authorized, tmp, i)]
        hosts.append(("ssh%02d" % i, addr, key))
    def cleanup():
        # every process in the namespaces: sshd and its sessions (ssh ControlPersist keeps them alive)
        cmds = ["ip netns pids mso%d 2>/dev/null | xargs -r kill -9" % i for i in range(k)] + ["sleep 0.3"]
        cmds += ["ip link del v%d 2>/dev/null || true" % i for i in range(k)]
        cmds += ["ip netns del mso%d 2>/dev/null || true" % i for i in range(k)]
        cmds += ["ip link del mbr0 2>/dev/null || true"]
        subprocess.run(["sh", "-c", "\n".join(cmds)])
    cleanup()   # leftovers of an interrupted run
    try:
        subprocess.run(["sh", "-ec", "\n".join(sh)], check=True)
    except subprocess.CalledProcessError:
        cleanup()
        raise
    time.sleep(1)
    return hosts, cleanup


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,10,50,200")
    ap.add_argument("--forks", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--ssh", type=int, default=0)
    ap.add_argument("--skip-naive-above", type=int, default=50,
                    help="run the (slow) naive audit only up to this fleet size")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="metnos-bench-")
    rows = []
    try:
        for n in [int(x) for x in args.sizes.split(",")]:
            inv = os.path.join(tmp, "inv-%d.yml" % n)
            inventory(inv, n)
            row = {"N": n}
            runs = (("ours", lambda inv=inv: run_ours(inv, args.forks, os.path.join(tmp, "reports"))),
                    ("naive", lambda inv=inv: run_naive(inv, args.forks, tmp)),
                    ("floor", lambda n=n: run_floor(n, tmp)))
            for name, fn in runs:
                if name == "naive" and n > args.skip_naive_above:
                    continue
                walls, cpus = [], []
                for _ in range(args.repeat):
                    wall, cpu, proc = fn()
                    if name != "ours" and proc.returncode != 0:
                        raise SystemExit("%s failed at N=%d: %s" % (name, n, proc.stdout[-2000:] + proc.stderr[-2000:]))
                    if name == "ours":
                        row["ours_summary"] = _summary(proc.stdout)
                    walls.append(wall)
                    cpus.append(cpu)
                row[name] = (statistics.median(walls), statistics.median(cpus))
            rows.append(row)
            print(fmt(row), flush=True)
        if args.ssh:
            hosts, cleanup = ssh_fleet(args.ssh, tmp)
            try:
                inv = os.path.join(tmp, "inv-ssh.yml")
                inventory(inv, 0, hosts)
                row = {"N": "%d ssh" % args.ssh}
                wall, cpu, proc = run_ours(inv, args.forks, os.path.join(tmp, "reports"))
                row["ours"] = (wall, cpu)
                row["ours_summary"] = _summary(proc.stdout)
                row["naive"] = run_naive(inv, args.forks, tmp)[:2]
                row["floor"] = run_floor(args.ssh, tmp)[:2]
                rows.append(row)
                print(fmt(row), flush=True)
            finally:
                cleanup()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _summary(stdout):
    """The audit's own fleet line, e.g. '10 hosts: 0 pass, 10 warn, 0 fail, 0 unreachable'."""
    for line in stdout.splitlines():
        if " hosts: " in line and "unreachable" in line:
            return line.strip().strip('",')
    return "no summary (audit failed?)"


def fmt(row):
    parts = ["N=%s" % row["N"]]
    for name in ("ours", "naive", "floor"):
        if name in row:
            parts.append("%s %.1fs wall %.1fs cpu" % (name, row[name][0], row[name][1]))
    if "ours" in row and "naive" in row:
        parts.append("naive/ours %.1fx" % (row["naive"][0] / row["ours"][0]))
    if "ours" in row and "floor" in row:
        parts.append("ours/floor %.2fx" % (row["ours"][0] / row["floor"][0]))
    if row.get("ours_summary"):
        parts.append("audit: %s" % row["ours_summary"])
    return " | ".join(parts)


if __name__ == "__main__":
    main()
