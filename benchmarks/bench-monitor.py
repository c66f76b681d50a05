#!/usr/bin/env python3
"""Benchmark one continuous-proof run against one audit round trip on the same host (not a test; the figures
go in docs/benchmarks.md).

    python benchmarks/bench-monitor.py [--rounds 10] [--debian 12] [--json]

One systemd host (a podman container from the test images, scripts/build-images.sh, with bubblewrap and a
healthy metnos.service as User=metnos), the monitor installed by the role (playbooks/site.yml with
metnos_sandbox_monitor=true). Then, alternating, --rounds times each:

  monitor  `systemctl start metnos-sandbox-monitor.service` in the host: systemd's own start-to-exit time
           of the oneshot (ExecMainStartTimestampMonotonic .. ExecMainExitTimestampMonotonic), the run's
           in-process duration and CPU (the stored result: audit.cpu, commands waited for included)
  audit    `ansible HOST -m metnos_audit -a unit=metnos.service` from this machine (the round trip
           playbooks/audit.yml makes per host): wall from start to exit of `ansible`, the CPU of every
           process of it on this machine, and the payload's duration and CPU on the host

Both run the same checks (host_audit.audit_host: bwrap facts and smoke test, service environment, the probe in a
transient unit). Medians are printed as a Markdown table; --json adds the raw samples.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "system"))

from conftest import SYSTEMD_IMAGES, ansible_env, bwrap_image, start_host, stop_host  # noqa: E402

UNIT = "[Service]\nUser=metnos\nExecStart=/bin/sleep infinity\n"
ANSIBLE_BIN = os.path.dirname(sys.executable)


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def install(host, tmp):
    inventory = os.path.join(tmp, "inventory.json")
    with open(inventory, "w") as handle:
        json.dump({"all": {"hosts": {"bench": {"ansible_host": host.name, "metnos_sandbox_monitor": True}},
                           "vars": {"ansible_connection": "containers.podman.podman",
                                    "ansible_python_interpreter": "/usr/bin/python3"}}}, handle)
    proc = subprocess.run([os.path.join(ANSIBLE_BIN, "ansible-playbook"), "-i", inventory, "playbooks/site.yml",
                           "--skip-tags", "bwrap_host_install"], capture_output=True, text=True, cwd=ROOT,
                          env=ansible_env(), timeout=1800)
    if proc.returncode != 0:
        sys.exit("site.yml failed:\n" + proc.stdout[-3000:])
    host.sh("systemctl stop metnos-sandbox-monitor.timer")      # only the benchmark's runs from here
    return inventory


def monitor_round(host):
    host.sh("systemctl start metnos-sandbox-monitor.service", check=False, timeout=600)
    show = dict(line.split("=", 1) for line in host.sh(
        "systemctl show metnos-sandbox-monitor.service -p ExecMainStartTimestampMonotonic "
        "-p ExecMainExitTimestampMonotonic -p ExecMainStatus").stdout.split())
    record = json.loads(host.sh("cat /var/lib/metnos-sandbox-monitor/last.json").stdout)
    if show.get("ExecMainStatus") != "0" or not record["proven"]:
        sys.exit("the monitor did not prove the host (exit status %s): %s" % (
            show.get("ExecMainStatus"), [d["code"] for d in record["audit"]["diagnostics"]]))
    wall = (int(show["ExecMainExitTimestampMonotonic"]) - int(show["ExecMainStartTimestampMonotonic"])) / 1e6
    return {"wall": wall, "duration": record["duration"], "host_cpu": record["audit"]["cpu"]}


def audit_round(host, inventory):
    before, start = children_cpu(), time.time()
    proc = subprocess.run([os.path.join(ANSIBLE_BIN, "ansible"), "bench", "-i", inventory, "-o", "-m", "metnos_audit",
                           "-a", json.dumps({"unit": "metnos.service"})], capture_output=True, text=True, cwd=ROOT,
                          env=ansible_env(), timeout=600)
    wall, cpu = time.time() - start, children_cpu() - before
    line = [x for x in proc.stdout.splitlines() if x.startswith("bench | ")]
    if not line or "=> {" not in line[0]:
        sys.exit("the audit failed:\n" + proc.stdout[-2000:] + proc.stderr[-2000:])
    res = json.loads(line[0].split("=> ", 1)[1])
    if res.get("failed") or any(res.get(key) is None for key in ("duration", "cpu", "probe")):
        # a payload that failed (or ran without the probe) costs less than an audit: never timed as one
        sys.exit("the audit did not complete: %s" % (res.get("msg") or sorted(res)))
    if res.get("verdict") == "fail":
        sys.exit("the audit failed the host: %s" % [d["code"] for d in res["diagnostics"]])
    return {"wall": wall, "controller_cpu": cpu, "duration": res["duration"], "host_cpu": res["cpu"]}


def load_average():
    with open("/proc/loadavg") as handle:
        return float(handle.read().split()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--debian", choices=sorted(SYSTEMD_IMAGES), default="12")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    host = start_host("metnos-bench-monitor", extra=("--cap-add", "SYS_ADMIN"),
                      image=bwrap_image(SYSTEMD_IMAGES[args.debian]))
    try:
        host.write("/etc/systemd/system/metnos.service", UNIT)
        host.sh("systemctl daemon-reload && systemctl start metnos.service")
        with tempfile.TemporaryDirectory() as tmp:
            inventory = install(host, tmp)
            monitor_round(host)
            audit_round(host, inventory)          # warm both once
            loads, samples = [load_average()], {"monitor": [], "audit": []}
            for _ in range(args.rounds):
                samples["monitor"].append(monitor_round(host))
                samples["audit"].append(audit_round(host, inventory))
                loads.append(load_average())
    finally:
        stop_host(host)
    med = dict((kind, dict((k, statistics.median(s[k] for s in rows)) for k in rows[0]))
               for kind, rows in samples.items())
    m, a = med["monitor"], med["audit"]
    print("Debian %s, %d rounds each, medians; load average %.1f-%.1f on %d CPUs\n" % (
        args.debian, args.rounds, min(loads), max(loads), os.cpu_count()))
    print("| | wall (s) | on the host: duration (s) | on the host: CPU (s) | controller CPU (s) |")
    print("|---|---|---|---|---|")
    print("| monitor run (systemd start to exit) | %.2f | %.2f | %.2f | 0 |" % (
        m["wall"], m["duration"], m["host_cpu"]))
    print("| audit round trip (`ansible -m metnos_audit`) | %.2f | %.2f | %.2f | %.2f |" % (
        a["wall"], a["duration"], a["host_cpu"], a["controller_cpu"]))
    print("\nmonitor / audit: wall %.2fx, host CPU %.2fx, total CPU %.2fx" % (
        m["wall"] / a["wall"], m["host_cpu"] / a["host_cpu"], m["host_cpu"] / (a["host_cpu"] + a["controller_cpu"])))
    if args.json:
        print(json.dumps({"medians": med, "samples": samples, "load": loads}, indent=1))


if __name__ == "__main__":
    main()
