# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a killed package-manager run left on the host, and its heal (issue 52: nothing half-applied). The
bwrap_host role asks before it installs (library/bwrap_package_heal.py); check mode only says it.

- apt: a dpkg killed mid-run (a power loss, an OOM kill) leaves its journal (numbered files in
  /var/lib/dpkg/updates) and packages half-installed, unpacked or half-configured; every later apt run then
  stops with "dpkg was interrupted, you must manually run 'dpkg --configure -a'". The heal is that command; a
  half-installed package is installed again by the role's apt task that follows (apt reinstalls it).
- pacman: a pacman killed mid-run leaves /var/lib/pacman/db.lck (libalpm creates it with O_EXCL and holds it open
  until the transaction ends); every later pacman run stops with "unable to lock database". The lock is stale
  when no process on the host holds it open: then it is removed (root's file in root's folder, not a link);
  held, it is a refusal naming the holders.
- dnf and dnf5: nothing to heal. rpm's database lock is an fcntl lock the kernel drops with the process, and
  dnf's own lock files hold a pid that dnf checks itself; a transaction killed mid-way is completed by the
  role's install (rpm installs the package again over the files it left; measured on the dnf test host). A
  temporary file rpm was writing when killed ("/usr/bin/bwrap;<hex>") is left; nothing here removes it.

Pure Python, no Ansible imports; nothing here opens a file (lstat, listdir, readlink and stat of /proc links).
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import stat
from typing import Dict, List, Optional, Sequence, Tuple

from .bwrap import Runner

DPKG_UPDATES = "/var/lib/dpkg/updates"
PACMAN_LOCK = "/var/lib/pacman/db.lck"
DPKG_HEAL = ["dpkg", "--configure", "-a"]
# apt and dpkg hold these open (with their fcntl locks) while they run: a journal beside a holder is a live run's.
DPKG_LOCKS = ("lock-frontend", "lock")           # in dpkg's admin folder, beside updates/
# dpkg-query's db:Status-Status of a package a killed dpkg left for `dpkg --configure -a` to finish.
DPKG_UNFINISHED = ("unpacked", "half-configured", "triggers-awaited", "triggers-pending")
DPKG_STATES = ["dpkg-query", "-W", "-f=${db:Status-Status}\t${binary:Package}\n"]
MANAGERS = ("apt", "dnf", "dnf5", "pacman", "package")


class HealError(Exception):
    """What cannot be healed here, said with the command that heals it by hand."""


def dpkg_journal(folder: str = DPKG_UPDATES) -> List[str]:
    """dpkg's journal entries (files named by digits alone) a killed dpkg left; [] when there is none. A folder
    that cannot be listed is an error (unknown is not 'nothing left')."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise HealError("cannot list %s (%s): check it with ls -la %s" % (folder, exc.strerror, folder)) from exc
    return sorted(name for name in names if name.isdigit())


def dpkg_unfinished(query_stdout: str) -> List[str]:
    """``dpkg-query -W -f='${db:Status-Status}\\t${binary:Package}\\n'`` -> 'package (state)' of each package a
    killed dpkg left unpacked, half-configured or waiting on triggers, in the order listed."""
    found = []
    for line in query_stdout.splitlines():
        status, _tab, package = line.partition("\t")
        if status in DPKG_UNFINISHED and package:
            found.append("%s (%s)" % (package, status))
    return found


def apt_left(run: Runner, folder: str = DPKG_UPDATES, proc: str = "/proc") -> List[str]:
    """What a killed dpkg left: its journal and the packages it did not finish ([] when nothing, and while apt
    or dpkg runs: a live run holds dpkg's locks, and the role's apt task waits for it)."""
    if [pid for lock in DPKG_LOCKS for pid in lock_holders(os.path.join(os.path.dirname(folder), lock), proc)]:
        return []
    left = []
    journal = dpkg_journal(folder)
    if journal:
        left.append("dpkg's journal of an interrupted run (%d entr%s in %s)"
                    % (len(journal), "y" if len(journal) == 1 else "ies", folder))
    rc, out, err = run(DPKG_STATES)
    if rc != 0:
        raise HealError("%s failed (%d): %s" % (" ".join(DPKG_STATES), rc, err.strip()[:400]))
    unfinished = dpkg_unfinished(out)
    if unfinished:
        left.append("packages dpkg did not finish: %s" % ", ".join(unfinished))
    return left


def lock_holders(lock: str, proc: str = "/proc") -> List[int]:
    """The pids of the processes that hold ``lock`` open (every /proc/<pid>/fd link stat'ed and compared with
    the lock's device and inode). A process whose descriptors cannot be read counts as a holder (unknown is
    never 'free')."""
    try:
        wanted = os.lstat(lock)
    except FileNotFoundError:
        return []
    holders = []
    for pid in sorted((name for name in os.listdir(proc) if name.isdigit()), key=int):
        folder = os.path.join(proc, pid, "fd")
        try:
            fds = os.listdir(folder)
        except FileNotFoundError:
            continue                                    # the process ended
        except OSError:
            holders.append(int(pid))
            continue
        for fd in fds:
            try:
                seen = os.stat(os.path.join(folder, fd))
            except OSError:
                continue                                # closed since listed
            if (seen.st_dev, seen.st_ino) == (wanted.st_dev, wanted.st_ino):
                holders.append(int(pid))
                break
    return holders


def stale_lock(lock: str = PACMAN_LOCK, proc: str = "/proc") -> Optional[str]:
    """The pacman lock when it is there and stale (root's regular file in a folder only root can write, no
    process holding it), None when there is no lock. A held lock, or one root must not touch, is a HealError."""
    try:
        info = os.lstat(lock)
    except FileNotFoundError:
        return None
    folder = os.lstat(os.path.dirname(lock))
    fix = "check that no pacman runs (ps -C pacman), then: rm %s" % lock
    if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or folder.st_uid != 0 or folder.st_mode & 0o022:
        raise HealError("%s is not root's regular file in a folder only root can write (mode %o, owner uid %d; "
                        "folder owner uid %d, mode %o): not removed; %s"
                        % (lock, stat.S_IMODE(info.st_mode), info.st_uid, folder.st_uid,
                           stat.S_IMODE(folder.st_mode), fix))
    holders = lock_holders(lock, proc)
    if holders:
        raise HealError("%s is held by pid %s (a package manager is running): wait for it to end, or if it "
                        "hangs, ps -p %s -o pid,args" % (lock, ", ".join(map(str, holders)),
                                                         ",".join(map(str, holders))))
    return lock


def left_behind(manager: str, run: Runner, paths: Optional[Dict[str, str]] = None) -> List[str]:
    """What a killed run of ``manager`` left on this host, each said in one line; [] when nothing."""
    where = dict({"dpkg_updates": DPKG_UPDATES, "pacman_lock": PACMAN_LOCK, "proc": "/proc"}, **(paths or {}))
    if manager == "apt":
        return apt_left(run, where["dpkg_updates"], where["proc"])
    if manager == "pacman":
        lock = stale_lock(where["pacman_lock"], where["proc"])
        return ["a stale pacman lock %s (no process holds it: a killed pacman left it)" % lock] if lock else []
    if manager in MANAGERS:
        return []
    raise HealError("unknown package manager %r (one of: %s)" % (manager, ", ".join(MANAGERS)))


def heal(manager: str, run: Runner, paths: Optional[Dict[str, str]] = None) -> Tuple[List[str], List[str]]:
    """Heal what ``left_behind`` found: (what was left, what was done), each said in one line. What is still
    left after the heal is a HealError naming the command to run by hand."""
    where = dict({"dpkg_updates": DPKG_UPDATES, "pacman_lock": PACMAN_LOCK, "proc": "/proc"}, **(paths or {}))
    left = left_behind(manager, run, where)
    if not left:
        return [], []
    if manager == "pacman":
        lock = stale_lock(where["pacman_lock"], where["proc"])
        if lock:
            os.unlink(lock)
        return left, ["removed the stale lock %s" % where["pacman_lock"]]
    rc, out, err = run(DPKG_HEAL)
    still = apt_left(run, where["dpkg_updates"], where["proc"])
    if rc != 0 or still:
        raise HealError("%s ended %d (%s); still left: %s. Run it by hand: %s"
                        % (" ".join(DPKG_HEAL), rc, (err or out).strip()[-400:], "; ".join(still) or "nothing",
                           " ".join(DPKG_HEAL)))
    return left, ["ran %s" % " ".join(DPKG_HEAL)]


def would_do(manager: str) -> List[str]:
    """What ``heal`` would do for ``manager`` (check mode says it, does nothing)."""
    return ["would remove the stale lock"] if manager == "pacman" else ["would run %s" % " ".join(DPKG_HEAL)]


def sentence(left: Sequence[str], done: Sequence[str]) -> str:
    """One line: what was left, what was done."""
    return "%s; %s" % ("; ".join(left), "; ".join(done))
