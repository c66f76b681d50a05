"""The hostile corpus through the faces that run under Ansible, batched to keep CI time low:

- the sandbox_profile module through ansible-playbook, on a sample holding two entries of every
  (rule, code) pair of the corpus (the whole corpus goes through the module's main() in-process
  in tests/unit/test_hostile_corpus.py; a real run costs ~0.35 s of CPU per entry): one play, the
  sample split over local host aliases so the loop runs in parallel forks; the manifest given as
  manifest_file (read on the host by the core) or, as the role does, as what
  metnos_manifest_source hands over from the controller;
- the metnos_audit action (its payload shipped to the host), one call with every entry that
  uses the corpus's base host context (entries with their own host context go through the
  payload's profile_drift in-process in the unit test).

Each must give the core's decision and code for every entry (tests/unit/test_hostile_corpus.py
checks the in-process faces). Where Ansible's own argument validation refuses an invocation
before the core sees it (unknown or mistyped invocation keys), the task must fail naming the
invocation.
"""
import json
import os
import sys

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    host_context,
    manifest,
    model,
    renderer,
)
from conftest import run_playbook
from corpus import hostile_tree

ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}
ALIASES = 4

PLAY = """
- name: sandbox_profile over the hostile corpus
  hosts: corpus
  gather_facts: false
  tasks:
    - name: Render every entry ({{ corpus_items | length }} on this alias)
      metnos.sandbox.sandbox_profile:
        manifest_file: "{{ item.path if item.via == 'file' else omit }}"
        manifest: "{{ (item.path | metnos.sandbox.metnos_manifest_source) if item.via == 'filter' else omit }}"
        host: "{{ item.host }}"
        invocation: "{{ item.invocation if item.invocation else omit }}"
        discover_python_roots: false
        fail_on_refusal: false
      loop: "{{ corpus_items }}"
      loop_control: {label: "{{ item.id }}"}
      register: corpus_results
      ignore_errors: true
    - name: Keep the decisions
      ansible.builtin.copy:
        dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
        content: "{{ corpus_results.results | to_json }}"
        mode: "0644"

- name: metnos_audit over the hostile corpus, one call per host context
  hosts: audit
  gather_facts: false
  tasks:
    - name: Audit ({{ audit_groups | length }} host contexts)
      metnos.sandbox.metnos_audit:
        unit: ""
        probe: false
        manifests: "{{ item.paths | map('metnos.sandbox.metnos_manifest_source') | list }}"
        host: "{{ item.host }}"
        profile_dir: "{{ out_dir }}/profiles"
      loop: "{{ audit_groups }}"
      register: audit_results
    - name: Keep the audit results
      ansible.builtin.copy:
        dest: "{{ out_dir }}/audit.json"
        content: "{{ audit_results.results | map(attribute='profiles') | list | to_json }}"
        mode: "0644"
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("faces"))
    _root, _host, entries = hostile_tree.materialize(base)
    items, seen = [], {}
    for entry, path, host, inv in entries:
        taken = seen.setdefault((entry.rule, entry.expect), [])
        if len(taken) < 2:
            # one through manifest_file (the host's reader), one as the role does (controller filter)
            items.append({"id": entry.id, "path": path, "host": host, "invocation": inv,
                          "via": "file" if not taken else "filter"})
            taken.append(entry.id)
    groups = {}
    for entry, path, host, _inv in entries:
        if not entry.host:
            groups.setdefault(json.dumps(host, sort_keys=True), []).append(path)
    out_dir = os.path.join(base, "out")
    os.makedirs(os.path.join(out_dir, "profiles"))
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                  "out_dir": out_dir},
                         "children": {
                             "corpus": {"hosts": dict(("corpus%d" % i, {"corpus_items": items[i::ALIASES]})
                                                      for i in range(ALIASES))},
                             "audit": {"hosts": {"audit0": {"audit_groups": [
                                 {"host": json.loads(h), "paths": paths} for h, paths in sorted(groups.items())]}}}}}}
    with open(os.path.join(base, "inventory.json"), "w") as handle:
        json.dump(inventory, handle)
    with open(os.path.join(base, "play.yml"), "w") as handle:
        handle.write(PLAY)
    proc = run_playbook(os.path.join(base, "play.yml"), "-i", os.path.join(base, "inventory.json"),
                        "-f", str(ALIASES + 1))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = {}
    for i in range(ALIASES):
        with open(os.path.join(out_dir, "corpus%d.json" % i)) as handle:
            for res in json.load(handle):
                results[res["item"]["id"]] = res
    with open(os.path.join(out_dir, "audit.json")) as handle:
        audit = [p for group in json.load(handle) for p in group]
    by_path = dict((path, (entry, host, inv)) for entry, path, host, inv in entries)
    audit_paths = [path for _h, paths in sorted(groups.items()) for path in paths]
    return entries, results, audit, by_path, audit_paths


def core(path, host, inv):
    prof = renderer.render_safe(model.FileSource(path), host_context.HostContext(host), inv, ACTIVE)
    return prof["decision"], prof["refusal"]


def test_module_through_ansible_gives_the_core_decision(ran):
    entries, results, _audit, _by_path, _paths = ran
    assert len(results) >= 100
    wrong = []
    for entry, path, host, inv in entries:
        if entry.id not in results:
            continue
        res = results[entry.id]
        assert "Traceback" not in json.dumps(res), entry.id
        if entry.expect == "invocation_invalid" and "decision" not in res:
            assert res["failed"] and "invocation" in res["msg"], (entry.id, res["msg"])   # Ansible's own validation
            continue
        want = core(path, host, inv)
        if (res.get("decision"), res.get("refusal")) != want or want != ("refused", entry.expect):
            wrong.append((entry.id, entry.expect, want, res.get("decision"), res.get("refusal"), res.get("msg")))
    assert not wrong, wrong[:10]


def test_audit_action_gives_the_core_decision(ran):
    entries, _results, audit, by_path, paths = ran
    assert len(audit) == len(paths) == len([e for e in entries if not e[0].host]) >= 200
    wrong = []
    for path, got in zip(paths, audit):
        entry, host, _inv = by_path[path]
        want = core(path, host, {})        # the audit renders without an invocation
        if (got["decision"], got.get("refusal")) != want:
            wrong.append((entry.id, want, got))
    assert not wrong, wrong[:10]


def test_role_path_needs_no_yaml_on_the_host(ran):
    """What the filter hands over is plain JSON data (a mapping or the core's refusal record)."""
    entries = ran[0]
    for _entry, path, _host, _inv in entries:
        handed = manifest.transport(model.FileSource(path))
        assert isinstance(handed, dict)
        json.dumps(handed)
