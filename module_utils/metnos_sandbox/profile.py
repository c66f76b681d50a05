# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host context + manifest + invocation -> Profile (mounts with provenance) -> bwrap argv.

The one renderer of the toolkit: the sandbox_profile module, the filters, the
probe and the audit all call ``render``. Rules are from the spec
(shared/spec/SANDBOX_SPEC.md); every mount, flag and network decision carries
the rule id and the base item or capability that caused it.
"""
from __future__ import absolute_import, annotations, division, print_function

import functools
import os
import shlex

from . import diagnostics as D
from .manifest import ManifestError, glob_root

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc",
                "/var/lib/python3", "/sys")
# Neither read nor write may be rooted at or under these (the profile provides them itself).
FORBIDDEN_TREES = ("/proc", "/dev")
# Shared trees: a scope may live below them, never be one of them (R-SEC-2: no /opt).
BROAD_ROOTS = ("/", "/opt", "/home", "/root", "/var", "/var/lib", "/run", "/srv", "/mnt", "/media",
               "/tmp", "/usr/local", "/boot", "/lost+found")
# System trees: never writable at or below.
SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/boot",
                "/sys", "/proc", "/dev", "/var/lib/python3")
BASE_FLAGS = ("--unshare-user", "--unshare-ipc", "--unshare-uts")
UNDO_NAME = "undo_last_turn"

DEFAULT_HOST = {
    "runtime_dir": "/srv/metnos/runtime",
    "executors_dir": "/srv/metnos/executors",
    "executor_dir": None,
    "python_executable": "/srv/metnos/venv/bin/python3",
    "python_prefix": "/srv/metnos/venv",
    "python_package_roots": [],
    "i18n_dbs": ["/var/lib/metnos/i18n"],
    "lexicon_dbs": ["/var/lib/metnos/lexicon"],
    "resources": {
        "sheets": "/var/lib/metnos/sheets",
        "people": "/var/lib/metnos/people",
        "proposals": "/var/lib/metnos/proposals",
        "memory": "/var/lib/metnos/memory",
        "calendar": "/var/lib/metnos/calendar",
        "tasks": "/var/lib/metnos/tasks",
    },
    "indexes": {
        "documents": "/var/lib/metnos/index/documents",
        "mail": "/var/lib/metnos/index/mail",
        "notes": "/var/lib/metnos/index/notes",
    },
    "integrations_dir": "/var/lib/metnos/integrations",
    "mail_credentials_dir": "/var/lib/metnos/credentials/mail",
    "mail_accounts": {},
    "dialog_dir": "/var/lib/metnos/dialog",
    "undo_root": "/var/lib/metnos/undo",
    "systemd_read_paths": ["/run/systemd/system", "/run/dbus/system_bus_socket"],
    "system_read_paths": [],
    "undo_exception": None,
}
_LIST_KEYS = ("python_package_roots", "i18n_dbs", "lexicon_dbs", "systemd_read_paths", "system_read_paths")
_DICT_KEYS = ("resources", "indexes", "mail_accounts")
_PATH_KEYS = ("runtime_dir", "executors_dir", "executor_dir", "python_executable", "python_prefix",
              "integrations_dir", "mail_credentials_dir", "dialog_dir", "undo_root")


class ContextError(ValueError):
    """A host-context or invocation option is invalid; the message names it."""


def _under(path, root):
    return path == root or root == "/" or path.startswith(root + "/")


def _abs_clean(key, value):
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value:
        raise ContextError("host.%s must be an absolute path, got %r" % (key, value))
    norm = os.path.normpath(value)
    return "/" if norm == "//" else norm


class HostContext(object):
    """Real paths on this host. Base mounts are computed once per context."""

    def __init__(self, overrides=None):
        data = dict(DEFAULT_HOST)
        for key, value in (overrides or {}).items():
            if key not in DEFAULT_HOST:
                raise ContextError("host: unknown key %r; accepted: %s" % (key, ", ".join(sorted(DEFAULT_HOST))))
            data[key] = value
        for key in _PATH_KEYS:
            if data[key] is not None:
                data[key] = _abs_clean(key, data[key])
        for key in _LIST_KEYS:
            if not isinstance(data[key], (list, tuple)):
                raise ContextError("host.%s must be a list of absolute paths, got %r" % (key, data[key]))
            data[key] = [_abs_clean(key, v) for v in data[key]]
        for key in _DICT_KEYS:
            if not isinstance(data[key], dict):
                raise ContextError("host.%s must be a mapping, got %r" % (key, data[key]))
        data["resources"] = dict((k, _abs_clean("resources." + k, v)) for k, v in data["resources"].items())
        data["indexes"] = dict((k, _abs_clean("indexes." + k, v)) for k, v in data["indexes"].items())
        accounts = {}
        for account, files in data["mail_accounts"].items():
            if isinstance(files, str):
                files = [files]
            accounts[account] = [_abs_clean("mail_accounts." + account, f) for f in files]
        data["mail_accounts"] = accounts
        exc = data["undo_exception"]
        if exc is not None and not isinstance(exc, dict):
            raise ContextError("host.undo_exception must be a mapping (name, origin, owner, capability, "
                               "files, digest), got %r" % (exc,))
        self.data = data
        self._base = None
        self._base_mounts = None

    def __getitem__(self, key):
        return self.data[key]

    def base_mounts(self):
        """A fresh _Mounts holding the base set (built once, copied per render)."""
        if self._base_mounts is None:
            mounts = _Mounts()
            for kind, src, dest, rule, source in self.base():
                mounts.add(kind, src, dest, rule, source)
            self._base_mounts = mounts
        return self._base_mounts.copy()

    def base(self):
        """Base mounts (R-BASE-1..5) that exist on this host: list of (kind, src, dest, rule, source)."""
        if self._base is not None:
            return self._base
        out = []
        for path in SYSTEM_PATHS:
            if os.path.islink(path):
                # merged /usr: /bin -> usr/bin becomes a symlink inside the sandbox too
                out.append(("symlink", os.readlink(path), path, "R-BASE-1", "base:" + path))
            elif os.path.isdir(path):
                out.append(("ro", path, path, "R-BASE-1", "base:" + path))
        out.append(("proc", None, "/proc", "R-BASE-2", "base:/proc"))
        out.append(("dev", None, "/dev", "R-BASE-2", "base:/dev"))
        out.append(("tmpfs", None, "/tmp", "R-BASE-3", "base:/tmp"))
        for key in ("runtime_dir", "python_prefix"):
            path = self.data[key]
            if path and os.path.exists(path):
                out.append(("ro", path, path, "R-BASE-4", "base:%s" % key))
        for path in self.data["python_package_roots"]:
            if os.path.isdir(path) and not _is_home(path):
                out.append(("ro", path, path, "R-BASE-4", "base:python_package_root"))
        for key in ("i18n_dbs", "lexicon_dbs"):
            for path in self.data[key]:
                if os.path.exists(path):
                    out.append(("ro", path, path, "R-BASE-5", "base:%s" % key))
        self._base = out
        return out


def discover_python_roots(python, runner):
    """sys.path directories of the runtime's interpreter, as absolute existing directories.
    ``runner(argv) -> (rc, out, err)``. Home folders are filtered later by HostContext.base()."""
    import json
    if not python or not os.path.exists(python):
        return []
    rc, out, _err = runner([python, "-c", "import json, sys; print(json.dumps(sys.path))"])
    if rc != 0:
        return []
    try:
        paths = json.loads(out)
    except ValueError:
        return []
    return sorted(set(os.path.normpath(p) for p in paths if isinstance(p, str) and p.startswith("/")
                      and os.path.isdir(p)))


def with_python_roots(host_over, runner):
    """Host overrides completed with the interpreter's package roots (unless given)."""
    out = dict(host_over or {})
    if "python_package_roots" not in out:
        out["python_package_roots"] = discover_python_roots(
            out.get("python_executable", DEFAULT_HOST["python_executable"]), runner)
    return out


def _is_home(path):
    """A whole home folder (or /home, /root) is never a package root."""
    parts = path.rstrip("/").split("/")
    return path in ("/home", "/root") or (len(parts) == 3 and parts[1] == "home")


class _Mounts(object):
    def __init__(self, entries=None):
        self.entries = entries if entries is not None else {}

    def copy(self):
        return _Mounts(dict((d, dict(e, provenance=list(e["provenance"]))) for d, e in self.entries.items()))

    def add(self, kind, src, dest, rule, source):
        entry = self.entries.get(dest)
        prov = {"rule": rule, "source": source}
        if entry is None:
            self.entries[dest] = {"kind": kind, "src": src, "dest": dest, "provenance": [prov]}
            return
        if prov not in entry["provenance"]:
            entry["provenance"].append(prov)
        if entry["kind"] == "ro" and kind == "rw":
            entry["kind"] = "rw"   # ro + rw on one path -> rw, only because a write capability asked

    def ordered(self):
        """Parents before children; binds covered by an equal-or-stronger parent bind are merged into it."""
        binds = dict((d, e) for d, e in self.entries.items() if e["kind"] in ("ro", "rw") and e["src"] == d)
        keep = []
        for dest in sorted(self.entries, key=lambda d: (d.count("/"), d)):
            entry = self.entries[dest]
            parent = _covering_parent(dest, binds) if dest in binds else None
            if parent is not None and (binds[parent]["kind"] == "rw" or entry["kind"] == "ro"):
                for prov in entry["provenance"]:
                    if prov not in binds[parent]["provenance"]:
                        binds[parent]["provenance"].append(dict(prov, covers=dest))
                continue
            keep.append(entry)
        return keep


def _covering_parent(dest, binds):
    for ancestor in _ancestors(dest):
        if ancestor in binds:
            return ancestor
    return None


@functools.lru_cache(maxsize=4096)
def _ancestors(path):
    """'/a/b/c' -> ('/a/b', '/a', '/'), nearest first (cached: base paths repeat every render)."""
    out = []
    current = path
    while current not in ("/", ""):
        current = os.path.dirname(current)
        out.append(current)
    return tuple(out)


_quote = functools.lru_cache(maxsize=8192)(shlex.quote)


def shell_join(argv):
    return " ".join(_quote(a) for a in argv)


def refused(name, diags, decision="refused"):
    errors = [d for d in diags if d["severity"] == D.ERROR]
    return {"executor": name, "decision": decision, "refusal": errors[0]["code"] if errors else None,
            "argv": None, "command_line": None, "mounts": [], "namespaces": [],
            "network": None, "diagnostics": D.sort(diags)}


def _diag(code, message, **ctx):
    return D.make(code, message=message, **ctx)


def _check_fixed_scope(cap, root, host, diags):
    """Refuse over-broad or dangerous fixed scopes (after glob reduction)."""
    for tree in FORBIDDEN_TREES:
        if _under(root, tree):
            diags.append(_diag("scope_too_broad", "%s: %s is provided by the profile itself and cannot be "
                               "granted (R-BASE-2)" % (cap.text, root), capability=cap.text))
            return False
    if root in BROAD_ROOTS:
        diags.append(_diag("scope_too_broad", "%s reduces to %s, a shared tree: it would expose every sibling "
                           "(R-SEC-2, R-CAP-FS)" % (cap.text, root), capability=cap.text, root=root))
        return False
    if cap.mode == "write":
        protected = list(SYSTEM_TREES) + [p for p in (host["runtime_dir"], host["python_prefix"]) if p]
        for tree in protected:
            if _under(root, tree):
                diags.append(_diag("scope_too_broad", "%s reduces to %s, inside the read-only system or "
                                   "runtime tree %s: never writable (R-CAP-FS, R-BASE-4)"
                                   % (cap.text, root, tree), capability=cap.text, root=root))
                return False
    return True


def _component(value):
    return isinstance(value, str) and value not in ("", ".", "..") and "/" not in value and "\0" not in value


def _resolve_arg(cap, manifest, invocation, diags, mounts):
    """R-ARG-1: resolve an arg: scope on the concrete value, only inside 'within', only if it exists."""
    args = invocation.get("arguments") or {}
    value = args.get(cap.arg)
    field = "invocation.arguments.%s" % cap.arg
    if value is None:
        diags.append(_diag("grant_skipped", "%s: no value for argument %r in this invocation; nothing mounted"
                           % (cap.text, cap.arg), capability=cap.text))
        return
    if not isinstance(value, str) or not value:
        diags.append(_diag("arg_value_invalid", "%s: %r is not a path string (R-ARG-1)" % (field, value),
                           field=field))
        return
    if any(ord(ch) < 32 for ch in value):
        diags.append(_diag("scope_nul", "%s: %r contains NUL or control characters (R-ARG-1)" % (field, value),
                           field=field))
        return
    roots = [glob_root(s) for s in manifest.arguments[cap.arg]["within"]]
    base = value if value.startswith("/") else os.path.join(roots[0], value)
    lexical = os.path.normpath(base)
    if lexical.startswith("//"):
        lexical = "/" + lexical.lstrip("/")
    inside = [r for r in roots if _under(lexical, r)]
    if not inside:
        diags.append(_diag("arg_escapes_scope", "%s=%r resolves to %s, outside the declared scope %s "
                           "(R-ARG-1: narrow, never widen)" % (field, value, lexical, ", ".join(roots)),
                           field=field, value=value))
        return
    if not os.path.lexists(lexical):
        diags.append(_diag("grant_skipped", "%s=%r: %s does not exist; not mounted (R-ARG-1)"
                           % (field, value, lexical), field=field))
        return
    real = os.path.realpath(lexical)
    real_roots = [os.path.realpath(r) for r in inside]
    if not any(_under(real, r) for r in real_roots):
        diags.append(_diag("arg_symlink_escapes", "%s=%r: %s leads through a symlink to %s, outside %s "
                           "(R-ARG-1)" % (field, value, lexical, real, ", ".join(inside)),
                           field=field, value=value))
        return
    if not os.path.exists(real):
        diags.append(_diag("grant_skipped", "%s=%r: dangling symlink; not mounted" % (field, value), field=field))
        return
    kind = "rw" if cap.mode == "write" else "ro"
    mounts.add(kind, real, lexical, "R-ARG-1", "capability:%s (argument %s=%s)" % (cap.text, cap.arg, value))


def _undo_mismatch(manifest, pinned):
    wanted = {
        "name": pinned.get("name", UNDO_NAME), "origin": pinned.get("origin"), "owner": pinned.get("owner"),
        "capabilities": sorted(pinned.get("capabilities") or [pinned.get("capability", "system:undo")]),
        "files": pinned.get("files"), "digest": pinned.get("digest"),
    }
    have = {"name": manifest.name, "origin": manifest.origin, "owner": manifest.owner,
            "capabilities": sorted(c.text for c in manifest.capabilities), "files": manifest.files,
            "digest": manifest.digest}
    return sorted(k for k in wanted if wanted[k] != have[k])


def render(manifest, host, invocation=None, status=None, command=None, bwrap_path=None):
    """Render one invocation. Never raises for bad input: refusals come back as diagnostics.

    ``status`` is the status() quartet of the host/service (None: assume active).
    """
    invocation = invocation or {}
    status = status or {"bwrap_available": True, "bwrap_path": bwrap_path or "bwrap",
                        "disabled_via_env": False, "active": True}
    diags = []
    name = manifest.name
    executor_dir = host["executor_dir"] or os.path.join(host["executors_dir"], name)
    if command is None:
        command = [host["python_executable"], os.path.join(executor_dir, manifest.entrypoint or "main.py")]

    # R-FAIL-2 / R-SEC-5: the byte-pinned undo broker and the reserved capability.
    has_undo_cap = any(c.kind == "undo" for c in manifest.capabilities)
    if name == UNDO_NAME or has_undo_cap:
        pinned = host["undo_exception"]
        if name != UNDO_NAME:
            return refused(name, [_diag("capability_reserved", "%s declares system:undo, reserved for the "
                                        "pinned %s broker (R-SEC-5)" % (name, UNDO_NAME))])
        fields = _undo_mismatch(manifest, pinned) if pinned else ["(no pinned exception on this host)"]
        if fields:
            return refused(name, [_diag("undo_exception_mismatch", "%s (revision %s) does not match the pinned "
                                        "exception on: %s. It fails closed (R-FAIL-2)"
                                        % (name, manifest.revision, ", ".join(fields)), fields=fields)])
        return {"executor": name, "decision": "direct", "refusal": None, "argv": list(command),
                "command_line": shell_join(command), "mounts": [], "namespaces": [],
                "network": None, "diagnostics": [],
                "exception": {"rule": "R-FAIL-2", "source": "pinned undo_last_turn exception"}}

    mounts = host.base_mounts()
    if os.path.isdir(executor_dir):
        mounts.add("ro", executor_dir, executor_dir, "R-BASE-4", "base:executor_dir")
    else:
        diags.append(_diag("grant_skipped", "executor folder %s does not exist; not mounted" % executor_dir))

    net_because = []
    for cap in manifest.capabilities:
        if cap.needs_network():
            net_because.append(cap.text)
        if cap.kind == "fs":
            if cap.arg is not None:
                _resolve_arg(cap, manifest, invocation, diags, mounts)
                continue
            root = glob_root(cap.target)
            if not _check_fixed_scope(cap, root, host, diags):
                continue
            if not os.path.exists(root):
                diags.append(_diag("grant_skipped", "%s: %s does not exist on this host; not mounted"
                                   % (cap.text, root), capability=cap.text))
                continue
            mounts.add("rw" if cap.mode == "write" else "ro", root, root, "R-CAP-FS", "capability:" + cap.text)
        elif cap.kind == "metnos":
            path = host["resources"].get(cap.target)
            if path is None:
                diags.append(_diag("metnos_resource_unknown", "%s: unknown resource %r; known: %s (R-CAP-METNOS)"
                                   % (cap.text, cap.target, ", ".join(sorted(host["resources"]))),
                                   capability=cap.text))
            elif os.path.exists(path):
                mounts.add("ro" if cap.mode == "read" else "rw", path, path, "R-CAP-METNOS", "capability:" + cap.text)
            else:
                diags.append(_diag("grant_skipped", "%s: %s does not exist; not mounted" % (cap.text, path)))
        elif cap.kind == "index":
            path = host["indexes"].get(cap.target)
            if path is None:
                diags.append(_diag("grant_skipped", "%s: unknown index %r grants nothing (R-CAP-INDEX)"
                                   % (cap.text, cap.target), capability=cap.text))
            elif os.path.exists(path):
                mounts.add("ro", path, path, "R-CAP-INDEX", "capability:" + cap.text)
            else:
                diags.append(_diag("grant_skipped", "%s: %s does not exist; not mounted" % (cap.text, path)))
        elif cap.kind in ("systemd", "system"):
            key = "systemd_read_paths" if cap.kind == "systemd" else "system_read_paths"
            for path in host[key]:
                if os.path.exists(path):
                    mounts.add("ro", path, path, "R-CAP-SYS", "capability:" + cap.text)
        elif cap.kind in ("provider", "skill"):
            if not _component(cap.target):
                continue
            path = os.path.join(host["integrations_dir"], cap.target)
            if os.path.isdir(path):
                mounts.add("rw", path, path, "R-CAP-PROVIDER", "capability:" + cap.text)
            else:
                diags.append(_diag("grant_skipped", "%s: integration folder %s does not exist; not mounted"
                                   % (cap.text, path)))
        elif cap.kind == "mail":
            files = _mail_files(host, cap.target)
            if not files:
                diags.append(_diag("grant_skipped", "%s: no credential file for account %r; nothing mounted "
                                   "(R-CAP-MAIL)" % (cap.text, cap.target)))
            for path in files:
                mounts.add("ro", path, path, "R-CAP-MAIL", "capability:" + cap.text)
        elif cap.kind == "dialog":
            sender = invocation.get("sender")
            if not _component(sender):
                diags.append(_diag("grant_skipped", "dialog.user_input: no authenticated sender (or an invalid "
                                   "one: %r) in the invocation; nothing mounted (R-CAP-DIALOG)" % (sender,)))
                continue
            path = os.path.join(host["dialog_dir"], sender)
            if os.path.isdir(path):
                mounts.add("rw", path, path, "R-CAP-DIALOG", "capability:dialog.user_input (sender %s)" % sender)
            else:
                diags.append(_diag("grant_skipped", "dialog.user_input: %s does not exist; not mounted" % path))

    if manifest.inverse is not None:
        turn = invocation.get("turn_id")
        path = os.path.join(host["undo_root"], str(turn)) if _component(turn) else None
        if path and os.path.isdir(path):
            mounts.add("rw", path, path, "R-CAP-UNDO", "manifest inverse model %s (turn %s)"
                       % (manifest.inverse["model"], turn))
        else:
            diags.append(_diag("grant_skipped", "inverse model declared but the turn folder (turn_id=%r) is "
                               "missing; nothing mounted (R-CAP-UNDO)" % (turn,)))

    if any(d["severity"] == D.ERROR for d in diags):
        return refused(name, diags)           # scope checks come before the bwrap check (spec §5.4)
    if not status.get("active"):
        why = "bwrap is not on PATH" if not status.get("bwrap_available") else "METNOS_SANDBOX disables it"
        diags.append(_diag("executor_os_sandbox_unavailable", "%s refused: %s (R-FAIL-1)" % (name, why)))
        return refused(name, diags)

    flags = [{"flag": f, "rule": "R-BASE-6", "source": "base"} for f in BASE_FLAGS]
    if net_because:
        network = {"host": True, "rule": "R-NET-1", "because": net_because}
    else:
        network = {"host": False, "rule": "R-BASE-7", "because": []}
        flags.append({"flag": "--unshare-net", "rule": "R-BASE-7", "source": "base (no network capability)"})
    flags.append({"flag": "--die-with-parent", "rule": "R-BASE-6", "source": "base"})

    ordered = mounts.ordered()
    argv = [status.get("bwrap_path") or bwrap_path or "bwrap"] + [f["flag"] for f in flags]
    for entry in ordered:
        argv.extend(_mount_args(entry))
    argv.extend(["--chdir", executor_dir if os.path.isdir(executor_dir) else "/", "--"])
    argv.extend(command)
    return {
        "executor": name, "decision": "wrapped", "refusal": None, "argv": argv,
        "command_line": shell_join(argv), "mounts": ordered, "namespaces": flags,
        "network": network, "diagnostics": D.sort(diags),
        "manifest": {"name": name, "origin": manifest.origin, "revision": manifest.revision,
                     "digest": manifest.digest},
    }


def _mount_args(entry):
    kind = entry["kind"]
    if kind == "ro":
        return ["--ro-bind", entry["src"], entry["dest"]]
    if kind == "rw":
        return ["--bind", entry["src"], entry["dest"]]
    if kind == "symlink":
        return ["--symlink", entry["src"], entry["dest"]]
    return ["--" + kind, entry["dest"]]


def _mail_files(host, account):
    if account in host["mail_accounts"]:
        return [p for p in host["mail_accounts"][account] if os.path.isfile(p)]
    directory = host["mail_credentials_dir"]
    if not _component(account):
        return []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(os.path.join(directory, n) for n in names
                  if (n == account or n.startswith(account + ".")) and os.path.isfile(os.path.join(directory, n)))


def render_safe(manifest_source, host, invocation=None, status=None, command=None):
    """Load (dict, bytes or str) and render; manifest errors become a refusal, never an exception."""
    from . import manifest as M
    try:
        if isinstance(manifest_source, M.Manifest):
            manifest = manifest_source
        elif isinstance(manifest_source, dict):
            manifest = M.from_dict(manifest_source)
        else:
            manifest = M.loads(manifest_source)
    except ManifestError as exc:
        name = manifest_source.get("name") if isinstance(manifest_source, dict) else None
        return refused(name if isinstance(name, str) else None, exc.diagnostics)
    return render(manifest, host, invocation, status, command)
