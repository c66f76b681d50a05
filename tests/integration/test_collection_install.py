"""The collection installed as a user would: the tarball of ``make collection`` (dist/metnos-sandbox-X.Y.Z.tar.gz)
installed offline with ``ansible-galaxy collection install`` into a temporary path, then a user's playbook
(tests/integration/user_project/) that uses the roles, modules, filters and the audit by FQCN against this
machine, real bwrap included. Nothing of the checkout is on any path: the project has its own ansible.cfg,
ANSIBLE_HOME is temporary, and every plugin is proven to come from the installed copy.

Also: ``ansible-doc metnos.sandbox.sandbox_profile`` shows every RETURN key as written (the class of the
flow-mapping bug: a description split into stray keys), and ``ansible-builder create`` makes the execution
environment's build context with that tarball (building the image needs a registry: not here)."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, ansible_tool
from helpers.installed_collection import tarball, user_env, version

NS = "metnos.sandbox."
PROJECT = os.path.join(ROOT, "tests", "integration", "user_project")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    top = str(tmp_path_factory.mktemp("user"))
    project = os.path.join(top, "project")
    shutil.copytree(PROJECT, project)
    shutil.copy(os.path.join(ROOT, "examples", "manifests", "read_notes.yml"), project)
    with open(os.path.join(project, "ansible.cfg"), "w") as handle:
        handle.write("[defaults]\ninventory = inventory.yml\ninject_facts_as_vars = False\n"
                     "retry_files_enabled = False\n")
    env = user_env(top)
    proc = subprocess.run([ansible_tool("ansible-galaxy"), "collection", "install", "--offline", "-p",
                           os.path.join(top, "collections"), tarball()], capture_output=True, text=True,
                          cwd=project, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return top


def test_installed_where_asked_and_only_there(installed):
    env = user_env(installed)
    listed = subprocess.run([ansible_tool("ansible-galaxy"), "collection", "list", "metnos.sandbox", "--format",
                             "json"], capture_output=True, text=True, cwd=os.path.join(installed, "project"), env=env)
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    assert list(found) == [os.path.join(installed, "collections", "ansible_collections")]
    assert found[list(found)[0]] == {"metnos.sandbox": {"version": version()}}
    on_disk = os.path.join(installed, "collections", "ansible_collections", "metnos", "sandbox")
    assert not [p for p in glob.glob(os.path.join(on_disk, "**"), recursive=True) if os.path.islink(p)]


def test_a_users_playbook_by_fqcn_against_this_host(installed):
    project = os.path.join(installed, "project")
    out = os.path.join(installed, "out")
    os.makedirs(out)
    proc = subprocess.run([ansible_tool("ansible-playbook"), "playbook.yml", "-e",
                           json.dumps({"user_manifest": os.path.join(project, "read_notes.yml"), "user_out": out})],
                          capture_output=True, text=True, cwd=project, env=user_env(installed), timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    with open(os.path.join(out, "results.json")) as handle:
        res = json.load(handle)
    assert res["bwrap_host_facts"]["active"] is True and res["facts"]["active"] is True
    assert res["role_profiles"] == ["wrapped"] and os.path.exists(os.path.join(out, "profiles", "read_notes.args"))
    assert res["probe_passed"] is True                          # the real probe, from the installed core
    assert res["decision"] == "wrapped" and res["command_line"].split()[0].endswith("/bwrap")
    assert [c["kind"] for c in res["capabilities"]] == ["fs", "network"]
    assert res["preview"][0].endswith("bwrap")
    assert any("bwrap_facts" in line for line in res["summary"])
    assert res["audit_verdict"] in ("pass", "warn"), res
    assert [p["state"] for p in res["audit_profiles"]] == ["in_sync"]
    assert res["report_gate"]["failed"] is False and os.path.exists(res["report_paths"]["json"])


def test_every_plugin_comes_from_the_installed_copy(installed):
    env = user_env(installed)
    where = os.path.join(installed, "collections", "ansible_collections", "metnos", "sandbox")
    for kind, names in (("module", ("sandbox_profile", "metnos_audit", "bwrap_facts")),
                        ("filter", ("shell_join", "metnos_argv"))):
        proc = subprocess.run([ansible_tool("ansible-doc"), "-t", kind, "--json"] + [NS + n for n in names],
                              capture_output=True, text=True, cwd=os.path.join(installed, "project"), env=env)
        assert proc.returncode == 0, proc.stderr
        for name, doc in json.loads(proc.stdout).items():
            assert doc["doc"]["filename"].startswith(where), (name, doc["doc"]["filename"])


def return_keys(returns, prefix=""):
    """[(dotted key, description text)] of a RETURN mapping, nested ``contains`` included, as written."""
    out = []
    for key, entry in returns.items():
        desc = entry["description"]
        out.append((prefix + key, " ".join(desc) if isinstance(desc, list) else desc))
        out += return_keys(entry.get("contains") or {}, prefix + key + ".")
    return out


def return_section(text):
    """ansible-doc's RETURN VALUES section: [(indent, first word, rest of line)] of its non-empty lines (without
    colours a key's line starts with ``- ``)."""
    section = text.split("RETURN VALUES:", 1)[1]
    lines = []
    for line in section.splitlines():
        if line.strip():
            word, _sep, rest = line.strip()[2 if line.strip().startswith("- ") else 0:].partition(" ")
            lines.append((len(line) - len(line.lstrip()), word, rest.strip()))
    return lines


FIELDS = ("returned:", "type:", "elements:", "contains:", "sample:", "version_added:")


def check_ansible_doc_return(text, returns):
    """Problems of ansible-doc's text against the RETURN as written: every key shown with the start of its
    description, and no line that is neither a key, a field, nor a description's continuation."""
    lines = return_section(text)
    keys = return_keys(returns)
    problems = []
    for key, desc in keys:
        name = key.split(".")[-1]
        start = " ".join(re.sub(r"[A-Z]\(([^)]*)\)", r"\1", desc).split()[:3])
        if not any(word == name and rest.startswith(start) for _ind, word, rest in lines):
            problems.append("%s: not shown with its description (%r)" % (key, start))
    strays = [word for _ind, word, _rest in lines if word.endswith(":") and word not in FIELDS]
    problems += ["a key that is not a RETURN field: %s" % w for w in strays]
    return problems


def _module_return(name):
    import ast
    with open(os.path.join(ROOT, "library", name + ".py")) as handle:
        tree = ast.parse(handle.read())
    text = [n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "RETURN"][0]
    return yaml.safe_load(text)


def test_ansible_doc_shows_every_return_key_as_written(installed):
    proc = subprocess.run([ansible_tool("ansible-doc"), NS + "sandbox_profile"], capture_output=True, text=True,
                          cwd=os.path.join(installed, "project"), env=user_env(installed, COLUMNS="200"))
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
    assert check_ansible_doc_return(proc.stdout, _module_return("sandbox_profile")) == []


def test_the_ansible_doc_check_catches_the_flow_mapping_garble():
    """What ansible-doc printed for the flow-mapping entry (``kind: {description: ro, rw, tmpfs, ...}``)."""
    garbled = ("RETURN VALUES:\n\n- mounts  Ordered mounts.\n        type: list\n        contains:\n\n"
               "         - kind  ro\n          dev or symlink.: null\n          proc: null\n          rw: null\n"
               "          tmpfs: null\n          type: str\n")
    returns = {"mounts": {"description": "Ordered mounts.", "type": "list", "contains": {
        "kind": {"description": "ro, rw, tmpfs, proc, dev or symlink.", "type": "str"}}}}
    problems = check_ansible_doc_return(garbled, returns)
    assert "mounts.kind: not shown with its description ('ro, rw, tmpfs,')" in problems
    assert "a key that is not a RETURN field: rw:" in problems


def test_ansible_builder_makes_the_execution_environment_context(tmp_path):
    context = str(tmp_path / "context")
    proc = subprocess.run([ansible_tool("ansible-builder"), "create", "-f", "execution-environment.yml", "-c", context,
                           "--output-filename", "Containerfile"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(os.path.join(context, "Containerfile")) as handle:
        containerfile = handle.read()
    assert 'PYCMD="/usr/bin/python3.13"' in containerfile
    # the image installs the lock, ansible-core with its sha256 among it (pip's hash-checking mode)
    with open(os.path.join(context, "_build", "requirements.txt")) as handle:
        shipped_lock = handle.read()
    with open(os.path.join(ROOT, "requirements-ee.txt")) as handle:
        assert shipped_lock == handle.read()
    assert re.search(r"^ansible-core==[0-9.]+ --hash=sha256:[0-9a-f]{64}", shipped_lock, re.M)
    shipped = os.path.join(context, "_build", "collections", os.path.basename(tarball()))
    with open(shipped, "rb") as a, open(tarball(), "rb") as b:
        assert a.read() == b.read()
    # The image's install step, run here against the context's copy (the image build itself needs quay.io).
    step = [line for line in containerfile.splitlines() if "ansible-galaxy collection install" in line][0]
    command = step.split("RUN ", 1)[1].split(" && ")[0].replace("/usr/share/ansible/collections",
                                                                 str(tmp_path / "ee")).replace(
        "/tmp/metnos-collections", os.path.join(context, "_build", "collections"))
    argv = [ansible_tool("ansible-galaxy") if w == "ansible-galaxy" else w for w in command.split()]
    argv = [glob.glob(w)[0] if "*" in w else w for w in argv]
    ran = subprocess.run(argv, capture_output=True, text=True, env=user_env(str(tmp_path)))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert os.path.exists(str(tmp_path / "ee" / "ansible_collections" / "metnos" / "sandbox" / "MANIFEST.json"))


def test_the_installed_audit_playbook_writes_where_the_user_runs_from_a_read_only_install(installed, tmp_path):
    """``ansible-playbook metnos.sandbox.audit`` from the installed collection, mounted read-only (a system-wide
    or AWX install; a private mount namespace, as root cannot be kept out by file modes): the reports are in the
    working directory's ./reports, none inside the collection (issue 42, item 6)."""
    collection = os.path.join(installed, "collections")
    work = tmp_path / "work"
    work.mkdir()
    (work / "hosts.yml").write_text(json.dumps({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", collection, ansible_tool("ansible-playbook"),
                           "metnos.sandbox.audit", "-i", "hosts.yml", "-e", "metnos_audit_probe=false",
                           "-e", json.dumps({"metnos_audit_unit": "", "metnos_audit_manifests": []})],
                          capture_output=True, text=True, cwd=str(work), env=user_env(installed), timeout=900)
    reports = sorted(os.path.basename(p) for p in glob.glob(str(work / "reports" / "metnos-audit-*")))
    assert sorted(r.rsplit(".", 1)[-1] for r in reports) == ["html", "json", "md", "xml"], proc.stdout[-4000:]
    assert "Read-only file system" not in proc.stdout + proc.stderr, proc.stdout[-4000:]
    assert str(work / "reports") in proc.stdout, proc.stdout[-4000:]          # the summary names them
    assert not glob.glob(os.path.join(collection, "**", "metnos-audit-*"), recursive=True)
