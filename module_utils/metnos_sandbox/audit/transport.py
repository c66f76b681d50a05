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

from ..base import sources as SRC

MAX_ARG = 120000        # Linux MAX_ARG_STRLEN is 128 KiB per argument
MAX_ARGV = 16 * MAX_ARG  # the whole command far under ARG_MAX (2 MiB with the environment)
FRAME_PREFIX = "metnos-audit-"
TOKEN_BYTES = 16
ZLIB_LEVEL = 6
# The core minus the modules only the controller runs (reports, summaries, this transport): the host
# never imports them, and every byte counts against MAX_ARGV.
CONTROLLER_ONLY = ("metnos_sandbox.audit.baseline", "metnos_sandbox.audit.merge", "metnos_sandbox.audit.play_vars",
                   "metnos_sandbox.audit.report", "metnos_sandbox.audit.report_html",
                   "metnos_sandbox.audit.report_metrics", "metnos_sandbox.audit.report_states",
                   "metnos_sandbox.audit.summary", "metnos_sandbox.audit.transport", "metnos_sandbox.audit.waivers")
# The payload in the run's controller-side temp dir (cached_payload): named by its sha256; the lock its builder holds.
PAYLOAD_NAME = "metnos-audit-payload-%s.z"
PAYLOAD_LOCK = "metnos-audit-payload.lock"
PACKAGES = " packages"   # the payload's key listing the package names (no module name has a space)
# Where a host keeps the core compiled by the last audit (root-owned, 0700; runtime state, gone at boot), as one
# bundle named by the sha256 of the compressed core (computed once by the controller, in the envelope) and the
# interpreter's cache tag. Used only after checks: every directory on the way root-owned and not writable by
# others (a sticky one may be), the bundle a root-owned regular file with one link and no group/other bits,
# the interpreter's magic number, and the CRC-32 of its content (it catches a damaged file; what keeps a forged
# one out is that only root can write there: a digest would not, and the interpreter's own sha256 costs ~4 ms
# for the bundle's 1.1 MB). Written only by root; anything else compiles as before. The bundle holds the
# compiled modules and the core's module and package names, so that a hit never reads, decompresses nor decodes
# the shipped sources (~5 ms per host): they are read only to compile a module the bundle lacks. "-3" in its name
# is the bundle's format (a bundle of another format is never read: it is removed by the next write). The
# newest 4 bundles stay (KEEP in BOOTSTRAP: two controllers with different versions of the toolkit, auditing
# the same hosts, do not evict each other's), each with its bwrap verifications ("-3.trust",
# host/trust_store.py); anything else in the directory is removed by the next write.
CACHE_DIR = "/run/metnos-audit"

# Runs on the host: stdlib only, Python 3.8+. It imports nothing it does not need (importlib.abc alone
# costs more than json and zlib together) and compiles a module only when the audit imports it.
BOOTSTRAP = r"""
import sys, json, zlib, os, stat, marshal, gc
gc.disable()    # one short run: no cycle collection (2.5 % of the audit process's instructions, the same peak RSS)
KEEP = 4
rest = None
if len(sys.argv) > 1:
    import base64
    head, _sep, blob = base64.b64decode("".join(sys.argv[1:])).partition(b"\n")
else:
    # The envelope line now; the compressed core after it only when a module must be compiled (a kept bundle
    # never needs it: the controller's writes end at the pipe's capacity instead of ~60 wake-ups for 248 KB).
    # The rest of the message stays on a descriptor of this process alone (os.dup's is not inherited), and what
    # the audit starts has /dev/null as its stdin: end of file at once, as the drained pipe gave before.
    rest = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    head, blob = rest.readline(), None
envelope = json.loads(head.decode("utf-8"))
src = {}
def sources():
    global blob
    if not src:
        if blob is None:
            blob = rest.read()
        src.update(json.loads(zlib.decompress(blob).decode("utf-8")))
    return src
from importlib._bootstrap_external import MAGIC_NUMBER
from importlib.machinery import ModuleSpec
where = envelope.get("cache")
digest = str(envelope.get("digest") or "")
if len(digest) != 64 or digest.strip("0123456789abcdef"):
    where = None                        # no digest, no cache: compiled from the sources
bundle = where and os.path.join(where, "%s-%s-3.code" % (digest, sys.implementation.cache_tag))
trust = bundle and bundle[:-len(".code")] + ".trust"    # its bwrap verifications (host/trust_store.py)
def trusted(path):
    here = "/"
    for part in [""] + [p for p in path.split("/") if p]:
        here = os.path.join(here, part)
        st = os.lstat(here)
        loose = st.st_mode & (0o077 if here == path.rstrip("/") else 0o022)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or (loose and not st.st_mode & stat.S_ISVTX):
            return False
    return True
def cached():
    try:
        handle = open(os.open(bundle, os.O_RDONLY | os.O_NOFOLLOW), "rb")
    except (OSError, TypeError):
        return None, "miss" if bundle else "off"
    with handle:
        st = os.fstat(handle.fileno())
        if not (stat.S_ISREG(st.st_mode) and st.st_uid == 0 and st.st_nlink == 1 and not st.st_mode & 0o077
                and trusted(where)):
            return None, "refused"
        raw = handle.read()
    if raw[:4] != MAGIC_NUMBER or zlib.crc32(raw[8:]).to_bytes(4, "big") != raw[4:8]:
        return None, "refused"
    kept = marshal.loads(raw[8:])
    if not (isinstance(kept, tuple) and len(kept) == 3 and isinstance(kept[0], dict)):
        return None, "refused"
    return kept, "hit"
def remove(path):
    try:                                # one that cannot go (gone already, a directory) stops no other
        os.unlink(path)
    except OSError:
        pass
def keep(codes):
    try:
        if not bundle or os.geteuid() != 0:
            return
        os.makedirs(where, 0o700, exist_ok=True)
        if not trusted(where):
            return
        others = []
        for name in os.listdir(where):
            path = os.path.join(where, name)
            if name.endswith("-3.code") and name != os.path.basename(bundle):
                try:
                    others.append((os.lstat(path).st_mtime, path))
                except OSError:         # removed meanwhile by another audit
                    pass
            elif name.endswith("-3.trust") and (path == trust or os.path.exists(path[:-len(".trust")] + ".code")):
                continue                # a kept bundle's verifications stay with it
            elif name != os.path.basename(bundle):
                remove(path)
        for _mtime, path in sorted(others)[:max(0, len(others) - KEEP + 1)]:     # this one and the newest others
            remove(path)
            remove(path[:-len(".code")] + ".trust")
        body = marshal.dumps((codes, sorted(names), sorted(packages)))
        part = "%s.%d" % (bundle, os.getpid())
        with open(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), "wb") as handle:
            handle.write(MAGIC_NUMBER + zlib.crc32(body).to_bytes(4, "big") + body)
        os.replace(part, bundle)
    except OSError:
        pass
kept, state = cached()
if bundle and os.geteuid() == 0:
    try:                                # before the audit: the first one keeps its bwrap verifications too
        os.makedirs(where, 0o700, exist_ok=True)
    except OSError:
        pass
if kept is None:
    codes, packages = {}, set(sources().pop(" packages"))
    names = set(src)
else:
    codes, names, packages = kept[0], set(kept[1]), set(kept[2])
compiled = []
class Loader(object):
    def find_spec(self, name, path=None, target=None):
        if name in names:
            return ModuleSpec(name, self, is_package=(name in packages))
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        module.__file__ = "<metnos_audit:%s>" % module.__name__
        code = codes.get(module.__name__)
        if code is None:
            code = codes[module.__name__] = compile(sources()[module.__name__], module.__file__, "exec",
                                                    dont_inherit=True)
            compiled.append(module.__name__)
        exec(code, module.__dict__)
    def get_source(self, name):
        return sources()[name]
sys.meta_path.insert(0, Loader())
try:
    from metnos_sandbox.audit import audit
    result = audit.audit_host(envelope["params"], trust_store=trust)
except Exception as exc:
    import traceback
    result = {"failed": True, "msg": "metnos_audit payload failed: %s" % exc, "exception": traceback.format_exc()}
if compiled:
    keep(codes)
if isinstance(result, dict):
    result["payload_cache"] = {"state": state, "compiled": len(compiled)}
body = json.dumps(result).encode("ascii")
frame = envelope["frame"].encode("ascii")
sys.stdout.flush()
sys.stdout.buffer.write(b"\n" + frame + b" " + str(len(body)).encode("ascii") + b"\n" + body + b"\n" + frame +
                        b" end\n")
sys.stdout.buffer.flush()
sys.stderr.flush()
os._exit(0)     # the answer is out: tearing the interpreter down would cost the host ~10-20 ms of CPU for nothing
"""


class TransportError(Exception):
    """The payload cannot travel over this connection (audit_transport_unsupported)."""


def new_frame() -> str:
    """A one-time frame name: a random token the host learns only from the message."""
    return FRAME_PREFIX + secrets.token_hex(TOKEN_BYTES)


def core_sources(core_dir: str) -> Dict[str, Any]:
    """{module name: source} of the core in ``core_dir`` (found on disk: sources.files) minus CONTROLLER_ONLY;
    the packages' names under PACKAGES (the bootstrap's loader marks them as packages)."""
    src: Dict[str, Any] = {}
    found = SRC.files(core_dir)     # one walk of the tree for both
    for rel in found:
        name = SRC.module_name(rel)
        if name not in CONTROLLER_ONLY:
            with open(os.path.join(core_dir, rel), "r", encoding="utf-8") as handle:
                src[name] = handle.read()
    src[PACKAGES] = sorted(SRC.module_name(rel) for rel in found if SRC.is_package(rel))
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


def stdin_command(python: str) -> str:
    """The command that reads the message on its standard input."""
    return "exec %s %s -c %s" % (shlex.quote(python), " ".join(PYTHON_FLAGS), shlex.quote(BOOTSTRAP))


def argv_command(python: str, data: bytes, become: bool = False) -> str:
    """The command that carries the message as its own arguments (run without a shell), each under
    MAX_ARG. TransportError where a wrapper would fold them into one argument (become) or the whole
    would pass ARG_MAX."""
    blob = base64.b64encode(data).decode("ascii")
    if become:
        raise TransportError("become on a connection without pipelining folds the command into one argument")
    if len(blob) > MAX_ARGV:
        raise TransportError("the message (%d bytes in base64) exceeds %d bytes of arguments" % (len(blob), MAX_ARGV))
    chunks = [blob[i:i + MAX_ARG] for i in range(0, len(blob), MAX_ARG)]
    return " ".join(shlex.quote(a) for a in [python] + list(PYTHON_FLAGS) + ["-c", BOOTSTRAP] + chunks)


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
