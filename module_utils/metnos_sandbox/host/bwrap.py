# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runners the core is given (a command run in the C locale: (rc, stdout, stderr) as text), and bwrap
located and inspected: where it is on a PATH (and which PATH entries are unsafe), its version, the options
its --help lists, the facts of its file, the smoke test's argv.

Running it is bwrap_run's, classifying its failures bwrap_errors', the package that owns it package_owner's,
its options' arity bwrap_options'.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
import signal
import stat
import subprocess
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..base import owners, paths

if TYPE_CHECKING:                     # annotations only (typing.Protocol: Python 3.8+ at check time)
    from typing import IO, Protocol

    class Child(Protocol):
        """What the runners use of a process they started: a ``subprocess.Popen`` (bytes), or the probe's forked
        reaper (probe/reaper.py ``Forked``)."""

        @property
        def pid(self) -> int: ...

        @property
        def returncode(self) -> Optional[int]: ...

        @property
        def stdin(self) -> Optional[IO[bytes]]: ...

        def poll(self) -> Optional[int]: ...

        def wait(self, timeout: Optional[float] = None) -> int: ...

# A runner: argv -> (rc, stdout, stderr) as text. The core calls a runner it is handed with argv alone (what to
# run it with is the runner's: its environment, its time-out); default_runner also takes env= and timeout=.
Runner = Callable[[Sequence[str]], Tuple[int, str, str]]

C_ENV = {"LANGUAGE": "C", "LC_ALL": "C", "LANG": "C"}


# Options the server profile and the probe rely on (R-BASE-6, R-BASE-7, probe).
REQUIRED_FEATURES = (
    "--unshare-user", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent",
    "--ro-bind", "--bind", "--proc", "--dev", "--tmpfs", "--symlink", "--chdir",
    "--json-status-fd",
)


# --------------------------------------------------------------------------- run

def default_runner(argv: Sequence[str], env: Optional[Mapping[str, str]] = None,
                   timeout: float = 30) -> Tuple[int, str, str]:
    """Run argv, return (rc, stdout, stderr) as text. Never raises for a missing binary."""
    full_env = dict(os.environ)
    full_env.update(C_ENV)
    if env:
        full_env.update(env)
    try:
        # The core runs without Ansible too (the audit payload, tests): never AnsibleModule.run_command.
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                              env=full_env, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return 127, "", str(exc)
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"))


def bounded_runner(seconds: float) -> Runner:
    """A runner that ends what it started after ``seconds``: the command in a session of its own, the whole
    session killed on time-out (a child it left behind holding the pipes included); (124, '', why) then."""
    def run(argv: Sequence[str]) -> Tuple[int, str, str]:
        full_env = dict(os.environ, **C_ENV)
        try:
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                                    stderr=subprocess.PIPE, env=full_env, start_new_session=True)
        except OSError as exc:
            return 127, "", str(exc)
        try:
            out, err = proc.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait()
            return 124, "", "timed out after %s s" % seconds
        return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    return run


def module_runner(module: Any) -> Runner:
    """A runner (argv -> (rc, stdout, stderr)) over AnsibleModule.run_command, with a C locale and no time-out
    (run_command has none: a command that may hang is run with bounded_runner)."""
    def run(argv: Sequence[str]) -> Tuple[int, str, str]:
        rc, out, err = module.run_command(argv, environ_update=C_ENV)
        return rc, out, err
    return run


def kill_group(proc: Child) -> None:
    """SIGKILL to the process group ``proc`` leads (it was started in a session of its own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


# --------------------------------------------------------------------------- PATH

def split_path(path_text: Optional[str]) -> List[str]:
    """PATH entries in order. An empty entry means the current directory (bash(1))."""
    if path_text is None:
        return []
    return path_text.split(":")


def unsafe_entries(path_text: Optional[str]) -> List[Dict[str, Any]]:
    """Empty, '.' and relative PATH entries, with their index."""
    out = []
    for index, entry in enumerate(split_path(path_text)):
        if entry == "" or not entry.startswith("/"):
            out.append({"index": index, "entry": entry,
                        "reason": "empty entry means the current directory" if entry == ""
                        else "relative entry depends on the current directory"})
    return out


def entry_directory(entry: str, cwd: Optional[str] = "/") -> str:
    """The directory execvp searches for one PATH entry. Relative and empty entries are resolved against
    ``cwd`` (they *are* used by execvp and by Python's shutil.which; ``unsafe_entries`` reports them). An
    entry with ``..`` is resolved as the kernel resolves it when execvp runs a file there: after a symlink,
    ``..`` is the parent of the link's target, not the lexical parent (``os.path.normpath`` alone would name
    another directory); other symlinks stay as written (the kernel follows them at each lookup). A leading
    '//' is '/' (Linux gives it no other meaning; POSIX lets normpath keep it, and a walk up by dirname()
    would never reach '/')."""
    directory = entry or "."
    if not directory.startswith("/"):
        directory = os.path.join(cwd or "/", directory)
    if ".." in directory.split("/"):
        return os.path.realpath(directory)
    directory = os.path.normpath(directory)
    return "/" + directory.lstrip("/") if directory.startswith("//") else directory


def path_candidates(name: str, path_text: Optional[str],
                    cwd: Optional[str] = "/") -> Iterator[Tuple[str, os.stat_result]]:
    """(path, stat) of each regular file called ``name`` along PATH, in execvp order, each entry's directory
    as entry_directory() gives it."""
    for entry in split_path(path_text):
        candidate = os.path.normpath(os.path.join(entry_directory(entry, cwd), name))
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            yield candidate, st


def which(name: str, path_text: Optional[str], cwd: Optional[str] = "/") -> Optional[str]:
    """Resolve ``name`` through ``path_text`` as execvp would, for the current user; None if absent."""
    for candidate, _st in path_candidates(name, path_text, cwd):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


# --------------------------------------------------------------------------- binary

def parse_version(text: Optional[str]) -> Optional[str]:
    """'bubblewrap 0.8.0' -> '0.8.0'; None when not recognised."""
    match = re.search(r"bubblewrap\s+(\d+(?:\.\d+)+)", text or "")
    return match.group(1) if match else None


def version_tuple(version: Optional[str]) -> Tuple[int, ...]:
    if not version:
        return ()
    return tuple(int(p) for p in re.findall(r"\d+", version))


def parse_features(help_text: Optional[str]) -> List[str]:
    """Every option that 'bwrap --help' lists, sorted."""
    found = set()
    for line in (help_text or "").splitlines():
        match = re.match(r"^\s+(--[a-z0-9][a-z0-9-]*)", line)
        if match:
            found.add(match.group(1))
    return sorted(found)


# Binding an open descriptor (upstream 0.10.0; backported by Debian to 0.8.0-2+deb12u1 and 0.4.1, and to
# 0.6.3 for CVE-2024-42472): detected from --help, never from the version.
FD_BIND_FEATURES = ("--bind-fd", "--ro-bind-fd")
_HELP: Dict[Tuple[str, int, int, int, int], Optional[FrozenSet[str]]] = {}


def help_features(path: Optional[str]) -> Optional[FrozenSet[str]]:
    """The options ``PATH --help`` lists, asked once per binary (its device, inode, size and mtime);
    None when there is no such binary, it is not root's alone (base/owners.py: then it is not run) or it does
    not answer."""
    if not path or not os.path.isabs(path) or owners.as_root(path):     # root runs only what root owns
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    key = (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _HELP:
        rc, out, err = default_runner([path, "--help"], timeout=10)
        found = parse_features(out + "\n" + err)
        _HELP[key] = frozenset(found) if rc == 0 and found else None
    return _HELP[key]


def missing_features(features: Sequence[str], required: Sequence[str] = REQUIRED_FEATURES) -> List[str]:
    have = set(features)
    return [f for f in required if f not in have]


def file_facts(path: str) -> Dict[str, Any]:
    """Owner, mode, setuid and writability of the binary and of every directory that decides which file
    ``path`` is: its real parents up to /, then every other directory a name is looked up in on the way
    (paths.lookup: the directories holding each link followed - whoever may change one of them can point
    ``path`` at another file)."""
    st = os.stat(path)
    real = os.path.realpath(path)
    problems: List[str] = []
    chain = [real] + list(paths.ancestors(real))
    others = [d for d in reversed(paths.lookup(path).dirs) if d not in chain]
    for current in chain + others:
        try:
            cst = os.stat(current)
        except OSError:
            break
        where = " (on the way to %s)" % path if current in others else ""
        if cst.st_uid != 0:
            problems.append("%s is owned by uid %d, not root%s" % (current, cst.st_uid, where))
        if cst.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (
                stat.S_ISDIR(cst.st_mode) and cst.st_mode & stat.S_ISVTX and cst.st_uid == 0):
            problems.append("%s is writable by group or others (mode %04o)%s"
                            % (current, stat.S_IMODE(cst.st_mode), where))
    return {
        "path": path,
        "realpath": real,
        "owner_uid": st.st_uid,
        "group_gid": st.st_gid,
        "mode": "%04o" % stat.S_IMODE(st.st_mode),
        "setuid": bool(st.st_mode & stat.S_ISUID),
        "ownership_problems": problems,
    }


def smoke_argv(bwrap_path: str, true_path: str = "/bin/true") -> List[str]:
    """The smoke test: the server profile's namespace flags around a no-op."""
    return [bwrap_path, "--unshare-user", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--json-status-fd", "{status_fd}", "--", true_path]
