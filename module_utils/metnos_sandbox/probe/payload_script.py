# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe's payload: the witness that runs inside the sandbox under test, on the runtime's interpreter
(Python 3.6+, the standard library only, ``python -I -S -c TEXT SPEC``). It reports one JSON line on stdout,
then waits on stdin until the outside has read its evidence.

The text it runs is assembled from real files (payload.payload_text): base/json_lite.py (``loads``,
``dumps``), then this file; the json package's import would cost more than the rest of the script. The names
it defines are imported below only for the type checker; prctl(2) and statfs(2) are called through ctypes
(``libc``: the process's C library, keeping ``errno``). Importing this module runs nothing: the work is under
``if __name__ == "__main__"``, which is what ``-c`` gives. No ``from __future__``
import (it would not compile after the other files).
"""
import ctypes
import errno
import os
import sys

MYPY = False
if MYPY:    # what the type checker reads; at run time the files before this one define these names
    from typing import Any

    from ..base.json_lite import dumps, loads

try:                                    # the C module alone: socket.py imports enum, selectors (docs/benchmarks.md)
    import _socket as socket
except ImportError:
    import socket  # type: ignore[no-redef]


def beacon(name: str) -> str:
    # in the probe's network namespace the probe holds this process while it reads who it is
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect("\0" + name)
        s.recv(1)
        s.close()
        return "reached"
    except OSError as exc:
        return err(exc.errno or 0)


def err(num: "int | None") -> str:
    return "error:" + errno.errorcode.get(num, str(num))  # type: ignore[arg-type]  # None: "error:None"


def fs(path: str) -> "dict[str, Any]":
    out: "dict[str, Any]" = {}
    buf = ctypes.create_string_buffer(512)
    if libc.statfs(path.encode("utf-8"), buf) == 0:
        if os.uname()[4].startswith("s390"):
            out["type"] = ctypes.c_uint.from_buffer(buf).value
        else:
            out["type"] = ctypes.c_long.from_buffer(buf).value & 0xffffffff
    else:
        out["type"] = err(ctypes.get_errno())
    try:
        st = os.stat(path)
        out["dev"] = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
        out["flags"] = "ro" if os.statvfs(path).f_flag & os.ST_RDONLY else "rw"
    except OSError as exc:
        out["dev"] = out["flags"] = err(exc.errno)
    return out


def listing(path: str) -> "list[str] | str":
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return err(exc.errno)


def try_write(path: str) -> str:
    try:
        if os.path.isdir(path):
            target = os.path.join(path, ".metnos-probe-" + spec["token"])
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            os.unlink(target)
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        return "writable"
    except OSError as exc:
        return err(exc.errno)


def presence(path: str) -> str:
    try:
        os.lstat(path)
        return "present"
    except OSError as exc:
        return "absent" if exc.errno in (errno.ENOENT, errno.ENOTDIR) else err(exc.errno)


# keyctl(2) by machine (the C library has no wrapper without libkeyutils)
KEYCTL_NR = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "s390x": 280, "ppc64le": 271, "ppc64": 271,
             "i686": 288, "i386": 288, "armv7l": 311}


def keyrings() -> "dict[str, Any]":
    # the serials of the keyrings this process has (never creating one) and the keys linked in them: serial,
    # type, owner, group, permissions; never a description (but systemd's invocation_id, named)
    # or a payload (issue 51)
    nr = KEYCTL_NR.get(os.uname()[4])
    if nr is None:
        return {"error": "error:machine " + os.uname()[4]}
    libc.syscall.restype = ctypes.c_long
    out: "dict[str, Any]" = {}
    for name, special in (("session", -3), ("user", -4), ("user_session", -5)):
        serial = libc.syscall(nr, 0, ctypes.c_int(special), 0)      # KEYCTL_GET_KEYRING_ID, create=0
        out[name] = serial if serial >= 0 else err(ctypes.get_errno())
    keys: "list[list[Any]]" = []
    buf = ctypes.create_string_buffer(4096)
    for name in ("session", "user", "user_session"):
        if not isinstance(out[name], int) or len(keys) >= 32:
            continue
        size = libc.syscall(nr, 11, ctypes.c_int(out[name]), buf, 256)   # KEYCTL_READ: the linked serials
        linked = [ctypes.c_int32.from_buffer(buf, i).value for i in range(0, min(max(size, 0), 256) // 4 * 4, 4)]
        if size < 0:
            keys.append([name, out[name], err(ctypes.get_errno())])
        for key in linked:
            got = libc.syscall(nr, 6, ctypes.c_int(key), buf, 4096)      # KEYCTL_DESCRIBE
            words = buf.raw[:max(got, 1) - 1].decode("utf-8", "replace").split(";", 4) if got > 0 else []
            # systemd's own key in a unit's keyring is named, by comparison only; no other description leaves
            mark = ["invocation_id"] if len(words) == 5 and words[0] == "user" and words[4] == "invocation_id" else []
            keys.append([name, key] + (words[:4] + mark if len(words) == 5 else [err(ctypes.get_errno())]))
            if len(keys) >= 32:
                break
    out["keys"] = keys
    out["visible"] = visible_keys()
    return out


def visible_keys() -> "Any":
    # the keys other than keyrings that /proc/keys shows this process (each one it may view: reachable by its
    # serial, e.g. linked by serial into its own session keyring, then read): serial, type, uid, gid, permissions;
    # never a description. Bounded: 256 lines, 64 KiB, 64 keys, then a last row ["error:truncated", keys seen]
    # (not proven: a key beyond the bound is unseen); "error:ENOENT" without a /proc (issue 51)
    try:
        with open("/proc/keys", "rb") as handle:
            text = handle.read(65536).decode("utf-8", "replace")
    except OSError as exc:
        return err(exc.errno)
    found: "list[list[Any]]" = []
    lines = text.splitlines()
    for line in lines[:256]:
        words = line.split(None, 8)
        if len(words) >= 8 and words[7] != "keyring":
            try:
                found.append([int(words[0], 16), words[7], int(words[5]), int(words[6]), words[4]])
            except ValueError:
                found.append(["error:malformed", line[:8]])
    if len(found) > 64 or len(lines) > 256 or len(text) >= 65536:
        return found[:64] + [["error:truncated", len(found)]]
    return found


def seccomp_status() -> "list[Any]":
    # [mode, filters]: the mode from the kernel (prctl PR_GET_SECCOMP: 0 none, 2 filter; a profile's /proc may be
    # anything), the filter count from /proc/self/status; "unknown" when unread
    mode = libc.prctl(21, 0, 0, 0, 0)
    found: "list[Any]" = [str(mode) if mode in (0, 2) else "unknown", "unknown"]
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Seccomp_filters:"):
                    found[1] = int(line.split(None, 2)[1])
    except (OSError, IndexError, ValueError):
        pass
    return found


def keyrings_asked(plan: "Any") -> "dict[str, Any]":
    # keyrings() only where keyctl cannot kill this process (never a child: a child is a second process in the
    # sandbox): no seccomp filter; or exactly the filters of the probe, which survived keyctl under them (direct:
    # a descendant keeps its ancestors' filters, so the same count is the same filters); or the unit's
    # SystemCallFilter= answers keyctl with an errno or lets it through ("unit"). A filter that kills keyctl
    # ("kill") is reported as refused; anything else is not asked (issue 51)
    mode, filters = seccomp_status()
    plan = plan if isinstance(plan, dict) else {}
    if mode == "0" or (mode == "2" and (plan.get("unit") in ("allow", "errno") or (
            plan.get("filters") is not None and plan.get("filters") == filters))):
        return keyrings()
    said = "refused:killed" if plan.get("unit") == "kill" else "error:not asked"
    return {"session": said, "user": said, "user_session": said, "keys": [], "seccomp": [mode, filters]}


if __name__ == "__main__":
    libc = ctypes.CDLL(None, use_errno=True)
    spec = loads(sys.argv[1])  # pylint: disable=used-before-assignment
    libc.prctl(15, ("mp-" + spec["token"])[:15].encode(), 0, 0, 0)   # PR_SET_NAME: this code ran here
    obs: "dict[str, Any]" = {"metnos_probe": spec["token"], "pid": os.getpid(), "uid": os.getuid(), "ns": {}}
    if spec.get("beacon"):
        obs["beacon"] = beacon(spec["beacon"])
    try:
        obs["proc_self"] = os.readlink("/proc/self")
    except OSError as exc:
        obs["proc_self"] = err(exc.errno)
    obs["proc"] = dict((p, fs(p)) for p in spec["proc"])
    for ns in spec["ns"]:
        try:
            obs["ns"][ns] = os.readlink("/proc/self/ns/" + ns)
        except OSError as exc:
            obs["ns"][ns] = err(exc.errno)
    try:
        obs["interfaces"] = sorted(name for _i, name in socket.if_nameindex())
    except OSError as exc:
        obs["interfaces"] = err(exc.errno)
    obs["ro"] = dict((p, fs(p)) for p in spec["ro"])
    obs["rw"] = dict((p, try_write(p)) for p in spec["rw"])
    obs["absent"] = dict((p, presence(p)) for p in spec["absent"])
    obs["tmpfs"] = dict((p, dict(fs(p), entries=listing(p))) for p in spec["tmpfs"] + spec["dev"])
    try:
        sig = ctypes.c_int(0)
        libc.prctl(2, ctypes.byref(sig), 0, 0, 0)   # PR_GET_PDEATHSIG
        obs["pdeathsig"] = sig.value
    except Exception as exc:
        obs["pdeathsig"] = "error:%s" % exc
    obs["keyrings"] = keyrings_asked(spec.get("keyctl"))
    bits = libc.prctl(27, 0, 0, 0, 0)         # PR_GET_SECUREBITS: /proc does not show them (issue 51)
    obs["securebits"] = bits if bits >= 0 else err(ctypes.get_errno())
    sys.stdout.write(dumps(obs) + "\n")  # pylint: disable=used-before-assignment
    sys.stdout.flush()
    try:
        go = sys.stdin.readline().strip()
    except Exception:
        go = ""
    import time
    try:                                    # the interpreter's own sha256 (hashlib loads OpenSSL: more CPU)
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    if spec.get("go") and sha256(go.encode()).hexdigest() != spec["go"]:
        time.sleep(spec.get("linger") or 0)     # not released by the probe: a copy outside stays visible to it
