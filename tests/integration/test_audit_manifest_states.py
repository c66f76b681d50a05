"""Every state of a manifest is a finding, and every face says the same verdict (issue 42, item 1).

Real manifest files in an inventory in a temp dir, real profiles rendered on this machine by the real module
(sandbox_profile, as the role does), one of them changed by hand (drift: a mount removed, another made writable),
one never rendered (missing), one not valid YAML and one asking an unknown capability (refused), and a second host
whose host context is refused (error). The real audit playbook (ansible-playbook playbooks/audit.yml) audits both
hosts (local-connection aliases of this machine; the probe off: it is not what this test is about); then the JSON,
Markdown, JUnit and HTML reports, the gate's exit status, the fleet summary and the role's summary (the same
filters over sandbox_profile's real results) must agree."""
import glob
import json
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import verdicts
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import site_summary
from conftest import ROOT, run_module, run_playbook

EXAMPLES = os.path.join(ROOT, "examples", "manifests")
REFUSED = {"broken.yml": "name: broken\norigin: [unclosed\n",
           "unknown_cap.yml": "name: unknown_cap\norigin: metnos/core\ncapabilities:\n  - fs:read:/srv/notes/**\n"
                              "  - teleport:anywhere\n"}


def _plant(tmp_path):
    """The manifests (copies of the examples, and the two refused ones) and the profiles of two of them."""
    manifests = tmp_path / "inventory" / "manifests"
    manifests.mkdir(parents=True)
    for name in ("read_notes.yml", "system_status.yml", "export_report.yml"):
        shutil.copy(os.path.join(EXAMPLES, name), manifests / name)
    for name, text in REFUSED.items():
        (manifests / name).write_text(text)
    profiles = tmp_path / "profiles"
    for name in ("read_notes", "system_status"):
        res = run_module("metnos.sandbox.sandbox_profile", {
            "manifest_file": str(manifests / (name + ".yml")), "dest": str(profiles),
            "host": {"writable_roots": ["/var/lib/metnos"]}})
        assert res["_rc"] == 0 and res["decision"] in ("wrapped", "direct"), res
    return manifests, profiles, profiles / "system_status.args"


def _drift(args):
    """Change the rendered system_status profile by hand: its first read-only bind made writable, its last one
    removed (the args file is one word per line, store.py)."""
    lines = args.read_text().split("\n")
    binds = [i for i, word in enumerate(lines) if word == "--ro-bind"]
    assert len(binds) >= 2, lines
    changed = lines[binds[0] + 2]
    removed = lines[binds[-1] + 2]
    lines[binds[0]] = "--bind"
    del lines[binds[-1]:binds[-1] + 3]
    args.write_text("\n".join(lines))
    return changed, removed


def _inventory(tmp_path, manifests, profiles):
    listed = [str(manifests / n) for n in ("read_notes.yml", "system_status.yml", "export_report.yml",
                                           "broken.yml", "unknown_cap.yml")]
    common = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
              "metnos_audit_unit": "", "metnos_sandbox_profile_dir": str(profiles),
              "metnos_sandbox_manifests": listed}
    hosts = {"states": dict(common),
             "context": dict(common, metnos_sandbox_writable_roots=["relative/roots"])}
    path = tmp_path / "inventory" / "hosts.yml"
    path.write_text(json.dumps({"all": {"hosts": hosts}}))
    return path


def test_every_manifest_state_is_a_finding_and_every_face_agrees(tmp_path):
    manifests, profiles, args = _plant(tmp_path)
    changed, removed = _drift(args)
    inventory = _inventory(tmp_path, manifests, profiles)
    reports = tmp_path / "reports"
    proc = run_playbook(os.path.join(ROOT, "playbooks", "audit.yml"), "-i", str(inventory),
                        "-e", "metnos_audit_dest=%s" % reports, "-e", "metnos_audit_probe=false")
    out = proc.stdout
    # The gate: the refused manifests, the drift and the refused host context fail the run.
    assert proc.returncode != 0, out[-4000:]
    assert "host(s) failing the sandbox audit" in out, out[-4000:]

    (json_path,) = glob.glob(str(reports / "metnos-audit-*.json"))
    doc = json.load(open(json_path))
    hosts = dict((h["host"], h) for h in doc["hosts"])
    states = dict((p["executor"], p["state"]) for p in hosts["states"]["profiles"])
    assert states == {"read_notes": "in_sync", "system_status": "drift", "export_report": "missing",
                      "broken": "refused", "unknown_cap": "refused"}, states     # broken.yml's readable name
    codes = [d["code"] for d in hosts["states"]["diagnostics"]]
    for code, count in (("profile_in_sync", 1), ("profile_drift", 1), ("profile_missing", 1),
                        ("profile_refused", 2)):
        assert codes.count(code) == count, (code, codes)
    refusals = dict((d["details"]["executor"], d) for d in hosts["states"]["diagnostics"]
                    if d["code"] == "profile_refused")
    assert refusals["unknown_cap"]["details"]["refusal"] == "capability_unknown", refusals
    assert refusals["broken"]["details"]["refusal"] == "manifest_parse_error", refusals
    # Drift told as mounts with their modes, not argv words.
    (drift,) = [d for d in hosts["states"]["diagnostics"] if d["code"] == "profile_drift"]
    assert "mount added %s (ro)" % removed in drift["message"], drift["message"]
    assert "mount changed %s: rw -> ro" % changed in drift["message"], drift["message"]
    assert "'--ro-bind'" not in drift["message"] and "[" not in drift["message"], drift["message"]
    context_codes = [d["code"] for d in hosts["context"]["diagnostics"]]
    assert "profile_context_error" in context_codes, context_codes

    # One verdict: the one function over the findings, in the JSON.
    for h in doc["hosts"]:
        assert h["verdict"] == verdicts.verdict(h["diagnostics"]) == "fail", (h["host"], h["verdict"])
    assert doc["totals"]["fail"] == 2 and doc["gate"]["failed"] is True and doc["gate"]["failing_hosts"] == 2

    # Markdown: every code of every host (the info ones too), each host's verdict.
    md = open(json_path[:-len("json")] + "md").read()
    for h in doc["hosts"]:
        assert re.search(r"^\| %s \| %s \|" % (h["host"], h["verdict"].upper()), md, re.M), h["host"]
        for d in h["diagnostics"]:
            assert "`%s`" % d["code"] in md, d["code"]
    assert "Gate: **FAILED** (2 failing host(s)" in md

    # JUnit: the profiles case fails on both hosts, with the codes.
    suite = ET.parse(json_path[:-len("json")] + "junit.xml").getroot().find("testsuite")
    cases = dict(((c.get("classname"), c.get("name")), c) for c in suite.iter("testcase"))
    for host, want in (("states", {"profile_drift", "profile_refused"}), ("context", {"profile_context_error"})):
        failure = cases[("metnos.%s" % host, "profiles")].find("failure")
        assert failure is not None, host
        assert want <= set(failure.get("message").split(", ")), (host, failure.get("message"))

    # HTML: each host's verdict and the codes in its row.
    page = open(json_path[:-len("json")] + "html").read()
    for h in doc["hosts"]:
        row = re.search(r'<tr data-verdict="([a-z]+)" data-codes="([^"]*)"[^>]*><td><a href="#h-%s">' % h["host"], page)
        assert row and row.group(1) == h["verdict"], h["host"]
        assert {"profile_drift", "profile_refused"} <= set(row.group(2).split()) if h["host"] == "states" else \
            "profile_context_error" in row.group(2).split()

    # The fleet summary the play prints, and the gate.
    assert "2 hosts: 0 pass, 0 warn, 2 fail, 0 unreachable" in out, out[-4000:]
    for line in ("FAIL states: ", "FAIL context: "):
        assert line in out, out[-4000:]
    said = re.search(r"FAIL states: ([a-z_, ]+)", out).group(1)
    assert {"profile_drift", "profile_refused"} <= set(said.split(", ")), said

    # The role's summary over sandbox_profile's real results for the same manifests: the same refusals, the
    # same verdict, by the same function.
    results = [run_module("metnos.sandbox.sandbox_profile", {"manifest_file": str(manifests / n), "dest": str(
        tmp_path / "role-profiles"), "fail_on_refusal": False, "host": {"writable_roots": ["/var/lib/metnos"]}})
        for n in ("read_notes.yml", "broken.yml", "unknown_cap.yml")]
    section = site_summary.profiles_section(results)
    role_codes = [d["code"] for d in section["diagnostics"]]
    assert role_codes.count("profile_refused") == 2 and section["verdict"] == "fail", section
    assert "2 refused" in section["detail"], section
    assert sorted(d["details"]["refusal"] for d in section["diagnostics"] if d["code"] == "profile_refused") == \
        sorted(d["details"]["refusal"] for d in refusals.values())
    lines = site_summary.host_summary(None, [section])
    assert lines[-1] == "verdict: FAIL" and any("profile_refused" in line for line in lines), lines


ROLE_PLAY = """
- name: The role's profiles alone
  hosts: all
  gather_facts: false
  roles:
    - role: metnos.sandbox.metnos_sandbox
"""


def test_the_role_fails_on_a_refusal_by_default_after_rendering_every_manifest(tmp_path):
    """Like the module's fail_on_refusal (default true): the refused manifests named with profile_refused, the
    valid one rendered all the same; metnos_sandbox_fail_on_refusal=false reports without failing."""
    manifests, _profiles, _args = _plant(tmp_path)
    play = tmp_path / "role.yml"
    play.write_text(ROLE_PLAY)
    listed = json.dumps({"metnos_sandbox_manifests": [str(manifests / n) for n in (
        "read_notes.yml", "unknown_cap.yml")], "metnos_sandbox_profile_dir": str(tmp_path / "role-profiles")})
    base = [str(play), "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
            "-e", listed, "--tags", "metnos_sandbox_profiles"]
    proc = run_playbook(*base)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "Refused manifests on localhost" in proc.stdout and "unknown_cap: the manifest is refused " \
        "(capability_unknown)" in proc.stdout, proc.stdout[-3000:]
    assert (tmp_path / "role-profiles" / "read_notes.args").exists()
    proc = run_playbook(*base, "-e", "metnos_sandbox_fail_on_refusal=false")
    assert proc.returncode == 0, proc.stdout[-3000:]
