# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a process holds, read from the host's /proc (issue 41): who else holds each of its pipes and sockets
(one pass over /proc/*/fd), its session and controlling terminal, the sockets of its network namespace, and what
lies on its root file system itself. The same rules as procfs.py: what root may not read is read again with the
owner's credentials, what still cannot be read is counted or reported, never guessed.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import _socket  # the C module alone (socket.py builds enums: cost on every host)
import hashlib
import os
import stat
import struct
import typing as t

from ..base.records import Record
from .procfs import DENIED, DENIED_TEXT, Pid, as_owner_if_denied, call_as, errname, own_credentials, read_text


class Holders(Record):
    """fd_holders(): {link: [pid, ...]} of the processes holding each of the links asked (a pipe:[N] or
    socket:[N]: one kernel object), how many processes' tables could not be read, and for each pipe asked the
    processes holding its read end and its write end ({link: {"read": [pid, ...], "write": [pid, ...]}}): the
    other end of a pipe is the end of the other direction."""
    held: t.Dict[str, t.List[int]]
    unreadable: int
    ends: t.Dict[str, t.Dict[str, t.List[int]]]


# At most this many descriptor tables of threads (a thread that called unshare(CLONE_FILES) has a table of its own,
# absent from /proc/PID/fd) are read in one scan; beyond it, what is left is counted as unread, never guessed.
THREAD_TABLES = 4096


def _pipe_direction(fdinfo: str) -> str:
    """"read" or "write" of the pipe end described by one /proc/PID/fdinfo/FD (flags' access mode), "" unread."""
    try:
        text = read_text(fdinfo, limit=4096)
    except (IOError, OSError):
        return ""
    for line in text.splitlines():
        key, _sep, value = line.partition(":")
        if key.strip() == "flags":
            try:
                mode = int(value.strip(), 8) & 3
            except ValueError:
                return ""
            return {0: "read", 1: "write"}.get(mode, "")
    return ""


def _scan_table(task: str, pid: int, wanted: t.Set[str], found: t.Dict[str, t.List[int]],
                ends: t.Dict[str, t.Dict[str, t.List[int]]]) -> bool:
    """Record the holders of ``wanted`` in the descriptor table of ``task`` (/proc/PID or /proc/PID/task/TID);
    False when the table was refused."""
    try:
        dfd = os.open(task + "/fd", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return exc.errno not in DENIED
    try:
        for fd in os.listdir(dfd):
            try:
                link = os.readlink(fd, dir_fd=dfd)
            except OSError as exc:
                if exc.errno in DENIED:         # the directory opened, its links refused (no CAP_SYS_PTRACE)
                    return False
                continue
            if link not in wanted:
                continue
            held = found.setdefault(link, [])
            if pid not in held:
                held.append(pid)
            if link.startswith("pipe:["):
                side = ends.setdefault(link, {"read": [], "write": []}).setdefault(
                    _pipe_direction("%s/fdinfo/%s" % (task, fd)) or "unread", [])
                if pid not in side:
                    side.append(pid)
    except OSError as exc:
        return exc.errno not in DENIED
    finally:
        os.close(dfd)
    return True


def _scan_fds(arg: t.Tuple[str, t.List[str], t.List[str]]) -> t.List[t.Any]:
    """[{link: [pid, ...]}, [pids whose table was refused], {pipe link: {direction: [pid, ...]}}] over the
    processes ``names`` of ``proc``: each process's table, and the tables of its threads (a thread may have one of
    its own), at most THREAD_TABLES of them."""
    proc, names, links = arg
    wanted = set(links)
    found: t.Dict[str, t.List[int]] = {}
    ends: t.Dict[str, t.Dict[str, t.List[int]]] = {}
    denied: t.List[str] = []
    threads = 0
    for name in names:
        if not _scan_table("%s/%s" % (proc, name), int(name), wanted, found, ends):
            denied.append(name)
            continue
        try:
            tids = [n for n in os.listdir("%s/%s/task" % (proc, name)) if n.isdigit() and n != name]
        except OSError as exc:
            if exc.errno in DENIED:
                denied.append(name)
            continue
        for tid in tids:
            threads += 1
            if threads > THREAD_TABLES or not _scan_table("%s/%s/task/%s" % (proc, name, tid), int(name), wanted,
                                                          found, ends):
                denied.append(name)
                break
    return [found, denied, ends]


def own_pipes(proc: str = "/proc") -> t.List[str]:
    """The pipes (pipe:[N]) the reading process itself holds: the probe's own, whose other ends it gave away."""
    fd_dir = os.path.join(proc, "self", "fd")
    out = set()
    try:
        dfd = os.open(fd_dir, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return []
    try:
        for fd in os.listdir(dfd):
            try:
                link = os.readlink(fd, dir_fd=dfd)
            except OSError:
                continue
            if link.startswith("pipe:["):
                out.add(link)
    finally:
        os.close(dfd)
    return sorted(out)


_SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, _NLMSG_ERROR = 20, 1, 2
_UDIAG_SHOW_PEER, _UNIX_DIAG_PEER = 0x4, 2


def unix_peer(link: str) -> t.Optional[str]:
    """The peer (socket:[N]) of the unix socket ``link`` (socket:[N]) in the reader's network namespace, asked
    of the kernel (sock_diag, UNIX_DIAG_PEER); None when it is not a connected unix socket there or the kernel
    does not say."""
    try:
        ino = int(link[len("socket:["):-1])
    except ValueError:
        return None
    req = struct.pack("=BBHIII2I", _socket.AF_UNIX, 0, 0, 0xffffffff, ino, _UDIAG_SHOW_PEER, 0xffffffff, 0xffffffff)
    msg = struct.pack("=IHHII", 16 + len(req), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0) + req
    try:
        sock = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW, 4)      # NETLINK_SOCK_DIAG
    except OSError:
        return None
    try:
        sock.settimeout(1.0)
        sock.sendto(msg, (0, 0))
        data = sock.recv(8192)
    except OSError:
        return None
    finally:
        sock.close()
    if len(data) < 32:
        return None
    length, kind = struct.unpack_from("=IH", data, 0)
    if kind == _NLMSG_ERROR or length > len(data):
        return None
    at = 16 + 16                                   # nlmsghdr, unix_diag_msg
    while at + 4 <= length:
        size, attr = struct.unpack_from("=HH", data, at)
        if size < 4:
            break
        if attr == _UNIX_DIAG_PEER and size >= 8:
            return "socket:[%d]" % struct.unpack_from("=I", data, at + 4)[0]
        at += (size + 3) & ~3
    return None


def fd_holders(links: t.Iterable[str], proc: str = "/proc") -> Holders:
    """Every process of this /proc holding one of ``links`` (pipe:[N], socket:[N]: the same kernel object
    wherever it is held), in one pass over /proc/*/fd and the tables of their threads (/proc/*/task/*/fd), with
    the direction of each pipe end held. Tables the probe may not read are read again with the
    credentials of their owner (root without CAP_SYS_PTRACE); those still refused are counted, not guessed."""
    wanted = sorted(set(links))
    if not wanted:
        return Holders({}, 0, {})
    try:
        names = [n for n in os.listdir(proc) if n.isdigit()]
    except OSError:
        return Holders({}, 0, {})
    found, denied, ends = _scan_fds((proc, names, wanted))
    if denied and os.geteuid() == 0:
        by_owner: t.Dict[t.Tuple[int, int], t.List[str]] = {}
        left = []
        for name in denied:
            own = own_credentials(name, proc)
            if own is None:
                left.append(name)
            else:
                by_owner.setdefault(own, []).append(name)
        for (uid, gid), group in sorted(by_owner.items())[:16]:
            got = call_as(uid, gid, _scan_fds, (proc, group, wanted))
            if not isinstance(got, list) or len(got) != 3:
                left.extend(group)
                continue
            for link, pids in got[0].items():
                found.setdefault(link, []).extend(p for p in pids if p not in found.get(link, []))
            for link, sides in got[2].items():
                for side, pids in sides.items():
                    into = ends.setdefault(link, {"read": [], "write": []}).setdefault(side, [])
                    into.extend(p for p in pids if p not in into)
            left.extend(got[1])
        denied = left
    return Holders(found, len(set(denied)), ends)


def read_session(pid: Pid, proc: str = "/proc") -> t.Dict[str, t.Any]:
    """pgrp, session and tty_nr (the controlling terminal's device number, 0 for none) of PID from
    /proc/PID/stat (fields 5-7); {} when gone or malformed."""
    try:
        text = read_text(os.path.join(proc, str(pid), "stat"), limit=4096)
    except (IOError, OSError):
        return {}
    head, sep, tail = text.rpartition(")")
    fields = tail.split()
    if not sep or len(fields) < 5:
        return {}
    try:
        tty = int(fields[4])
        return {"pgrp": int(fields[2]), "session": int(fields[3]), "tty_nr": tty,
                "tty": "%d:%d" % (os.major(tty), os.minor(tty))}
    except ValueError:
        return {}


def net_socket_inodes(pid: Pid, proc: str = "/proc") -> t.Union[t.List[str], str]:
    """The inodes of the sockets of PID's network namespace (unix, tcp, udp, raw, packet, netlink tables of
    /proc/PID/net), as "socket:[N]" links; an error string when the tables cannot be read."""
    out: t.Set[str] = set()
    columns = {"unix": 6, "tcp": 9, "tcp6": 9, "udp": 9, "udp6": 9, "raw": 9, "raw6": 9, "packet": 8, "netlink": 9}
    read = 0
    for table, col in columns.items():
        try:
            text = read_text(os.path.join(proc, str(pid), "net", table), limit=4 << 20)
        except (IOError, OSError) as exc:
            if exc.errno in DENIED:
                return errname(exc)
            continue
        read += 1
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) > col and fields[col].isdigit():
                out.add("socket:[%s]" % fields[col])
    return sorted(out) if read else "error:ENOENT"


def _content(path: str, kind: str, st: os.stat_result) -> t.Any:
    """What an entry of the root holds, as data: a symlink's target (read, never followed), a file's size."""
    if kind == "l":
        try:
            return os.readlink(path)[:4096]
        except OSError as exc:
            return errname(exc)
    return st.st_size if kind == "f" else None


# At most this many bytes of the files on a sandbox's root are hashed in one walk (each file the profile copies
# there is one; anything beyond is "error:too_large", never guessed): a root the sandbox filled costs no more.
DIGEST_BUDGET = 8 << 20
_NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def _file_digest(root_fd: int, rel: str, st: os.stat_result, budget: t.List[int]) -> str:
    """The sha256 (hex) of the regular file ``rel`` on the root open as ``root_fd`` (the sandbox's: its owner
    controls every name on it), opened component by component with O_NOFOLLOW (no link followed, no mount
    crossed: each folder and the file on the root's own file system), the same file ``st`` listed, read to at most
    its size within ``budget`` ([bytes left], spent here); an error string when it cannot be proven."""
    if st.st_size > budget[0]:
        return "error:too_large"
    fds: t.List[int] = []
    try:
        here = root_fd
        parts = rel.split("/")
        for index, name in enumerate(parts):
            last = index == len(parts) - 1
            here = os.open(name, _NOFOLLOW | (0 if last else os.O_DIRECTORY), dir_fd=here)
            fds.append(here)
            if os.fstat(here).st_dev != st.st_dev:
                return "error:EXDEV"        # a mount on the way
        got = os.fstat(here)
        if not stat.S_ISREG(got.st_mode) or (got.st_ino, got.st_size) != (st.st_ino, st.st_size):
            return "error:changed"
        digest = hashlib.sha256()
        left = st.st_size
        while left > 0:
            chunk = os.read(here, min(left, 1 << 16))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        budget[0] -= st.st_size - left
        return digest.hexdigest() if left == 0 and not os.read(here, 1) else "error:changed"
    except OSError as exc:
        return errname(exc)
    finally:
        for fd in fds:
            os.close(fd)


def _root_walk(arg: t.Tuple[str, int]) -> t.List[t.Any]:
    """[[relative path, type letter, content (a symlink's target, a file's size), a file's sha256], ...] of what
    lies on the file system of ``root`` itself (entries on another mount are not entered: a mount's own content is
    the mount checks' business), at most ``limit``;
    [["error:...", ""]] when the root cannot be read."""
    root, limit = arg
    try:
        dev = os.stat(root).st_dev      # (lstat would be of the magic link itself, on procfs)
    except OSError as exc:
        return [[errname(exc), ""]]
    out: t.List[t.Any] = []
    todo = [""]
    root_fd: t.List[t.Any] = []
    budget = [DIGEST_BUDGET]
    try:
        _walk_entries((root, limit, dev), todo, out, (root_fd, budget))
    finally:
        for fd in root_fd:
            if isinstance(fd, int):
                os.close(fd)
    return out[:limit + 1]


def _digest_on(root: str, root_fd: t.List[t.Any], rel: str, st: os.stat_result, budget: t.List[int]) -> str:
    """_file_digest of ``rel`` on ``root``, opened once per walk (``root_fd``: [its fd] or [why it could not])."""
    if not root_fd:
        try:
            root_fd.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)))
        except OSError as exc:
            root_fd.append(errname(exc))
    return _file_digest(root_fd[0], rel, st, budget) if isinstance(root_fd[0], int) else str(root_fd[0])


def _walk_entries(where: t.Tuple[str, int, int], todo: t.List[str], out: t.List[t.Any],
                  hashing: t.Tuple[t.List[t.Any], t.List[int]]) -> None:
    """_root_walk's loop: ``where`` (root, limit, its device), ``hashing`` ([the root's fd, once opened],
    [bytes left to hash])."""
    root, limit, dev = where
    root_fd, budget = hashing
    while todo and len(out) <= limit:
        rel = todo.pop()
        try:
            names = sorted(os.listdir(os.path.join(root, rel) if rel else root))
        except OSError as exc:
            out.append([rel or "/", errname(exc)])
            continue
        for name in names:
            path = os.path.join(rel, name)
            try:
                st = os.lstat(os.path.join(root, path))
            except OSError as exc:
                out.append([path, errname(exc)])
                continue
            if st.st_dev != dev:
                continue                # a mount point: not on the root's own file system
            kind = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else \
                "f" if stat.S_ISREG(st.st_mode) else "o"
            entry = [path, kind, _content(os.path.join(root, path), kind, st)]
            if kind == "f":
                entry.append(_digest_on(root, root_fd, path, st, budget))
            out.append(entry)
            if kind == "d":
                todo.append(path)


def root_entries(pid: Pid, proc: str = "/proc", limit: int = 200) -> t.List[t.Any]:
    """What lies on PID's root file system itself, read from outside through /proc/PID/root (see
    _root_walk); read with PID's own uid and gid where the probe is refused."""
    root = os.path.join(proc, str(pid), "root")
    got = _root_walk((root, limit))
    denied = bool(got) and isinstance(got[0][0], str) and got[0][0] in DENIED_TEXT
    return t.cast("t.List[t.Any]", as_owner_if_denied(pid, proc, denied, lambda r: _root_walk((r, limit)), root, got))


def _attribute_files(base: str) -> t.Dict[str, t.Any]:
    """The raw attributes of the process at ``base`` (/proc/PID): personality (hex), oom_score_adj, the stat
    fields priority, nice, rt_priority and policy, and the limits table ({name: [soft, hard]}, -1 unlimited);
    an unreadable one is its error string."""
    out: t.Dict[str, t.Any] = {}
    for name in ("personality", "oom_score_adj"):
        try:
            text = read_text(base + "/" + name, limit=64).strip()
            out[name] = int(text, 16) if name == "personality" else int(text)
        except (IOError, OSError) as exc:
            out[name] = errname(exc)
        except ValueError:
            out[name] = "error:malformed"
    try:
        fields = read_text(base + "/stat", limit=4096).rpartition(")")[2].split()
        # fields from the state (3rd field of stat): priority 18, nice 19, rt_priority 40, policy 41
        out.update(dict((key, int(fields[at - 3])) for key, at in (("priority", 18), ("nice", 19),
                                                                   ("rt_priority", 40), ("policy", 41))))
    except (IOError, OSError) as exc:
        out["nice"] = errname(exc)
    except (ValueError, IndexError):
        out["nice"] = "error:malformed"
    try:
        limits: t.Dict[str, t.List[int]] = {}
        for line in read_text(base + "/limits", limit=8192).splitlines()[1:]:
            words = line[:26].strip(), line[26:].split()
            if len(words[1]) >= 2:
                limits[words[0]] = [-1 if w == "unlimited" else int(w) for w in words[1][:2]]
        out["limits"] = limits
    except (IOError, OSError) as exc:
        out["limits"] = errname(exc)
    except ValueError:
        out["limits"] = "error:malformed"
    return out


def process_attributes(pid: Pid, proc: str = "/proc") -> t.Dict[str, t.Any]:
    """What the kernel applies to PID beyond its namespaces (issue 51), read from the host's /proc: personality,
    scheduling (nice, priority, policy), rlimits and oom_score_adj. /proc/PID/personality needs ptrace access:
    refused as root (no CAP_SYS_PTRACE), the whole set is read again with PID's own uid and gid."""
    base = os.path.join(proc, str(pid))
    got = _attribute_files(base)
    denied = got.get("personality") in DENIED_TEXT
    return t.cast("t.Dict[str, t.Any]", as_owner_if_denied(pid, proc, denied, _attribute_files, base, got))
