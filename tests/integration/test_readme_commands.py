"""Every command the README marks runnable (a fenced ```sh block right after ``<!-- runnable -->``) runs as
written, pasted in order into one shell (bash -euo pipefail), in a fresh temporary folder outside the
checkout, against the tarball ``make collection`` builds (``make install-collection``).

Nothing makes it pass by accident: the blocks run with the venv's bin folder taken off PATH (a block that
says ``ansible-galaxy`` instead of the venv's path fails with "command not found"), with no ANSIBLE_* variable
of the checkout's make, from a folder outside the checkout (where the checkout's ansible.cfg cannot answer
"Nothing to do"), and the test then checks that the collection really landed in that folder."""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import ROOT, ansible_env

MARK = re.compile(r"<!-- runnable -->\n```sh\n(.*?)```", re.S)


def runnable_blocks(text):
    return [block for block in MARK.findall(text)]


def user_path():
    venv_bins = {os.path.realpath(os.path.join(ROOT, ".venv", "bin"))}
    return ":".join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(":")
                    if p and os.path.realpath(p) not in venv_bins and not p.startswith(ROOT))


@pytest.fixture
def away():
    top = tempfile.mkdtemp(prefix="metnos-readme-")
    assert not os.path.realpath(top).startswith(os.path.realpath(ROOT) + os.sep)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def run_blocks(blocks, top):
    """The blocks pasted in sequence into ONE shell, as a reader does: the second block starts where the first
    left (its working directory, its variables). Each block announces itself on stderr first, so a failure
    names the block it stopped in."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "MAKE")))
    env.update(PATH=user_path(), METNOS=ROOT, HOME=top)
    script = "".join("echo '### README block %d' >&2\n%s" % (index + 1, block) for index, block in enumerate(blocks))
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=top, env=env, capture_output=True,
                          text=True, timeout=900)
    stopped = re.findall(r"### README block (\d+)", proc.stderr)
    assert proc.returncode == 0, "README block %s failed (rc %d):\n%s\n--- stdout\n%s\n--- stderr\n%s" % (
        stopped[-1] if stopped else "?", proc.returncode, blocks[int(stopped[-1]) - 1] if stopped else script,
        proc.stdout[-3000:], proc.stderr[-3000:])


def test_every_runnable_readme_block_runs_as_written(away):
    with open(os.path.join(ROOT, "README.md")) as handle:
        blocks = runnable_blocks(handle.read())
    assert len(blocks) >= 2, "the README marks no runnable blocks"
    run_blocks(blocks, away)
    installed = os.path.join(away, "my-project", "collections", "ansible_collections", "metnos", "sandbox")
    assert os.path.isfile(os.path.join(installed, "MANIFEST.json")), os.listdir(away)
    assert os.path.isfile(os.path.join(installed, "roles", "metnos_sandbox", "files", "metnos-sandbox-exec"))


def test_the_blocks_share_one_shell(away):
    """The canary of pasting in sequence: a block that does ``cd`` again into the folder the block before
    entered fails (the README's block 2 once did, "No such file or directory")."""
    run_blocks(["mkdir -p my-project && cd my-project\n", "test \"$(basename \"$PWD\")\" = my-project\n"], away)
    with pytest.raises(AssertionError, match="README block 2 failed"):
        run_blocks(["mkdir -p my-project && cd my-project\n", "cd my-project\n"], away)


def test_the_readme_names_what_make_test_installs_and_how_long_it_takes():
    """Every Debian package of scripts/host-packages.sh (the one list make test installs) is named in the
    README, with the time the whole run takes."""
    listed = subprocess.run([os.path.join(ROOT, "scripts", "host-packages.sh"), "--list"], capture_output=True,
                            text=True, check=True).stdout.split()
    with open(os.path.join(ROOT, "README.md")) as handle:
        text = handle.read()
    assert listed and [name for name in listed if name not in text] == [], listed
    assert "about an hour on 2 cores" in text and "Node.js" in text


def test_a_bare_tool_name_fails_without_the_venv(away):
    """What the README said before: ``ansible-galaxy`` unnamed is not found once the venv is off PATH."""
    with pytest.raises(AssertionError, match="command not found|rc 127"):
        run_blocks(["ansible-galaxy --version\n"], away)


# ---------------------------------------------------------------- the five-minute audit, from a copied fleet
def audit_recipe():
    """The command ``make audit`` runs after its bootstrap line (the Makefile's own recipe, $(ARGS) left to
    fill): the test runs that line, not the bootstrap, whose pip would write to the venv the engineers share."""
    with open(os.path.join(ROOT, "Makefile")) as handle:
        recipe = re.search(r"^audit:\n((?:\t.*\n)+)", handle.read(), re.M).group(1)
    (command,) = [line.strip() for line in recipe.splitlines() if "ansible-playbook" in line]
    return command


def copied_fleet(top, aliases):
    """``cp -r inventory/example-fleet ~/my-fleet`` (README step 1), then the hosts put in it as the README's
    reader does for this machine: each alias under metnos_servers and metnos_local (the fleet's local-connection
    group, which sets the interpreter). ansible_become is false on the aliases: the test runs as root and this
    machine has no sudo."""
    import yaml
    fleet = os.path.join(top, "my-fleet")
    subprocess.run(["cp", "-r", os.path.join(ROOT, "inventory", "example-fleet"), fleet], check=True)
    hosts_file = os.path.join(fleet, "hosts.yml")
    with open(hosts_file) as handle:
        inventory = yaml.safe_load(handle)
    groups = inventory["all"]["children"]
    groups["metnos_servers"]["hosts"] = dict((name, {"ansible_become": False}) for name in aliases)
    groups["metnos_local"]["hosts"] = dict((name, None) for name in aliases)
    with open(hosts_file, "w") as handle:
        yaml.safe_dump(inventory, handle)
    return fleet


def test_the_example_fleet_audits_from_a_copy_outside_the_clone(away):
    """README "Audit your fleet in five minutes", steps 1 and 3, from a copy of the example fleet in another
    folder: its manifest paths still resolve (both example manifests are rendered on each host; none is
    "cannot read"), and the local hosts run the interpreter the fleet sets. The hosts' verdicts themselves are
    not asked for: the fleet's Metnos paths (/srv/metnos) do not exist on this machine."""
    fleet = copied_fleet(away, ["alias-a", "alias-b"])
    reports = os.path.join(away, "reports")
    command = audit_recipe().replace("$(ARGS)", "-i %s -e metnos_audit_dest=%s" % (fleet, reports))
    env = dict((k, v) for k, v in ansible_env().items() if k != "ANSIBLE_INVENTORY")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    output = proc.stdout + proc.stderr
    assert "cannot read" not in output and "could not be found" not in output, output[-4000:]
    (report,) = glob.glob(os.path.join(reports, "metnos-audit-*.json"))
    with open(report) as handle:
        doc = json.load(handle)
    assert sorted(h["host"] for h in doc["hosts"]) == ["alias-a", "alias-b"], output[-3000:]
    for host in doc["hosts"]:
        states = dict((p["executor"], p["state"]) for p in host["profiles"])
        assert sorted(states) == ["read_notes", "web_fetch"], (host["host"], host["profiles"])
        assert "error" not in states.values() and host["reachable"], (host["host"], host["profiles"])
        assert host["smoke_test"]["user"] == "nobody", host["smoke_test"]


def test_install_collection_does_not_warn_it_will_not_be_picked_up(tmp_path):
    """Issue 54 item 6: ``make install-collection`` warned "will not be picked up in an Ansible run", yet the
    project's ansible.cfg (README block 1) picks it up. The recipe itself, run by make with the tarball built
    (``-o collection``: the bootstrap's pip is not run against the venv the engineers share; the tools are this
    venv's), then the project's ansible.cfg finds the collection (the canary that it is picked up)."""
    import sys
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "build-collection.py")], cwd=ROOT, check=True,
                   capture_output=True, timeout=600)
    project = tmp_path / "my-project"
    project.mkdir()
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "MAKE")))
    proc = subprocess.run(["make", "-s", "-C", ROOT, "-o", "collection", "install-collection",
                           "DEST=%s" % (project / "collections"), "VENV=%s" % os.path.dirname(os.path.dirname(
                               sys.executable))], cwd=str(project), env=env, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "metnos.sandbox:1.0.0 was installed successfully" in out or "was installed successfully" in out, out
    assert "will not be picked up" not in out and "[WARNING]" not in out, out
    (project / "ansible.cfg").write_text("[defaults]\ncollections_path = ./collections\n")
    listed = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-galaxy"), "collection", "list",
                             "metnos.sandbox"], cwd=str(project), env=env, capture_output=True, text=True, timeout=300)
    assert str(project / "collections") in listed.stdout, listed.stdout + listed.stderr


def test_the_newcomers_path_from_a_copied_fleet(away):
    """Issue 54 item 7, the newcomer's path as the README says it, from a copy of the example fleet elsewhere:
    the five-minute audit (make audit's own recipe), then the three things a newcomer gets wrong first, each
    checked for the message that says what to do: a bad variable (refused before any host task, naming the
    variable, its value and the accepted values; nothing after it), a bad waiver file (every problem in one
    pass, did-you-mean, its path absolute; the reports still written and marked; the gate fails) and a merge
    of the runs' reports (no warning; latest.json; no baseline badges)."""
    fleet = copied_fleet(away, ["alias-a"])
    reports = os.path.join(away, "reports")
    recipe = audit_recipe()
    env = dict((k, v) for k, v in ansible_env().items() if k != "ANSIBLE_INVENTORY")

    def audit(*extra):
        command = recipe.replace("$(ARGS)", "-i %s -e metnos_audit_dest=%s %s" % (
            fleet, reports, " ".join(extra)))
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=900)
        return proc, proc.stdout + proc.stderr

    first, out = audit()
    assert "PLAY RECAP" in out and "cannot read" not in out, out[-3000:]
    assert os.path.isfile(os.path.join(reports, "latest.json")), out[-3000:]
    assert "skipping:" not in out, out[-3000:]

    bad, out = audit("-e metnos_audit_fail_on=newest -e metnos_audit_probe=banana")
    assert bad.returncode != 0
    assert "metnos_audit_fail_on: 'newest' is not accepted (did you mean new?); accepted: any, new" in out, out[-3000:]
    assert "metnos_audit_probe: 'banana' is not a boolean; accepted: true or false" in out, out[-3000:]
    assert "TASK [Audit the host" not in out and "same ansible-playbook run" not in out, out[-3000:]

    waivers = os.path.join(away, "waivers.yml")
    with open(waivers, "w") as handle:
        handle.write("- code: unit_not_fund\n  host: alias-a\n  justification: later\n  approved_by: me\n"
                     "  expiry: 2026-01-01\n")
    sets = len(glob.glob(os.path.join(reports, "metnos-audit-*.json")))
    refused, out = audit("-e metnos_audit_waivers=%s" % os.path.relpath(waivers, ROOT))
    assert refused.returncode != 0
    for expected in ("the waiver file (%s): waiver #1 has the unknown field 'expiry': did you mean expires?" % waivers,
                     "the waiver file (%s): waiver #1 has no expires" % waivers,
                     "waiver #1: 'unit_not_fund' is not a registered diagnostic code: did you mean unit_not_found?",
                     "NOT COUNTED AS ASKED: %s refused (3 problem(s))" % waivers):
        assert expected in out, (expected, out[-4000:])
    assert len(glob.glob(os.path.join(reports, "metnos-audit-*.json"))) == sets + 1      # written, marked
    with open(os.path.join(reports, "latest.json")) as handle:
        assert json.load(handle)["gate"]["inputs_refused"] == [waivers]

    merged_dir = os.path.join(away, "fleet")
    merge = subprocess.run([os.path.join(os.path.dirname(shutil.which("ansible-playbook", path=env["PATH"])),
                                         "ansible-playbook"), "-i", "localhost,",
                            os.path.join(ROOT, "playbooks", "merge_reports.yml"), "-e", "merge_dest=%s" % merged_dir,
                            "-e", "merge_glob=%s/metnos-audit-*.json" % reports],
                           cwd=away, env=env, capture_output=True, text=True, timeout=600)
    out = merge.stdout + merge.stderr
    assert "[WARNING]" not in out and "merged %d report(s)" % (sets + 1) in out, out[-3000:]
    with open(os.path.join(merged_dir, "latest.json")) as handle:
        doc = json.load(handle)
    assert [h["host"] for h in doc["hosts"]] == ["alias-a"] and "change" not in doc["hosts"][0]
