#!/usr/bin/env python3
"""Benchmark the fleet audit at fleet scale (not a test; the figures go in docs/benchmarks.md).

    python benchmarks/bench-audit.py                      # the whole table: N=200 and 1,000, 20 SSH hosts,
                                                       # 10,000 synthetic results, Chromium timings
    python benchmarks/bench-audit.py --sizes 10,50 --ssh 0 --synthetic 0 --no-browser   # a quick look

Cells (all in one run, one line each, a Markdown table and --json at the end):
  ours   playbooks/audit.yml over N local-connection aliases of this machine (each runs every check for
         real: bwrap smoke test as nobody, service environment, the probe), forks 50, pipelining
  floor  the same payload run directly, as many at a time as there are CPUs, no Ansible
  no-op  the same hosts, forks and play shape with one task of an action that does nothing on the host
         (ansible.builtin.debug with a constant message: no template, as the audit's task has none; the cell
         used to print "{{ inventory_hostname }}", a template every worker compiles, ~3 ms per host more):
         what Ansible itself costs per host, the floor of the controller's share
  no-op command  the same, with one task that runs one command on the host through the same connection
         (ansible.builtin.raw: "true"): Ansible's floor for one round trip, as the audit makes one
  naive  (only up to --naive-up-to hosts) fact gathering + one command/stat task per check, forks 5
  ssh    ours over SSH to K hosts, each in a network namespace of its own with its own sshd; the
         controller runs in one more namespace holding the bridge, so every address lives in a
         namespace this script creates (and removes, on failure and Ctrl-C too)
  synth  report generation and the merge alone, on --synthetic host records made from a real one
Every cell checks what it timed and fails the bench on a failed answer: each host's record (ours, ssh), each
payload's reply (floor), the merged and synthetic reports, Chromium's loads (a failure costs less than the work:
timed, it would pass for a faster run).
With --rounds R the ours, no-op and no-op command cells run R times each, one after the other in turn, and
each cell shows its median round (ours: by controller CPU; the others: by CPU), all rounds listed after it:
the machine's noise moves one run of a cell by more than 10 ms per host.

What each figure means:
  wall             seconds, start to exit of ansible-playbook
  CPU              user+system seconds of every process of the run (getrusage of the children)
  payload CPU      own: the sum of what each host's audit reports as its own CPU (the `cpu` field: the
                   payload's interpreter and the commands it waited for, up to the moment it measures);
                   host side (local aliases): what the kernel counted for the processes the workers started
                   and reaped (each worker's RUSAGE_CHILDREN at the end of its task): the payload's whole tree
                   from sh's start to its exit, so also the encoding of its answer and the teardown of its
                   process (~2-3 ms per host that it cannot measure itself)
  controller CPU   CPU - host side on local aliases, all of the CPU over SSH (ansible-playbook, its forked
                   workers, the ssh clients they start), per host; the no-op cells the same way (the no-op
                   command's `true` is host side)
  main RSS peak    ru_maxrss of the ansible-playbook main process (its own high-water mark)
  tree PSS peak    the largest sum, over the controller's processes (main + workers + ssh), of their
                   proportional set size, sampled every 0.5 s: shared pages are split between the
                   processes sharing them, so the sum is the memory the controller really holds
  other load       CPU seconds that processes outside this benchmark used during the cell (from
                   /proc/stat): the machine is shared, and wall times move with it; CPU figures move less
"""
import argparse
import atexit
import glob
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.dirname(sys.executable)
sys.path.insert(0, os.path.join(ROOT, "action_plugins"))
sys.path.insert(0, os.path.join(ROOT, "module_utils"))

from metnos_sandbox.report import document, render_json

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

# Runs ansible-playbook in this very process and writes the process's own rusage at exit: the main
# process's CPU and peak RSS without a wrapper process of its own.
LAUNCHER = r'''
import atexit, os, resource, runpy, sys
from ansible.executor.process import worker
out = sys.argv[1]
def report():
    r = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as handle:
        handle.write("%f %f %d\n" % (r.ru_utime, r.ru_stime, r.ru_maxrss))
atexit.register(report)
run = worker.WorkerProcess._run
def measured(self):
    # Each forked worker, at the end of its task: its own CPU and the CPU of the commands it waited for (on a
    # local connection, the process the host runs: sh, the payload's interpreter and everything it waited for,
    # measured by the kernel until that process was reaped).
    try:
        return run(self)
    finally:
        me, ch = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(out + ".workers", "a") as handle:
            handle.write("%f %f\n" % (me.ru_utime + me.ru_stime, ch.ru_utime + ch.ru_stime))
worker.WorkerProcess._run = measured
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


# --------------------------------------------------------------------------- measuring

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def machine_busy():
    """CPU seconds all processes of the machine used so far (from /proc/stat)."""
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / float(os.sysconf("SC_CLK_TCK"))


def _pss_kb(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(root):
    """pid -> (ppid, comm, cmdline head) of root and its descendants."""
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                cmd = handle.read(300).replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        procs[int(entry)] = (ppid, cmd)
    keep, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in procs and pid not in keep:
            keep[pid] = procs[pid]
            frontier.extend(p for p, (pp, _c) in procs.items() if pp == pid)
    return keep


class Sampler(threading.Thread):
    """Every `period` s: the summed PSS of the controller's processes (ansible-playbook and its forks,
    ssh clients), and how many there are."""

    def __init__(self, pid, period=0.5):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.peak_kb = self.peak_procs = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            procs = [p for p, (_pp, cmd) in _tree(self.pid).items()
                     if "ansible-playbook" in cmd or cmd.startswith(("ssh ", "/usr/bin/ssh "))]
            total = sum(_pss_kb(p) for p in procs)
            self.peak_kb = max(self.peak_kb, total)
            self.peak_procs = max(self.peak_procs, len(procs))
            self.stop.wait(self.period)


def run_playbook(argv, env, tmp, prefix=()):
    """ansible-playbook through the launcher, in the checkout env's ANSIBLE_CONFIG sits in; returns measurements
    and the completed process."""
    usage = os.path.join(tmp, "main-rusage")
    launcher = os.path.join(tmp, "launcher.py")
    with open(launcher, "w") as handle:
        handle.write(LAUNCHER)
    cmd = list(prefix) + [sys.executable, launcher, usage, os.path.join(VENV_BIN, "ansible-playbook")] + argv
    cpu0, busy0, t0 = children_cpu(), machine_busy(), time.time()
    proc = subprocess.Popen(cmd, cwd=os.path.dirname(env["ANSIBLE_CONFIG"]), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    sampler = Sampler(proc.pid)
    sampler.start()
    out, err = proc.communicate()
    sampler.stop.set()
    sampler.join()
    wall, cpu = time.time() - t0, children_cpu() - cpu0
    other = machine_busy() - busy0 - cpu
    main = {}
    if os.path.exists(usage):
        u, s, rss = open(usage).read().split()
        main = {"cpu": float(u) + float(s), "rss_mb": int(rss) / 1024.0}
    workers = [line.split() for line in open(usage + ".workers")] if os.path.exists(usage + ".workers") else []
    for path in (usage, usage + ".workers"):
        if os.path.exists(path):
            os.unlink(path)
    return {"wall": wall, "cpu": cpu, "other_load_cpu": max(0.0, other), "main": main,
            "workers_cpu": sum(float(w[0]) for w in workers), "host_cpu": sum(float(w[1]) for w in workers),
            "tree_pss_mb": sampler.peak_kb / 1024.0, "processes": sampler.peak_procs}, \
        subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def inventory(path, n, ssh_hosts=()):
    lines = ["all:", "  hosts:"]
    for i in range(n):
        lines.append("    h%04d: {ansible_connection: local, ansible_python_interpreter: /usr/bin/python3}" % i)
    for name, addr, key in ssh_hosts:
        lines.append("    %s: {ansible_host: %s, ansible_user: root, ansible_ssh_private_key_file: %s, "
                     "ansible_python_interpreter: /usr/bin/python3, ansible_ssh_common_args: "
                     "'-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'}" % (name, addr, key))
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


def ansible_env(forks, tmp, root=ROOT):
    """The environment of a run of the checkout `root`: its ansible.cfg and its collection (a caller's
    ANSIBLE_COLLECTIONS_PATH, e.g. another worktree's, would win over the config's collections_path)."""
    return dict(os.environ, ANSIBLE_CONFIG=os.path.join(root, "ansible.cfg"), ANSIBLE_FORKS=str(forks),
                ANSIBLE_COLLECTIONS_PATH="%s:%s" % (os.path.join(root, "collections"),
                                                    os.path.join(root, ".ansible", "collections")),
                ANSIBLE_PIPELINING="True", ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_NOCOLOR="1",
                ANSIBLE_DEPRECATION_WARNINGS="False", ANSIBLE_SSH_CONTROL_PATH_DIR=os.path.join(tmp, "cp"))


def hosts_problem(hosts, n):
    """Why the report's host records are not n completed audits (None when they are): a host missing, or one
    whose payload did not finish (unreachable, failed: no CPU of its own, no verdict of its checks, no probe)."""
    if len(hosts) != n:
        return "%d host records, not %d" % (len(hosts), n)
    for host in hosts:
        codes = [d.get("code") for d in host.get("diagnostics") or []]
        if host.get("cpu") is None or host.get("probe") is None or host.get("verdict") not in ("pass", "warn", "fail"):
            return "%s: no completed audit (verdict %r, codes %s)" % (host.get("host"), host.get("verdict"), codes)
    return None


def run_ours(inv, n_hosts, forks, dest, tmp, manifests, prefix=(), *, root=ROOT):
    """playbooks/audit.yml of the checkout `root` (default this one) over the inventory inv."""
    argv = ["-i", inv, os.path.join(root, "playbooks", "audit.yml"), "-e", "metnos_audit_dest=%s" % dest]
    if not manifests:
        argv += ["-e", '{"metnos_audit_manifests": []}']
    shutil.rmtree(dest, ignore_errors=True)
    m, proc = run_playbook(argv, ansible_env(forks, tmp, root), tmp, prefix)
    # the set's own files: not the latest link, its fixed links nor runs/ (issue 52: one pointer)
    reports = dict((p.split(".", 1)[1], p) for p in glob.glob(os.path.join(dest, "metnos-audit-*")))
    m["summary"] = _summary(proc.stdout)
    m["reports"] = dict((ext, os.path.getsize(p)) for ext, p in reports.items())
    m["report_paths"] = reports
    timing = re.search(r"reports\s+written\s+in\s+([0-9.]+)\s+s", proc.stdout)
    m["report_time"] = float(timing.group(1)) if timing else None
    if "json" in reports:
        doc = json.load(open(reports["json"]))
        m["payload_cpu"] = sum(h.get("cpu") or 0 for h in doc["hosts"])
        m["hosts_with_cpu"] = sum(1 for h in doc["hosts"] if h.get("cpu") is not None)
        m["error"] = hosts_problem(doc["hosts"], n_hosts)
        if m["error"]:
            m["payload_cpu"] = None
    else:
        m["payload_cpu"] = None
        m["error"] = (proc.stdout[-1500:] + proc.stderr[-1500:])
    return m


NOOP = """---
- name: No-op (Ansible's own per-host cost)
  hosts: all
  gather_facts: false
  tasks:
    - name: Nothing
      ansible.builtin.debug:
        msg: nothing
"""


NOOP_COMMAND = """---
- name: No-op command (Ansible's own per-host cost of one round trip)
  hosts: all
  gather_facts: false
  tasks:
    - name: One command on the host
      ansible.builtin.raw: "true"
"""


def run_noop(inv, forks, tmp, play_text=NOOP, name="noop"):
    """A no-op cell: the per-host floor of the controller's share (no payload: all its CPU is Ansible's, and
    for the command cell the one command's)."""
    play = os.path.join(tmp, name + ".yml")
    with open(play, "w") as handle:
        handle.write(play_text)
    m, proc = run_playbook(["-i", inv, play], ansible_env(forks, tmp), tmp)
    if proc.returncode != 0:
        raise SystemExit("%s failed: %s" % (name, proc.stdout[-2000:] + proc.stderr[-2000:]))
    return m


def run_naive(inv, forks, tmp):
    play = os.path.join(tmp, "naive.yml")
    with open(play, "w") as handle:
        handle.write(NAIVE)
    m, proc = run_playbook(["-i", inv, play], ansible_env(min(forks, 5), tmp), tmp)
    if proc.returncode != 0:
        raise SystemExit("naive failed: %s" % (proc.stdout[-2000:] + proc.stderr[-2000:]))
    return m


# The floor's options: what the audit task of playbooks/audit.yml gives on these hosts (no manifests, the probe on),
# with the spec's defaults applied as the action's validator applies them; the action's own options removed as
# the action removes them (never shipped). Until issue 55 the floor sent only these three and the payload
# answered failed: true ("metnos_audit payload failed: 'collect_monitor'"), which the floor timed.
FLOOR_OPTIONS = {"unit": "metnos.service", "manifests": [], "probe": True}
ACTION_ONLY = ("result", "from_vars", "deadline", "manifest_sources", "python")


def floor_options():
    from metnos_sandbox.options import spec
    args = spec.with_defaults(spec.AUDIT, FLOOR_OPTIONS)
    for name in ACTION_ONLY:
        args.pop(name, None)
    return args


def reply_problem(stdout, frame):
    """Why one payload's reply is not a completed audit (None when it is): no single frame, failed: true, or a
    record without its verdict, CPU or probe. A failed reply costs less than a real audit: timed, it would make
    the floor look cheaper than it is."""
    from metnos_sandbox.audit import transport
    found = transport.framed(stdout, frame)
    if found is None:
        return "no framed result: %r" % stdout[-300:]
    record = found[0]
    if record.get("failed"):
        return "failed: %s" % record.get("msg")
    missing = [key for key in ("schema", "verdict", "cpu", "probe") if record.get(key) is None]
    if missing or record["verdict"] not in ("pass", "warn", "fail"):
        return "an incomplete record (missing %s, verdict %r)" % (", ".join(missing), record.get("verdict"))
    return None


def run_floor(n, tmp, parallel, core=None, tag=""):
    """The payload metnos_audit ships, run directly by the host's Python: n times, `parallel` at a time (the core
    of `core`, a folder like module_utils/metnos_sandbox; default this checkout's). Every reply is read back and
    checked (reply_problem): one failed reply fails the bench."""
    from metnos_sandbox.audit import transport
    data = os.path.join(tmp, "floor-payload" + tag)
    frame = transport.new_frame()
    with open(data, "wb") as handle:
        handle.write(transport.message(frame, floor_options(),
                                       transport.build_payload(core or os.path.join(ROOT, "module_utils",
                                                                                    "metnos_sandbox"))))
    replies = os.path.join(tmp, "floor-replies" + tag)
    shutil.rmtree(replies, ignore_errors=True)
    os.makedirs(replies)
    script = os.path.join(tmp, "floor%s.sh" % tag)
    with open(script, "w") as handle:
        handle.write("#!/bin/sh\nexec /usr/bin/python3 -c %s <%s >%s/\"$1\"\n" % (
            shlex.quote(transport.BOOTSTRAP), data, replies))
    os.chmod(script, 0o755)
    cpu0, busy0, t0 = children_cpu(), machine_busy(), time.time()
    proc = subprocess.run(["sh", "-c", "seq %d | xargs -P %d -I{} %s {}" % (n, parallel, script)])
    wall, cpu = time.time() - t0, children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit("floor failed at N=%d" % n)
    for index in range(1, n + 1):
        with open(os.path.join(replies, str(index)), encoding="utf-8", errors="replace") as handle:
            problem = reply_problem(handle.read(), frame)
        if problem:
            raise SystemExit("floor: the payload's reply %d of %d (%s) is not an audit: %s" % (
                index, n, core or "this checkout's core", problem))
    shutil.rmtree(replies, ignore_errors=True)
    return {"wall": wall, "cpu": cpu, "other_load_cpu": max(0.0, machine_busy() - busy0 - cpu)}


def compare_floors(cores, n, rounds, parallel, tmp):
    """The floor cell for each core in turn, ``rounds`` times: CPU ms per host, each round and the median."""
    per_host = dict((core, []) for core in cores)
    for i, core in enumerate(cores):
        run_floor(1, tmp, 1, core, "-%d" % i)          # each core's compiled bundle made on the host first
    for _round in range(rounds):
        for i, core in enumerate(cores):
            per_host[core].append(1000.0 * run_floor(n, tmp, parallel, core, "-%d" % i)["cpu"] / n)
    for core in cores:
        rounds_ms = sorted(per_host[core])
        print("%s: median %.1f ms CPU per host (rounds: %s)" % (core, rounds_ms[len(rounds_ms) // 2], " ".join(
            "%.1f" % x for x in per_host[core])), flush=True)


def loadavg():
    """The machine's 1-minute load average now (the machine is shared: it stands beside every figure)."""
    with open("/proc/loadavg") as handle:
        return float(handle.read().split()[0])


def _median(values):
    ranked = sorted(values)
    return ranked[len(ranked) // 2]


def reports_cpu(root, hosts_path, tmp):
    """CPU seconds of building and writing the four reports of the host records in hosts_path with the report
    code of the checkout `root` (in a fresh process, its reading of the records not counted), and the written
    JSON's host count."""
    script = os.path.join(tmp, "synth.py")
    with open(script, "w") as handle:
        handle.write(SYNTH_REPORT)
    out_dir = os.path.join(tmp, "synth-reports")
    shutil.rmtree(out_dir, ignore_errors=True)
    proc = subprocess.run([sys.executable, script, os.path.join(root, "module_utils"), hosts_path, out_dir],
                          capture_output=True, text=True, check=True)
    gen = json.loads(proc.stdout)
    written = len(json.load(open(gen["paths"]["json"]))["hosts"])
    return gen["cpu"], written


def compare_trees(trees, n, rounds, forks, tmp, manifests, synthetic):
    """The ours cell (and, with synthetic, the reports alone for that many host records made from the tree's own
    first record) of each checkout in `trees`, alternated A B A B ... for `rounds` rounds in one run: total CPU
    (controller + host side, from rusage) per host, each round with the load average at its start, then each
    tree's median, its spread (min-max) and its difference from the first tree's median."""
    inv = os.path.join(tmp, "inv-%d.yml" % n)
    inventory(inv, n)
    cells = dict((tree, []) for tree in trees)
    made = {}
    warm = os.path.join(tmp, "inv-warm.yml")
    inventory(warm, 2)
    for tree in trees:                      # each tree's compiled bundle kept on the host before the first round
        run_ours(warm, 2, forks, os.path.join(tmp, "reports-trees"), tmp, manifests, root=tree)
    for number in range(rounds):
        for tree in trees:
            load = loadavg()
            ours = run_ours(inv, n, forks, os.path.join(tmp, "reports-trees"), tmp, manifests, root=tree)
            if ours.get("payload_cpu") is None:
                raise SystemExit("%s: the audit did not complete at N=%d:\n%s" % (tree, n, ours["error"]))
            cell = {"load": load, "total": 1000.0 * ours["cpu"] / n, "controller": 1000.0 * controller(ours) / n,
                    "host": 1000.0 * ours["host_cpu"] / n, "payload": 1000.0 * ours["payload_cpu"] / n,
                    "wall": ours["wall"], "other_load_cpu": ours["other_load_cpu"]}
            if synthetic:
                if tree not in made:
                    template = json.load(open(ours["report_paths"]["json"]))["hosts"][0]
                    made[tree] = os.path.join(tmp, "synth-hosts-%d.json" % len(made))
                    with open(made[tree], "w") as handle:
                        json.dump(synthetic_hosts(template, synthetic), handle)
                cell["reports_load"] = loadavg()
                cell["reports"], written = reports_cpu(tree, made[tree], tmp)
                if written != synthetic:
                    raise SystemExit("%s: the reports hold %d hosts, not %d" % (tree, written, synthetic))
            cells[tree].append(cell)
            print("round %d %s: %s" % (number + 1, tree, json.dumps(cell)), flush=True)
    keys = ["total", "controller", "host", "payload"] + (["reports"] if synthetic else [])
    lines = ["", "%d local aliases, forks %d, %d rounds alternated; ms of CPU per host: median (min-max)%s" % (
        n, forks, rounds, "; reports: CPU s for %d synthetic hosts" % synthetic if synthetic else ""), "",
        "| tree | " + " | ".join(keys) + " | wall s | load at start | total vs first |",
        "|---" * (len(keys) + 4) + "|"]
    first = _median(c["total"] for c in cells[trees[0]])
    for tree in trees:
        rows = cells[tree]
        figures = ["%.1f (%.1f-%.1f)" % (_median(c[k] for c in rows), min(c[k] for c in rows),
                                         max(c[k] for c in rows)) if k != "reports" else
                   "%.2f (%.2f-%.2f)" % (_median(c[k] for c in rows), min(c[k] for c in rows),
                                         max(c[k] for c in rows)) for k in keys]
        lines.append("| %s | %s | %.1f | %.1f-%.1f | %+.1f%% |" % (
            tree, " | ".join(figures), _median(c["wall"] for c in rows), min(c["load"] for c in rows),
            max(c["load"] for c in rows), 100.0 * (_median(c["total"] for c in rows) / first - 1)))
    print("\n".join(lines), flush=True)
    return cells


def controller(m, ssh=False):
    """The controller's share of a cell's CPU: all of it over SSH (the hosts' CPU is theirs, not counted here);
    on local aliases all of it minus the host side (host_cpu: what the kernel counted for the processes the
    workers started and reaped, the payload's whole tree from sh's start to its exit)."""
    return m["cpu"] if ssh else m["cpu"] - m.get("host_cpu", 0.0)


def median_rounds(n, rounds):
    """The row of one size from its rounds: each cell's median round by its controller share (the upper median of
    an even count), and every round's per-host figures under "rounds"."""
    def pick(cell, key):
        ranked = sorted((r[cell] for r in rounds), key=key)
        return ranked[len(ranked) // 2]
    row = {"n": n, "ours": pick("ours", controller), "noop": pick("noop", controller),
           "noop_command": pick("noop_command", controller)}
    row["rounds"] = [{"payload": 1000.0 * r["ours"]["payload_cpu"] / n, "host": 1000.0 * r["ours"]["host_cpu"] / n,
                      "controller": 1000.0 * controller(r["ours"]) / n, "noop": 1000.0 * controller(r["noop"]) / n,
                      "noop_command": 1000.0 * controller(r["noop_command"]) / n}
                     for r in rounds]
    return row


def _summary(stdout):
    """The audit's own fleet line, e.g. '10 hosts: 0 pass, 10 warn, 0 fail, 0 unreachable'."""
    for line in stdout.splitlines():
        if " hosts: " in line and "unreachable" in line:
            return line.strip().strip('",')
    return "no summary (audit failed?)"


# --------------------------------------------------------------------------- SSH hosts in namespaces

class SshFleet(object):
    """K network namespaces, each with its own sshd and address, behind a bridge that lives in one more
    namespace (the controller's). Nothing is added to the namespace this script runs in."""

    def __init__(self, k, tmp):
        self.k, self.tmp = k, tmp
        self.tag = "msb%d" % os.getpid()
        self.ctl = self.tag + "-ctl"
        self.hosts = []

    @staticmethod
    def remove_stale():
        """Namespaces of an earlier run of this script whose process is gone (killed with SIGKILL)."""
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        for name in names:
            match = re.match(r"msb(\d+)-", name)
            if match and not os.path.exists("/proc/%s" % match.group(1)):
                SshFleet._remove(name)

    @staticmethod
    def _remove(name):
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", name], capture_output=True)

    def namespaces(self):
        return [self.ctl] + ["%s-h%d" % (self.tag, i) for i in range(self.k)]

    def sshd(self):
        """sshd and the environment it needs. Without openssh-server installed, the package (and libwrap0)
        is fetched with apt-get download and unpacked here: nothing is installed on this machine."""
        if os.path.exists("/usr/sbin/sshd"):
            return "/usr/sbin/sshd", {}
        unpack = os.path.join(self.tmp, "openssh")
        os.makedirs(unpack, exist_ok=True)
        for pkg in ("openssh-server", "libwrap0"):
            subprocess.run(["apt-get", "download", "-q", pkg], cwd=unpack, check=True, capture_output=True)
        for deb in glob.glob(os.path.join(unpack, "*.deb")):
            subprocess.run(["dpkg", "-x", deb, os.path.join(unpack, "root")], check=True)
        libs = ":".join(glob.glob(os.path.join(unpack, "root", "usr", "lib", "*-linux-gnu")))
        return os.path.join(unpack, "root", "usr", "sbin", "sshd"), {"LD_LIBRARY_PATH": libs}

    def up(self):
        sshd, env = self.sshd()
        key = os.path.join(self.tmp, "id_ed25519")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        authorized = os.path.join(self.tmp, "authorized_keys")
        shutil.copy(key + ".pub", authorized)
        os.chmod(authorized, 0o600)
        hostkey = os.path.join(self.tmp, "hostkey")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostkey], check=True)
        config = os.path.join(self.tmp, "sshd_config")
        with open(config, "w") as handle:
            handle.write("HostKey %s\nAuthorizedKeysFile %s\nPermitRootLogin prohibit-password\nStrictModes no\n"
                         "UsePAM no\nMaxStartups 200\nMaxSessions 50\n" % (hostkey, authorized))
        # sshd wants its privilege-separation user and /run/sshd: the user comes from a copy of
        # /etc/passwd bind-mounted in sshd's own mount namespace, /run/sshd is removed afterwards
        passwd = os.path.join(self.tmp, "passwd")
        text = open("/etc/passwd").read()
        if not re.search(r"(?m)^sshd:", text):
            text += "sshd:x:64999:65534:bench sshd:/run/sshd:/usr/sbin/nologin\n"
        with open(passwd, "w") as handle:
            handle.write(text)
        if not os.path.isdir("/run/sshd"):
            os.makedirs("/run/sshd", 0o755)
            self.made_run_sshd = True
        ctl = self.ctl
        sh = ["ip netns add %s" % ctl, "ip -n %s link set lo up" % ctl,
              "ip -n %s link add br0 type bridge" % ctl, "ip -n %s addr add 10.231.0.1/16 dev br0" % ctl,
              "ip -n %s link set br0 up" % ctl]
        envs = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in env.items())
        for i in range(self.k):
            ns, addr = "%s-h%d" % (self.tag, i), "10.231.%d.%d" % (1 + i // 200, 10 + i % 200)
            inner = "mount --bind %s /etc/passwd && exec env %s %s -f %s -o ListenAddress=%s -o PidFile=%s" % (
                passwd, envs, sshd, config, addr, os.path.join(self.tmp, "sshd-%d.pid" % i))
            sh += ["ip netns add %s" % ns,
                   "ip -n %s link add v%d type veth peer name eth0 netns %s" % (ctl, i, ns),
                   "ip -n %s link set v%d master br0 up" % (ctl, i),
                   "ip -n %s addr add %s/16 dev eth0" % (ns, addr), "ip -n %s link set eth0 up" % ns,
                   "ip -n %s link set lo up" % ns,
                   "ip netns exec %s unshare -m sh -c %s" % (ns, shlex.quote(inner))]
            self.hosts.append(("ssh%02d" % i, addr, key))
        subprocess.run(["sh", "-ec", "\n".join(sh)], check=True)
        time.sleep(1)

    def down(self):
        for name in self.namespaces():
            self._remove(name)
        if getattr(self, "made_run_sshd", False):
            shutil.rmtree("/run/sshd", ignore_errors=True)
            self.made_run_sshd = False

    def prefix(self):
        return ["ip", "netns", "exec", self.ctl]


# --------------------------------------------------------------------------- reports alone, at scale

def synthetic_hosts(template, n):
    """n host records made from a real one: 8% failing (two codes), 2% unreachable, 3% on another
    bubblewrap revision, long host names."""
    out = []
    fail = D_make("unit_blocks_namespaces", "error", "RestrictNamespaces=yes forbids the user namespace.",
                  ["mkdir -p /etc/systemd/system/metnos.service.d", "systemctl daemon-reload"])
    probe_fail = D_make("probe_check_failed", "error", "only_loopback (R-BASE-7): expected ['lo'], observed "
                        "['eth0', 'lo']", [])
    for i in range(n):
        h = json.loads(json.dumps(template))
        h.pop("verdict", None)      # a record to build a report from: findings only (record.findings_only)
        h["host"] = "node-%05d.rack%02d.dc%d.metnos.example.net" % (i, i % 40, i % 3)
        if i % 50 == 7:
            h = {"host": h["host"], "reachable": False, "status": None, "bwrap": None,
                 "userns": None, "service": None, "profiles": [], "probe": None,
                 "diagnostics": [D_make("host_unreachable", "error", "%s: unreachable: ssh: connect to host port "
                                        "22: Connection timed out" % h["host"], [])]}
        elif i % 25 == 3:
            h["diagnostics"] = h["diagnostics"] + [fail, probe_fail]
        if i % 33 == 5 and h.get("bwrap"):
            h["bwrap"]["revision"] = "0.8.0-2"
        out.append(h)
    return out


def D_make(code, severity, message, remediation):
    from metnos_sandbox.base import diagnostics
    d = diagnostics.make(code) if code in diagnostics.REGISTRY else {}
    d.update(code=code, severity=severity, message=message, remediation=remediation)
    d.setdefault("rule", "R-DIAG-3")
    d.setdefault("title", code)
    return d


SYNTH_REPORT = r'''
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
try:
    from metnos_sandbox.report import document as R
except ImportError:             # a checkout from before the rename (issue 55): report/report.py
    from metnos_sandbox.report import report as R
hosts = json.load(open(sys.argv[2]))
t0, cpu0 = time.time(), time.process_time()
doc = R.build_from_hosts(hosts)
timings = {"build": time.time() - t0}
paths = R.write_all(doc, sys.argv[3], timings=timings)
timings["total"] = time.time() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(json.dumps({"timings": timings, "paths": paths, "rss_mb": rss, "cpu": time.process_time() - cpu0}))
'''


def bench_synthetic(template, n, tmp):
    """Report generation alone (a fresh process: its peak RSS is the figure) and the merge of n
    one-host reports (ansible-pull) and of 10 slice reports (AWX job slicing)."""
    hosts = synthetic_hosts(template, n)
    src = os.path.join(tmp, "synth-hosts.json")
    with open(src, "w") as handle:
        json.dump(hosts, handle)
    script = os.path.join(tmp, "synth.py")
    with open(script, "w") as handle:
        handle.write(SYNTH_REPORT)
    out_dir = os.path.join(tmp, "synth-reports")
    proc = subprocess.run([sys.executable, script, os.path.join(ROOT, "module_utils"), src, out_dir],
                          capture_output=True, text=True, check=True)
    gen = json.loads(proc.stdout)
    gen["sizes"] = dict((ext, os.path.getsize(p)) for ext, p in gen["paths"].items())
    written = json.load(open(gen["paths"]["json"]))["hosts"]
    if sorted(gen["paths"]) != ["html", "json", "junit.xml", "md"] or len(written) != n:
        raise SystemExit("synthetic: the reports are not the four formats of %d hosts: %s, %d hosts" % (
            n, sorted(gen["paths"]), len(written)))
    result = {"n": n, "generate": gen}
    for name, per_file in (("merge_pull", 1), ("merge_slices", max(1, n // 10))):
        parts = os.path.join(tmp, name)
        os.makedirs(parts, exist_ok=True)
        files = []
        for start in range(0, n, per_file):
            doc = document.build_from_hosts([dict(h) for h in hosts[start:start + per_file]])
            path = os.path.join(parts, "part-%05d.json" % start)
            with open(path, "w") as handle:
                for chunk in render_json.iter_json(doc):
                    handle.write(chunk)
            files.append(path)
        listing = os.path.join(tmp, name + ".list")
        with open(listing, "w") as handle:
            handle.write("\n".join(files) + "\n")
        t0 = time.time()
        merged = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable,
                                 os.path.join(ROOT, "scripts", "merge-audit-reports.py"), "--from-list", listing,
                                 os.path.join(tmp, name + "-out")], capture_output=True, text=True)
        problem = merge_problem(merged, os.path.join(tmp, name + "-out"), n)
        if problem:
            raise SystemExit("synthetic %s: %s" % (name, problem))
        result[name] = {"files": len(files), "wall": time.time() - t0, "exit": merged.returncode,
                        "rss_mb": int(merged.stderr.strip().splitlines()[-1]) / 1024.0,
                        "summary": merged.stdout.splitlines()[0] if merged.stdout else merged.stderr[-500:]}
    result["html_path"] = gen["paths"]["html"]
    return result


def merge_problem(merged, out_dir, n):
    """Why a merge's answer is not the n hosts it was given (None when it is): exit 2 is a refusal (1 is the
    gate: the synthetic fleet has failing hosts), or a merged JSON report with another number of hosts."""
    if merged.returncode not in (0, 1):
        return "merge-audit-reports exited %d: %s" % (merged.returncode, merged.stderr[-500:])
    found = glob.glob(os.path.join(out_dir, "metnos-audit-*.json"))
    hosts = len(json.load(open(found[0]))["hosts"]) if len(found) == 1 else None
    if hosts != n:
        return "the merged report holds %s hosts, not %d (%s)" % (hosts, n, found)
    return None


# --------------------------------------------------------------------------- the HTML report in Chromium

HARNESS = r"""<script>
window.addEventListener('load', () => {
  const out = {}, nav = performance.getEntriesByType('navigation')[0];
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  out.first_paint_ms = paint ? paint.startTime : null;
  out.dom_ready_ms = nav.domContentLoadedEventEnd;
  document.body.offsetHeight; out.laid_out_ms = performance.now();
  const q = document.getElementById('q'), f = document.getElementById('f');
  let t = performance.now(); q.value = 'rack07'; q.dispatchEvent(new Event('input')); document.body.offsetHeight;
  out.filter_text_ms = performance.now() - t; out.shown_text = document.getElementById('shown').textContent;
  q.value = ''; q.dispatchEvent(new Event('input'));
  t = performance.now(); f.value = 'fail'; f.dispatchEvent(new Event('change')); document.body.offsetHeight;
  out.filter_verdict_ms = performance.now() - t; out.shown_verdict = document.getElementById('shown').textContent;
  f.value = ''; f.dispatchEvent(new Event('change')); document.body.offsetHeight;
  t = performance.now(); document.querySelectorAll('#hosts th')[1].click(); document.body.offsetHeight;
  out.sort_ms = performance.now() - t;
  const first = document.querySelector('#hosts tbody a').textContent;
  t = performance.now(); location.hash = '#h-' + encodeURIComponent(first);
  window.dispatchEvent(new HashChangeEvent('hashchange')); document.body.offsetHeight;
  out.open_host_ms = performance.now() - t;
  const pre = document.createElement('pre'); pre.id = 'metnos-bench'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""

CHROMIUM = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"]


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def bench_browser(html_path, tmp, screenshot=None):
    """Time to first paint, to a laid-out page, to filter (text, verdict), to sort and to open a host's
    details, measured in the page (performance.now) by headless Chromium; the median of 3 loads."""
    page = open(html_path, encoding="utf-8").read()
    cut = page.rindex("</body>")
    test = os.path.join(tmp, "bench-" + os.path.basename(html_path))
    with open(test, "w", encoding="utf-8") as handle:
        handle.write(page[:cut] + HARNESS + page[cut:])
    runs = []
    for attempt in range(3):
        profile = os.path.join(tmp, "chromium-%d" % attempt)
        dom = subprocess.run([chromium()] + CHROMIUM + ["--user-data-dir=" + profile, "--dump-dom", "file://" + test],
                             capture_output=True, text=True, timeout=600).stdout
        match = re.search(r'<pre id="metnos-bench">(.*?)</pre>', dom)
        if match:
            runs.append(json.loads(match.group(1).replace("&quot;", '"')))
    if len(runs) != 3:       # a page that did not load, or whose script failed, measured nothing
        raise SystemExit("Chromium measured %d of 3 loads of %s" % (len(runs), html_path))
    out = {}
    for key in runs[0]:
        values = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
        out[key] = sorted(values)[len(values) // 2] if values else runs[0][key]
    out["size_kb"] = os.path.getsize(html_path) // 1024
    if screenshot:
        os.makedirs(os.path.dirname(screenshot), exist_ok=True)
        subprocess.run([chromium()] + CHROMIUM + ["--user-data-dir=" + os.path.join(tmp, "chromium-shot"),
                                                  "--window-size=1400,1000", "--screenshot=" + screenshot,
                                                  "file://" + html_path], capture_output=True, timeout=600)
        out["screenshot"] = os.path.relpath(screenshot, ROOT)
    return out


# --------------------------------------------------------------------------- output

def fmt_cell(row):
    n = row["n"]
    ours, floor = row["ours"], row.get("floor")
    per = lambda x: 1000.0 * x / n  # noqa: E731
    ctl = controller(ours, row.get("ssh"))
    parts = ["N=%s%s" % (n, " ssh" if row.get("ssh") else ""),
             "ours %.1fs wall %.1fs cpu" % (ours["wall"], ours["cpu"]),
             "payload %.0f ms/host (host side %s)" % (per(ours.get("payload_cpu") or 0),
                                                      "-" if row.get("ssh") else "%.0f" % per(ours["host_cpu"])),
             "controller %.0f ms/host" % per(ctl),
             "no-op %s" % ("%.0f ms/host" % per(controller(row["noop"])) if row.get("noop") else "-"),
             "no-op command %s" % ("%.0f ms/host" % per(controller(row["noop_command"])) if row.get("noop_command")
                                   else "-"),
             "main rss %.0f MB, tree pss %.0f MB" % (ours["main"].get("rss_mb", 0), ours["tree_pss_mb"]),
             "reports %ss %s" % (ours.get("report_time"), ours.get("reports")),
             "other load %.0f cpu-s" % ours["other_load_cpu"]]
    if floor:
        parts.append("floor %.1fs wall %.1fs cpu (other load %.0f cpu-s)" % (floor["wall"], floor["cpu"],
                                                                             floor["other_load_cpu"]))
        parts.append("ours/floor wall %.2fx cpu %.2fx" % (ours["wall"] / floor["wall"], ours["cpu"] / floor["cpu"]))
    if row.get("naive"):
        parts.append("naive %.1fs wall %.1fs cpu" % (row["naive"]["wall"], row["naive"]["cpu"]))
    if len(row.get("rounds") or ()) > 1:
        parts.append("rounds (payload/host side/controller/no-op/no-op command ms per host): %s" % "; ".join(
            "%(payload).0f/%(host).0f/%(controller).0f/%(noop).0f/%(noop_command).0f" % r for r in row["rounds"]))
    parts.append(ours["summary"])
    return " | ".join(parts)


def markdown(rows, synth, browser, meta):
    lines = ["Run: %s; %s" % (meta["when"], meta["machine"]), "",
             "| N | ours wall / CPU | floor wall / CPU | ours ÷ floor (wall / CPU) "
             "| payload CPU per host (own / host side) | controller CPU per host | no-op CPU per host "
             "| no-op command CPU per host | total CPU per host "
             "| main RSS peak | controller PSS peak | reports (time; JSON, MD, JUnit, HTML) | other load (CPU-s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        o, f, n = row["ours"], row.get("floor"), row["n"]
        ctl = controller(o, row.get("ssh"))
        sizes = o.get("reports") or {}
        noop, command = row.get("noop"), row.get("noop_command")
        lines.append("| %s | %.1f s / %.1f s | %s | %s | %.0f / %s ms | %.0f ms | %s | %s | %.0f ms | %.0f MB "
                     "| %.0f MB | %.2f s; %s | %.0f |" % (
            "%d over SSH" % n if row.get("ssh") else "{:,}".format(n), o["wall"], o["cpu"],
            "%.1f s / %.1f s" % (f["wall"], f["cpu"]) if f else "—",
            "%.2f× / %.2f×" % (o["wall"] / f["wall"], o["cpu"] / f["cpu"]) if f else "—",
            1000.0 * (o.get("payload_cpu") or 0) / n, "—" if row.get("ssh") else "%.0f" % (1000.0 * o["host_cpu"] / n),
            1000.0 * ctl / n,
            "%.0f ms" % (1000.0 * controller(noop) / n) if noop else "—",
            "%.0f ms" % (1000.0 * controller(command) / n) if command else "—", 1000.0 * o["cpu"] / n,
            o["main"].get("rss_mb", 0), o["tree_pss_mb"],
            o.get("report_time") or 0, ", ".join(_size(sizes.get(k)) for k in ("json", "md", "junit.xml", "html")),
            o["other_load_cpu"] + (f["other_load_cpu"] if f else 0)))
    for row in rows:
        if len(row.get("rounds") or ()) > 1:
            lines.append("")
            each = "; ".join("%(payload).0f / %(host).0f / %(controller).0f / %(noop).0f / %(noop_command).0f" % r
                             for r in row["rounds"])
            lines.append("N=%s, each round in turn (payload's own / host side / controller / no-op / no-op command, "
                         "ms of CPU per host; the table shows each cell's median): %s" % (
                             "{:,}".format(row["n"]), each))
    if synth:
        g = synth["generate"]
        lines += ["", "Reports alone, %s synthetic host records: build %.2f s, JSON %.2f s, Markdown %.2f s, "
                  "JUnit %.2f s, HTML %.2f s, **total %.2f s**, peak RSS %.0f MB; sizes JSON %s, MD %s, JUnit %s, "
                  "HTML %s." % ("{:,}".format(synth["n"]), g["timings"]["build"], g["timings"]["json"],
                                g["timings"]["md"], g["timings"]["junit.xml"], g["timings"]["html"],
                                g["timings"]["total"], g["rss_mb"], _size(g["sizes"]["json"]), _size(g["sizes"]["md"]),
                                _size(g["sizes"]["junit.xml"]), _size(g["sizes"]["html"]))]
        for name, label in (("merge_pull", "one-host reports (ansible-pull)"), ("merge_slices", "slice reports (AWX)")):
            m = synth[name]
            lines.append("Merge of %s %s: %.2f s, peak RSS %.0f MB (`%s`)." % (
                "{:,}".format(m["files"]), label, m["wall"], m["rss_mb"], m["summary"]))
    if browser:
        lines += ["", "| HTML report | size | first paint | laid out | filter (text) | filter (verdict) | sort "
                  "| open a host |", "|---|---|---|---|---|---|---|---|"]
        for label, b in browser:
            if "error" in b:
                lines.append("| %s | %s |" % (label, b["error"]))
                continue
            lines.append("| %s | %s | %s ms | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %.0f ms |" % (
                label, _size(b["size_kb"] * 1024), "%.0f" % b["first_paint_ms"] if b.get("first_paint_ms") else "—",
                b["laid_out_ms"], b["filter_text_ms"], b["filter_verdict_ms"], b["sort_ms"], b["open_host_ms"]))
    return "\n".join(lines)


def _size(n):
    if n is None:
        return "—"
    return "%.1f MB" % (n / 1e6) if n >= 1e6 else "%d KB" % (n // 1000)


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="200,1000", help="local-alias fleet sizes (default 200,1000)")
    ap.add_argument("--forks", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the ours and no-op cells this many times each, in turn, and show each one's median")
    ap.add_argument("--ssh", type=int, default=20, help="SSH hosts in network namespaces (0: skip)")
    ap.add_argument("--synthetic", type=int, default=10000, help="host records for the reports-alone cell (0: skip)")
    ap.add_argument("--no-browser", action="store_true", help="skip the Chromium timings")
    ap.add_argument("--naive-up-to", type=int, default=0, help="also run the naive audit up to this fleet size")
    ap.add_argument("--floor-parallel", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--manifests", action="store_true",
                    help="audit the inventory's example manifests too (default: none, as in docs/benchmarks.md)")
    ap.add_argument("--screenshot", default=os.path.join(ROOT, "tests", "artifacts", "audit-report-1000.png"))
    ap.add_argument("--json", help="also write every measurement to this file")
    ap.add_argument("--floor-cores", help="only the floor cell, for each of these core folders (comma-separated, "
                    "e.g. two checkouts' module_utils/metnos_sandbox), in turn for --rounds rounds, at the first "
                    "of --sizes hosts: the whole audit's CPU per host of one core against another")
    ap.add_argument("--trees", help="only the ours cell (and the reports alone with --synthetic), for each of these "
                    "checkouts (comma-separated folders, e.g. two worktrees), alternated for --rounds rounds, at "
                    "the first of --sizes hosts: total CPU per host of one tree against another, in one run")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (the smoke test switches to nobody; the SSH cell creates namespaces)")
    tmp = tempfile.mkdtemp(prefix="metnos-bench-")
    if args.trees:
        try:
            cells = compare_trees([os.path.abspath(t) for t in args.trees.split(",")], int(args.sizes.split(",")[0]),
                                  max(1, args.rounds), args.forks, tmp, args.manifests, args.synthetic)
            if args.json:
                with open(args.json, "w") as handle:
                    json.dump(cells, handle, indent=2)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    if args.floor_cores:
        try:
            compare_floors(args.floor_cores.split(","), int(args.sizes.split(",")[0]), max(1, args.rounds),
                           args.floor_parallel, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    fleet = SshFleet(args.ssh, tmp) if args.ssh else None

    def cleanup():
        if fleet:
            fleet.down()
        shutil.rmtree(tmp, ignore_errors=True)
    atexit.register(cleanup)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_a: sys.exit(130))      # atexit and finally run on these too
    meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": "%d CPUs, load average at start %s" % (os.cpu_count(), open("/proc/loadavg").read().split()[0])}
    rows, browser, synth = [], [], None
    try:
        for n in [int(x) for x in args.sizes.split(",") if x.strip()]:
            inv = os.path.join(tmp, "inv-%d.yml" % n)
            inventory(inv, n)
            rounds = []
            for _round in range(max(1, args.rounds)):
                ours = run_ours(inv, n, args.forks, os.path.join(tmp, "reports-%d" % n), tmp, args.manifests)
                if ours.get("payload_cpu") is None:
                    raise SystemExit("the audit did not complete at N=%d:\n%s" % (n, ours["error"]))
                rounds.append({"ours": ours, "noop": run_noop(inv, args.forks, tmp),
                               "noop_command": run_noop(inv, args.forks, tmp, NOOP_COMMAND, "noop-command")})
            row = median_rounds(n, rounds)
            row["floor"] = run_floor(n, tmp, args.floor_parallel)
            if n <= args.naive_up_to:
                row["naive"] = run_naive(inv, args.forks, tmp)
            rows.append(row)
            print(fmt_cell(row), flush=True)
        if fleet:
            SshFleet.remove_stale()
            fleet.up()
            inv = os.path.join(tmp, "inv-ssh.yml")
            inventory(inv, 0, fleet.hosts)
            row = {"n": args.ssh, "ssh": True,
                   "ours": run_ours(inv, args.ssh, args.forks, os.path.join(tmp, "reports-ssh"), tmp, args.manifests,
                                    prefix=fleet.prefix())}
            if row["ours"].get("payload_cpu") is None:
                raise SystemExit("the audit did not complete over SSH:\n%s" % row["ours"]["error"])
            fleet.down()
            rows.append(row)
            print(fmt_cell(row), flush=True)
        big = [r for r in rows if not r.get("ssh") and "json" in r["ours"]["report_paths"]]
        if args.synthetic and big:
            template = json.load(open(big[-1]["ours"]["report_paths"]["json"]))["hosts"][0]
            synth = bench_synthetic(template, args.synthetic, tmp)
            print("synthetic %d: %s" % (args.synthetic, json.dumps(dict((k, v) for k, v in synth.items()
                                                                        if k != "html_path"))), flush=True)
        if not args.no_browser and chromium():
            for r in big:
                shot = args.screenshot if r["n"] == 1000 else None
                browser.append(("%s hosts (real run)" % "{:,}".format(r["n"]),
                                bench_browser(r["ours"]["report_paths"]["html"], tmp, shot)))
                print("browser N=%d: %s" % (r["n"], browser[-1][1]), flush=True)
            if synth:
                browser.append(("%s hosts (synthetic)" % "{:,}".format(synth["n"]),
                                bench_browser(synth["html_path"], tmp)))
                print("browser synthetic: %s" % browser[-1][1], flush=True)
        meta["machine"] += ", at end %s" % open("/proc/loadavg").read().split()[0]
        print("\n" + markdown(rows, synth, browser, meta))
        if args.json:
            with open(args.json, "w") as handle:
                json.dump({"meta": meta, "rows": rows, "synthetic": synth, "browser": browser}, handle, indent=2,
                          default=str)
    finally:
        cleanup()


if __name__ == "__main__":
    main()
