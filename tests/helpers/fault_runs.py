"""Running and interrupting real processes in the fault suite (tests/system/test_faults.py): the audit and
site.yml commands, local fleets with a hanging interpreter, waiting for a play's output, telling a live process
from a zombie, killing a whole run, filling a folder, and a user namespace of this machine's kernel where root's
sysctl user.max_user_namespaces is writable (this machine's own is not: a container, EACCES), entered with
nsenter for each step."""
import os
import re
import signal
import subprocess
import sys
import time

from helpers.ansible_run import ansible_env, ansible_tool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as handle:        # a zombie is dead: its parent has not reaped it yet
        return handle.read().rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(path, words, proc, seconds=120, after=""):
    """Until the file holds every word (the play's output) after the text ``after`` (a task's header: an earlier
    task's "ok: [host]" does not count), or fail with what it holds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        text = path.read_text() if path.exists() else ""
        text = text[text.index(after):] if after in text else ""
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


def descendants(root):
    """The pids below ``root`` (the parent links of /proc/*/stat at this moment)."""
    children = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(pid))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def kill_run(proc, word):
    """SIGKILL a whole ansible-playbook run at once, as the OOM killer or a stopped container does. Its whole
    process tree is frozen first (SIGSTOP, until no new descendant appears: a worker's module process, in a
    session of its own, would otherwise go on and finish the step after the kill), then killed; then anything
    still holding ``word`` (a path of this test) in its command line, by pid; waits until none is left."""
    frozen = set()
    for _round in range(50):
        new = (descendants(proc.pid) | {proc.pid}) - frozen
        if not new:
            break
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        frozen |= new
    for pid in frozen:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
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


AUDIT = os.path.join(ROOT, "playbooks", "audit.yml")
HANG = """#!/bin/sh
echo $$ > %(pids)s
sleep 600 &
echo $! >> %(pids)s
wait
exec %(python)s "$@"
"""
FINISHED = ("fast-1", "fast-2")
QUIET = ["-e", "metnos_audit_probe=false", "-e", '{"metnos_audit_manifests": [], "metnos_audit_unit": ""}']


def audit_command(inv, dest):
    return [ansible_tool("ansible-playbook"), AUDIT, "-i", str(inv), "-e", "metnos_audit_dest=%s" % dest] + QUIET


def inventory(path, names):
    path.write_text("all:\n  hosts:\n" + "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (name, sys.executable)
        for name in names))
    return str(path)


def start_audit(inv, dest, *extra):
    return subprocess.Popen(audit_command(inv, dest) + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, env=ansible_env())


def hanging_interpreter(tmp_path):
    """The file the hanging interpreter writes its pid and its child's to, and the interpreter (a script)."""
    pids = tmp_path / "pids"
    hang = tmp_path / "hang-python"
    hang.write_text(HANG % {"pids": pids, "python": sys.executable})
    hang.chmod(0o755)
    return pids, hang


def hung_fleet(tmp_path):
    """An inventory of two plain aliases and one whose interpreter hangs; the file its pids are written to."""
    pids, hang = hanging_interpreter(tmp_path)
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n" + "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (name, python)
        for name, python in ((FINISHED[0], sys.executable), ("hung", hang), (FINISHED[1], sys.executable))))
    return inv, pids


def printed_json(stdout):
    """The JSON report's path as the run printed it (the fleet summary's "reports written ..." line)."""
    for word in stdout.replace('"', " ").replace(",", " ").split():
        if word.endswith(".json") and "metnos-audit-" in word:
            return word
    raise AssertionError("no report path printed:\n" + stdout[-3000:])


def fill(folder, leave):
    """Fill ``folder``'s filesystem until ``leave`` bytes stay free (a real full disk)."""
    stat = os.statvfs(str(folder))
    size = stat.f_bavail * stat.f_frsize - leave
    with open(str(folder / "filler"), "wb") as handle:
        handle.write(b"\0" * size)
    return folder / "filler"


def big_fleet():
    return dict(("host-%03d" % i, {"unreachable": True, "msg": "x" * 200}) for i in range(200))


SITE = os.path.join(ROOT, "playbooks", "site.yml")


def site_command(profiles):
    return [ansible_tool("ansible-playbook"), SITE, "-e", "metnos_sandbox_profile_dir=%s" % profiles]


def pages(text):
    return -(-len(text.encode("utf-8")) // 4096)
