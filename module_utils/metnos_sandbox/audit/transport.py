# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the fleet audit travels to a host and back (the metnos_audit action's transport, issue 22).

One way of shipping, one message, one frame:

- The message is one line of JSON (the envelope: this run's frame token and the audit's options),
  a newline, then the core's sources as one zlib-compressed JSON object {module name: source}.
  It is the data of one command that runs the bootstrap below with the host's interpreter: on the
  command's standard input where the connection forwards it (Ansible's pipelining: local, ssh), or
  else as that command's arguments, base64 in chunks under Linux's 128 KiB per argument (podman,
  docker: no shell, nothing written on the host). On stdin the host reads the envelope line first and the
  compressed core only when it must compile a module (a kept bundle, below, never does); the controller's
  writes then end with an EPIPE at the pipe's capacity, which subprocess and Ansible's ssh connection take
  as the end of the input. There is no third way: a connection that can do
  neither is refused (audit_transport_unsupported) rather than writing a temporary file on a host
  the audit must leave byte-identical.
- The answer is framed: the bootstrap writes the result as ``\\n<frame> <length>\\n<JSON>\\n<frame> end\\n``,
  where ``<frame>`` carries a random token the controller made for this call and sent only inside
  the (compressed or base64) message. Anything else on stdout - a banner, a MOTD, a wrapper's stray
  ``{`` - is not a frame; an answer without exactly one complete frame is audit_result_unframed.

Pure Python, no Ansible: the action plugin (action_plugins/metnos_audit.py) is its only caller on the
controller; the bootstrap is the only code that runs on the host before the core is imported.
"""
from __future__ import absolute_import, annotations, division, print_function

import base64
import fcntl
import functools
import hashlib
import json
import os
import secrets
import shlex
import zlib
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..base import sources
from . import bootstrap

MAX_ARG = 120000        # Linux MAX_ARG_STRLEN is 128 KiB per argument
MAX_ARGV = 16 * MAX_ARG  # the whole command far under ARG_MAX (2 MiB with the environment)
FRAME_PREFIX = "metnos-audit-"
TOKEN_BYTES = 16
MAX_DEADLINE = 86400     # seconds: the longest a host's audit may be given (metnos_audit_host_timeout)
KILLED = (124, 137)      # timeout(1)'s exit statuses when the deadline passed (SIGTERM's, SIGKILL's)
ZLIB_LEVEL = 6
# What the bootstrap imports on the host: the payload is this module's import closure (sources.closure), so the
# controller's own modules (report/, monitor/, this transport) never travel and every byte counts against MAX_ARGV.
ENTRY = "metnos_sandbox.audit.host_audit"
# The payload in the run's controller-side temp dir (cached_payload): named by its sha256; the lock its builder holds.
PAYLOAD_NAME = "metnos-audit-payload-%s.z"
PAYLOAD_LOCK = "metnos-audit-payload.lock"
PACKAGES = " packages"   # the payload's key listing the package names (no module name has a space)
# Where a host keeps the core compiled by the last audit (root-owned, 0700; runtime state, gone at boot), as one
# bundle named by the sha256 of the compressed core (computed once by the controller, in the envelope) and the
# interpreter's cache tag. Used only after checks: every directory on the way root-owned and not writable by
# others (a sticky one may be), the bundle a root-owned regular file with one link and no group/other bits,
# the interpreter's magic number, and the CRC-32 of its content (it catches a damaged file; what keeps a forged
# one out is that only root can write there: a digest would not, and the interpreter's own sha256 of the whole
# bundle costs each host CPU, docs/benchmarks.md). Written only by root; anything else compiles as before. The
# bundle holds the compiled modules, the sources read as scripts (bootstrap.SCRIPTS) and the core's module and
# package names, so that a hit never reads, decompresses nor decodes the shipped sources (CPU on every host,
# docs/benchmarks.md): they are read only to compile a module the bundle lacks. "-3" in its name is the bundle's
# format (a bundle of another format is never read: it is removed by the next write). The newest 4 bundles stay
# (KEEP in bootstrap.py: two controllers with different versions of the toolkit, auditing the same hosts, do not
# evict each other's), each with its bwrap verifications ("-3.trust", host/trust_store.py); anything else in the
# directory is removed by the next write.
CACHE_DIR = "/run/metnos-audit"

# What runs on the host first (``python -I -S -c BOOTSTRAP``): the text of bootstrap.py, read once.
BOOTSTRAP = sources.script(bootstrap)


class TransportError(Exception):
    """The payload cannot travel over this connection (audit_transport_unsupported)."""


def new_frame() -> str:
    """A one-time frame name: a random token the host learns only from the message."""
    return FRAME_PREFIX + secrets.token_hex(TOKEN_BYTES)


def core_sources(core_dir: str) -> Dict[str, Any]:
    """{module name: source} of the core in ``core_dir`` (found on disk: sources.files) that the host's entry
    point (ENTRY) imports (sources.closure); those of them that are packages named under PACKAGES (the
    bootstrap's loader marks them as packages)."""
    every: Dict[str, str] = {}
    packages = set()
    for rel in sources.files(core_dir):     # one walk of the tree
        name = sources.module_name(rel)
        if sources.is_package(rel):
            packages.add(name)
        with open(os.path.join(core_dir, rel), "r", encoding="utf-8") as handle:
            every[name] = handle.read()
    shipped = sources.closure(ENTRY, every, packages)
    src: Dict[str, Any] = dict((name, every[name]) for name in shipped)
    src[PACKAGES] = sorted(packages & shipped)
    return src


def build_payload(core_dir: str) -> bytes:
    """The core's sources as one zlib-compressed JSON object. Level 6 (zlib's default): slightly larger than 9 for
    half its CPU, once per run, in the first host's worker (docs/benchmarks.md)."""
    return zlib.compress(json.dumps(core_sources(core_dir), sort_keys=True).encode("utf-8"), ZLIB_LEVEL)


def cached_payload(core_dir: str, cache_dir: Optional[str]) -> Tuple[bytes, str]:
    """(build_payload(), its digest()), kept in ``cache_dir`` (the run's private controller-side temp dir) so that
    each host's worker reads the bytes instead of compressing the core again or hashing them again (the
    costs: docs/benchmarks.md): its builder names the file by the sha256 of what it writes
    (PAYLOAD_NAME), so the digest travels with the bytes it names. The first workers of a run start together:
    one builds it under a lock (PAYLOAD_LOCK), the others wait for it and read it (they used to build it too:
    5 builds at 20 hosts)."""
    if not cache_dir:
        blob = build_payload(core_dir)
        return blob, digest(blob)
    kept = _read_kept(cache_dir)
    if kept is not None:
        return kept
    try:
        lock: Optional[int] = os.open(os.path.join(cache_dir, PAYLOAD_LOCK),
                                      os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        lock = None
    try:
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
            kept = _read_kept(cache_dir)      # built while this worker waited
            if kept is not None:
                return kept
        blob = build_payload(core_dir)
        name = digest(blob)
        path = os.path.join(cache_dir, PAYLOAD_NAME % name)
        part = "%s.%d" % (path, os.getpid())
        try:
            with open(part, "wb") as handle:
                handle.write(blob)
            os.replace(part, path)
        except OSError:     # only a saving: the next worker builds it again
            pass
        return blob, name
    finally:
        if lock is not None:
            os.close(lock)


def _read_kept(cache_dir: str) -> Optional[Tuple[bytes, str]]:
    """The payload a worker of this run built, and its digest (the file's name), or None."""
    head, tail = PAYLOAD_NAME.split("%s")
    try:
        for name in os.listdir(cache_dir):
            kept = name[len(head):-len(tail)] if name.startswith(head) and name.endswith(tail) else ""
            if len(kept) == 64 and not kept.strip("0123456789abcdef"):
                with open(os.path.join(cache_dir, name), "rb") as handle:
                    return handle.read(), kept
    except OSError:
        pass
    return None


def message(frame: str, params: Mapping[str, Any], payload: bytes, cache: Optional[str] = CACHE_DIR,
            payload_digest: Optional[str] = None) -> bytes:
    """The one message: the envelope line (frame, options, where the host keeps the compiled core, and under
    which name: ``payload_digest`` when the caller has it, as cached_payload gives it, else digest()), then the
    compressed core."""
    return json.dumps({"frame": frame, "params": params, "cache": cache,
                       "digest": payload_digest or digest(payload)}).encode("utf-8") + b"\n" + payload


@functools.lru_cache(maxsize=4)
def digest(payload: bytes) -> str:
    """The sha256 of the compressed core, the name of its compiled bundle on the hosts (hashlib's OpenSSL,
    in each host's worker; a caller that sends the same bytes again gets it kept)."""
    return hashlib.sha256(payload).hexdigest()


# The payload needs the standard library alone: isolated (-I: no PYTHON* variables, no user site, no script
# folder on sys.path) and without the site module (-S: less CPU on each host, and nothing of the host's
# site-packages can shadow a module the core imports).
PYTHON_FLAGS = ("-I", "-S")


def stdin_command(python: str, deadline: Optional[float] = None) -> str:
    """The command that reads the message on its standard input. With ``deadline`` (seconds) the interpreter runs
    under timeout(1) where the host has it: its own process group, killed whole (SIGKILL) when the time is up, so
    that neither a hung payload nor anything it started outlives the audit (exit status 137)."""
    run = "%s %s -c %s" % (shlex.quote(python), " ".join(PYTHON_FLAGS), shlex.quote(BOOTSTRAP))
    if deadline is None:
        return "exec " + run
    return "%s; exec $limit %s" % (limited(deadline), run)


def limited(deadline: float) -> str:
    """The shell words that set ``$limit`` to ``timeout -s KILL SECONDS`` where the host has timeout(1), else
    to nothing (the controller's own alarm then ends the wait)."""
    return "limit=; command -v timeout >/dev/null 2>&1 && limit='timeout -s KILL %s'" % deadline_text(deadline)


def deadline_text(seconds: float) -> str:
    """A deadline as timeout(1) reads it: positive seconds, at most a day, in plain decimal."""
    if not 0 < seconds <= MAX_DEADLINE:
        raise ValueError("a deadline of %r seconds is not within (0, %d]" % (seconds, MAX_DEADLINE))
    return ("%.3f" % seconds).rstrip("0").rstrip(".")


def argv_command(python: str, data: bytes, become: bool = False, deadline: Optional[float] = None) -> str:
    """The command that carries the message as its own arguments (run without a shell), each under
    MAX_ARG. TransportError where a wrapper would fold them into one argument (become) or the whole
    would pass ARG_MAX. With ``deadline`` (seconds) the host's /bin/sh starts the interpreter under timeout(1)
    as stdin_command does (its process group killed whole when the time is up): the shell's script is the
    fixed text of limited(), and the interpreter and the message are its positional arguments (``"$0" "$@"``),
    never parsed by it."""
    blob = base64.b64encode(data).decode("ascii")
    if become:
        raise TransportError("become on a connection without pipelining folds the command into one argument")
    if len(blob) > MAX_ARGV:
        raise TransportError("the message (%d bytes in base64) exceeds %d bytes of arguments" % (len(blob), MAX_ARGV))
    chunks = [blob[i:i + MAX_ARG] for i in range(0, len(blob), MAX_ARG)]
    head = [] if deadline is None else ["/bin/sh", "-c", '%s; exec $limit "$0" "$@"' % limited(deadline)]
    return " ".join(shlex.quote(a) for a in head + [python] + list(PYTHON_FLAGS) + ["-c", BOOTSTRAP] + chunks)


def unframe(stdout: str, frame: str) -> Optional[Dict[str, Any]]:
    """The audit result in ``stdout``: the one complete frame named ``frame``, decoded (a mapping), or None
    when there is no such frame, more than one, or its body is not a JSON object of the stated length."""
    found = framed(stdout, frame)
    return found[0] if found is not None else None


def framed(stdout: str, frame: str) -> Optional[Tuple[Dict[str, Any], str]]:
    """unframe(), with the frame's body as it came (the JSON text the host wrote, which the action keeps in the
    spool as it is instead of encoding the decoded record again). Found with str.find, not a regular
    expression: the frame is new on every call, so a pattern would be compiled for every host."""
    found: List[Tuple[Dict[str, Any], str]] = []
    head, tail = "\n%s " % frame, "\n%s end\n" % frame
    pos = stdout.find(head)
    while pos != -1:
        digits = pos + len(head)
        eol = stdout.find("\n", digits, digits + 13)
        size = stdout[digits:eol] if eol != -1 else ""
        if not (size and size.isdecimal()):      # the header is "\n<frame> <1 to 12 digits>\n"
            pos = stdout.find(head, pos + 1)
            continue
        start = eol + 1
        end = start + int(size)
        pos = stdout.find(head, start)
        if not stdout.startswith(tail, end):
            continue
        text = stdout[start:end]
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append((value, text))
    return found[0] if len(found) == 1 else None


# What metnos_audit returns with result=summary: these keys of the record, when present, plus the diagnostics'
# codes and their count by severity (the whole record is in the run's spool for metnos_audit_report).
SUMMARY_KEYS = ("schema", "verdict", "duration", "cpu", "payload_cache")


def summary(record: Mapping[str, Any]) -> Dict[str, Any]:
    """The small result of one host's audit: SUMMARY_KEYS, ``codes`` (each diagnostic's code, in the record's
    order) and ``counts`` ({severity: number of diagnostics})."""
    out = dict((key, record[key]) for key in SUMMARY_KEYS if key in record)
    diags = [d for d in record.get("diagnostics") or [] if isinstance(d, Mapping)]
    out["codes"] = [d.get("code") for d in diags]
    counts: Dict[str, int] = {}
    for diag in diags:
        severity = str(diag.get("severity"))
        counts[severity] = counts.get(severity, 0) + 1
    out["counts"] = counts
    return out


def tail(texts: Sequence[Optional[str]], size: int = 1500) -> str:
    """The last ``size`` characters of the first non-empty text (stderr, else stdout) for a message."""
    for text in texts:
        if text:
            return text[-size:]
    return ""
