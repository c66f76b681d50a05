"""The second hostile set (tests/corpus/hostile_bwrap.py) in real bwrap, as root and as nobody.

- Every profile the set accepts runs, and from inside the signed executor's code is the signed one,
  /etc, /proc and the runtime are the host's, no read-only base tree can be written; from outside,
  nothing in them changed (zero profiles weaker than declared).
- Each class's refusal is shown needed: with it mutated away, the profile renders and the sandbox
  reaches more than the manifest declares - the evidence gathered from inside and looked up on the host:
  destinations mounted at their declared paths (what main rendered) shadow the executor's code, /etc,
  /proc and the runtime; writes land outside the writable roots and in the bwrap binary's folder; a
  second name of a file is read through a credential grant; a nested destination swapped between the
  launcher and bwrap lands on the runtime; a procfs and a cgroup2 below a writable grant come along
  writable (tests/helpers/pseudo_mounts.py, in a private mount namespace).
- Replies reach the play: a lone surrogate in an argument value (nested or a top-level option, at -vvv too)
  and an undecodable link target are refused with their codes through ansible-playbook.
The set's refusals themselves, face by face: tests/unit/test_hostile_bwrap.py.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import uuid

import pytest
import yaml

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import paths
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    descriptors,
    granters,
    host_context,
    invariants,
    mountmodel,
    renderer,
)
from conftest import ROOT, ansible_env, ansible_tool
from corpus import hostile_bwrap
from helpers import pseudo_mounts, trees

USERS = (None, "nobody")
PAYLOAD = r'''
import json, os, sys
spec = json.loads(sys.argv[1])
out = {"writes": {}}
for key in ("own", "runtime", "etc"):
    try:
        with open(spec[key]) as handle:
            out[key] = handle.read()
    except OSError as exc:
        out[key] = "error: " + exc.strerror
out["proc"] = os.path.exists("/proc/self/status")
for folder in spec["write"]:
    try:
        fd = os.open(os.path.join(folder, spec["name"]), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        out["writes"][folder] = "written"
    except OSError as exc:
        out["writes"][folder] = exc.strerror
for path in spec.get("stat", []):
    try:
        out.setdefault("stat", {})[path] = os.stat(path).st_ino
    except OSError as exc:
        out.setdefault("stat", {})[path] = exc.strerror
sys.stdout.write(json.dumps(out))
'''
ACTIVE = {"bwrap_available": True, "bwrap_path": shutil.which("bwrap") or "/usr/bin/bwrap",
          "disabled_via_env": False, "active": True}


@pytest.fixture(scope="module")
def corpus():
    base = tempfile.mkdtemp(prefix="metnos-hb-", dir="/var/tmp")       # reachable by nobody (0755 parents)
    root, host, entries = hostile_bwrap.materialize(base)
    yield root, dict((e.id, (e, host_, inv, bwrap)) for e, _path, host_, inv, bwrap in entries)
    shutil.rmtree(base, ignore_errors=True)


def render(entry, host, inv, bwrap=None, root=None):
    manifest = yaml.safe_load(entry.content({"@ROOT@": root, "@DIGEST@": "sha256:" + "0" * 64}))
    status = dict(ACTIVE, bwrap_path=bwrap) if bwrap else ACTIVE
    return renderer.render_safe(manifest, host_context.HostContext(host), inv, status)


def spec_for(root):
    name = ".metnos-hb-" + uuid.uuid4().hex[:8]
    return {"own": root + "/executors/ex/main.py", "runtime": root + "/rt/runtime/metnos.py", "etc": "/etc/hostname",
            "name": name, "write": [root + "/executors/ex", root + "/rt/runtime", "/etc", root + "/pyinst/bin",
                                    root + "/tools/bin"]}


def run(prof, spec, user):
    return trees.run_inside(prof["argv"], PAYLOAD, spec, user, descriptors=prof["descriptors"])


def landed(spec):
    """The payload's files found on the host, outside (looked up after the run), then removed."""
    out = []
    for folder in spec["write"]:
        path = os.path.join(folder, spec["name"])
        if os.path.lexists(path):
            out.append(folder)
            os.unlink(path)
    return out


def _host_etc():
    with open("/etc/hostname") as handle:
        return handle.read()


ACCEPTED = [e.id for e in hostile_bwrap.CORPUS if e.expect == "wrapped"]


@pytest.mark.parametrize("entry_id", ACCEPTED)
@pytest.mark.rule("R-SEC-1")
def test_accepted_profiles_give_no_more_than_declared(corpus, entry_id):
    root, entries = corpus
    entry, host, inv, _bwrap = entries[entry_id]
    prof = render(entry, host, inv, root=root)
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    for user in USERS:
        spec = spec_for(root)
        inside = run(prof, spec, user)
        assert inside["own"] == hostile_bwrap.SIGNED and inside["runtime"] == "# runtime\n", (user, inside)
        assert inside["etc"] == _host_etc() and inside["proc"] is True, (user, inside)
        assert set(inside["writes"].values()) <= {"Read-only file system", "Permission denied",
                                                  "No such file or directory"}, (user, inside)   # not even there
        assert landed(spec) == [], user


@pytest.fixture
def mounted_as_declared(monkeypatch):
    """What main rendered: every grant mounted at its declared path, by path (no mount model, no
    descriptor, no final check) - the mutation that shows each destination game for real."""
    original = granters.Mounts.add

    def add(self, kind, src, dest, rule, source):
        declared = re.search(r" \(declared as (.*)\)$", source)
        original(self, kind, src, declared.group(1) if declared else dest, rule, source)
    monkeypatch.setattr(granters.Mounts, "add", add)
    return monkeypatch


@pytest.mark.rule("R-BASE-4")
def test_the_mount_model_refuses_declared_destinations_in_both_layers(corpus, mounted_as_declared):
    root, entries = corpus
    entry, host, inv, _bwrap = entries["dest_executor_shadowed_readonly"]
    assert render(entry, host, inv, root=root)["refusal"] == "mount_dest_differs"      # the renderer's model
    mounted_as_declared.setattr(renderer, "model_findings", lambda ordered, stats: [])
    assert render(entry, host, inv, root=root)["refusal"] == "profile_invariant_violated"   # the final check's


# What each destination game reaches once mounted at its declared path: (key, what the payload then sees).
SHOWN = {"dest_executor_shadowed_readonly": ("own", hostile_bwrap.ATTACKER),
         "dest_executor_shadowed_writable": ("own", hostile_bwrap.ATTACKER),
         "dest_alias_chain": ("own", hostile_bwrap.ATTACKER),
         "dest_runtime_shadowed_writable": ("runtime", "# attacker's runtime\n"),
         "dest_etc_shadowed_writable": ("etc", "error: No such file or directory"),
         "dest_proc_covered": ("proc", False)}


@pytest.mark.parametrize("entry_id", sorted(SHOWN))
@pytest.mark.rule("R-BASE-4")
def test_destination_games_reach_more_when_mounted_as_declared(corpus, mounted_as_declared, entry_id):
    root, entries = corpus
    entry, host, inv, _bwrap = entries[entry_id]
    mounted_as_declared.setattr(renderer, "model_findings", lambda ordered, stats: [])
    mounted_as_declared.setattr(mountmodel, "unstable_folder", lambda path, stats: None)        # by path, as main did
    mounted_as_declared.setattr(invariants, "check_invariants", lambda *a, **k: [])
    weak = render(entry, host, inv, root=root)
    assert weak["decision"] == "wrapped" and not weak["descriptors"], weak["diagnostics"]
    key, seen = SHOWN[entry_id]
    for user in USERS:
        spec = spec_for(root)
        inside = run(weak, spec, user)
        landed(spec)
        assert inside[key] == seen, (user, inside)
        if entry_id.endswith("_writable") and entry_id != "dest_etc_shadowed_writable":
            folder = spec["own"] if key == "own" else spec["runtime"]
            assert inside["writes"][os.path.dirname(folder)] == "written", (user, inside)   # writable inside


@pytest.mark.rule("R-CAP-FS")
def test_writes_outside_the_writable_roots_are_refused_and_would_land(corpus, monkeypatch):
    root, entries = corpus
    entry, host, inv, _bwrap = entries["roots_write_09"]             # fs:write:@ROOT@/outside
    assert render(entry, host, inv, root=root)["refusal"] == "scope_outside_writable_roots"
    os.chmod(root + "/outside", 0o777)                                # the service user's own folder
    monkeypatch.setattr(host_context.HostContext, "writable", lambda self: paths.Roots(["/"]))          # the mutation
    weak = render(entry, host, inv, root=root)
    assert weak["decision"] == "wrapped", weak["diagnostics"]
    for user in USERS:
        spec = dict(spec_for(root), write=[root + "/outside"])
        inside = run(weak, spec, user)
        assert inside["writes"][root + "/outside"] == "written" and landed(spec) == [root + "/outside"], user


@pytest.mark.rule("R-BASE-4")
def test_the_bwrap_folder_is_read_only_whatever_the_roots_say(corpus, monkeypatch):
    root, entries = corpus
    entry, host, inv, bwrap = entries["engine_write_5"]              # fs:write:@ROOT@/tools/bin
    assert render(entry, host, inv, bwrap, root)["refusal"] == "scope_too_broad"
    os.chmod(root + "/tools/bin", 0o777)
    monkeypatch.setattr(host_context.HostContext, "_engine_trees", lambda self: [])                  # the mutation
    weak = render(entry, host, inv, bwrap, root)
    assert weak["decision"] == "wrapped", weak["diagnostics"]
    for user in USERS:
        spec = dict(spec_for(root), write=[root + "/tools/bin"])
        inside = run(weak, spec, user)
        # a file planted next to the bwrap every later sandbox runs (replacing it works the same way)
        assert inside["writes"][root + "/tools/bin"] == "written" and landed(spec) == [root + "/tools/bin"], user


@pytest.mark.rule("R-CAP-FS")
def test_the_link_limit_is_the_kernels(corpus):
    root, entries = corpus
    os.stat(root + "/data/c40/l0")                                   # 40 links: the kernel resolves it
    with pytest.raises(OSError) as info:
        os.stat(root + "/data/c41/l0")                               # 41: ELOOP, as the renderer says
    assert info.value.errno == 40
    for entry_id, want in (("chain_40_links_resolve", "wrapped"), ("chain_41_links", "scope_too_many_links"),
                           ("chain_1000_links", "scope_too_many_links"), ("chain_loop", "scope_too_many_links")):
        entry, host, inv, _bwrap = entries[entry_id]
        prof = render(entry, host, inv, root=root)
        assert (prof["refusal"] or prof["decision"]) == want, prof["diagnostics"]


@pytest.mark.rule("R-CAP-MAIL")
def test_a_credential_with_a_second_name_is_refused_and_would_read_another_file(corpus, monkeypatch):
    root, entries = corpus
    entry, host, inv, _bwrap = entries["link_credential_hard_link"]
    assert render(entry, host, inv, root=root)["refusal"] == "host_path_refused"
    monkeypatch.setattr(granters, "object_problem", lambda real, state: None)                     # the mutation
    weak = render(entry, host, inv, root=root)
    assert weak["decision"] == "wrapped", weak["diagnostics"]
    for user in USERS:
        spec = dict(spec_for(root), write=[], stat=[root + "/creds/mail/hl.json"])
        inside = run(weak, spec, user)
        # from inside, the credential is the data folder's file (its inode), which no account names
        assert inside["stat"][root + "/creds/mail/hl.json"] == os.stat(root + "/data/secret").st_ino, user


SWAP = r'''
import json, os, sys
ns = {"__name__": "metnos_descriptors"}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), ns)
words, descs, folder, target = json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4], sys.argv[5]
ns["install"](words, descs)              # the descriptors are open and proven ...
os.rename(folder, folder + ".orig")      # ... then a component on the destination's way is swapped
os.symlink(target, folder)
os.execv(words[0], words)
'''


@pytest.mark.rule("R-SEC-1")
def test_a_nested_destination_that_can_move_is_refused_and_would_land_on_the_runtime(corpus, monkeypatch):
    root, entries = corpus
    entry, host, inv, _bwrap = entries["stable_nested_destination"]
    assert render(entry, host, inv, root=root)["refusal"] == "mount_dest_unstable"
    nest = root + "/data/nest"
    for user in USERS:
        os.makedirs(nest + "/a/runtime", exist_ok=True)
        with open(nest + "/a/runtime/metnos.py", "w") as handle:
            handle.write("# swapped in\n")
        for path in (nest + "/a", nest + "/a/runtime"):
            os.chmod(path, 0o777)
        manifest = {"name": "ex", "origin": "t", "capabilities": ["fs:read:" + nest, "fs:write:%s/a/runtime" % nest]}
        monkeypatch.setattr(renderer, "model_findings",
                            lambda ordered, stats: [])                       # the mutation (both layers)
        monkeypatch.setattr(invariants, "check_invariants", lambda *a, **k: [])
        weak = renderer.render_safe(manifest, host_context.HostContext(host), {}, ACTIVE)
        monkeypatch.undo()
        assert weak["decision"] == "wrapped" and len(weak["descriptors"]) == 2, weak["diagnostics"]
        sep = weak["argv"].index("--")
        words = weak["argv"][:sep + 1] + ["/bin/cat", root + "/rt/runtime/metnos.py"]
        script = os.path.join(os.path.dirname(root), "swap.py")         # readable by nobody
        with open(script, "w") as handle:
            handle.write(SWAP)
        cmd = ["/usr/bin/python3", "-I", "-S", script, descriptors.__file__, json.dumps(words),
               json.dumps(weak["descriptors"]), nest + "/a", "../../rt"]
        if user:
            cmd = ["setpriv", "--reuid=%s" % user, "--regid=nogroup", "--clear-groups"] + cmd
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        finally:
            if os.path.islink(nest + "/a"):
                os.unlink(nest + "/a")
                os.rename(nest + "/a.orig", nest + "/a")
            shutil.rmtree(nest + "/a/runtime")
        # inside, the runtime is the attacker's folder, writable (bwrap's own check saw nothing wrong)
        assert proc.returncode == 0 and proc.stdout == "# swapped in\n", (user, proc.stdout, proc.stderr)


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare for a private mount namespace")
@pytest.mark.rule("R-BASE-2")
def test_pseudo_filesystems_below_scopes_every_face(tmp_path):
    os.chmod(str(tmp_path), 0o755)
    got = pseudo_mounts.run(str(tmp_path), "faces")
    for cid, faces in got.items():
        assert set(v for k, v in faces.items() if k != "expect") == {faces["expect"]}, (cid, faces)


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare for a private mount namespace")
@pytest.mark.rule("R-BASE-2")
def test_pseudo_filesystems_below_a_writable_scope_would_change_the_kernel():
    base = tempfile.mkdtemp(prefix="metnos-pm-", dir="/var/tmp")
    os.chmod(base, 0o755)
    try:
        got = pseudo_mounts.run(base, "real")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert got["refused"] == "scope_pseudo_filesystem" and got["mutated"] == "wrapped", got
    for user in ("root", "nobody"):
        assert got[user]["proc_is_procfs"] and got[user]["proc_writable"], (user, got)   # a writable procfs inside
        if got["cgroup2"]:
            # a cgroup created from inside exists in the host's hierarchy (kernel state changed)
            assert got[user]["cgroup"] == "created" and got[user]["host_sees_cgroup"], (user, got)


PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: a lone surrogate (an undecodable byte) in an argument value
      metnos.sandbox.sandbox_profile:
        manifest: {name: ex, origin: t, capabilities: ["fs:read:arg:p"], arguments: {p: {within: ["%(root)s/data/**"]}}}
        invocation: {arguments: {p: "{{ 'Yf9i' | b64decode }}"}}
        host: %(host)s
        discover_python_roots: false
        fail_on_refusal: false
      register: by_value
    - name: a link whose target is not valid UTF-8
      metnos.sandbox.sandbox_profile:
        manifest: {name: ex, origin: t, capabilities: ["fs:read:%(root)s/data/badlink"]}
        host: %(host)s
        discover_python_roots: false
        fail_on_refusal: false
      register: by_link
    - name: both refusals reached the play
      ansible.builtin.assert:
        that:
          - by_value.refusal == 'scope_nul'
          - by_link.refusal == 'scope_symlink_refused'
"""


@pytest.mark.rule("R-SCOPE-1")
def test_refusals_of_undecodable_input_reach_the_play(corpus, tmp_path):
    root, entries = corpus
    _entry, host, _inv, _bwrap = entries["roots_write_inside"]
    play = tmp_path / "play.yml"
    play.write_text(PLAY % {"root": root, "host": json.dumps(host)})
    proc = subprocess.run([ansible_tool("ansible-playbook"), str(play)], capture_output=True, text=True, cwd=ROOT,
                          env=ansible_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Refusing to deserialize" not in proc.stdout + proc.stderr


PLAY_TOP_LEVEL = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: a lone surrogate in a top-level string option (AnsibleModule logs each one before the module runs)
      metnos.sandbox.metnos_service_env:
        unit: "{{ 'Yf9i' | b64decode }}.service"
      register: by_unit
      ignore_errors: true
    - name: the same in the probe's unit
      metnos.sandbox.sandbox_probe:
        unit: "{{ 'Yf9i' | b64decode }}.service"
      register: by_probe_unit
      ignore_errors: true
    - name: the same in a user name
      metnos.sandbox.bwrap_facts:
        smoke_user: "{{ 'Yf9i' | b64decode }}"
      register: by_user
      ignore_errors: true
    - name: a refusal that fails the task, its message and the module_args (-vvv) echoing the value
      metnos.sandbox.sandbox_profile:
        manifest: {name: ex, origin: t, capabilities: ["fs:read:arg:p"], arguments: {p: {within: ["%(root)s/data/**"]}}}
        invocation: {arguments: {p: "{{ 'Yf9i' | b64decode }}"}}
        host: %(host)s
        discover_python_roots: false
      register: by_value
      ignore_errors: true
    - name: every refusal reached the play with its code
      ansible.builtin.assert:
        that:
          - by_unit.code == 'invalid_option'
          - by_probe_unit.code == 'invalid_option'
          - by_user.code == 'invalid_option'
          - by_value.refusal == 'scope_nul'
"""


@pytest.mark.rule("R-SCOPE-1")
def test_every_reply_stays_valid_utf8(corpus, tmp_path):
    """A lone surrogate in a top-level string option made AnsibleModule's own invocation log raise before the
    module ran ("'utf-8' codec can't encode character '\\udcff'", no code), and a reply echoing it (a failed
    task's message, the module_args Ansible adds at -vvv) was refused by the controller; through
    options.spec.utf8_module every face's refusal code reaches the play (mutation: utf8_module returning
    AnsibleModule itself fails this test with the encode error)."""
    root, entries = corpus
    _entry, host, _inv, _bwrap = entries["roots_write_inside"]
    play = tmp_path / "play.yml"
    play.write_text(PLAY_TOP_LEVEL % {"root": root, "host": json.dumps(host)})
    proc = subprocess.run([ansible_tool("ansible-playbook"), "-vvv", str(play)], capture_output=True, text=True,
                          cwd=ROOT, env=ansible_env())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Refusing to deserialize" not in out and "surrogates not allowed" not in out
