"""The acceptance fleet of issue 53: three hosts across two runs of the real audit playbook (playbooks/audit.yml,
local-connection aliases audited for real, the probe off), each finding followed by its subject through JSON,
Markdown, JUnit, HTML (real headless Chromium, tests/helpers/report_browser.py) and the metrics textfile.

Run 1 (no baseline): alias-a has two manifests that do not load (broken.yml with no readable name, named.yml whose
first line is ``name: broken_yaml``); alias-b has old.yml (no readable name) and two copies of the read_notes
example (a.yml, b.yml: one profile name); alias-c has a manifest that does not load (c.yml).
Run 2 (run 1's latest.json as the baseline): alias-a's broken.yml is fixed (it loads: read_notes, whose profile is
not written, so profile_missing read_notes is new) and another.yml (no readable name) is new; alias-b's old.yml is
renamed to renamed.yml (the old subject resolved, the new one new); alias-c turns unreachable (ssh to a closed
port of this machine: its findings are neither resolved nor still, it is unreachable). Waivers: alias-b's
profile_name_duplicate is waived (active, 30 days); a waiver of alias-a's broken_yaml expired yesterday (it waives
nothing: the finding still counts, and the waiver is reported expired).
Run 3 (run 2's report as the baseline): alias-c reachable again with no manifest (its host_unreachable resolved),
nothing else changed: fail_on new passes (every failure is still there), fail_on any fails.
Each finding's subject and its state are read in JSON, Markdown (the baseline table and each finding), JUnit (the
failures and the baseline's list), HTML (each host's detail panel as Chromium lays it out) and the metrics; the
counts are the same in all of them. The canary: run 2's JSON has each planted subject (a missing one fails there)."""
import datetime
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import baseline
from conftest import ROOT, run_playbook
from helpers import report_browser

BROKEN = "origin: [unclosed\ncapabilities: []\n"               # no name at all, not valid YAML
NAMED = "name: broken_yaml\norigin: [unclosed\n"              # a readable name, not valid YAML
GHOST = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody",
         "ansible_ssh_common_args": "-o ConnectTimeout=5 -o BatchMode=yes"}


def plant(tmp_path, name, text):
    path = str(tmp_path / "m" / name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    return path


def local(tmp_path, host, manifests):
    return {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "metnos_audit_unit": "",
            "metnos_sandbox_profile_dir": str(tmp_path / ("profiles-" + host)), "metnos_sandbox_manifests": manifests}


def audit(tmp_path, hosts, *extra):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    return run_playbook(os.path.join(ROOT, "playbooks", "audit.yml"), "-i", str(inventory),
                        "-e", "metnos_audit_dest=%s" % (tmp_path / "reports"), "-e", "metnos_audit_probe=false",
                        "-e", "metnos_audit_textfile_dir=%s" % (tmp_path / "textfile"), *extra)


def latest(tmp_path, ext):
    with open(str(tmp_path / "reports" / ("latest." + ext)), encoding="utf-8") as handle:
        return handle.read()


def keyed(doc):
    """{(host, code, subject): change} of every finding that is not a note, and the resolved ones (no baseline:
    ``first``)."""
    out = {}
    for h in doc["hosts"]:
        for d in h["diagnostics"]:
            if d["severity"] != "info":
                change = h.get("change", {}).get(baseline.finding_key(d), "first")
                out[(h["host"], d["code"], baseline.subject(d))] = change
        for r in h.get("resolved") or []:
            out[(h["host"], r["code"], r.get("subject"))] = "resolved"
    return out


# Each host's detail panel opened as a reader does (its link's hash), every finding's code, subject and state read
# from the page Chromium laid out, as JSON in <pre id="metnos-check"> (tests/helpers/report_browser.py reads it).
PANELS = r"""<script>
window.addEventListener('load', () => {
  const out = {};
  for (const a of document.querySelectorAll('section.host h3 a, table a[href^="#h-"]')) {
    const name = decodeURIComponent(a.getAttribute('href').slice(3));
    if (name in out) continue;
    location.hash = '#h-' + encodeURIComponent(name);
    window.dispatchEvent(new HashChangeEvent('hashchange'));
    const box = document.getElementById('detail');
    out[name] = box.hidden ? null : Array.from(box.querySelectorAll('.finding > p:first-child')).map(p => {
      const code = p.querySelector('code'), about = p.querySelector('.subject'), badge = p.querySelector('.badge');
      return [code ? code.textContent : '', about ? about.textContent : '', badge ? badge.textContent : ''];
    }).concat(Array.from(box.querySelectorAll(':scope > p')).filter(p => p.querySelector('.badge.resolved'))
      .map(p => ['resolved', p.textContent, 'resolved']));
  }
  const pre = document.createElement('pre'); pre.id = 'metnos-check'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def html_panels(tmp_path, page):
    cut = page.rindex("</body>")
    test = str(tmp_path / "panels.html")
    with open(test, "w", encoding="utf-8") as handle:
        handle.write(page[:cut] + PANELS + page[cut:])
    return report_browser.measure(str(tmp_path), test)


def baseline_rows(md):
    """(host, code, subject, state) of the Markdown's baseline table."""
    table = md.split("## Changes since the baseline")[1].split("\n## ")[0]
    rows = [[c.strip().strip("`") for c in line.strip("|").split("|")] for line in table.splitlines()
            if line.startswith("| alias-")]
    return sorted((r[0], r[1], None if r[2] == "-" else r[2], r[4].lower()) for r in rows)


def junit_states(xml):
    """(host, code, subject, state) the JUnit baseline case lists, and the failures' (host, code, state)."""
    root = ET.fromstring(xml)
    (case,) = [c for c in root.iter("testcase") if c.get("name") == "baseline"]
    listed = []
    for line in case.find("system-out").text.splitlines()[1:]:
        match = re.match(r"(new|still|resolved) (\S+): (\w+)(?: \((.*)\))?$", line)
        assert match, line
        listed.append((match.group(2), match.group(3), match.group(4), match.group(1)))
    failures = []
    for c in root.iter("testcase"):
        for f in c.findall("failure"):
            for match in re.finditer(r"^(\w+) \[(new|still)\]: ", f.text or "", re.M):
                failures.append((c.get("classname").split(".", 1)[1], match.group(1), match.group(2)))
    return sorted(listed), sorted(failures), case.find("system-out").text.splitlines()[0]


def prom(tmp_path):
    text = (tmp_path / "textfile" / "metnos_sandbox_audit.prom").read_text()
    return dict((line.rsplit(" ", 1)[0], float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                if line and not line.startswith("#"))


def test_the_acceptance_fleet(tmp_path):
    (tmp_path / "textfile").mkdir()
    with open(os.path.join(ROOT, "examples", "manifests", "read_notes.yml")) as handle:
        example = handle.read()
    planted = [("broken.yml", BROKEN), ("named.yml", NAMED), ("old.yml", BROKEN), ("a.yml", example),
               ("b.yml", example), ("c.yml", BROKEN)]
    broken, named, old, first_copy, second_copy, c_file = (plant(tmp_path, name, text) for name, text in planted)
    hosts = {"alias-a": local(tmp_path, "a", [broken, named]),
             "alias-b": local(tmp_path, "b", [old, first_copy, second_copy]),
             "alias-c": local(tmp_path, "c", [c_file])}
    first = audit(tmp_path, hosts)
    assert first.returncode != 0, first.stdout[-3000:]
    doc = json.loads(latest(tmp_path, "json"))
    assert keyed(doc) == {
        ("alias-a", "profile_refused", broken): "first", ("alias-a", "profile_refused", "broken_yaml"): "first",
        ("alias-b", "profile_refused", old): "first", ("alias-b", "profile_missing", "read_notes"): "first",
        ("alias-b", "profile_name_duplicate", "read_notes"): "first",
        ("alias-c", "profile_refused", c_file): "first"}, \
        sorted(keyed(doc).items(), key=str)
    base = str(tmp_path / "first.json")
    os.rename(os.path.realpath(str(tmp_path / "reports" / "latest.json")), base)

    plant(tmp_path, "broken.yml", example)                                  # fixed: it loads (read_notes)
    another = plant(tmp_path, "another.yml", BROKEN)                        # a new broken one
    renamed = str(tmp_path / "m" / "renamed.yml")
    os.rename(old, renamed)                                                 # renamed
    today = datetime.datetime.now(datetime.timezone.utc).date()
    waivers = tmp_path / "waivers.yml"
    waivers.write_text(
        "- {code: profile_name_duplicate, host: alias-b, executor: read_notes, justification: two teams merge "
        "their manifests (CHG-7), approved_by: ops-lead@example.org, expires: '%s'}\n"
        "- {code: profile_refused, host: alias-a, executor: broken_yaml, justification: fixed upstream (CHG-8), "
        "approved_by: ops-lead@example.org, expires: '%s'}\n"
        % ((today + datetime.timedelta(days=30)).isoformat(), (today - datetime.timedelta(days=1)).isoformat()))
    hosts = {"alias-a": local(tmp_path, "a", [broken, named, another]),
             "alias-b": local(tmp_path, "b", [renamed, first_copy, second_copy]),
             "alias-c": dict(local(tmp_path, "c", [c_file]), **GHOST)}
    want = {("alias-a", "profile_missing", "read_notes"): "new", ("alias-a", "profile_refused", another): "new",
            ("alias-b", "profile_refused", renamed): "new", ("alias-c", "host_unreachable", None): "new",
            ("alias-a", "profile_refused", "broken_yaml"): "still",
            ("alias-b", "profile_missing", "read_notes"): "still",
            ("alias-a", "profile_refused", broken): "resolved", ("alias-b", "profile_refused", old): "resolved"}
    for fail_on in ("any", "new"):
        run = audit(tmp_path, hosts, "-e", "metnos_audit_baseline=%s" % base,
                    "-e", "metnos_audit_fail_on=%s" % fail_on, "-e", "metnos_audit_waivers=%s" % waivers)
        assert run.returncode != 0, run.stdout[-3000:]          # new failures on every host: both gates fail
        doc = json.loads(latest(tmp_path, "json"))
        assert keyed(doc) == want, sorted(keyed(doc).items(), key=str)
        assert (doc["gate"]["failed"], doc["gate"]["failing_hosts"], doc["gate"].get("fail_on", "any")) == \
            (True, 3, fail_on), doc["gate"]
    counts = dict((state, sum(1 for s in want.values() if s == state)) for state in ("new", "still", "resolved"))
    assert dict((s, doc["baseline"][s]) for s in counts) == counts == {"new": 4, "still": 2, "resolved": 2}
    (b_host,) = [h for h in doc["hosts"] if h["host"] == "alias-b"]
    assert [(w["code"], baseline.subject(w), w["justification"]) for w in b_host["waived"]] == [
        ("profile_name_duplicate", "read_notes", "two teams merge their manifests (CHG-7)")], b_host["waived"]
    states = dict((w["code"], w["state"]) for w in doc["waivers"]["entries"])
    assert states == {"profile_name_duplicate": "active", "profile_refused": "expired"}, doc["waivers"]
    (c_host,) = [h for h in doc["hosts"] if h["host"] == "alias-c"]
    assert c_host["verdict"] == "unreachable" and c_host["resolved"] == []   # unknown: nothing resolved there

    md = latest(tmp_path, "md")
    assert baseline_rows(md) == sorted(k + (s,) for k, s in want.items()), baseline_rows(md)
    assert "**4 new**, 2 still there, 2 resolved" in md
    assert "waiver #2 (profile_refused on alias-a for executor broken_yaml) expired on " in md
    for (host, code, about), state in want.items():
        if state != "resolved":
            assert ("- **%s** · `%s`: " % (host, about) if about else "- **%s**: " % host) in \
                md.split("### `%s`" % code)[1].split("\n### ")[0], (host, code, about)
    listed, failures, line = junit_states(latest(tmp_path, "junit.xml"))
    assert listed == sorted(k + (s,) for k, s in want.items()) and line.startswith("4 new, 2 still there, 2 resolved")
    assert failures == sorted((h, c, s) for (h, c, _a), s in want.items() if s != "resolved" and
                              c != "profile_missing"), failures           # errors fail; a warning does not here
    metrics = prom(tmp_path)
    assert [metrics['metnos_sandbox_audit_changes{state="%s"}' % s] for s in ("new", "still", "resolved")] == [4, 2, 2]
    assert metrics['metnos_sandbox_audit_findings{severity="error"}'] == 4 and \
        metrics['metnos_sandbox_audit_findings{severity="warning"}'] == 2
    assert metrics['metnos_sandbox_audit_hosts{verdict="unreachable"}'] == 1 and \
        metrics['metnos_sandbox_audit_failing_hosts'] == doc["gate"]["failing_hosts"] == 3
    assert metrics['metnos_sandbox_audit_waived_findings{code="profile_name_duplicate"}'] == 1
    panels = html_panels(tmp_path, latest(tmp_path, "html"))
    shown = sorted((host, code, about or None, state.lower()) for host, rows in panels.items() for code, about, state
                   in (rows or []) if code != "resolved" and state.lower() in ("new", "still"))
    assert shown == sorted(k + (s,) for k, s in want.items() if s != "resolved"), panels
    resolved = dict((host, text) for host, rows in panels.items() for code, text, _s in (rows or [])
                    if code == "resolved")
    assert broken in resolved["alias-a"] and old in resolved["alias-b"] and "alias-c" not in resolved, resolved
    assert [(c, a, s) for c, a, s in panels["alias-b"] if c == "profile_name_duplicate"] == [
        ("profile_name_duplicate", "read_notes", "waived")], panels["alias-b"]

    third = str(tmp_path / "second.json")
    os.rename(os.path.realpath(str(tmp_path / "reports" / "latest.json")), third)
    hosts["alias-c"] = local(tmp_path, "c", [])
    for fail_on, status in (("new", 0), ("any", 2)):
        run = audit(tmp_path, hosts, "-e", "metnos_audit_baseline=%s" % third,
                    "-e", "metnos_audit_fail_on=%s" % fail_on, "-e", "metnos_audit_waivers=%s" % waivers)
        assert run.returncode == status, (fail_on, run.stdout[-3000:])
        doc = json.loads(latest(tmp_path, "json"))
        assert (doc["baseline"]["new"], doc["baseline"]["still"], doc["baseline"]["resolved"]) == (0, 5, 1), \
            doc["baseline"]
        assert doc["gate"]["failed"] is bool(status)
        assert prom(tmp_path)["metnos_sandbox_audit_gate_failed"] == status // 2
        assert "5 still there, 1 resolved" in latest(tmp_path, "md")
