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

keyctl must never kill the payload, and the payload never forks to ask (a child is a second process in the
sandbox, which the process ledger rightly fails): plan() tells it where keyctl is safe. Directly, its seccomp
filters are the probe's when it has as many (a descendant keeps every filter of its ancestors, and adds only), and
own() proved keyctl does not kill under them (asked in a child of the probe's, outside the sandbox, when the probe
runs under a filter). In a unit, the unit's SystemCallFilter= as systemd loads it (unit_action): keyctl let
through, answered with an errno (``~@keyring:EPERM``) or killed (then refused: nothing reachable).

In a unit (the service's real context) the payload holds the unit's own session keyring (KeyringMode=private,
systemd's default for system services): one per service start, shared by the service and every executor it
starts, with systemd's invocation_id key in it (measured: no other key). Decision (issue 51): a finding of its
own, probe_keyring_unit, at info severity, not an error or a warning. It is a channel between executors of one
service that needs code on both ends, not a way to the host (the host's keyrings and any other key in it are
errors); a warning would make every audit of a well-kept unit "warn", and closing it needs the unit's
``SystemCallFilter=~@keyring:EPERM``, which for a non-root unit implies NoNewPrivileges=yes and so stops a setuid
bwrap: opt-in through enforce (filter_keyrings), right for a non-setuid bwrap.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import ctypes
import errno
import os
import struct
import subprocess
import typing as t

from ..base import owners
from ..base.records import Json
from ..host import procfs
from .held import Scene

# kind of finding -> the code it is reported with (codes_holdings.py)
KEYRING_CODES = {"shared": "probe_keyring_shared", "keys": "probe_keyring_keys", "unit": "probe_keyring_unit",
                 "invocation": "probe_keyring_invocation_ids"}
# the kinds of a keyring_own check that are info, not failures
INFO_KINDS = ("unit", "invocation")
# where systemd publishes each unit's InvocationID: links invocation:<unit> -> 32 hex digits (system manager)
UNITS_FOLDER = ("run", "systemd", "units")
UNITS_MAX = 4096            # entries of UNITS_FOLDER read at most
DESCRIBED_MAX = 64          # keys of others the probe describes from outside at most
PATH_ONLY = getattr(os, "O_PATH", os.O_RDONLY)
# keyctl(2) by machine, as in payload_script.KEYCTL_NR
_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "s390x": 280, "ppc64le": 271, "ppc64": 271,
           "i686": 288, "i386": 288, "armv7l": 311}
# keyctl refused by a seccomp filter (systemd's SystemCallFilter=~@keyring answers EPERM unless told otherwise)
# or kills it (SIGSYS, 31: the default action; the payload asks in a child of its own)
_REFUSED = ("error:EPERM", "error:EACCES", "error:ENOSYS", "refused:killed")
# the systemd syscall groups that hold keyctl (systemd-analyze syscall-filter, systemd 252-257)
_KEYCTL_GROUPS = ("keyctl", "@keyring", "@system-service", "@known")
_OWN: t.Dict[t.Any, Json] = {}
_SPECIAL = (("session", -3), ("user", -4), ("user_session", -5))


def own() -> Json:
    """The probe's own user and user-session keyring serials (KEYCTL_GET_KEYRING_ID, never creating one), an error
    text when unread, and its seccomp filter count. Never its session keyring: the kernel installs the
    user-session keyring as the session keyring of a process that asks for one it has not got, which bwrap and the
    payload would then inherit. Under a seccomp filter the probe asks in a child of its own (outside any sandbox,
    reaped here): a filter that kills keyctl kills only that child. Cached per filter count."""
    status = procfs.read_status("self")
    mode, filters = status.get("seccomp"), status.get("seccomp_filters")
    if (mode, filters) in _OWN:
        return _OWN[(mode, filters)]
    if mode == 0:
        out = dict(_ask(), filters=filters)
    else:
        out = dict(_ask_apart(), filters=filters)
    _OWN[(mode, filters)] = out
    return out


def _ask() -> Json:
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


def _ask_apart() -> Json:
    """_ask() in a child of the probe: each serial as 4 signed bytes (or an errno, negated) on a pipe."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:        # the child: only system calls, then _exit (no cleanup of the parent's state)
        code = 0
        try:
            os.close(reading)
            asked = _ask()
            os.write(writing, b"".join(struct.pack("<i", _wire(asked.get(name))) for name, _s in _SPECIAL[1:]))
        except BaseException:  # pylint: disable=broad-except
            code = 1
        os._exit(code)
    os.close(writing)
    data = b""
    try:
        while len(data) < 8:
            chunk = os.read(reading, 8 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(reading)
    _pid, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"killed": os.WTERMSIG(status)}
    if len(data) != 8:
        return {"error": "keyctl asked in a child: no answer (exit %s)" % os.WEXITSTATUS(status)}
    out: Json = {}
    for index, (name, _special) in enumerate(_SPECIAL[1:]):
        value = struct.unpack("<i", data[index * 4:index * 4 + 4])[0]
        out[name] = value if value >= 0 else "error:" + errno.errorcode.get(-value, "?")
    return out


def _wire(value: t.Any) -> int:
    if isinstance(value, int):
        return value
    name = str(value).partition(":")[2]
    return -int(getattr(errno, name, errno.EIO))


def unit_action(assignments: t.Iterable[t.Sequence[t.Any]]) -> str:
    """What the unit's SystemCallFilter= lines (systemd's merge, as restrictions.syscalls_blocked reads them) do to
    keyctl: "allow", "errno" (a per-item ``:errno`` or SystemCallErrorNumber=) or "kill"."""
    allow_mode: t.Optional[bool] = None
    listed: t.Optional[str] = None        # keyctl's own action where a line names it (allow mode: "allow")
    default = "kill"
    for row in assignments:
        key, value = str(row[0]), str(row[1]).strip()
        if key == "SystemCallErrorNumber":
            default = "kill" if value in ("", "kill") else "errno"
            continue
        if key != "SystemCallFilter":
            continue
        if not value:
            allow_mode, listed = None, None
            continue
        negate = value.startswith("~")
        if allow_mode is None:
            allow_mode = not negate
        for item in (value[1:] if negate else value).split():
            name, _colon, action = item.partition(":")
            if name not in _KEYCTL_GROUPS:
                continue
            if allow_mode:
                listed = None if negate else "allow"
            elif negate:
                listed = ("kill" if action == "kill" else "errno") if action else "default"
            else:
                listed = None
    if allow_mode is None:
        return "allow"
    if allow_mode:
        return "allow" if listed == "allow" else default
    if listed is None:
        return "allow"
    return default if listed == "default" else listed


def plan(probe: Json, assignments: t.Optional[t.Iterable[t.Sequence[t.Any]]] = None) -> Json:
    """Where the payload may call keyctl (payload_script.keyrings_asked): "filters", the probe's filter count when
    keyctl did not kill the probe under them; in a unit, "unit": what its SystemCallFilter= does to keyctl."""
    out: Json = {"filters": None if "killed" in probe or "error" in probe else probe.get("filters")}
    if assignments is not None:
        out["unit"] = unit_action(assignments)
    return out


def _starter(sc: Scene) -> t.Tuple[Json, str]:
    context = sc.outside.get("context")
    if isinstance(context, dict) and context:
        return {}, str(context.get("from") or "the unit's process")
    return sc.host.get("keyrings") or {}, "the probe itself"


def _unasked() -> t.Optional[Json]:
    """The evidence when keys cannot be described from outside (the probe's own keyctl killed by its seccomp filter,
    or failing); None when they can (invocation_evidence and visible_evidence ask first)."""
    probe = own()
    if "killed" in probe or "error" in probe:
        return {"error": "keyctl not asked outside: the probe's own keyctl %s" % (
            "was killed by its seccomp filter" if "killed" in probe else probe["error"])}
    return None


def invocation_evidence(mine: t.Any, unit: t.Optional[str]) -> t.Optional[Json]:
    """In a unit, from outside: each key the payload names invocation_id (serial: type, owner uid, whether its
    content is the unit's InvocationID; the content itself never kept or reported) and the unit's InvocationID as
    systemd says it; None when there is no such key or no unit."""
    keys = mine.get("keys") if isinstance(mine, dict) else None
    serials = [row[1] for row in keys or [] if isinstance(row, list) and row[6:7] == ["invocation_id"]
               and isinstance(row[1], int)] if unit else []
    if not serials:
        return None
    unasked = _unasked()
    if unasked is not None:
        return unasked
    unit_id = _unit_invocation(str(unit))
    return {"unit": unit, "keys": dict((str(serial), _outside_key(serial, {unit_id: str(unit)}))
                                       for serial in serials[:4])}


def _unit_invocation(unit: str) -> str:
    """The unit's InvocationID (32 hex digits) from systemctl show, or an error text."""
    try:
        done = subprocess.run(["systemctl", "show", "-p", "InvocationID", "--value", unit], capture_output=True,  # pylint: disable=ansible-bad-function
                              timeout=10, env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return "error:%s" % type(exc).__name__
    said = done.stdout[:64].decode("ascii", "replace").strip()
    return said if len(said) == 32 and all(c in "0123456789abcdef" for c in said) else "error:InvocationID %r" % said


def _outside_key(serial: int, ids: t.Mapping[str, str]) -> Json:
    """One key read by the probe from outside (KEYCTL_DESCRIBE, KEYCTL_READ of at most 64 bytes): its type and
    owner uid, whether its description is invocation_id, and whether its content is one of ``ids`` (InvocationID,
    32 hex digits -> its unit: systemd stores the 16 bytes of the InvocationID), then "unit": that unit. The content
    itself and any other description are never kept."""
    number = _KEYCTL.get(os.uname()[4])
    if number is None:
        return {"error": "keyctl: no system call number known for %s" % os.uname()[4]}
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(4096)
    got = libc.syscall(number, 6, ctypes.c_int(serial), buf, 4096)           # KEYCTL_DESCRIBE
    if got <= 0:
        return {"error": "error:" + errno.errorcode.get(ctypes.get_errno(), "?")}
    words = buf.raw[:got - 1].decode("utf-8", "replace").split(";", 4)
    if len(words) != 5 or not words[1].isdigit():
        return {"error": "error:malformed description"}
    size = libc.syscall(number, 11, ctypes.c_int(serial), buf, 64)           # KEYCTL_READ
    content = buf.raw[:size].hex() if 0 <= size <= 64 else None
    # the description said only when it is systemd's: a serial the payload names may be a key it cannot view
    out: Json = {"type": words[0], "uid": int(words[1]),
                 "description": "invocation_id" if words[4] == "invocation_id" else "another",
                 "content": ("error:" + errno.errorcode.get(ctypes.get_errno(), "?") if size < 0 else
                             "matches" if content is not None and content in ids else "differs (%d bytes)" % size)}
    if out["content"] == "matches":
        out["unit"] = ids[str(content)]
    return out


def published_invocations() -> t.Union[t.Dict[str, str], str]:
    """{InvocationID: unit} as systemd publishes them: the links /run/systemd/units/invocation:<unit> -> <32 hex
    digits>. Each folder on the way is opened without following a link and must be root's and writable by no one
    else (owners.change_reasons, its ACL too); the links are read with readlink on the folder's descriptor, at most
    UNITS_MAX entries (a unit beyond them is not published: its key stays a failure). An error text when unread."""
    fd = os.open("/", PATH_ONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    path = ""
    try:
        for part in UNITS_FOLDER + ("",):
            reasons = owners.change_reasons(os.fstat(fd), fd, sticky_folders=False, root_group=False)
            if reasons:
                os.close(fd)
                return "%s can be changed by others than root (%s)" % (path or "/", ", ".join(reasons))
            if not part:
                break
            below = os.open(part, PATH_ONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd, path = below, path + "/" + part
        listing = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    except OSError as exc:
        os.close(fd)
        return "%s: %s" % (path + "/" + part, procfs.errname(exc))
    ids: t.Dict[str, str] = {}
    try:
        with os.scandir(listing) as entries:
            for count, entry in enumerate(entries):
                if count >= UNITS_MAX:
                    break
                if not entry.name.startswith("invocation:"):
                    continue
                try:
                    target = os.readlink(entry.name, dir_fd=fd)
                except OSError:
                    continue        # not a link: nothing published
                if len(target) == 32 and all(c in "0123456789abcdef" for c in target):
                    ids[target] = entry.name[len("invocation:"):][:256]
    except OSError as exc:
        return "%s: %s" % (path, procfs.errname(exc))
    finally:
        os.close(listing)
        os.close(fd)
    return ids


def _own_unit() -> t.Optional[str]:
    """The systemd unit the probe runs in (the last component of its cgroup v2 path, a .service or .scope), None
    when there is none."""
    try:
        text = procfs.read_text("/proc/self/cgroup", limit=4096)
    except (IOError, OSError):
        return None
    for line in text.splitlines():
        if line.startswith("0::"):
            name = line[3:].rstrip("/").rpartition("/")[2]
            return name if name.endswith((".service", ".scope")) else None
    return None


def _others(mine: t.Any) -> t.List[t.List[t.Any]]:
    """The well-formed rows of the payload's /proc/keys (serial, type, uid, gid, perm) that are not its own keyrings
    nor linked in them."""
    visible = mine.get("visible") if isinstance(mine, dict) else None
    if not isinstance(visible, list):
        return []
    own = set([mine.get("session"), mine.get("user"), mine.get("user_session")] + [
        row[1] for row in mine.get("keys") or [] if isinstance(row, list) and len(row) > 1])
    return [row for row in visible if isinstance(row, list) and len(row) == 5 and isinstance(row[0], int)
            and row[0] not in own]


def visible_evidence(mine: t.Any, unit: t.Optional[str]) -> t.Optional[Json]:
    """From outside (the probe, in its own namespaces): each key of type user the payload's /proc/keys shows beyond
    its own (at most DESCRIBED_MAX), described and compared with the InvocationIDs systemd publishes
    (published_invocations); "own_unit": the probe's transient ``unit``, or the unit the probe runs in. None when
    there is no such key. Read by _reachable: another unit's invocation_id key, visible to a root payload, is
    info (probe_keyring_invocation_ids), anything else probe_keyring_keys."""
    serials = [row[0] for row in _others(mine) if row[1] == "user"][:DESCRIBED_MAX]
    if not serials:
        return None
    unasked = _unasked()
    if unasked is not None:
        return unasked
    published = published_invocations()
    if isinstance(published, str):
        return {"error": "systemd's invocation IDs not read: %s" % published}
    return {"own_unit": unit or _own_unit(), "published": len(published),
            "keys": dict((str(serial), _outside_key(serial, published)) for serial in serials)}


def why_not_systemds(serial: t.Any, evidence: t.Any) -> t.Optional[str]:
    """None when the key ``serial`` is proven systemd's invocation_id key from outside (type user, owner uid 0,
    description invocation_id, content the unit's InvocationID; in visible_evidence: another unit's, not the
    probe's own unit's), else why not."""
    if not isinstance(evidence, dict) or "error" in evidence:
        return "not proven from outside (%s)" % (evidence.get("error") if isinstance(evidence, dict) else
                                                 "no evidence read")
    key = (evidence.get("keys") or {}).get(str(serial))
    if not isinstance(key, dict) or "error" in key:
        return "not proven from outside (%s)" % (key.get("error") if isinstance(key, dict) else "not read")
    others = "own_unit" in evidence
    wrong = [what for what, bad in (
        ("type %s, not user" % key.get("type"), key.get("type") != "user"),
        ("owner uid %s, not 0" % key.get("uid"), key.get("uid") != 0),
        ("another description", key.get("description") != "invocation_id"),
        ("content %s, not %s InvocationID" % (key.get("content"), "a unit's" if others else "the unit's"),
         key.get("content") != "matches"),
        ("the InvocationID of the probe's own unit %s, not linked in the payload's keyrings" % key.get("unit"),
         others and key.get("content") == "matches" and key.get("unit") == evidence.get("own_unit"))) if bad]
    return "; ".join(wrong) or None


def judge(mine: t.Any, ref: Json, who: str, same_userns: bool = False, uid: t.Any = None,
          unit: bool = False, outside: t.Optional[Json] = None) -> t.List[t.Tuple[str, str]]:
    """[(kind, what)] of each way the payload's keyrings are not its own (or not proven). ``same_userns``: the
    payload's user namespace is the probe's; ``unit``: run in a transient unit, whose own session keyring (and
    systemd's invocation_id key in it, proven from outside: ``outside["invocation"]``, invocation_evidence()) is the
    "unit" kind, reported at info severity; other units' invocation_id keys that /proc/keys shows a root payload,
    proven from outside (``outside["visible"]``, visible_evidence()), are the "invocation" kind, info too."""
    outside = outside or {}
    invocation = outside.get("invocation")
    if not isinstance(mine, dict) or "error" in mine:
        return [("shared", "keyrings not proven: the payload reported %s" % (
            mine.get("error") if isinstance(mine, dict) else type(mine).__name__))]
    serials = [mine.get(name) for name, _special in _SPECIAL]
    if all(s in _REFUSED for s in serials):
        return []       # keyctl refused inside: no keyring reachable (SystemCallFilter=~@keyring)
    if not all(isinstance(s, int) for s in serials):
        return [("shared", "keyrings not proven: session %s, user %s, user-session %s" % tuple(serials))]
    out: t.List[t.Tuple[str, str]] = []
    shared_kind = "unit" if unit and not same_userns else "shared"
    if mine["session"] != mine["user_session"]:
        out.append((shared_kind, "session keyring %d joined before the payload started: inherited through "
                                 "bwrap from what started it (%s, or a wrapper between them), shared with every "
                                 "process that holds it (in a service: the service and its other executors)" % (
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
        if shared_kind == "unit" and where == "session" and row[6:7] == ["invocation_id"]:
            why = why_not_systemds(serial, invocation)
            if why is None:
                out.append(("unit", "systemd's invocation_id key %s in the unit's session keyring" % serial))
            else:
                out.append(("keys", "key %s named invocation_id in the session keyring, not systemd's: %s" % (
                    serial, why)))
            continue
        out.append(("keys", "key %s in the %s keyring: %s" % (
            serial, where, "type %s, uid %s, gid %s, perm %s" % tuple(row[2:6]) if len(row) >= 6 else row[2:])))
    out.extend(_reachable(mine, uid, outside.get("visible")))
    return out


def _reachable(mine: Json, uid: t.Any, evidence: t.Any) -> t.List[t.Tuple[str, str]]:
    """[(kind, what)] of each key (not a keyring) the payload's /proc/keys shows that is not linked in its own
    keyrings: keyrings are not namespaced, and a key it may view it reaches by its serial (the service user's own
    user keyring, its kuid's: linked by serial into the payload's session keyring, every key in it is possessed,
    then read): "keys". Public keys (type asymmetric: the kernel's certificates) are not secrets. Another unit's
    invocation_id key (a root payload views every root service's: systemd makes them uid 0, user view and read)
    proven from outside (``evidence``, visible_evidence(): type user, uid 0, its content an InvocationID systemd
    publishes for a unit not the probe's) is no secret (the journal names it): "invocation". Not proven: /proc/keys
    unread (without a /proc in the sandbox, "error:ENOENT", no serial is listed)."""
    visible = mine.get("visible")
    if visible == "error:ENOENT":
        return []
    if not isinstance(visible, list):
        return [("keys", "keys reachable by serial not proven: /proc/keys inside gave %s" % visible)]
    out: t.List[t.Tuple[str, str]] = [
        ("keys", "keys reachable by serial not proven: /proc/keys inside gave %s" % (row,)) for row in visible
        if not isinstance(row, list) or len(row) != 5 or not isinstance(row[0], int)]
    units: t.List[str] = []
    for row in _others(mine):
        if row[1] == "asymmetric":
            continue
        why = why_not_systemds(row[0], evidence) if row[1] == "user" else "type %s" % row[1]
        if why is None:
            units.append("%d (%s)" % (row[0], evidence["keys"][str(row[0])].get("unit")))
            continue
        out.append(("keys", "key %d (type %s, uid %s%s, gid %s, perm %s) of another keyring, shown by /proc/keys "
                    "inside and reachable by its serial (its keyring linked into the payload's own, then read)%s" % (
                        row[0], row[1], row[2], ": the payload's own uid, the service's" if row[2] == uid else "",
                        row[3], row[4], "; not another unit's invocation ID: %s" % why if row[1] == "user" else "")))
    if units:
        out.append(("invocation", "%d keys of other units, shown by /proc/keys inside, are systemd's invocation_id "
                    "keys (type user, uid 0, content the unit's published InvocationID, read from outside): %s%s" % (
                        len(units), ", ".join(units[:8]), " and %d more" % (len(units) - 8) if len(units) > 8 else "")))
    return out


def check_keyrings(sc: Scene) -> None:
    """9f. The payload's session keyring is its own (not its starter's, not the probe's) and holds no key of
    anyone else; keyctl refused inside passes (nothing reachable)."""
    ref, who = _starter(sc)
    userns = (sc.obs.get("ns") or {}).get("user")
    same_userns = bool(userns) and userns == (sc.host.get("ns") or {}).get("user")
    unit = bool(sc.outside.get("context"))
    kinds = judge(sc.obs.get("keyrings"), ref, who, same_userns, sc.obs.get("uid"), unit, sc.outside)
    observed: Json = {"payload": sc.obs.get("keyrings"), "starter": who, "starter_keyrings": ref,
                      "plan": sc.spec.get("keyctl")}
    errors = [k for k in kinds if k[0] not in INFO_KINDS]
    # the unit's own keyring, shared by the service's executors, and other units' invocation IDs: info, not a
    # failure (probe_keyring_unit, see the top; probe_keyring_invocation_ids)
    observed.update(problems=[what for _kind, what in errors[:12]], kinds=[list(k) for k in kinds[:12]])
    sc.add("keyring_own", "R-SCOPE-1", "a session keyring of the payload's own (not %s's), no key linked in it, or "
           "keyctl refused" % who, observed, not errors)


def unit_findings(checks: t.Iterable[Json]) -> t.List[t.Tuple[str, str]]:
    """[(code, what)] of the info findings of a passed keyring_own check: the unit's shared session keyring, other
    units' invocation IDs."""
    out: t.List[t.Tuple[str, str]] = []
    for check in checks:
        observed = check.get("observed")
        if check.get("name") == "keyring_own" and check.get("ok") and isinstance(observed, dict):
            for info in INFO_KINDS:
                said = [what for kind, what in observed.get("kinds") or [] if kind == info]
                if said:
                    out.append((KEYRING_CODES[info], "; ".join(said[:6])))
    return out
