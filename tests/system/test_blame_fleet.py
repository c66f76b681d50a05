"""Blame by experiment on real systemd hosts: the [Service] hardening of real Debian 12 packages
(fleet_units.py) on stand-in Metnos units, on a Debian 12 (systemd 252, bubblewrap 0.8) and a Debian 13
(systemd 257, bubblewrap 0.12) host at once, both with CAP_SYS_ADMIN (without it systemd silently skips the
mount-namespace directives).

Each stand-in unit runs ``/bin/sleep infinity`` as a user of its own (RLIMIT_NPROC counts a uid's
processes across the whole machine, so no two units, and no two hosts, share one); units with
DynamicUser=yes keep it and name no User=, as the packages ship them; a unit with NoExecPaths= gets an
ExecPaths= of its own command, as redis-server's unit asks. The toolkit's probe then runs for every unit
(in the host, the core as the modules run it), and for every failing unit:

- every culprit is named with its code, and the relaxation offered was tried for real;
- the offered drop-in, pasted as its remediation says (the commands run literally in the host), makes the
  probe pass on the real unit afterwards;
- the experiment is read-only for the service: unit files, drop-ins, MainPID and NRestarts unchanged.

One unit per class the issue names (AmbientCapabilities=, LimitNPROC=, ReadOnlyPaths=/, NoExecPaths=,
a SystemCallFilter= that kills the runtime's interpreter) and one combination expect their culprit and code;
for each, a oneshot unit with the class's lines proves from inside that the directive is in effect. The cost
per failing host is recorded in docs/unit-blame.json (METNOS_UPDATE_DIRECTIVES=1 rewrites it; the generated
docs/unit-directives.md shows it). METNOS_BLAME_ONLY=knot.service,... limits the units (by hand, with -k).
"""
import json
import os
import threading
import time

import pytest
from fleet_units import FLEET

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import systemd_exit
from conftest import ROOT, SYSTEMD_IMAGES, bwrap_image, install_trial_tools, start_host, stop_host

DATA = os.path.join(ROOT, "docs", "unit-blame.json")
# The whole fleet (Debian 12 packages) on the Debian 12 host; the Debian 13 host gets the units of the classes and
# the combination (the CI time budget: the other units repeat the same classes there).
FLEET_RELEASES = ("12",)
PATH_KEYS = ("ReadWritePaths", "ReadOnlyPaths", "ReadWriteDirectories", "ReadOnlyDirectories", "InaccessiblePaths",
             "BindPaths", "BindReadOnlyPaths")
# unit -> (code, directive, the relaxation's first words, the in-effect check of directive_trial.py)
CLASSES = {
    "knot.service": ("unit_ambient_capabilities", "AmbientCapabilities", "AmbientCapabilities=", "cap_amb_set"),
    "iwd.service": ("unit_resource_limit_blocks_bwrap", "LimitNPROC", "LimitNPROC=", "rlimit_nproc_1"),
    "irqbalance.service": ("unit_read_only_proc", "ReadOnlyPaths", "ReadWritePaths=/proc", "proc_read_only"),
    "redis-server.service": ("unit_noexec_bwrap", "NoExecPaths", "ExecPaths=/usr/bin/bwrap", "bwrap_noexec"),
    "haveged.service": ("unit_syscall_filter_kills_interpreter", "SystemCallFilter", "SystemCallFilter=",
                        "seccomp_extra_filter"),
}
# The combination: capabilities, namespaces and a system-call filter, each its own culprit.
COMBINATION = ("systemd-networkd.service", {"AmbientCapabilities": "unit_ambient_capabilities",
                                            "RestrictNamespaces": "unit_blocks_namespaces",
                                            "SystemCallFilter": "unit_syscall_filter_blocks_bwrap"})
# Not a package's: a path the unit names that does not exist -> systemd's own 226/NAMESPACE, never bwrap's.
NSFAIL = ("metnos-f-nsfail.service", ["ProtectSystem=strict", "ReadWritePaths=/srv/metnos-blame-missing"])
DYNSTATIC = ("metnos-f-dynstatic.service", ["DynamicUser=yes", "User=nobody"])


def short(unit):
    return unit.replace(".service", "").replace("@", "-at-")


def stand_in(index, unit, lines, uid_base, create=True):
    """The stand-in unit's text, the user it runs as, and the paths its lines need."""
    user = "mf-%s" % short(unit)[:24]
    head = ["[Service]"] + ([] if "DynamicUser=yes" in lines else ["User=%s" % user]) + [
        "ExecStart=/bin/sleep infinity"]
    if any(line.startswith("NoExecPaths=") for line in lines):
        head.append("ExecPaths=/usr/bin/sleep")          # its own command (redis-server's unit says so)
    setup = ["id %s >/dev/null 2>&1 || useradd -M -u %d -s /usr/sbin/nologin %s" % (user, uid_base + index, user)]
    for line in lines:
        key, _sep, value = line.partition("=")
        for word in value.split() if create and key in PATH_KEYS + ("ExecPaths",) else []:
            if word.startswith("/"):
                setup.append("[ -e %s ] || %s %s" % (word, "touch" if key == "ExecPaths" else "mkdir -p", word))
    return "\n".join(head + list(lines)) + "\n", user, setup


def effect_unit(unit, lines, check, user):
    """A oneshot unit with only the class's lines that says from inside whether its directive is in effect."""
    directive = CLASSES[unit][1]
    keep = [ln for ln in lines if ln.split("=", 1)[0] in (directive, "CapabilityBoundingSet", "ExecPaths",
                                                          "ReadWritePaths", "SystemCallErrorNumber")]
    if directive == "NoExecPaths":
        keep.append("ExecPaths=/usr/bin/python3")   # the check's own interpreter runs
    return "\n".join(["[Service]", "Type=oneshot", "User=%s" % user,
                      "ExecStart=/usr/bin/python3 /opt/metnos-trial/directive_trial.py effect %s" % check,
                      "StandardOutput=truncate:/var/lib/metnos-trial/e-%s.json" % short(unit)] + keep) + "\n"


def service_state(host, units):
    """What the experiment must not change: the units' files and drop-ins, their processes and restarts."""
    files = host.sh("cd /etc/systemd/system && find . /run/systemd/system -path '*transient*' -prune -o -name "
                    "'metnos-f-*' -print | sort | xargs -r sha256sum 2>/dev/null; ls -d /etc/systemd/system/*.d "
                    "/run/systemd/system/*.d 2>/dev/null | sort", check=False).stdout
    show = host.sh("systemctl show -p Id -p MainPID -p NRestarts -p ActiveState -p DropInPaths %s" % " ".join(units)
                   ).stdout
    return files, show


def cpu_seconds(host):
    """CPU time the host (the container's cgroup) has used: what the test costs whatever else the machine runs."""
    out = host.sh("cat /sys/fs/cgroup/cpuacct/cpuacct.usage 2>/dev/null || "
                  "awk '/^usage_usec/ {print $2 * 1000}' /sys/fs/cgroup/cpu.stat", check=False).stdout
    try:
        return round(int(out.split()[0]) / 1e9, 1)
    except (IndexError, ValueError):
        return 0.0


def probe(host, units, workers=4):
    out = host.sh("cd /opt/metnos-trial && TRIAL_WORKERS=%d python3 directive_trial.py probe %s" % (
        workers, " ".join(units)), timeout=1500).stdout
    return json.loads(out)


def run_release(release, uid_base, record):
    """Everything one host does (run in a thread: both hosts at once)."""
    t0 = time.time()
    host = start_host("metnos-blame%s" % release, extra=("--cap-add", "SYS_ADMIN"),
                      image=bwrap_image(SYSTEMD_IMAGES[release]))
    record["host"] = host
    install_trial_tools(host)
    files, setup, units, effects = {}, ["mkdir -p /var/lib/metnos-trial"], {}, {}
    only = [u for u in os.environ.get("METNOS_BLAME_ONLY", "").split(",") if u]   # a faster loop by hand
    entries = [(u, lines) for _p, _v, u, lines in FLEET if (release in FLEET_RELEASES or u in CLASSES or
                                                            u == COMBINATION[0]) and (not only or u in only)]
    entries += [NSFAIL, DYNSTATIC]
    for index, (unit, lines) in enumerate(entries):
        text, user, more = stand_in(index, unit, lines, uid_base, create=unit != NSFAIL[0])
        name = unit if unit.startswith("metnos-f-") else "metnos-f-%s.service" % short(unit)
        files["/etc/systemd/system/" + name] = text
        units[name] = unit
        setup += more
        if unit in CLASSES:
            effect = "metnos-e-%s.service" % short(unit)
            setup.append("useradd -M -u %d -s /usr/sbin/nologin me-%s" % (uid_base + 500 + index, short(unit)[:24]))
            files["/etc/systemd/system/" + effect] = effect_unit(unit, lines, CLASSES[unit][3],
                                                                 "me-%s" % short(unit)[:24])
            effects[unit] = effect
    host.sh(" ; ".join(setup))
    host.write_many(files)
    host.sh("systemctl daemon-reload")
    host.sh("systemctl start %s" % " ".join(sorted(units)), check=False)
    host.sh("systemctl start %s" % " ".join(sorted(effects.values())), check=False, timeout=300)
    record["effects"] = json.loads(host.sh("cd /var/lib/metnos-trial && python3 -c 'import glob,json; print(json.dumps("
                                           "dict((p[2:-5], json.loads(open(p).read() or \"{}\")) for p in "
                                           "glob.glob(\"e-*.json\"))))'").stdout)
    record["systemd"] = int(host.sh("systemctl --version | head -1 | awk '{print $2}'").stdout.strip())
    record["bwrap"] = host.sh("bwrap --version | awk '{print $2}'").stdout.strip()
    record["exit_status"] = host.sh("systemd-analyze exit-status").stdout
    record["users"] = json.loads(host.sh("cd /opt/metnos-trial && python3 directive_trial.py user %s" %
                                         DYNSTATIC[0]).stdout)
    before = service_state(host, sorted(units))
    cpu_start = cpu_seconds(host)
    t1 = time.time()
    record["first"] = probe(host, sorted(units))
    t2 = time.time()
    record["read_only"] = (before, service_state(host, sorted(units)))
    record["units"] = units
    record["applied"] = apply_relaxations(host, record["first"])
    record["second"] = probe(host, sorted(record["applied"])) if record["applied"] else {}
    record["seconds"] = {"setup": round(t1 - t0, 1), "probe_and_blame": round(t2 - t1, 1),
                         "relaxed_probe": round(time.time() - t2, 1)}
    record["cpu_seconds"] = cpu_seconds(host) - cpu_start


def apply_relaxations(host, results):
    """Paste each failing unit's offered drop-in as its remediation says (the commands, run literally)."""
    applied = {}
    for unit, res in sorted(results.items()):
        if res["passed"] or not (res.get("blame") or {}).get("complete"):
            continue
        whole = [f for f in res["findings"] if f["code"] == "probe_relaxation_found"]
        culprits = [f for f in res["findings"] if (f.get("details") or {}).get("found_by") == "experiment" or
                    "found by experiment" in f["message"]]
        steps = (whole or culprits)[0]["remediation"]
        commands = [s for s in steps if s.split(" ", 1)[0] in ("mkdir", "printf", "systemctl")]
        host.sh(" && ".join(c for c in commands if not c.startswith("systemctl")))
        applied[unit] = commands
    if applied:
        host.sh("systemctl daemon-reload && systemctl restart %s" % " ".join(sorted(applied)), check=False)
    return applied


@pytest.fixture(scope="module")
def fleet():
    records = dict((r, {}) for r in sorted(SYSTEMD_IMAGES))
    errors = {}

    def target(release, base):
        try:
            run_release(release, base, records[release])
        except BaseException as exc:   # reported by the test, not lost in the thread
            errors[release] = exc

    threads = [threading.Thread(target=target, args=(r, 47000 + 1000 * i)) for i, r in enumerate(sorted(records))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        if errors:
            raise next(iter(errors.values()))
        for release, record in records.items():
            print("blame fleet on debian%s: %s" % (release, record["seconds"]))
        yield records
    finally:
        for record in records.values():
            if record.get("host"):
                stop_host(record["host"])


def by_unit(record, unit):
    name = unit if unit.startswith("metnos-f-") else "metnos-f-%s.service" % short(unit)
    return record["first"][name]


def codes_of(res):
    return dict((d, c["code"]) for c in (res.get("blame") or {}).get("culprits") or [] for d in c["directives"])


@pytest.mark.parametrize("release", sorted(SYSTEMD_IMAGES))
@pytest.mark.parametrize("unit", sorted(CLASSES))
def test_each_class_is_named_with_its_code_and_a_relaxation_that_works(fleet, release, unit):
    record = fleet[release]
    code, directive, relax, _check = CLASSES[unit]
    res = by_unit(record, unit)
    assert res["passed"] is False
    blame = res["blame"]
    assert blame["plain_context"] == "passed" and blame["complete"] is True, blame
    culprit = [c for c in blame["culprits"] if directive in c["directives"]]
    assert culprit and culprit[0]["code"] == code, blame["culprits"]
    assert culprit[0]["relaxation"][0].startswith(relax), culprit[0]
    assert code in res["codes"] and any(t["passed"] and t["lines"] == culprit[0]["relaxation"]
                                        for t in culprit[0]["tried"])
    name = "metnos-f-%s.service" % short(unit)
    assert record["second"][name]["passed"] is True, (record["applied"][name], record["second"][name]["codes"])


@pytest.mark.parametrize("release", sorted(SYSTEMD_IMAGES))
def test_each_class_directive_is_in_effect_inside_a_unit(fleet, release):
    effects = fleet[release]["effects"]
    assert dict((u, effects.get(short(u), {}).get("in_effect")) for u in CLASSES) == dict((u, True) for u in CLASSES)


@pytest.mark.parametrize("release", sorted(SYSTEMD_IMAGES))
def test_a_combination_names_every_culprit(fleet, release):
    unit, expected = COMBINATION
    res = by_unit(fleet[release], unit)
    found = codes_of(res)
    assert dict((d, found.get(d)) for d in expected) == expected, found
    whole = [f for f in res["findings"] if f["code"] == "probe_relaxation_found"]
    assert whole and fleet[release]["second"]["metnos-f-%s.service" % short(unit)]["passed"] is True


@pytest.mark.parametrize("release", sorted(SYSTEMD_IMAGES))
def test_every_failing_host_of_the_fleet_gets_its_culprits_and_a_working_relaxation(fleet, release):
    record = fleet[release]
    failing = dict((u, r) for u, r in record["first"].items() if not r["passed"] and u != NSFAIL[0])
    assert len(failing) >= (25 if release in FLEET_RELEASES else 6), sorted(failing)
    unnamed = dict((u, (r.get("blame") or {}).get("why") or r["codes"]) for u, r in failing.items()
                   if not (r.get("blame") or {}).get("culprits"))
    assert unnamed == {}
    incomplete = sorted(u for u, r in failing.items() if not r["blame"]["complete"])
    assert incomplete == [], [(u, failing[u]["blame"].get("exhausted"), failing[u]["blame"].get("inconsistent"))
                              for u in incomplete]
    still = dict((u, r["codes"]) for u, r in record["second"].items() if not r["passed"])
    assert still == {} and set(record["second"]) - {NSFAIL[0]} == set(failing)
    for res in failing.values():
        assert res["blame"]["runs"] + res["blame"]["interpreter_runs"] <= res["blame"]["bounds"]["runs"]
        assert "probe_setup_failed" not in res["codes"] or not res["blame"]["interpreter_killed"]


@pytest.mark.parametrize("release", sorted(SYSTEMD_IMAGES))
def test_the_experiment_is_read_only_for_the_service(fleet, release):
    before, after = fleet[release]["read_only"]
    assert before == after


@pytest.mark.parametrize("release", sorted(SYSTEMD_IMAGES))
def test_systemds_own_failure_is_named_never_bwraps(fleet, release):
    res = by_unit(fleet[release], NSFAIL[0])
    failure = res["unit_failure"]
    assert failure["name"] == "NAMESPACE" and failure["status"] == 226
    diag = [f for f in res["findings"] if f["code"] == "probe_unit_start_failed"][0]
    assert "226/NAMESPACE" in diag["message"] and "bwrap never ran" in diag["message"]
    assert not any("bwrap exited with status" in f["message"] for f in res["findings"])
    assert codes_of(res) == {"ReadWritePaths": "unit_directive_breaks_bwrap"}


@pytest.mark.parametrize("release", sorted(SYSTEMD_IMAGES))
def test_the_interpreter_killed_by_the_units_filter_is_the_units(fleet, release):
    res = by_unit(fleet[release], "haveged.service")
    assert res["blame"]["interpreter_killed"] is True
    assert "probe_setup_failed" not in res["codes"] and "probe_unit_killed" in res["codes"]
    assert not any("bwrap was killed by SIGSYS" in f["message"] for f in res["findings"])


@pytest.mark.parametrize("release", sorted(SYSTEMD_IMAGES))
def test_systemds_exit_status_table_is_ours(fleet, release):
    listed = {}
    for line in fleet[release]["exit_status"].splitlines()[1:]:
        parts = line.split()
        if len(parts) == 3 and parts[2] == "systemd":
            listed[int(parts[1])] = parts[0]
    assert listed and dict((k, systemd_exit.EXIT_STATUSES.get(k)) for k in listed) == listed


@pytest.mark.parametrize("release", sorted(SYSTEMD_IMAGES))
def test_dynamic_user_with_a_static_user_is_shown_as_systemd_applies_it(fleet, release):
    seen = fleet[release]["users"][DYNSTATIC[0]]
    assert seen["user"]["name"] == "nobody" and seen["user"]["dynamic"] is False
    assert seen["main_uid"] == seen["user"]["uid"] == 65534


def measured(record):
    """The cost and culprits per unit, as docs/unit-blame.json keeps them."""
    units = {}
    for name, unit in sorted(record["units"].items()):
        res = record["first"][name]
        blame = res.get("blame") or {}
        units[unit] = {"passed": res["passed"], "culprits": [[c["directives"], c["code"]]
                                                             for c in blame.get("culprits") or []],
                       "relaxation": (blame.get("relaxation") or {}).get("lines"),
                       "runs": blame.get("runs"), "interpreter_runs": blame.get("interpreter_runs"),
                       "seconds": blame.get("seconds"), "probe_seconds": res.get("seconds")}
    return {"systemd": record["systemd"], "bubblewrap": record["bwrap"], "units": units,
            "wall_seconds": record["seconds"], "cpu_seconds": record["cpu_seconds"]}


def test_the_measurement_is_the_one_documented(fleet):
    current = dict(("debian%s" % r, measured(fleet[r])) for r in sorted(fleet))
    if os.environ.get("METNOS_UPDATE_DIRECTIVES") == "1":
        with open(DATA, "w") as handle:
            json.dump(current, handle, indent=1, sort_keys=True)
            handle.write("\n")
        return
    with open(DATA) as handle:
        recorded = json.load(handle)

    def stable(data):
        return dict((k, (v["systemd"], v["bubblewrap"], dict((u, sorted(map(str, e["culprits"])))
                                                             for u, e in v["units"].items())))
                    for k, v in data.items())
    assert stable(recorded) == stable(current), (
        "the culprits found changed: rerun with METNOS_UPDATE_DIRECTIVES=1, then "
        "python scripts/gen-unit-directives-doc.py > docs/unit-directives.md")
