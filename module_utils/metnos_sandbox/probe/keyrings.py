# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keyrings, kernel state no namespace of bwrap covers (issue 51): the payload's session keyring must be its own,
and no key of anyone else may be linked where it can reach it.

bwrap has no keyring option. A process keeps the session keyring it inherits across clone and execve, in any
namespace: the payload holds its starter's session keyring whenever the starter has joined one (a login's
pam_keyinit, a system service's KeyringMode=private: one keyring per service, shared by the service and every
executor it starts). The payload reports (payload_script.keyrings) the serials of its session, user and user-session
keyrings and the keys linked in them (serial, type, owner, group, permissions; never a description or a payload).
It is judged against the probe's own serials (own(), read here) and against itself: a session keyring that is not
its user-session keyring was joined before it started, by whoever started it (the payload joins none). Its user
namespace gives it a user-session keyring of its own; keyctl refused (SystemCallFilter=~@keyring) reaches none.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import ctypes
import errno
import os
import typing as t

from .held import Scene
from .payload import Json

# kind of finding -> the code it is reported with (codes_probe.py)
KEYRING_CODES = {"shared": "probe_keyring_shared", "keys": "probe_keyring_keys"}
# keyctl(2) by machine, as in payload_script.KEYCTL_NR
_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "s390x": 280, "ppc64le": 271, "ppc64": 271,
           "i686": 288, "i386": 288, "armv7l": 311}
# keyctl refused by a seccomp filter (systemd's SystemCallFilter=~@keyring answers EPERM unless told otherwise)
# or kills it (SIGSYS, 31: the default action; the payload asks in a child of its own)
_REFUSED = ("error:EPERM", "error:EACCES", "error:ENOSYS", "error:signal 31")
_SPECIAL = (("session", -3), ("user", -4), ("user_session", -5))


def own() -> Json:
    """The probe's own user and user-session keyring serials (KEYCTL_GET_KEYRING_ID, never creating one); an error
    text when unread. Never its session keyring: the kernel installs the user-session keyring as the session
    keyring of a process that asks for one it has not got, which bwrap and the payload would then inherit."""
    number = _KEYCTL.get(os.uname()[4])
    if number is None:
        return {"error": "keyctl: no system call number known for %s" % os.uname()[4]}
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    out: Json = {}
    for name, special in _SPECIAL[1:]:
        serial = libc.syscall(number, 0, ctypes.c_int(special), 0)
        out[name] = serial if serial >= 0 else "error:" + errno.errorcode.get(ctypes.get_errno(), "?")
    return out


def _starter(sc: Scene) -> t.Tuple[Json, str]:
    context = sc.outside.get("context")
    if isinstance(context, dict) and context:
        return {}, str(context.get("from") or "the unit's process")
    return sc.host.get("keyrings") or {}, "the probe itself"


def judge(mine: t.Any, ref: Json, who: str, same_userns: bool = False, uid: t.Any = None) -> t.List[t.Tuple[str, str]]:
    """[(kind, what)] of each way the payload's keyrings are not its own (or not proven). ``same_userns``: the
    payload's user namespace is the probe's."""
    if not isinstance(mine, dict) or "error" in mine:
        return [("shared", "keyrings not proven: the payload reported %s" % (
            mine.get("error") if isinstance(mine, dict) else type(mine).__name__))]
    serials = [mine.get(name) for name, _special in _SPECIAL]
    if all(s in _REFUSED for s in serials):
        return []       # keyctl refused inside: no keyring reachable (SystemCallFilter=~@keyring)
    if not all(isinstance(s, int) for s in serials):
        return [("shared", "keyrings not proven: session %s, user %s, user-session %s" % tuple(serials))]
    out: t.List[t.Tuple[str, str]] = []
    if mine["session"] != mine["user_session"]:
        out.append(("shared", "session keyring %d joined before the payload started: inherited through bwrap "
                              "from what started it (%s, or a wrapper between them), shared with every process "
                              "that holds it (in a service: the service and its other executors)" % (
                                  mine["session"], who)))
    if same_userns:
        out.append(("shared", "user keyring %s and user-session keyring %s are the host's user namespace's, shared "
                              "with every process of uid %s there (user keyrings are per user namespace)" % (
                                  mine["user"], mine["user_session"], uid)))
    theirs = dict((s, name) for name, s in ref.items() if isinstance(s, int))
    for name, _special in _SPECIAL:
        if mine[name] in theirs:
            out.append(("shared", "%s keyring %d is %s's %s keyring" % (name, mine[name], who, theirs[mine[name]])))
    seen = set()
    for row in mine.get("keys") or []:
        where, serial = row[0], row[1]
        if serial == mine["user"] or serial in seen:
            # its own user keyring (the kernel links it in the user-session keyring); another's is found above
            continue
        seen.add(serial)
        out.append(("keys", "key %s in the %s keyring: %s" % (
            serial, where, "type %s, uid %s, gid %s, perm %s" % tuple(row[2:6]) if len(row) >= 6 else row[2:])))
    return out


def check_keyrings(sc: Scene) -> None:
    """9f. The payload's session keyring is its own (not its starter's, not the probe's) and holds no key of
    anyone else; keyctl refused inside passes (nothing reachable)."""
    ref, who = _starter(sc)
    userns = (sc.obs.get("ns") or {}).get("user")
    same_userns = bool(userns) and userns == (sc.host.get("ns") or {}).get("user")
    kinds = judge(sc.obs.get("keyrings"), ref, who, same_userns, sc.obs.get("uid"))
    observed: Json = {"payload": sc.obs.get("keyrings"), "starter": who, "starter_keyrings": ref}
    if sc.outside.get("context") and not same_userns:
        # In a transient unit the payload holds the unit's own session keyring (systemd's KeyringMode=private, with
        # systemd's invocation_id key): the service's, shared by all its executors. Recorded, not yet failed: the
        # service's units need SystemCallFilter=~@keyring first (issue 51 item 3, open).
        observed["unit_keyring"] = [what for _kind, what in kinds[:12]]
        kinds = []
    observed.update(problems=[what for _kind, what in kinds[:12]], kinds=[list(k) for k in kinds[:12]])
    sc.add("keyring_own", "R-SCOPE-1", "a session keyring of the payload's own (not %s's), no key linked in it, or "
           "keyctl refused" % who, observed, not kinds)
