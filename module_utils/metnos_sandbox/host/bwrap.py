# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Locate and inspect bwrap, run it for real, and classify what it says.

bwrap's stderr differs by version and distro patch (Debian rewrites the EPERM
text, 0.11.1 fixed its grammar, 0.12 reworded several), so classification is
by pattern, never by exact string. See shared/knowledge/BWRAP_FIELD_NOTES.md.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import re
import selectors
import signal
import stat
import subprocess
import time
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

# A runner: argv (and optional env=, timeout=) -> (rc, stdout, stderr) as text.
Runner = Callable[..., Tuple[int, str, str]]

# pump()'s watcher: (the bytes read so far by stream name, the pid) -> True once it has seen enough.
Watch = Callable[[Dict[str, bytes], int], bool]

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
    def run(argv: Sequence[str], env: Optional[Mapping[str, str]] = None,
            timeout: float = seconds) -> Tuple[int, str, str]:
        full_env = dict(os.environ, **C_ENV)
        full_env.update(env or {})
        try:
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                                    stderr=subprocess.PIPE, env=full_env, start_new_session=True)
        except OSError as exc:
            return 127, "", str(exc)
        try:
            out, err = proc.communicate(timeout=min(timeout, seconds))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            return 124, "", "timed out after %s s" % min(timeout, seconds)
        return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    return run


def module_runner(module: Any) -> Runner:
    """A runner (argv -> (rc, stdout, stderr)) over AnsibleModule.run_command, with a C locale."""
    def run(argv: Sequence[str], env: Optional[Mapping[str, str]] = None, timeout: float = 30) -> Tuple[int, str, str]:
        rc, out, err = module.run_command(argv, environ_update=C_ENV)
        return rc, out, err
    return run


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


def path_candidates(name: str, path_text: Optional[str],
                    cwd: Optional[str] = "/") -> Iterator[Tuple[str, os.stat_result]]:
    """(path, stat) of each regular file called ``name`` along PATH, in execvp order.

    Relative and empty entries are resolved against ``cwd`` (they *are* used by execvp and
    by Python's shutil.which; ``unsafe_entries`` reports them).
    """
    for entry in split_path(path_text):
        directory = entry or "."
        if not directory.startswith("/"):
            directory = os.path.join(cwd or "/", directory)
        candidate = os.path.normpath(os.path.join(directory, name))
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


def help_features(path: Optional[str], runner: Optional[Runner] = None) -> Optional[FrozenSet[str]]:
    """The options ``PATH --help`` lists, asked once per binary (its device, inode, size and mtime);
    None when there is no such binary or it does not answer."""
    if not path or not os.path.isabs(path):
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    key = (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _HELP:
        rc, out, err = (runner or default_runner)([path, "--help"], timeout=10)
        found = parse_features(out + "\n" + err)
        _HELP[key] = frozenset(found) if rc == 0 and found else None
    return _HELP[key]


def missing_features(features: Sequence[str], required: Sequence[str] = REQUIRED_FEATURES) -> List[str]:
    have = set(features)
    return [f for f in required if f not in have]


def file_facts(path: str) -> Dict[str, Any]:
    """Owner, mode, setuid and writability of the binary and its parents."""
    st = os.stat(path)
    real = os.path.realpath(path)
    problems = []
    current = real
    while True:
        try:
            cst = os.stat(current)
        except OSError:
            break
        if cst.st_uid != 0:
            problems.append("%s is owned by uid %d, not root" % (current, cst.st_uid))
        if cst.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (
                stat.S_ISDIR(cst.st_mode) and cst.st_mode & stat.S_ISVTX and cst.st_uid == 0):
            problems.append("%s is writable by group or others (mode %04o)"
                            % (current, stat.S_IMODE(cst.st_mode)))
        if current == "/":
            break
        current = os.path.dirname(current)
    return {
        "path": path,
        "realpath": real,
        "owner_uid": st.st_uid,
        "group_gid": st.st_gid,
        "mode": "%04o" % stat.S_IMODE(st.st_mode),
        "setuid": bool(st.st_mode & stat.S_ISUID),
        "ownership_problems": problems,
    }


# Which installed package owns a path, and its full revision. One query per package manager,
# run in the C locale (the runners set C_ENV), parsed by the functions below from the formats
# the tools print (sources read: dpkg's query tool, rpm lib/query.cc and its --queryformat,
# pacman src/pacman/query.c); tests/unit/test_package_facts.py holds the exact outputs.
RPM_OWNER_QF = "%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n"


# The package that ships bwrap on dpkg systems. Asked first because `dpkg-query -L PKG` reads one file
# list while `dpkg-query -S PATH` reads all of them (~7 ms against ~55 ms of CPU on a Debian 12 host);
# the answer is the same: a regular file is listed by one package at most. Anything else (another
# owner, a diversion) is answered by the full search.
DPKG_EXPECTED_OWNERS = ("bubblewrap",)
_DPKG_DIVERSION_NOTE = re.compile(r"(diverted by |locally diverted to: |package diverts others to: )")


def parse_dpkg_search(out: str, path: Optional[str] = None) -> Tuple[List[str], bool]:
    """``dpkg-query -S PATH`` -> (owners, diverted).

    Lines are ``pkg: /path``, ``pkg:arch: /path`` (Multi-Arch), ``pkg1, pkg2: /dir`` (a path in
    several packages) and, for a diverted file, ``diversion by X from: /path`` /
    ``diversion by X to: /path.distrib`` (or ``local diversion ...``) before the owners' line.
    With ``path``, only the lines for exactly that path count."""
    owners: List[str] = []
    diverted = False
    for line in out.splitlines():
        if line.startswith(("diversion by ", "local diversion ")):
            diverted = True
            continue
        names, _sep, listed = line.rpartition(": ")
        if not names or not listed.startswith("/") or (path is not None and listed.strip() != path):
            continue
        owners.extend(n.strip().split(":")[0] for n in names.split(","))   # 'pkg:arch' -> pkg
    return [o for o in owners if o], diverted


def parse_rpm_owner(out: str) -> Optional[Tuple[str, str]]:
    """``rpm -qf --qf RPM_OWNER_QF PATH`` -> (name, revision), or None.

    One ``NAME<TAB>EPOCH:VERSION-RELEASE`` line per owning package (two for multilib pairs: the
    first is taken); a zero epoch is dropped, as ``rpm -q`` prints it. A path nobody owns gives
    rc 1 and ``file PATH is not owned by any package`` on stdout, which is not in this format."""
    for line in out.splitlines():
        m = re.match(r"^([^\s]+)\t(\d+):(\S+-\S+)$", line)
        if m:
            epoch = m.group(2)
            return m.group(1), (m.group(3) if epoch == "0" else "%s:%s" % (epoch, m.group(3)))
    return None


_PACMAN_OWNED = re.compile(r"^(?P<path>/.*) is owned by (?P<name>\S+) (?P<version>\S+)$")


def parse_pacman_owner(out: str) -> Optional[Tuple[str, str]]:
    """``pacman -Qo PATH`` -> (name, revision), or None.

    ``%s is owned by %s %s``: the path with its directory resolved (pacman canonicalises the
    parent, so /bin/bwrap is reported as /usr/bin/bwrap), the package name and its version
    (``[epoch:]pkgver-pkgrel``). Colour codes are only added on a terminal. Nobody owning the
    path gives rc 1 and ``error: No package owns PATH`` on stderr."""
    for line in out.splitlines():
        m = _PACMAN_OWNED.match(line.rstrip())
        if m:
            return m.group("name"), m.group("version")
    return None


def _dpkg_diverted_by(path: str, runner: Runner) -> Optional[str]:
    """The package diverting ``path`` ('LOCAL' for a local diversion), or None."""
    rc, out, _err = runner(["dpkg-divert", "--listpackage", path])
    return out.strip() or None if rc == 0 else None


def _dpkg_owner(candidates: Sequence[str], runner: Runner) -> Tuple[Optional[str], Optional[str]]:
    """The dpkg package whose file is at the first of ``candidates`` (a path, its resolved path) that
    dpkg knows: (path, package) or (None, None).

    With a diversion, only the diverting package's own file stays at the path (the others' go to the
    diverted name): the owner is that package if it lists the path, nobody otherwise (a local file)."""
    for pkg in DPKG_EXPECTED_OWNERS:
        rc, out, _err = runner(["dpkg-query", "-L", pkg])
        lines = out.splitlines() if rc == 0 else []
        for path in candidates:
            # -L prints 'diverted by X to: ...' (or 'locally diverted to: ...') right after a diverted path
            if path in lines and not _DPKG_DIVERSION_NOTE.match((lines + [""])[lines.index(path) + 1]):
                return path, pkg
    for path in candidates:
        rc, out, _err = runner(["dpkg-query", "-S", path])
        owners, diverted = parse_dpkg_search(out, path) if rc == 0 else ([], False)
        if not owners:
            continue
        diverter = _dpkg_diverted_by(path, runner) if diverted else None
        if diverter is None:
            return path, owners[0]
        if diverter in owners:
            return path, diverter
        return path, None      # diverted away: the file at the path is a local one
    return None, None


def _dpkg_query(candidates: Sequence[str], runner: Runner) -> Optional[Tuple[str, Optional[str]]]:
    _path, name = _dpkg_owner(candidates, runner)
    if not name:
        return None
    rc, ver, _err = runner(["dpkg-query", "-W", "-f=${Version}", name])
    return name, (ver.strip().splitlines()[0] if rc == 0 and ver.strip() else None)


def _first_answer(argv: List[str], parse: Callable[[str], Optional[Tuple[str, str]]], candidates: Sequence[str],
                  runner: Runner) -> Optional[Tuple[str, str]]:
    for candidate in candidates:
        rc, out, _err = runner(argv + [candidate])
        found = parse(out) if rc == 0 else None
        if found:
            return found
    return None


def _rpm_query(candidates: Sequence[str], runner: Runner) -> Optional[Tuple[str, str]]:
    return _first_answer(["rpm", "-qf", "--qf", RPM_OWNER_QF], parse_rpm_owner, candidates, runner)


def _pacman_query(candidates: Sequence[str], runner: Runner) -> Optional[Tuple[str, str]]:
    return _first_answer(["pacman", "-Qo"], parse_pacman_owner, candidates, runner)


_PACKAGE_QUERIES = (("dpkg", "dpkg-query", _dpkg_query), ("rpm", "rpm", _rpm_query),
                    ("pacman", "pacman", _pacman_query))


def _tool_on(tool: str, search: str = "/usr/bin:/bin:/usr/sbin:/sbin") -> Optional[str]:
    return which(tool, search)


def package_facts(path: str, runner: Runner = default_runner,
                  tool_on: Callable[[str], Optional[str]] = _tool_on) -> Dict[str, Any]:
    """Distro package owning ``path``: name, full revision, manager. Empty when unowned.

    Asks every package manager present (dpkg, rpm, pacman, in that order; a Fedora laptop may
    also have dpkg-query), for the path as given and then resolved."""
    candidates = list(dict.fromkeys([path, os.path.realpath(path)]))
    for manager, tool, query in _PACKAGE_QUERIES:
        if not tool_on(tool):
            continue
        found = query(candidates, runner)
        if found:
            return {"manager": manager, "name": found[0], "revision": found[1]}
    return {}


# --------------------------------------------------------------------------- stderr

class Cause(object):
    __slots__ = ("cause", "pattern", "text", "remediation", "diagnostic")

    def __init__(self, cause: str, pattern: str, text: str, remediation: Sequence[str],
                 diagnostic: Optional[str] = None) -> None:
        self.cause = cause
        self.pattern = re.compile(pattern, re.I) if pattern else None
        self.text = text
        self.remediation = tuple(remediation)
        self.diagnostic = diagnostic  # a kernel-side code this cause points at


_USERNS_FIX = ["Check the userns_* diagnostics of this host (sysctls, AppArmor).",
               "In a container: allow unshare/clone(CLONE_NEWUSER) in its seccomp profile.",
               "In a systemd unit: RestrictNamespaces= must allow user, mnt, net, ipc, uts."]

# Order matters: first match wins.
CAUSES = (
    Cause("setuid_unsupported", r"setuid use of bubblewrap is not supported",
          "this bwrap build refuses to run setuid (0.12+, or built without support_setuid)",
          ["dpkg-statoverride --quiet --remove /usr/bin/bwrap || true", "chmod 0755 /usr/bin/bwrap",
           "Enable unprivileged user namespaces (see userns_* diagnostics)."], "bwrap_setuid"),
    Cause("setuid_option_refused", r"not permitted in setuid mode|doesn't work in setuid mode|"
          r"in setuid mode can be used only by root",
          "a profile option is refused by a setuid bwrap",
          ["Install a non-setuid bwrap (chmod 0755 /usr/bin/bwrap) or drop the option."], "bwrap_setuid"),
    Cause("userns_eperm", r"No permissions to creat(e|ing)( a)? new namespace",
          "creating a user namespace was refused (EPERM): kernel.unprivileged_userns_clone=0, a "
          "container's seccomp profile, or the unit's RestrictNamespaces=",
          _USERNS_FIX, "userns_disabled_sysctl"),
    Cause("userns_enospc", r"max_\*_namespaces exceeded|Creating new namespace failed: No space left on device",
          "the user-namespace limit is exhausted (user.max_user_namespaces=0, or nesting depth)",
          ["echo 'user.max_user_namespaces = 15000' > /etc/sysctl.d/99-zz-metnos-bwrap.conf",
           "sysctl --system"], "userns_max_namespaces_zero"),
    Cause("userns_einval", r"kernel does not support user namespaces|must be installed setuid",
          "the kernel refused user namespaces with EINVAL (no CONFIG_USER_NS, RHEL 7 userns disabled, "
          "or a filter returning EINVAL)",
          ["RHEL 7: add user_namespace.enable=1 to the kernel command line and set "
           "user.max_user_namespaces > 0", "Otherwise use a kernel built with CONFIG_USER_NS=y."]),
    Cause("userns_eacces", r"Creating new namespace failed: Permission denied",
          "creating a namespace was denied with EACCES (SELinux user_namespace create, or an LSM)",
          ["ausearch -m AVC,USER_AVC -c bwrap", "Review and load a local policy module (audit2allow)."],
          "selinux_enforcing"),
    Cause("userns_enosys", r"Creating new namespace failed: Function not implemented",
          "the kernel does not implement the namespace call (custom kernel or seccomp ENOSYS)",
          ["Use a kernel with CONFIG_USER_NS=y and namespaces enabled."]),
    Cause("ns_create_eperm_root", r"Creating new namespace failed: Operation not permitted",
          "namespace creation as root without CAP_SYS_ADMIN (typical inside containers) and no "
          "user namespace requested",
          ["Run bwrap with --unshare-user, or grant the container CAP_SYS_ADMIN."]),
    Cause("unexpected_capabilities", r"Unexpected capabilities but not setuid",
          "bwrap was started holding capabilities and is not setuid, so it refuses to run: the unit gives its "
          "processes capabilities (AmbientCapabilities=) or bwrap has file capabilities",
          ["In the unit: AmbientCapabilities= (an empty assignment clears the ambient set; drop-in; see "
           "unit_ambient_capabilities)", "getcap /usr/bin/bwrap   (must print nothing; setcap -r removes them)"]),
    Cause("uid_map_readonly", r"setting up uid map: Read-only file system",
          "/proc is read-only where bwrap runs, so it cannot write the new user namespace's uid map (systemd "
          "ReadOnlyPaths=/ or a read-only bind over /proc)",
          ["In the unit: ReadWritePaths=/proc (drop-in; see unit_read_only_proc)"]),
    Cause("clone_eagain", r"Resource temporarily unavailable",
          "creating the sandbox's process failed with EAGAIN: the user's process limit (RLIMIT_NPROC, the "
          "unit's LimitNPROC=) or a task limit (TasksMax=) is reached",
          ["In the unit: raise LimitNPROC= (drop-in; see unit_resource_limit_blocks_bwrap)",
           "Count the user's processes: ps -u <user> --no-headers | wc -l"]),
    Cause("bwrap_exec_denied", r"exec: .*: Permission denied",
          "bwrap could not be executed in the service's context (a noexec mount: the unit's NoExecPaths=/"
          "ExecPaths=, or a mode that denies execute)",
          ["In the unit: ExecPaths=/usr/bin/bwrap (drop-in; see unit_noexec_bwrap)"]),
    Cause("bwrap_exec_missing", r"exec: .*: not found",
          "bwrap does not exist in the service's view of the file system (InaccessiblePaths=, "
          "TemporaryFileSystem= or RootDirectory= hide it)",
          ["Check the unit's InaccessiblePaths=, TemporaryFileSystem= and RootDirectory= against the bwrap path."]),
    Cause("uid_map_denied", r"setting up uid map: Permission denied",
          "the user namespace was created but capabilities are denied in it (Ubuntu 24.04+ AppArmor "
          "unprivileged_userns restriction)",
          ["install -m0644 /usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/",
           "apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict"], "userns_apparmor_restricted"),
    Cause("uid_map_eperm", r"setting up uid map: Operation not permitted",
          "writing the uid map was refused (capabilities dropped, e.g. --cap-drop=ALL, or hidepid)",
          ["Do not drop CAP_SETUID/CAP_SETGID from the caller; check /proc mount options (hidepid)."]),
    Cause("netlink_socket_refused", r"loopback: Failed to create NETLINK_ROUTE socket",
          "the process may not open netlink sockets, so bwrap cannot bring up loopback in the new network "
          "namespace (systemd RestrictAddressFamilies= without AF_NETLINK; measured in docs/unit-directives.md)",
          ["In the unit: RestrictAddressFamilies=AF_NETLINK (drop-in; see unit_address_families_block_netlink)"]),
    Cause("netlink_denied", r"loopback: Failed RTM_NEWADDR",
          "bringing up loopback in the new network namespace was denied (AppArmor userns "
          "restriction or gVisor)",
          ["See userns_apparmor_restricted; two AppArmor profiles attached to bwrap cancel each other."],
          "userns_apparmor_restricted"),
    Cause("capset_failed", r"capset failed",
          "a setuid bwrap could not set its capabilities (unprivileged container or NoNewPrivileges)",
          ["chmod 0755 /usr/bin/bwrap (use the unprivileged path)"], "bwrap_setuid"),
    Cause("proc_mount_denied", r"Can't mount proc on /newroot/proc",
          "mounting /proc was refused: the container masks parts of /proc, or extra mounts exist "
          "under /proc",
          ["podman: run the container with --security-opt unmask=ALL",
           "docker: --security-opt systempaths=unconfined"]),
    Cause("make_slave_denied", r"Failed to make / slave",
          "mount propagation change was refused (a container's AppArmor profile or seccomp blocks mount)",
          ["Run the container with a profile that allows mount (e.g. apparmor=unconfined) or on the host."]),
    Cause("pivot_root_denied", r"pivot_root",
          "pivot_root was refused (container seccomp)",
          ["Allow pivot_root in the container's seccomp profile."]),
    Cause("tmpfs_denied", r"Failed to mount tmpfs",
          "mounting a tmpfs was refused (SELinux container_t, or /tmp missing)",
          ["podman/docker: --security-opt label=type:spc_t", "Make sure /tmp exists as a directory."]),
    Cause("overflowuid_unreadable", r"Can't read /proc/sys/kernel/overflowuid",
          "/proc shows only PIDs (ProcSubset=pid or proc mounted subset=pid)",
          ["Remove ProcSubset=pid from the unit (drop-in: ProcSubset=all)."]),
    Cause("proc_sys_readonly", r"max_user_namespaces: Read-only file system|max_user_namespaces: Permission denied",
          "/proc/sys is read-only (ProtectKernelTunables=yes, nspawn, LXC) and --disable-userns was used",
          ["Drop --disable-userns, or set ProtectKernelTunables=no for the unit."]),
    Cause("openat2_enosys", r"Can't (mkdir parents for|open source) .*: Function not implemented",
          "openat2() returns ENOSYS (systemd RestrictSUIDSGID=/DynamicUser= with bwrap 0.12, or gVisor)",
          ["Remove RestrictSUIDSGID=yes from the unit (drop-in: RestrictSUIDSGID=no)."]),
    Cause("mkdir_parents_denied", r"Can't mkdir parents for .*: Permission denied",
          "bwrap 0.12 (or a backport of CVE-2026-87766) needs read permission on every directory "
          "of a bind destination",
          ["chmod 0755 on the parent directories of the bind destination."]),
    Cause("unknown_option", r"Unknown option",
          "bwrap is too old for an option in the command",
          ["Upgrade bubblewrap, or render the profile for this bwrap's feature set."]),
    Cause("source_missing", r"Can't find source path",
          "a bind source does not exist",
          ["Create the path or use --ro-bind-try for optional paths."]),
    Cause("execvp_failed", r"execvp ",
          "the command inside the sandbox could not be executed (missing, or on a noexec mount)",
          ["Check that the payload exists inside the sandbox and is not on a noexec mount."]),
    Cause("bad_fd", r"Bad file descriptor",
          "a file descriptor passed to bwrap was invalid or reused",
          ["Give each --*-data/--file option its own file descriptor."]),
    Cause("mount_denied", r"Operation not permitted|Permission denied",
          "a mount or namespace operation was refused by the kernel or an LSM",
          ["Check dmesg/journalctl -k for AppArmor/SELinux denials around the time of the run."]),
)

_SIGSYS = getattr(signal, "SIGSYS", 31)


def classify(stderr: Optional[str], returncode: Optional[int] = None, setup_failed: bool = True) -> Dict[str, Any]:
    """Classify a bwrap failure. Returns a dict with cause, text, remediation, matched line."""
    text = stderr or ""
    for cause in CAUSES:
        match = cause.pattern.search(text) if cause.pattern is not None else None
        if match:
            line = text[text.rfind("\n", 0, match.start()) + 1:].split("\n", 1)[0]
            return {"cause": cause.cause, "cause_text": cause.text, "stderr_line": line.strip(),
                    "remediation": list(cause.remediation), "points_at": cause.diagnostic}
    if returncode is not None and returncode in (-_SIGSYS, 128 + _SIGSYS) and not text.strip():
        return {"cause": "killed_by_seccomp",
                "cause_text": "bwrap was killed by SIGSYS with no message: a seccomp allow-list "
                              "(systemd SystemCallFilter=) omits mount/unshare/pivot_root",
                "stderr_line": "", "points_at": None,
                "remediation": ["Add to the unit's drop-in: SystemCallFilter=@mount "
                                "(or remove the SystemCallFilter= allow-list)"]}
    if returncode is not None and returncode < 0:
        return {"cause": "killed_by_signal",
                "cause_text": "bwrap was killed by signal %d" % -returncode,
                "stderr_line": text.strip().splitlines()[-1] if text.strip() else "",
                "points_at": None, "remediation": ["Check the journal for the process that sent it."]}
    first = ""
    for line in text.splitlines():
        if line.startswith("bwrap:") or "bwrap:" in line:
            first = line.strip()
            break
    return {"cause": "unknown" if setup_failed else "payload_failed",
            "cause_text": ("bwrap failed: %s" % first) if first else
                          ("bwrap exited with status %s" % returncode),
            "stderr_line": first, "points_at": None,
            "remediation": ["Run the same command by hand and read bwrap's message."]}


# --------------------------------------------------------------------------- json status

def parse_json_objects(data: Union[bytes, str, None]) -> List[Dict[str, Any]]:
    """A stream of JSON objects (as --json-status-fd writes them) -> list of dicts."""
    out = []
    decoder = json.JSONDecoder()
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")
    index = 0
    while index < len(text):
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index >= len(text):
            break
        try:
            obj, index = decoder.raw_decode(text, index)
        except ValueError:
            break
        if isinstance(obj, dict):
            out.append(obj)
    return out


def parse_json_status(data: Union[bytes, str, None]) -> Dict[str, Any]:
    """Parse --json-status-fd output into one dict."""
    merged = {}
    for obj in parse_json_objects(data):
        merged.update(obj)
    return merged


# --------------------------------------------------------------------------- running

# Once the started process has exited (and the payload's handshake, if any, is done), how long its pipes may
# stay open before whatever still holds them is taken for a leftover of its process group and killed, and how
# long what is left in them is then read. Everything the started process wrote is in the pipes when it exits:
# a leftover (a decoy or daemon a look-alike started, a payload's background child) adds nothing to the answer.
LINGER = 1.0
DRAIN = 2.0
# After SIGKILL, how long the started process may take to die (a process in uninterruptible sleep, e.g. on a
# hung NFS mount, dies only when its I/O ends: the probe does not wait for that).
REAP = 10.0
_POLL = 0.2


class Started(object):
    """What pump() watches: the process that was started. By default ``proc`` itself, killed as a process
    group; a runner that starts bwrap under another process (reaper.Reaped) says which pid is bwrap's, when it
    has exited, how the whole tree is killed, and whether anything left in it could still report."""

    drain = DRAIN
    """How long what is left in the pipes is read once the leftovers were killed."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    def leftovers(self) -> bool:
        """Whether, the started process gone and its pipes still open, something of its is left to kill: here,
        whatever holds the pipes is (a process of its group)."""
        return True

    def update(self, data: Mapping[str, bytes]) -> None:
        """Called after each read with everything read so far."""

    def exited(self) -> bool:
        return _exited(self.proc)

    def reportable(self) -> bool:
        """Whether, the started process gone and the handshake not done, something could still report (a
        payload a look-alike left running): wait for it. Not known here: yes."""
        return True

    def on_exit(self) -> None:
        """Called once, when the started process is first seen exited."""

    def kill(self) -> None:
        _kill_group(self.proc)


def pump(proc: subprocess.Popen[bytes], streams: Mapping[str, int], timeout: float,
         watch: Optional[Watch] = None, report: Optional[Dict[str, Any]] = None,
         started: Optional[Started] = None) -> Tuple[Dict[str, bytes], bool]:
    """Read ``streams`` ({name: readable fd}) of ``proc`` until they all close or ``timeout`` passes.

    ``watch(data, pid)`` (``data``: {name: bytes so far}; ``pid``: the started process's) is called after each read;
    once it returns true it is not called again and ``proc.stdin`` (if a pipe) is closed: that is the handshake a
    payload waiting on its stdin uses ("the outside has finished reading, go on").

    Reading also stops ``LINGER`` seconds after the started process has exited with the handshake done (or
    without a ``watch``): whatever still holds the pipes then is a leftover, it is killed (``started.kill()``:
    proc's process group by default) and what is already in the pipes is read for at most ``DRAIN`` seconds;
    ``report["left_behind"]`` says so. Until the payload has reported, the probe waits for it while something
    could still report (``started.reportable()``; a look-alike may leave its command running): at most until the
    timeout. Returns (data, timed_out); on timeout everything is killed. Never raises for I/O, never waits
    without a bound.
    """
    started = started or Started(proc)
    run = _Pumping(started, timeout, watch is not None, report)
    data: Dict[str, bytes] = dict((name, b"") for name in streams)
    sel = selectors.DefaultSelector()
    for name, fd in streams.items():
        sel.register(fd, selectors.EVENT_READ, name)
    try:
        while sel.get_map():
            now = time.time()
            step = run.step(now)
            if step == "stop":
                break
            if step == "again":
                continue
            for key, _mask in sel.select(max(0.0, min(run.deadline - now, _POLL))):
                try:
                    chunk = os.read(key.fd, 65536)
                except OSError:
                    chunk = b""
                if chunk:
                    data[key.data] += chunk
                else:
                    sel.unregister(key.fd)
            started.update(data)
            if watch is not None and run.watching and not run.timed_out and watch(data, started.pid):
                run.watching = False
                _close_stdin(proc)
    finally:
        sel.close()
    _close_stdin(proc)
    if not run.timed_out:
        try:
            proc.wait(timeout=max(0.1, run.deadline - time.time()))
        except subprocess.TimeoutExpired:
            run.timed_out = True
            started.kill()
            _kill_group(proc)
    try:
        proc.wait(timeout=REAP)
    except subprocess.TimeoutExpired:
        pass                                   # unkillable for now (uninterruptible sleep): rc stays None
    return data, run.timed_out


class _Pumping(object):
    """One pump()'s clock: the deadline, the handshake, the started process's exit, the kills."""

    def __init__(self, started: Started, timeout: float, watching: bool,
                 report: Optional[Dict[str, Any]]) -> None:
        self.started = started
        self.report = report
        self.deadline = time.time() + timeout
        self.watching = watching
        self.timed_out = False
        self.exited_at: Optional[float] = None     # when the started process was first seen exited
        self.settled_at: Optional[float] = None    # when it had exited and the handshake was done (the later)
        self.draining = False                      # leftovers killed: reading what is left

    def step(self, now: float) -> str:
        """Before each read: "stop" reading, look "again" (something was just killed), or "read"."""
        if now >= self.deadline:
            if self.timed_out or self.draining:
                return "stop"                      # killed, and something still holds a pipe: give up
            self.timed_out = True
            self.started.kill()
            self.deadline = now + 5.0              # then read on until the killed tree has closed its pipes
            return "again"
        if self.exited_at is None and not self.timed_out and self.started.exited():
            self.exited_at = now
            self.started.on_exit()
        if self.settled_at is None and self.exited_at is not None and (
                not self.watching or (now - self.exited_at >= LINGER and not self.started.reportable())):
            # handshake done, or nothing left that could still report: a dead bwrap is a setup failure now
            self.settled_at = now if not self.watching else now - LINGER
        if self.settled_at is not None and not self.draining and now - self.settled_at >= LINGER:
            if not self.started.leftovers():
                return "read"                      # nothing of its is left: what holds the pipes ends on its own
            self.draining = True
            self.started.kill()                    # proc is not reaped yet: its group id cannot have been reused
            if self.report is not None:
                self.report["left_behind"] = True
            self.deadline = min(self.deadline, now + self.started.drain)
            return "again"
        return "read"


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether proc has exited, without reaping it: until proc.wait() its pid - the id of its process
    group - stays taken, so killing that group later cannot hit another one."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def _close_stdin(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None and not proc.stdin.closed:
        try:
            proc.stdin.close()
        except OSError:
            pass


def run_bwrap(argv: Sequence[str], user: Optional[Mapping[str, Any]] = None, env: Optional[Mapping[str, str]] = None,
              timeout: float = 30.0, cwd: str = "/", status_fd: bool = True,
              watch: Optional[Watch] = None) -> Dict[str, Any]:
    """Run a bwrap argv for real, optionally as another user.

    ``argv`` must contain the literal placeholder ``{status_fd}`` after
    ``--json-status-fd`` when ``status_fd`` is true; it is replaced by the fd of
    a pipe. ``watch`` (see ``pump``) sees {"stdout", "stderr", "status"} as they arrive;
    stdin stays an open pipe until it returns true. Returns a dict: rc, stdout, stderr,
    json_status, status_raw, setup_failed, timed_out, left_behind (processes of its group still held
    its pipes after it had exited: killed), duration, pid (bwrap's own). The whole process group is
    killed on timeout.
    """
    read_fd: Optional[int] = None
    write_fd: Optional[int] = None
    if status_fd:
        read_fd, write_fd = os.pipe()
        argv = [str(write_fd) if a == "{status_fd}" else a for a in argv]
    start = time.time()
    try:
        proc = _spawn(argv, user, env, cwd, write_fd, piped_stdin=watch is not None)
    except OSError as exc:
        for fd in (read_fd, write_fd):
            if fd is not None:
                os.close(fd)
        return {"rc": 127, "stdout": "", "stderr": "bwrap: execvp %s: %s" % (argv[0], exc.strerror),
                "json_status": {}, "status_raw": "", "setup_failed": True, "timed_out": False,
                "left_behind": False, "duration": 0.0, "pid": None}
    if write_fd is not None:
        os.close(write_fd)
    report: Dict[str, Any] = {}
    data, timed_out = _collect(proc, read_fd, timeout, watch, report)
    status = parse_json_status(data.get("status", b""))
    return {
        "rc": proc.returncode,
        "stdout": data["stdout"].decode("utf-8", "replace"),
        "stderr": data["stderr"].decode("utf-8", "replace"),
        "json_status": status,
        "status_raw": data.get("status", b"").decode("utf-8", "replace"),
        # bwrap writes exit-code only once the payload ran; without it, setup failed.
        "setup_failed": status_fd and "exit-code" not in status and not timed_out,
        "timed_out": timed_out,
        "left_behind": bool(report.get("left_behind")),
        "duration": round(time.time() - start, 3),
        "pid": proc.pid,
    }


def _spawn(argv: Sequence[str], user: Optional[Mapping[str, Any]], env: Optional[Mapping[str, str]], cwd: str,
           write_fd: Optional[int], piped_stdin: bool) -> subprocess.Popen[bytes]:
    """bwrap started in its own session (so that its process group can be killed), as ``user``."""
    kwargs: Dict[str, Any] = {}
    if user is not None:
        kwargs["user"] = user["uid"]
        kwargs["group"] = user["gid"]
        kwargs["extra_groups"] = []
    # run_command cannot keep bwrap's status pipe open, start a session or read while it runs.
    return subprocess.Popen(  # pylint: disable=ansible-bad-function
        argv, stdin=subprocess.PIPE if piped_stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env, cwd=cwd, pass_fds=(write_fd,) if write_fd is not None else (),
        start_new_session=True, **kwargs)


def _collect(proc: subprocess.Popen[bytes], read_fd: Optional[int], timeout: float, watch: Optional[Watch],
             report: Dict[str, Any]) -> Tuple[Dict[str, bytes], bool]:
    """pump() over bwrap's stdout, stderr and (``read_fd``) status pipe; every pipe is closed after."""
    stdout, stderr = proc.stdout, proc.stderr
    if stdout is None or stderr is None:      # both are pipes (_spawn)
        raise AssertionError("bwrap was started without its output pipes")
    streams = {"stdout": stdout.fileno(), "stderr": stderr.fileno()}
    if read_fd is not None:
        streams["status"] = read_fd
    try:
        return pump(proc, streams, timeout, watch, report)
    finally:
        stdout.close()
        stderr.close()
        if read_fd is not None:
            os.close(read_fd)


def smoke_argv(bwrap_path: str, true_path: str = "/bin/true") -> List[str]:
    """The smoke test: the server profile's namespace flags around a no-op."""
    return [bwrap_path, "--unshare-user", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--json-status-fd", "{status_fd}", "--", true_path]
