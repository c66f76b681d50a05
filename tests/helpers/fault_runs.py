"""Running and interrupting real processes in the fault suite (tests/system/test_faults.py): waiting for a
play's output, telling a live process from a zombie, and a user namespace of this machine's kernel where root's
sysctl user.max_user_namespaces is writable (this machine's own is not: a container, EACCES), entered with
nsenter for each step."""
import os
import re
import signal
import subprocess
import time

from helpers.ansible_run import ansible_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as handle:        # a zombie is dead: its parent has not reaped it yet
        return handle.read().rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(path, words, proc, seconds=120):
    """Until the file holds every word (the play's output), or fail with what it holds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        text = path.read_text() if path.exists() else ""
        if all(word in text for word in words):
            return
        time.sleep(0.2)
    raise AssertionError("never saw %s: %s" % (words, path.read_text()[-3000:] if path.exists() else ""))


def processes_with(word):
    """The live processes with ``word`` in their command line."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                if word.encode() in handle.read() and alive(int(pid)):
                    found.append(int(pid))
        except (OSError, ValueError):
            continue
    return found


def kill_run(proc, word):
    """SIGKILL a whole ansible-playbook run at once, as the OOM killer or a stopped container does: its process
    group, then its workers (sessions of their own: found by ``word``, a path of this test, in their command
    line), by pid; waits until none is left."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    end = time.monotonic() + 30
    while True:
        left = processes_with(word)
        if not left:
            return
        if time.monotonic() > end:
            raise AssertionError("still running after the kill: %s" % left)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


SYSCTL_PLAY = """- hosts: localhost
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
