"""The README and every doc reference only what exists: each repository path they name (a
top-level directory of this checkout followed by a path) must be there, and the example fleet
inventory the README points at must load."""
import glob
import json
import os
import re
import subprocess

from conftest import ROOT, ansible_env, ansible_tool

TOP = ("module_utils", "library", "action_plugins", "callback_plugins", "filter_plugins", "roles", "playbooks",
       "inventory", "examples", "molecule", "scripts", "benchmarks", "tests", "docs", "tools", "monitoring", r"\.ci",
       r"\.github", r"\.config")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./@+-]*)" % "|".join(TOP))


def docs():
    return (["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
            + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "roles", "*", "README.md"))))


def named_paths(text):
    for match in PATH.finditer(text):
        yield match.group(1).split("#")[0].rstrip(".,:;)")


def test_every_path_a_doc_names_exists():
    missing = []
    for doc in docs():
        with open(os.path.join(ROOT, doc)) as handle:
            missing += ["%s: %s" % (doc, p) for p in named_paths(handle.read())
                        if not os.path.exists(os.path.join(ROOT, p))]
    assert not missing, "docs name paths that do not exist:\n" + "\n".join(missing)


def test_the_check_sees_a_missing_path():
    assert list(named_paths("see `inventory/example-fleet` and docs/audit-report.md#merging.")) == \
        ["inventory/example-fleet", "docs/audit-report.md"]
    assert not os.path.exists(os.path.join(ROOT, "inventory", "no-such-fleet"))


def test_example_fleet_loads_with_its_manifests():
    proc = subprocess.run([ansible_tool("ansible-inventory"), "-i", "inventory/example-fleet", "--list"],
                          capture_output=True, text=True, cwd=ROOT, env=ansible_env())
    assert proc.returncode == 0, proc.stderr
    inv = json.loads(proc.stdout)
    hosts = inv["metnos_servers"]["hosts"]
    assert len(hosts) == 3
    # playbook_dir: the directory of playbooks/audit.yml and site.yml (the fleet's paths survive a copy of it)
    playbook_dir = os.path.join(ROOT, "playbooks")
    for host in hosts:
        for manifest in inv["_meta"]["hostvars"][host]["metnos_sandbox_manifests"]:
            assert os.path.isfile(manifest.replace("{{ playbook_dir }}", playbook_dir)), manifest


def test_every_script_is_named_in_the_development_guide_with_its_purpose():
    """scripts/ holds tools for users and maintainers only, each with one line in docs/development.md."""
    with open(os.path.join(ROOT, "docs", "development.md")) as handle:
        rows = [line for line in handle if line.startswith("| `scripts/")]
    named = sorted(line.split("`")[1] for line in rows)
    on_disk = sorted("scripts/" + name for name in os.listdir(os.path.join(ROOT, "scripts"))
                     if not name.startswith(".") and name != "__pycache__")
    assert named == on_disk
    assert all(len(line.rstrip().rstrip("|").split("|")[-1].strip()) > 10 for line in rows)
