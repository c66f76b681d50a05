# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's bootstrap: the only code that runs on the host before the core is imported (transport.py sends
this file's text as ``python -I -S -c TEXT``; it is never imported there, and the host is not sent it again
with the core). Standard library only, Python 3.8+. It imports nothing it does not need (importlib.abc alone
costs more than json and zlib together) and compiles a module only when the audit imports it.

It reads the message (transport.message: the envelope line, then the core's sources compressed), keeps the
compiled core in the host's cache (transport.CACHE_DIR: the checks before a kept bundle is used are said
there), imports the core from those sources through its own loader, runs the audit and writes its result in
the frame the controller looks for. Importing this module runs nothing: the work is under
``if __name__ == "__main__"``, which is what ``-c`` gives.
"""
import gc
import json
import marshal
import os
import stat
import sys
import zlib
from importlib._bootstrap_external import MAGIC_NUMBER
from importlib.machinery import ModuleSpec

MYPY = False
if MYPY:    # what the type checker reads; nothing more is imported at run time
    # IO is used in a string annotation only (pylint does not read those)
    from typing import IO, Any  # pylint: disable=unused-import

KEEP = 4
# The sources read through the loader (get_source: the scripts the audit runs in other processes, base/sources.py
# script()), kept in the bundle's codes under this key (no module name has a space), so that a kept bundle needs
# the shipped sources for them no more than for the code.
SCRIPTS = " scripts"


def sources() -> "dict[str, Any]":
    global blob
    if not src:
        if blob is None:
            blob = rest.read()  # type: ignore[union-attr]  # blob is None only when stdin carries the message
        src.update(json.loads(zlib.decompress(blob).decode("utf-8")))
    return src


def trusted(path: str) -> bool:
    here = "/"
    for part in [""] + [p for p in path.split("/") if p]:
        here = os.path.join(here, part)
        st = os.lstat(here)
        loose = st.st_mode & (0o077 if here == path.rstrip("/") else 0o022)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or (loose and not st.st_mode & stat.S_ISVTX):
            return False
    return True


def cached() -> "tuple[Any, str]":
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


def remove(path: str) -> None:
    try:                                # one that cannot go (gone already, a directory) stops no other
        os.unlink(path)
    except OSError:
        pass


def keep(codes: "dict[str, Any]") -> None:
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


class Loader(object):
    def find_spec(self, name: str, path: "Any" = None, target: "Any" = None) -> "ModuleSpec | None":
        if name in names:
            return ModuleSpec(name, self, is_package=(name in packages))  # type: ignore[arg-type]
        return None

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: "Any") -> None:
        module.__file__ = "<metnos_audit:%s>" % module.__name__
        code = codes.get(module.__name__)
        if code is None:
            code = codes[module.__name__] = compile(sources()[module.__name__], module.__file__, "exec",
                                                    dont_inherit=True)
            compiled.append(module.__name__)
        exec(code, module.__dict__)

    def get_source(self, name: str) -> str:
        texts = codes.setdefault(SCRIPTS, {})
        if name not in texts:
            texts[name] = sources()[name]
            read.append(name)
        return str(texts[name])


if __name__ == "__main__":
    gc.disable()    # one short run: no cycle collection (its instructions saved, the same peak RSS: docs/benchmarks.md)
    rest: "IO[bytes] | None" = None
    blob: "bytes | None"
    if len(sys.argv) > 1:
        import base64
        head, _sep, blob = base64.b64decode("".join(sys.argv[1:])).partition(b"\n")
    else:
        # The envelope line now; the compressed core after it only when a module must be compiled (a kept bundle
        # never needs it: the controller's writes end at the pipe's capacity instead of ~60 wake-ups for 248 KB).
        # The rest of the message stays on a descriptor of this process alone (os.dup's is not inherited), and
        # what the audit starts has /dev/null as its stdin: end of file at once, as the drained pipe gave before.
        rest = os.fdopen(os.dup(0), "rb")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        head, blob = rest.readline(), None
    envelope = json.loads(head.decode("utf-8"))
    src: "dict[str, Any]" = {}
    where = envelope.get("cache")
    digest = str(envelope.get("digest") or "")
    if len(digest) != 64 or digest.strip("0123456789abcdef"):
        where = None                        # no digest, no cache: compiled from the sources
    bundle = where and os.path.join(where, "%s-%s-3.code" % (digest, sys.implementation.cache_tag))
    trust = bundle and bundle[:-len(".code")] + ".trust"    # its bwrap verifications (host/trust_store.py)
    kept, state = cached()
    if bundle and os.geteuid() == 0:
        try:                                # before the audit: the first one keeps its bwrap verifications too
            os.makedirs(where, 0o700, exist_ok=True)
        except OSError:
            pass
    codes: "dict[str, Any]"
    names: "set[str]"
    packages: "set[str]"
    if kept is None:
        codes, packages = {}, set(sources().pop(" packages"))
        names = set(src)
    else:
        codes, names, packages = kept[0], set(kept[1]), set(kept[2])
    compiled: "list[str]" = []
    read: "list[str]" = []
    result: "Any"
    sys.meta_path.insert(0, Loader())
    try:
        from metnos_sandbox.audit import host_audit
        result = host_audit.audit_host(envelope["params"], trust_store=trust)
    except Exception as exc:
        import traceback
        result = {"failed": True, "msg": "metnos_audit payload failed: %s" % exc, "exception": traceback.format_exc()}
    if compiled or read:
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
    os._exit(0)     # the answer is out: tearing the interpreter down would cost the host CPU for nothing
