"""Convergence does not depend on a lost notification (issue 52 item 5), for real: the bwrap_host role's sysctl
remediation against a real kernel sysctl. This machine's own user.max_user_namespaces is not writable here (a
container: EACCES), so the role runs inside a user namespace of its own (unshare -U -r, entered with nsenter for
each step), where the kernel keeps a separate, writable user.max_user_namespaces: the same sysctl(8), the same
/proc/sys file, the kernel's own view. The first run writes the drop-in (into a temp folder) and applies it; the
kernel's value is then set back, which is what a run killed after the file task left (the file written, its apply
lost). The rerun - the file unchanged - compares the kernel's live value with the wanted one, applies the drop-in
and says what it healed; the run after it changes nothing. No backup is left next to the drop-in (one that
backup: true left is removed; an admin's other file is kept)."""
import os
import re
import subprocess
import time

from conftest import ROOT, ansible_env, ansible_tool

PLAY = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: metnos.sandbox.bwrap_host
        tasks_from: remediate
"""
KNOB = "/proc/sys/user/max_user_namespaces"


def inside(holder, *argv):
    """Run ``argv`` in the holder's user namespace (as its root)."""
    return subprocess.run(["nsenter", "--user", "--target", str(holder.pid)] + list(argv), capture_output=True,
                          text=True, env=ansible_env(), cwd=ROOT, timeout=600)


def live(holder):
    return int(inside(holder, "cat", KNOB).stdout)


def set_live(holder, value):
    assert inside(holder, "sh", "-c", "echo %d > %s" % (value, KNOB)).returncode == 0


def changed(stdout):
    return int(re.search(r"changed=(\d+)", stdout).group(1))


def test_a_lost_apply_is_healed_by_the_rerun(tmp_path):
    holder = subprocess.Popen(["unshare", "--user", "--map-root-user", "sleep", "600"])
    try:
        run(holder, tmp_path)
    finally:
        holder.kill()
        holder.wait()


def run(holder, tmp_path):
    time.sleep(0.2)
    before = live(holder)
    wanted = 15000
    assert before != wanted
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    drop_in = tmp_path / "sysctl.d" / "99-zz-metnos-bwrap.conf"
    drop_in.parent.mkdir()
    backup = drop_in.parent / (drop_in.name + ".4242.2026-12-01@10:00:00~")     # what backup: true used to leave
    backup.write_text("user.max_user_namespaces = 1\n")
    admins = drop_in.parent / (drop_in.name + ".orig~")                       # not the role's: kept
    admins.write_text("")
    playbook = [ansible_tool("ansible-playbook"), str(play), "-e", "bwrap_host_sysctl_remediation=true",
                "-e", "bwrap_host_sysctl_file=%s" % drop_in, "-e", "bwrap_host_max_user_namespaces=%d" % wanted]
    first = inside(holder, *playbook)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert live(holder) == wanted                                       # applied by the first run
    assert "user.max_user_namespaces = %d" % wanted in drop_in.read_text()
    set_live(holder, before)                                            # the apply a killed run lost
    assert live(holder) == before                                       # canary: the kernel holds the old value
    second = inside(holder, *playbook)
    assert second.returncode == 0, second.stdout[-3000:]
    assert live(holder) == wanted, second.stdout[-3000:]                # healed although the file did not change
    assert "healed: the kernel held user.max_user_namespaces=%d (wanted %d)" % (before, wanted) in second.stdout
    third = inside(holder, *playbook)
    assert third.returncode == 0 and changed(third.stdout) == 0, third.stdout[-3000:]
    assert sorted(os.listdir(str(drop_in.parent))) == [drop_in.name, admins.name]   # no backup piled up or left
