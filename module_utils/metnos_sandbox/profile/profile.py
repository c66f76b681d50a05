# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host context + manifest + invocation -> Profile (mounts with provenance) -> bwrap argv.

The one renderer of the toolkit. ``render_safe`` is the one entry every face calls (the
sandbox_profile module, the filters, the probe and the audit): coerce -> validate -> render ->
final invariant check. Rules are from the spec (shared/spec/SANDBOX_SPEC.md); every mount,
flag and network decision carries the rule id and the base item or capability that caused it.

Every path that reaches a mount is judged twice with the same rules, whatever its source
(manifest scope, glob root, argument value, 'within' scope, host-context path): as written,
and fully resolved on this host (paths.Resolver: iterative, the kernel's 40-link limit, one
cache per render). Every grant is mounted at its resolved host path only (source ==
destination), and mountmodel.py proves, in bwrap's order, that nothing mounted before changes
what that path means inside the new root; a source that someone other than root could move is
bound by descriptor (descriptors.py). A final check over the rendered argv enforces the
invariants of docs/profile-invariants.md with the same model and withholds the profile
(profile_invariant_violated) if any layer above let something through.
"""
from __future__ import absolute_import, annotations, division, print_function

import functools
import hashlib
import os
import re
import shlex
import stat
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypedDict,
)

from ..base import diagnostics as D
from ..base import paths as PA
from ..host import bwrap as B
from . import descriptors as DS
from . import manifest as M
from . import mountmodel as MM
from . import mounts as MT
from .manifest import Capability, Diag, Kind, Manifest, ManifestError, glob_root

if TYPE_CHECKING:                     # annotations only (Python 3.10+ at check time; hosts run 3.8+)
    from typing import TypeGuard

Invocation = Dict[str, Any]
Result = Dict[str, Any]          # a profile as every face returns it (see render)

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc",
                "/var/lib/python3", "/sys")
# Neither read nor write may be rooted at or under these (the profile provides them itself).
FORBIDDEN_TREES = ("/proc", "/dev")
# Shared trees: a scope may live below them, never be one of them (R-SEC-2: no /opt).
BROAD_ROOTS = ("/", "/opt", "/home", "/root", "/var", "/var/lib", "/run", "/srv", "/mnt", "/media",
               "/tmp", "/var/tmp", "/usr/local", "/boot", "/lost+found")
# ... and, found on the host, any folder every user may write into (sticky and world-writable, mode
# 1777 like /tmp, /var/tmp, /dev/shm, /run/lock): other users' and services' files are in it.
_SHARED_MODE = stat.S_ISVTX | stat.S_IWOTH
# Host daemons' runtime tree: their sockets (systemd, D-Bus, container engines, user sessions)
# live here. No manifest-written scope at, below or above it; host state is reached through
# systemd:read / system:read, whose paths the admin configures (R-CAP-SYS).
RUNTIME_TREES = ("/run", "/var/run")
# System trees: never writable at, below or above.
SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/boot",
                "/sys", "/proc", "/dev", "/var/lib/python3")
BASE_FLAGS = ("--unshare-user", "--unshare-ipc", "--unshare-uts")
UNDO_NAME = "undo_last_turn"
# Host-context trees that only their own capability reaches (never an fs: scope, never a base
# path): every executor's code, every integration, every mail account, every sender, every turn.
RESERVED_KEYS = ("executors_dir", "integrations_dir", "mail_credentials_dir", "dialog_dir", "undo_root")
# Limits of the undo broker's files read to compute its digest (R-FAIL-2).
MAX_UNDO_FILE_BYTES = 8 * 1024 * 1024
MAX_UNDO_TOTAL_BYTES = 32 * 1024 * 1024
MAX_UNDO_ENTRIES = 256
MAX_INVOCATION_ARGUMENTS = 64
MAX_ARG_VALUE = M.MAX_STRING
_COMPONENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}")
_HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}")
_CRED_EXT = re.compile(r"[A-Za-z0-9]{1,16}")
_UNDO_PIN_KEYS = ("name", "origin", "revision", "owner", "capability", "capabilities", "files", "digest",
                  "entrypoint")
UNDO_ENTRYPOINT = "main.py"      # the file the direct path starts unless the pin names another

DEFAULT_HOST = {
    "runtime_dir": "/srv/metnos/runtime",
    "executors_dir": "/srv/metnos/executors",
    "executor_dir": None,
    "python_executable": "/srv/metnos/venv/bin/python3",
    "python_prefix": "/srv/metnos/venv",
    "python_package_roots": [],
    "python_installation": [],
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
    # Where fs:write (and writable 'within' scopes) may reach: nothing outside these is ever writable
    # (deny by default: no list of dangerous places can be complete). Metnos's own data folder.
    "writable_roots": ["/var/lib/metnos"],
}
_LIST_KEYS = ("python_package_roots", "python_installation", "i18n_dbs", "lexicon_dbs", "systemd_read_paths",
              "system_read_paths", "writable_roots")
_DICT_KEYS = ("resources", "indexes", "mail_accounts")
_PATH_KEYS = ("runtime_dir", "executors_dir", "executor_dir", "python_executable", "python_prefix",
              "integrations_dir", "mail_credentials_dir", "dialog_dir", "undo_root")
MAX_HOST_LIST = 256


class ContextError(ValueError):
    """A host-context or invocation option is invalid; the message names it."""


def _norm(path: str) -> str:
    norm = os.path.normpath(path)
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


class Problem(NamedTuple):
    """Why a path may not be mounted: ``kind`` (control, forbidden, broad, reserved, readonly,
    shared, runtime, alias, leave) picks the refusal code; ``text`` is the message."""
    kind: str
    text: str


class BaseMount(NamedTuple):
    """A base mount (R-BASE-1..5): kind (ro, symlink, proc, dev, tmpfs), source, destination, rule
    and what caused it."""
    kind: str
    src: Optional[str]
    dest: str
    rule: str
    source: str


class Labelled(NamedTuple):
    """A protected tree and what it is (a host key, 'system tree /usr', a shared root)."""
    label: str
    root: str


class _TreeSet(PA.RelatedRoots):
    """Labelled trees: paths.RelatedRoots' C-speed tests (at or below one, or above one), and the
    label, looked up only when a test matches."""

    __slots__ = ("labelled",)

    def __init__(self, labelled: Iterable[Labelled]) -> None:
        self.labelled = list(labelled)
        PA.RelatedRoots.__init__(self, (p for _l, p in self.labelled))

    def which(self, path: str, related: bool = True) -> List[Labelled]:
        """The entries the path is at or below (or above, with ``related``)."""
        return [entry for entry in self.labelled
                if PA.under(path, entry.root) or (related and PA.under(entry.root, path))]


class _Trees(NamedTuple):
    """The refused and protected trees of a host, as written, resolved and through bind mounts."""
    forbidden: _TreeSet
    broad: FrozenSet[str]
    broad_aliases: _TreeSet        # a path above a bind mount of a shared root exposes it
    readonly: _TreeSet
    reserved: _TreeSet
    runtime: _TreeSet
    system_mounted: List[str]
    alias_of: Dict[str, str]       # an alias (through a bind mount) -> the tree it shows


class _BaseState(NamedTuple):
    mounts: List[BaseMount]
    refusals: List[Diag]


class _Candidate(NamedTuple):
    """A read-only base path the admin configures: its host key, the path, rule and source."""
    key: str
    path: Optional[str]
    rule: str
    source: str


class _BaseIndex(NamedTuple):
    """The base mounts as the final check compares them."""
    ro: FrozenSet[str]
    symlinks: FrozenSet[Tuple[Optional[str], str]]


def _abs_clean(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("/") or len(value) > 4096 or M.has_control(value):
        raise ContextError("host.%s must be an absolute path without control characters, got %s"
                           % (key, D.excerpt(value)))
    return _norm(str.__str__(value))


_STATS = [MM.Stats()]               # lstat() of host paths, once per render (resolution, stability, the model)
_RESOLVE = [PA.Resolver(lstat=_STATS[0].lstat)]     # the render's resolver (one cache and one budget per render)


def _realpath(path: str) -> str:
    """Every component resolved on this host, with the kernel's bounds (raises PA.Unresolvable); one
    cache per render (render() starts a fresh Resolver)."""
    return _RESOLVE[0].resolve(path)


def _real_or_none(path: str) -> Optional[str]:
    try:
        return _realpath(path)
    except PA.Unresolvable:
        return None


@functools.lru_cache(maxsize=8192)
def _file_type(path: str) -> Optional[str]:
    """'dir', 'file', 'linked file' (a regular file with several hard links), 'socket', 'FIFO',
    'device' or None (missing) for a resolved path (cached inside one render, like _realpath; the render's
    lstat answers, followed only if it is still a link)."""
    info = _STATS[0].lstat(path)
    if info is not None and stat.S_ISLNK(info.st_mode):
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return None
    if info is None:
        return None
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file" if info.st_nlink <= 1 else "linked file"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "FIFO" if stat.S_ISFIFO(mode) else "device"


@functools.lru_cache(maxsize=8192)
def _shared_folder(path: str) -> bool:
    """A resolved path that is a folder every user may write into (sticky and world-writable: mode
    1777), found on the host (cached inside one render, like _realpath). A path through a symlink is
    judged on its resolved form (scope_symlink_refused), like every alias."""
    info = _STATS[0].lstat(path)
    if info is None:
        return False
    mode = info.st_mode
    return stat.S_ISDIR(mode) and mode & _SHARED_MODE == _SHARED_MODE and _real_or_none(path) == path


def _kind(real: str) -> Optional[str]:
    """'dir', 'file' or 'other' for a resolved host path from the render's lstat answers; None if missing."""
    info = _STATS[0].lstat(real)
    if info is None:
        return None
    return "dir" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "other"


def _caches_clear() -> None:
    _STATS[0] = MM.Stats()
    _RESOLVE[0] = PA.Resolver(lstat=_STATS[0].lstat)
    _listdir.cache_clear()
    _file_type.cache_clear()
    _shared_folder.cache_clear()


@functools.lru_cache(maxsize=256)
def _listdir(path: str) -> Tuple[str, ...]:
    """Cached only inside one render (cleared with _realpath's cache)."""
    try:
        return tuple(os.listdir(path))
    except OSError:
        return ()


class HostContext(object):
    """Real paths on this host. Base mounts and the resolved trees are computed once per context."""

    def __init__(self, overrides: Optional[Dict[str, Any]] = None) -> None:
        data = dict(DEFAULT_HOST)
        if overrides is not None and not isinstance(overrides, dict):
            raise ContextError("host must be a mapping of host-context keys, got %s" % type(overrides).__name__)
        for key, value in (overrides or {}).items():
            if key not in DEFAULT_HOST:
                raise ContextError("host: unknown key %s; accepted: %s"
                                   % (D.excerpt(key), ", ".join(sorted(DEFAULT_HOST))))
            data[key] = value
        _check_host_paths(data)
        data["undo_exception"] = _check_pin(data["undo_exception"])
        self.data: Dict[str, Any] = data
        self._base: Optional[_BaseState] = None
        self._trees: Optional[_Trees] = None
        self._mounts: Optional[MT.MountTable] = None
        self._index: Optional[_BaseIndex] = None
        self._real: Dict[str, str] = {}
        self._resolver = PA.Resolver()
        self._loops: Dict[str, str] = {}          # host paths the kernel would not resolve -> why
        self._bwrap: Tuple[Optional[str], Tuple[str, ...]] = (None, ())
        self._bwrap_given: Optional[str] = ""
        self._writable: Optional[PA.Roots] = None
        self._stable: Dict[str, Optional[str]] = {}

    def _resolve(self, path: str) -> str:
        """A host-context path resolved (once per context); one the kernel would not resolve stands for
        itself and is refused (base_refusals)."""
        if path not in self._real:
            try:
                self._real[path] = self._resolver.resolve(path)
            except PA.Unresolvable as exc:
                self._loops[path] = exc.why
                self._real[path] = path
        return self._real[path]

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    # ---- the resolved trees every judgement uses (literal and resolved forms) ----
    def trees(self) -> _Trees:
        """The refused and protected trees of this host, as written and resolved (once per context)."""
        if self._trees is not None:
            return self._trees
        table = self.mount_table()
        plain: Set[str] = set()
        alias_of: Dict[str, str] = {}

        def both(label: str, path: str, parts: bool = True) -> List[Labelled]:
            """The tree as written, resolved, and every alias a bind mount gives it (with ``parts``:
            also a mount showing a folder below it)."""
            real = self._resolve(path)
            out = [Labelled(label, path)] + ([Labelled(label, real)] if real != path else [])
            plain.update((path, real))
            for alias in table.aliases(real, parts):
                if alias != path:
                    out.append(Labelled(label, alias))
                    alias_of.setdefault(alias, real)
            return out

        readonly = [x for t in SYSTEM_TREES for x in both("system tree " + t, t)]
        for key in ("runtime_dir", "python_prefix", "executors_dir", "executor_dir"):
            if self.data[key]:
                readonly += both("host." + key, self.data[key])
        for key in ("python_package_roots", "python_installation", "i18n_dbs", "lexicon_dbs"):
            for i, path in enumerate(self.data[key]):
                readonly += both("host.%s[%d]" % (key, i), path)
        for label, path in self._engine_trees():
            readonly += both(label, path)
        broad = [x for t in BROAD_ROOTS for x in both(t, t, parts=False)]
        forbidden = _TreeSet(x for t in FORBIDDEN_TREES for x in both(t, t))
        # a path above a bind mount of a shared root exposes it (below it is like below the root);
        # built here, before the reserved and runtime trees join ``plain`` (the order is the behaviour)
        broad_aliases = _TreeSet(entry for entry in broad if entry.root not in plain)
        reserved = _TreeSet(x for key in RESERVED_KEYS for x in both(key, self.data[key]))
        # an alias (/var/run -> /run) is caught once resolved, like every alias of a refused tree
        runtime = _TreeSet(x for t in RUNTIME_TREES if t == RUNTIME_TREES[0] or not os.path.islink(t)
                           for x in both(t, t))
        self._trees = _Trees(
            forbidden=forbidden, broad=frozenset(p for _l, p in broad), broad_aliases=broad_aliases,
            readonly=_TreeSet(readonly), reserved=reserved, runtime=runtime,
            system_mounted=[p for p in SYSTEM_PATHS if os.path.isdir(p) and not os.path.islink(p)],
            alias_of=dict((a, r) for a, r in alias_of.items() if a not in plain))
        return self._trees

    def _engine_trees(self) -> List[Labelled]:
        """What runs every sandbox and the undo broker: the interpreter's folder (as configured and
        resolved) and the bwrap binary's folder (found on the service's PATH, and resolved)."""
        out = []
        python = self.data["python_executable"]
        if python:
            out.append(Labelled("the interpreter's folder (host.python_executable)", os.path.dirname(python)))
            out.append(Labelled("the interpreter's folder (host.python_executable, resolved)",
                                os.path.dirname(self._resolve(python))))
        for folder in self._bwrap[1]:
            out.append(Labelled("the bwrap binary's folder", folder))
        return [entry for entry in out if entry.root not in ("", "/")]

    def use_bwrap(self, path: Optional[str]) -> None:
        """The bwrap that will run the profiles (the service's): its folder, as found and resolved, is a
        read-only base tree; its --help says whether descriptors can be bound."""
        if path == self._bwrap_given:
            return
        self._bwrap_given = path
        if path is not None and not os.path.isabs(path):
            import shutil
            path = shutil.which(path) or path
        if path == self._bwrap[0]:
            return
        folders: Tuple[str, ...] = ()
        if path is not None and os.path.isabs(path):
            folders = tuple(sorted(set((os.path.dirname(path), os.path.dirname(self._resolve(path))))))
        if folders != self._bwrap[1]:
            self._trees = None
        self._bwrap = (path, folders)

    def bwrap_path(self) -> Optional[str]:
        return self._bwrap[0]

    def fd_binds(self) -> Optional[bool]:
        """Whether the bwrap in use binds descriptors (--bind-fd and --ro-bind-fd in its --help); None when
        its --help cannot be read."""
        features = B.help_features(self._bwrap[0])
        return None if features is None else all(f in features for f in B.FD_BIND_FEATURES)

    def writable(self) -> PA.Roots:
        """The admin's writable roots, as written and resolved (host.writable_roots)."""
        if self._writable is None:
            roots = self.data["writable_roots"]
            self._writable = PA.Roots(list(roots) + [self._resolve(r) for r in roots])
        return self._writable

    def stable(self, path: str) -> Optional[str]:
        """mountmodel.unstable_folder for a base path (once per context)."""
        if path not in self._stable:
            self._stable[path] = MM.unstable_folder(path, _STATS[0])
        return self._stable[path]

    def mount_table(self) -> MT.MountTable:
        """The host's mount table (mounts.MountTable), read once per context."""
        if self._mounts is None:
            self._mounts = MT.MountTable.read()
        return self._mounts

    def broad(self, path: str) -> bool:
        """A shared root, or (through a bind mount) an alias of one or a folder above such an alias,
        or (resolved) a folder every user may write into (mode 1777)."""
        t = self.trees()
        return path in t.broad or path in t.broad_aliases.above or _shared_folder(path)

    def _note(self, kind: str, root: str, text: str) -> Problem:
        """The refusal; an alias (a tree reached through a bind mount) is its own kind."""
        original = self.trees().alias_of.get(root)
        if original is None:
            return Problem(kind, text)
        return Problem("alias", "%s (%s is the same folder as %s, through a bind mount)" % (text, root, original))

    def real(self, path: str) -> str:
        """The resolved form of a host-context path (resolved once per context, with the trees); one the
        kernel would not resolve raises PA.Unresolvable."""
        self.trees()
        real = self._resolve(path)
        if path in self._loops:
            raise PA.Unresolvable(path, self._loops[path])
        return real

    def judge(self, path: str, mode: str, grant: Optional[str] = None, own: Optional[str] = None) -> Optional[Problem]:
        """Why ``path`` (absolute, normalised) may not be mounted with ``mode`` ('ro'/'rw'), or None.

        The same rules for every source: /proc and /dev are the profile's own; a shared root is
        never a scope; reserved trees (and their ancestors) only through their own capability
        (``grant``: the reserved key this grant belongs to; ``own``: the executor's own folder,
        readable); nothing at, below or above a read-only base tree is writable.
        Returns a Problem whose kind is control/forbidden/broad/reserved/readonly/shared/alias."""
        t = self.trees()
        if M.has_control(path):
            return Problem("control", "%s contains control or format characters" % D.excerpt(path))
        if t.forbidden.under(path):
            root = t.forbidden.which(path, related=False)[0].root
            return self._note("forbidden", root, "%s is at or below %s, provided by the profile itself (R-BASE-2)"
                              % (path, root))
        if path in t.broad or path in t.broad_aliases.above:
            root = path if path in t.broad else t.broad_aliases.which(path)[0].root
            return self._note("broad", root, "%s is a shared tree: it would expose every sibling (R-SEC-2)" % (
                path if root == path else "%s holds %s, which" % (path, root)))
        if t.reserved.related(path):
            problem = self._judge_reserved(t.reserved, path, mode, grant, own)
            if problem is not None:
                return problem
        if mode == "rw" and t.readonly.related(path):
            label, root = t.readonly.which(path)[0]
            return self._note("readonly", root, "%s is at, below or above the read-only %s (%s): never writable "
                                                "(R-BASE-1, R-BASE-4, R-BASE-5)" % (path, label, root))
        if mode == "rw":
            pseudo = self.mount_table().pseudo_related(path)
            if pseudo is not None:
                return Problem("pseudo", "%s is at, below or above %s, a mount of the pseudo-filesystem %s: writing "
                                         "there changes the kernel's state, and bwrap binds it along (R-BASE-2)"
                               % (path, pseudo[0], pseudo[1]))
        if _shared_folder(path):
            return Problem("shared", "%s is a folder every user may write into (mode 1777, like /tmp and /var/tmp): "
                                     "a shared tree, whatever its name (R-SEC-2)" % path)
        return None

    def _judge_reserved(self, reserved: _TreeSet, path: str, mode: str, grant: Optional[str],
                        own: Optional[str]) -> Optional[Problem]:
        """A reserved tree is reached only through its own grant; the executor's own folder (and
        below) in the executors folder is readable (R-BASE-4)."""
        for label, root in reserved.which(path):
            if label == grant:
                continue
            if (label == "executors_dir" and own is not None and mode == "ro" and PA.under(path, own)
                    and own != root and PA.under(own, root)):
                continue
            return self._note("reserved", root, "%s is at, below or above host.%s (%s), reachable only "
                                                "through its own capability (R-BASE-4)" % (path, label, root))
        return None

    def judge_manifest_path(self, path: str) -> Optional[Problem]:
        """The rules only manifest-written paths obey (fixed scopes, glob roots, 'within' scopes,
        argument values), on top of judge(): nothing at, below or above the runtime tree /run,
        where host daemons keep their sockets (the admin's systemd/system read paths may be there)."""
        runtime = self.trees().runtime
        if runtime.related(path):
            root = runtime.which(path)[0].root
            return self._note("runtime", root, "%s is at, below or above %s, the host daemons' runtime tree (their "
                                               "sockets); read host state through systemd:read or system:read "
                                               "(R-CAP-SYS)" % (path, root))
        return None

    def base(self) -> List[BaseMount]:
        """Base mounts (R-BASE-1..5) that exist on this host, resolved and judged once
        (BaseMount: kind, src, dest, rule, source). Refused host paths: base_refusals()."""
        return self._base_state().mounts

    def base_refusals(self) -> List[Diag]:
        """host_path_refused diagnostics for base paths that cannot be mounted safely."""
        return self._base_state().refusals

    def base_index(self) -> _BaseIndex:
        """The base mounts as the final check compares them (once per context)."""
        if self._index is None:
            base = self.base()
            self._index = _BaseIndex(ro=frozenset(e.src for e in base if e.kind == "ro" and e.src is not None),
                                     symlinks=frozenset((e.src, e.dest) for e in base if e.kind == "symlink"))
        return self._index

    def _base_state(self) -> _BaseState:
        if self._base is not None:
            return self._base
        out: List[BaseMount] = []
        refusals: List[Diag] = []
        if not self.mount_table().complete:
            refusals.append(D.make("host_path_refused", host_key="(mount table)", path=MT.MOUNTINFO,
                                   wording="mount_table", fill={"limit": MT.MAX_MOUNTINFO_BYTES}))
        for path in SYSTEM_PATHS:
            if os.path.islink(path):
                # merged /usr: /bin -> usr/bin becomes a symlink inside the sandbox too
                out.append(BaseMount("symlink", os.readlink(path), path, "R-BASE-1", "base:" + path))
            elif os.path.isdir(path):
                out.append(BaseMount("ro", path, path, "R-BASE-1", "base:" + path))
        refusals += self._reserved_in_system([m.src for m in out if m.kind == "ro" and m.src is not None])
        out.append(BaseMount("proc", None, "/proc", "R-BASE-2", "base:/proc"))
        out.append(BaseMount("dev", None, "/dev", "R-BASE-2", "base:/dev"))
        out.append(BaseMount("tmpfs", None, "/tmp", "R-BASE-3", "base:/tmp"))
        for candidate in self._base_candidates():
            given = candidate.path
            if not given or not os.path.exists(given):
                continue
            if candidate.key.startswith(("python_package_roots", "python_installation")) and not os.path.isdir(given):
                continue
            problem = self.judge_base(given)
            if problem:
                refusals.append(host_refusal(candidate.key, given, problem))
                continue
            real = self._resolve(given)          # mounted at its resolved host path only (the mount model)
            out.append(BaseMount("ro", real, real, candidate.rule, candidate.source))
        refusals += [host_refusal("(host path)", path, Problem("links", _UNRESOLVABLE[why] % path))
                     for path, why in sorted(self._loops.items())]
        self._base = _BaseState(out, refusals)
        return self._base

    def _reserved_in_system(self, system: List[str]) -> List[Diag]:
        """Every sandbox mounts the system paths whole: a reserved tree inside one would be readable by
        every executor, whatever its capabilities (judged as written, resolved and through bind mounts)."""
        refusals = []
        for key in RESERVED_KEYS:
            path = self.data[key]
            real = self._resolve(path)
            for form in [path, real] + self.mount_table().aliases(real, parts=False):
                inside = [s for s in system if PA.under(form, s)]
                if inside:
                    refusals.append(host_refusal(key, path, Problem("readonly", (
                        "%s is inside %s, which every sandbox mounts read-only (R-BASE-1): every executor would "
                        "read all of it, whatever its capabilities (R-BASE-4)" % (form, inside[0])))))
                    break
        return refusals

    def _base_candidates(self) -> List[_Candidate]:
        """The read-only base paths the admin configures."""
        candidates = [_Candidate(key, self.data[key], "R-BASE-4", "base:%s" % key)
                      for key in ("runtime_dir", "python_prefix")]
        candidates += [_Candidate("python_package_roots[%d]" % i, p, "R-BASE-4", "base:python_package_root")
                       for i, p in enumerate(self.data["python_package_roots"]) if not _is_home(p)]
        candidates += [_Candidate("python_installation[%d]" % i, p, "R-BASE-4", "base:python_installation")
                       for i, p in enumerate(self.data["python_installation"]) if not _is_home(p)]
        for key in ("i18n_dbs", "lexicon_dbs"):
            candidates += [_Candidate("%s[%d]" % (key, i), p, "R-BASE-5", "base:%s" % key)
                           for i, p in enumerate(self.data[key])]
        return candidates

    def judge_base(self, path: str) -> Optional[Problem]:
        """A read-only base path: judged as written and resolved; below a mounted system path it is
        already visible, so only /proc, /dev and reserved trees matter there."""
        for form in (path, self._resolve(path)):
            problem = self.judge(form, "ro")
            if problem and not (problem.kind == "broad" and any(
                    PA.under(form, s) and form != s for s in self.trees().system_mounted)):
                return problem if form == path else Problem(problem.kind, "resolves to %s: %s" % (form, problem.text))
        return None


def _check_host_paths(data: Dict[str, Any]) -> None:
    """Every host-context path absolute, normalised, without control characters; lists and
    mappings bounded; names matched whole (in place)."""
    for key in _PATH_KEYS:
        if data[key] is not None:
            data[key] = _abs_clean(key, data[key])
    for key in _LIST_KEYS:
        if not isinstance(data[key], (list, tuple)) or len(data[key]) > MAX_HOST_LIST:
            raise ContextError("host.%s must be a list of at most %d absolute paths, got %s"
                               % (key, MAX_HOST_LIST, D.excerpt(data[key])))
        data[key] = [_abs_clean("%s[%d]" % (key, i), v) for i, v in enumerate(data[key])]
    for key in _DICT_KEYS:
        if not isinstance(data[key], dict) or len(data[key]) > MAX_HOST_LIST:
            raise ContextError("host.%s must be a mapping (at most %d entries), got %s"
                               % (key, MAX_HOST_LIST, D.excerpt(data[key])))
        for name in data[key]:
            if not isinstance(name, str) or not _HOST_NAME.fullmatch(name):
                raise ContextError("host.%s: %s is not a name [A-Za-z0-9_.@+-]" % (key, D.excerpt(name)))
    data["resources"] = dict((k, _abs_clean("resources." + k, v)) for k, v in data["resources"].items())
    data["indexes"] = dict((k, _abs_clean("indexes." + k, v)) for k, v in data["indexes"].items())
    accounts = {}
    for account, files in data["mail_accounts"].items():
        if isinstance(files, str):
            files = [files]
        if not isinstance(files, (list, tuple)) or len(files) > MAX_HOST_LIST:
            raise ContextError("host.mail_accounts.%s must be a list of absolute paths" % account)
        accounts[account] = [_abs_clean("mail_accounts." + account, f) for f in files]
    data["mail_accounts"] = accounts


def _check_pin(pin: Any) -> Optional[Dict[str, Any]]:
    """The pinned undo exception (R-FAIL-2) as given by the admin: known keys and plain types."""
    if pin is None:
        return None
    if not isinstance(pin, dict):
        raise ContextError("host.undo_exception must be a mapping (name, origin, revision, owner, capability, "
                           "files, digest), got %s" % D.excerpt(pin))
    for key, value in pin.items():
        if key not in _UNDO_PIN_KEYS:
            raise ContextError("host.undo_exception: unknown key %s; accepted: %s"
                               % (D.excerpt(key), ", ".join(_UNDO_PIN_KEYS)))
        ok = (isinstance(value, list) and all(isinstance(v, str) for v in value)) if key in ("files", "capabilities") \
            else (isinstance(value, (str, int)) and not isinstance(value, bool)) if key == "revision" \
            else isinstance(value, str)
        if value is not None and not ok:
            raise ContextError("host.undo_exception.%s has the wrong type: %s" % (key, D.excerpt(value)))
    return dict(pin)


# Why the kernel would not resolve a path (paths.Unresolvable.why), for messages.
_UNRESOLVABLE = {"links": "%s: resolving it follows more than 40 symbolic links (the kernel's limit: ELOOP)",
                 "long": "%s: its resolved form is longer than 4096 characters (PATH_MAX)",
                 "budget": "%s: resolving it exceeds this render's budget of 100,000 path lookups"}


def host_refusal(key: str, path: Any, problem: Problem) -> Diag:
    diag: Diag = D.make("host_path_refused", wording="host_key", fill={"problem": problem.text}, host_key=key,
                        path=D.excerpt(path))
    return diag


# Asked of the runtime's interpreter: its sys.path, and the installation it really runs from (the
# prefixes, the stdlib and site folders, the folder of libpython and the libpython it has mapped, the
# folder of the resolved executable): read-only base trees whatever the writable roots say.
_ASK_PYTHON = r"""
import json, os, sys, sysconfig
inst = [sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.exec_prefix),
        os.path.dirname(os.path.realpath(sys.executable))]
inst += [sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
inst.append(sysconfig.get_config_var("LIBDIR"))
try:
    with open("/proc/self/maps") as handle:
        for line in handle:
            fields = line.split(None, 5)
            if len(fields) > 5 and "libpython" in fields[5]:
                inst.append(os.path.dirname(fields[5].strip()))
except OSError:
    pass
print(json.dumps({"path": sys.path, "install": [p for p in inst if isinstance(p, str)]}))
"""


class PythonFound(NamedTuple):
    """discover_python(): the interpreter's package roots (sys.path) and its installation's folders."""
    roots: List[str]
    installation: List[str]


def _folders(paths: Any) -> List[str]:
    """Absolute existing folders without control characters, normalised, sorted, bounded."""
    if not isinstance(paths, list):
        return []
    return sorted(set(_norm(p) for p in paths if isinstance(p, str) and p.startswith("/")
                      and not M.has_control(p) and os.path.isdir(p)))[:MAX_HOST_LIST]


def discover_python(python: Optional[str], runner: Callable[[List[str]], Tuple[int, str, str]]) -> PythonFound:
    """Ask the runtime's interpreter (``runner(argv) -> (rc, out, err)``) for its sys.path and the folders
    of the installation it resolves to. Home folders are filtered later by HostContext.base()."""
    import json
    if not python or not os.path.exists(python):
        return PythonFound([], [])
    rc, out, _err = runner([python, "-c", _ASK_PYTHON])
    if rc != 0:
        return PythonFound([], [])
    try:
        found = json.loads(out)
    except ValueError:
        return PythonFound([], [])
    if not isinstance(found, dict):
        return PythonFound([], [])
    return PythonFound(_folders(found.get("path")), [p for p in _folders(found.get("install")) if p != "/"])


def discover_python_roots(python: Optional[str], runner: Callable[[List[str]], Tuple[int, str, str]]) -> List[str]:
    """sys.path directories of the runtime's interpreter, as absolute existing directories."""
    return discover_python(python, runner).roots


def with_python_roots(host_over: Optional[Dict[str, Any]],
                      runner: Callable[[List[str]], Tuple[int, str, str]]) -> Dict[str, Any]:
    """Host overrides completed with the interpreter's package roots and installation (unless given)."""
    out = dict(host_over or {})
    if "python_package_roots" not in out or "python_installation" not in out:
        found = discover_python(out.get("python_executable", DEFAULT_HOST["python_executable"]), runner)
        out.setdefault("python_package_roots", found.roots)
        out.setdefault("python_installation", found.installation)
    return out


def _is_home(path: str) -> bool:
    """A whole home folder (or /home, /root) is never a package root."""
    parts = path.rstrip("/").split("/")
    return path in ("/home", "/root") or (len(parts) == 3 and parts[1] == "home")


class Provenance(TypedDict, total=False):
    """Why a mount is there: the rule and what caused it (``covers``: a bind merged into this one)."""
    rule: str
    source: str
    covers: str


class _MountBase(TypedDict):
    kind: str
    src: Optional[str]
    dest: str
    provenance: List[Provenance]


class MountEntry(_MountBase, total=False):
    """One mount of a profile (public: the ``mounts`` of a result and of the .json on disk); ``fd``: the
    descriptor number a bind whose source can move is bound by (see ``descriptors`` of the result)."""
    fd: int


class Conflict(NamedTuple):
    """One destination asked for with two different sources (never guessed: refused)."""
    dest: str
    first: Optional[str]
    second: Optional[str]
    source: str


class _Mounts(object):
    def __init__(self, entries: Optional[Dict[str, MountEntry]] = None) -> None:
        self.entries: Dict[str, MountEntry] = entries if entries is not None else {}
        self.conflicts: List[Conflict] = []

    def add(self, kind: str, src: Optional[str], dest: str, rule: str, source: str) -> None:
        entry = self.entries.get(dest)
        prov: Provenance = {"rule": rule, "source": source}
        if entry is None:
            self.entries[dest] = {"kind": kind, "src": src, "dest": dest, "provenance": [prov]}
            return
        if entry["src"] != src:   # one destination, two different sources: never guess
            self.conflicts.append(Conflict(dest, entry["src"], src, source))
            return
        if prov not in entry["provenance"]:
            entry["provenance"].append(prov)
        if entry["kind"] == "ro" and kind == "rw":
            entry["kind"] = "rw"   # ro + rw on one path -> rw, only because a write capability asked

    def ordered(self) -> List[MountEntry]:
        """Parents before children; binds covered by an equal-or-stronger parent bind are merged into it."""
        binds = dict((d, e) for d, e in self.entries.items() if e["kind"] in ("ro", "rw") and e["src"] == d)
        keep = []
        for dest in sorted(self.entries, key=_mount_order):
            entry = self.entries[dest]
            parent = _covering_parent(dest, binds) if dest in binds else None
            if parent is not None and (binds[parent]["kind"] == "rw" or entry["kind"] == "ro"):
                for prov in entry["provenance"]:
                    if prov not in binds[parent]["provenance"]:
                        binds[parent]["provenance"].append({**prov, "covers": dest})
                continue
            keep.append(entry)
        return keep


def _mount_order(dest: str) -> Tuple[int, str]:
    return (dest.count("/"), dest)


def _covering_parent(dest: str, binds: Dict[str, MountEntry]) -> Optional[str]:
    for ancestor in PA.ancestors(dest):
        if ancestor in binds:
            return ancestor
    return None


_quote = functools.lru_cache(maxsize=8192)(shlex.quote)


def shell_join(argv: Sequence[str]) -> str:
    return " ".join(_quote(a) for a in argv)


def _bounded(diags: List[Diag]) -> List[Diag]:
    """At most MAX_DIAGNOSTICS diagnostics per profile, errors first; the rest are counted in the
    last one's message (a manifest of 128 refused paths gets a short answer)."""
    diags = D.sort(diags)
    if len(diags) <= M.MAX_DIAGNOSTICS:
        return diags
    more = len(diags) - M.MAX_DIAGNOSTICS
    kept = diags[:M.MAX_DIAGNOSTICS]
    kept[-1] = D.amend(kept[-1], "more_diagnostics", count=more)
    return kept


def refused(name: Optional[str], diags: List[Diag], decision: str = "refused") -> Result:
    errors = [d for d in diags if d["severity"] == D.ERROR]
    return {"executor": name, "decision": decision, "refusal": errors[0]["code"] if errors else None,
            "argv": None, "command_line": None, "mounts": [], "namespaces": [],
            "network": None, "diagnostics": _bounded(diags)}


_SCOPE_CODES = {"forbidden": "scope_too_broad", "broad": "scope_too_broad", "readonly": "scope_too_broad",
                "shared": "scope_too_broad",
                "reserved": "scope_reserved_tree", "control": "scope_nul", "runtime": "scope_runtime_tree",
                "alias": "scope_mount_alias", "pseudo": "scope_pseudo_filesystem"}
# What a read-only or writable bind of these would really hand over.
_SPECIAL = {"socket": "a socket: a channel to a host process (connecting and sending work through a read-only "
                      "bind)",
            "FIFO": "a FIFO: a channel to a host process (writing works through a read-only bind)",
            "device": "a device node"}


class _Render(object):
    """The state of one render: inputs, the mounts being built and the diagnostics."""

    def __init__(self, manifest: Manifest, host: HostContext, invocation: Invocation, own_dir: str) -> None:
        self.manifest = manifest
        self.host = host
        self.invocation = invocation
        self.own = own_dir            # the executor's own folder (lexical)
        self.mounts = _Mounts()
        self.diags: List[Diag] = []
        self.glob_steps = [M.MAX_GLOB_STEPS]     # every 'within' pattern match of this render shares it

    def refuse(self, code: str, wording: str, fill: Mapping[str, Any], **ctx: Any) -> None:
        """A refusal: the code's registered ``wording``, its placeholders from ``fill``."""
        self.diags.append(D.make(code, wording=wording, fill=fill, **ctx))

    def skip(self, wording: str, fill: Mapping[str, Any], **ctx: Any) -> None:
        """A grant not mounted: grant_skipped's registered ``wording``, its placeholders from ``fill``."""
        self.diags.append(D.make("grant_skipped", wording=wording, fill=fill, **ctx))

    def _manifest_problem(self, path: str, mode: str, own: str) -> Optional[Problem]:
        problem = self.host.judge(path, mode, own=own)
        if problem is None or problem.kind == "shared":      # /run/lock is the runtime tree first
            problem = self.host.judge_manifest_path(path) or problem
        return problem

    def unresolvable(self, field: str, path: str, exc: PA.Unresolvable) -> None:
        """A manifest-written path the kernel would not resolve (ELOOP, too long, the render's budget)."""
        self.refuse("scope_too_many_links", exc.why, {"path": D.excerpt(path, 300), "links": PA.MAX_LINKS,
                                                      "length": PA.MAX_RESOLVED, "steps": PA.MAX_STEPS}, field=field)

    def judge_scope(self, field: str, what: str, lexical: str, mode: str) -> Optional[str]:
        """A manifest-written path (scope, glob root, 'within', argument value): judged as written,
        then fully resolved. Returns the resolved path, or None after recording the refusal."""
        access = "writable" if mode == "rw" else "read-only"
        problem = self._manifest_problem(lexical, mode, self.own)
        if problem:
            self.refuse(_SCOPE_CODES[problem.kind], "judged" if lexical == what else "judged_from", {
                "access": access, "path": lexical, "what": D.excerpt(what), "problem": problem.text}, field=field)
            return None
        try:
            real = _realpath(lexical)
            own_real = _realpath(self.own)
        except PA.Unresolvable as exc:
            self.unresolvable(field, lexical, exc)
            return None
        if real != lexical:
            problem = self._manifest_problem(real, mode, own_real)
            if problem:
                self.refuse("scope_symlink_refused", "symlink", {
                    "access": access, "path": lexical, "real": real, "problem": problem.text}, field=field)
                return None
        kind = _file_type(real)
        if kind in _SPECIAL:
            self.refuse("scope_special_file", "special" if real == lexical else "special_real", {
                "access": access, "path": lexical, "real": real, "kind": _SPECIAL[kind]}, field=field)
            return None
        if kind == "linked file":
            self.refuse("scope_hard_link", "hard_link" if real == lexical else "hard_link_real", {
                "access": access, "path": lexical, "real": real}, field=field)
            return None
        if mode == "rw" and not (self.host.writable().under(lexical) and self.host.writable().under(real)):
            roots = self.host["writable_roots"]
            self.refuse("scope_outside_writable_roots", "outside" if roots else "none", {
                "path": lexical, "real": real, "roots": D.excerpt(", ".join(roots), 600)}, field=field)
            return None
        return real

    def judge_host(self, key: str, lexical: str, mode: str, container: Optional[str] = None,
                   grant: Optional[str] = None, configured: bool = False, channel: bool = False) -> Optional[str]:
        """A host-context path (resource, index, integration, credential, dialog, undo, read paths):
        the same rules, the refusal naming the host key. ``container``: the folder it must stay in.
        ``configured``: the path is the admin's own setting (a resource, an index, a read path),
        resolved once per context like the base paths; entries below a folder resolve per render.
        ``channel``: an admin's read path, which may be a socket (systemd/system read paths)."""
        try:
            real = self.host.real(lexical) if configured else _realpath(lexical)
            home = self.host.real(container) if container is not None else None
        except PA.Unresolvable as exc:
            self.diags.append(host_refusal(key, lexical, Problem("links", _UNRESOLVABLE[exc.why] % exc.path)))
            return None
        if home is not None and real != os.path.join(home, os.path.basename(lexical)):
            self.diags.append(host_refusal(key, lexical, Problem("leave", "resolves to %s through a symlink, not to "
                                                                          "its own entry in %s" % (real, container))))
            return None
        for form in ((lexical, real) if real != lexical else (lexical,)):
            problem = self.host.judge(form, mode, grant=grant)
            if problem:
                text = problem.text if form == lexical else "resolves to %s: %s" % (real, problem.text)
                self.diags.append(host_refusal(key, lexical, Problem(problem.kind, text)))
                return None
        problem = _object_problem(real, channel)
        if problem is not None:
            self.diags.append(host_refusal(key, lexical, problem))
            return None
        return real


def _object_problem(real: str, channel: bool = False) -> Optional[Problem]:
    """The rules on what a host-context path names (as for manifest paths): only files and folders
    (a socket only as an admin's read channel), and one name per granted file (no hard links)."""
    kind = _file_type(real)
    if kind in _SPECIAL and not channel:
        return Problem("special", "%s is %s" % (real, _SPECIAL[kind or ""]))
    if kind == "linked file":
        return Problem("hard_link", "%s is a file with more than one name (hard links): the other names are "
                                    "the same file, which realpath cannot see" % real)
    return None


def _executor_dir(host: HostContext, name: str) -> str:
    return host["executor_dir"] or os.path.join(host["executors_dir"], name)


def _mode(cap: Capability) -> str:
    return "rw" if cap.writes() else "ro"


def _grant_fs(r: _Render, cap: Capability) -> None:
    if cap.arg is not None:
        return _grant_arg(r, cap)
    if cap.target is None:
        raise AssertionError("an fs capability without a target or an arg: scope")
    mode = _mode(cap)
    root = glob_root(cap.target)
    real = r.judge_scope("capability %s" % D.excerpt(cap.text), cap.target, root, mode)
    if real is None:
        return None
    if _kind(real) is None:
        r.skip("missing_scope", {"what": D.excerpt(cap.text), "path": root}, capability=D.excerpt(cap.text))
        return None
    r.mounts.add(mode, real, real, "R-CAP-FS", "capability:" + cap.text + _declared(root, real))
    return None


def _declared(lexical: str, real: str) -> str:
    """A provenance note when a grant's declared path reaches it through a symlink (it is mounted at the
    resolved path only: the declared one does not exist inside)."""
    return "" if lexical == real else " (declared as %s)" % lexical


class _Scope(NamedTuple):
    """One 'within' scope of an argument: its glob root, that root resolved, and the glob's components."""
    root: str
    real: str
    pattern: List[str]


def _grant_arg(r: _Render, cap: Capability) -> None:
    """R-ARG-1: resolve an arg: scope on the concrete value, only inside 'within', only if it exists."""
    if cap.arg is None:
        raise AssertionError("an arg: grant without an arg: scope")
    mode = _mode(cap)
    field = "invocation.arguments.%s" % cap.arg
    within = r.manifest.arguments[cap.arg]["within"]
    scopes = _arg_scopes(r, cap, within, mode)
    if scopes is None:
        return
    value = (r.invocation.get("arguments") or {}).get(cap.arg)
    if value is None:
        r.skip("no_arg_value", {"what": cap.text, "arg": cap.arg}, capability=cap.text)
        return
    if not _arg_value_ok(r, field, value):
        return
    lexical = _norm(value if value.startswith("/") else os.path.join(scopes[0].root, value))
    real = _arg_inside(r, field, value, lexical, scopes, within)
    if real is None:
        return
    if not _normalised_value(value):
        # the kernel resolves '..' after the symlink before it, text collapses it before (as in scopes)
        r.refuse("scope_not_normalized", "arg", {"value": D.excerpt(value)}, field=field)
        return
    if r.judge_scope(field, value, lexical, mode) is None:
        return
    if _kind(real) is None:
        r.skip("missing_arg_path", {"what": field, "value": D.excerpt(value), "path": lexical}, field=field)
        return
    r.mounts.add(mode, real, real, "R-ARG-1", "capability:%s (argument %s=%s)%s" % (cap.text, cap.arg, lexical,
                                                                                    _declared(lexical, real)))


def _normalised_value(value: str) -> bool:
    """An argument value names its path as a scope does: no '.' or '..' component, no '//', no trailing
    '/' ('/' itself aside)."""
    if value == "/":
        return True
    parts = value[1:].split("/") if value.startswith("/") else value.split("/")
    return all(part not in ("", ".", "..") for part in parts)


def _arg_scopes(r: _Render, cap: Capability, within: List[str], mode: str) -> Optional[List[_Scope]]:
    """The 'within' scopes obey every rule of a fixed scope; None once one is refused."""
    scopes = []
    for i, scope in enumerate(within):
        root = glob_root(scope)
        real = r.judge_scope("arguments.%s.within[%d] (used by %s)" % (cap.arg, i, cap.text), scope, root, mode)
        if real is None:
            return None
        scopes.append(_Scope(root, real, _pattern(scope, root)))
    return scopes


def _arg_value_ok(r: _Render, field: str, value: Any) -> bool:
    """An argument value is a bounded path string without control characters or '~'."""
    if not isinstance(value, str) or not value or len(value) > MAX_ARG_VALUE or value.startswith("~"):
        r.refuse("arg_value_invalid", "not_path", {"value": D.excerpt(value), "limit": MAX_ARG_VALUE}, field=field)
        return False
    if M.has_control(value):
        r.refuse("scope_nul", "arg", {"value": D.excerpt(value)}, field=field)
        return False
    return True


def _arg_inside(r: _Render, field: str, value: str, lexical: str, scopes: List[_Scope],
                within: List[str]) -> Optional[str]:
    """R-ARG-1: the value is at or below a path its 'within' scope matches (the glob, not only its
    root), as written and resolved. Returns the resolved value, or None after recording the refusal."""
    steps = r.glob_steps
    covered = [(scope, _covers(lexical, scope.root, scope.pattern, steps)) for scope in scopes]
    inside = [scope for scope, ok in covered if ok]
    if not inside:
        hard = any(ok is None for _scope, ok in covered)
        r.refuse("arg_escapes_scope", "outside_hard" if hard else "outside", {
            "path": lexical, "within": D.excerpt(", ".join(within), 300), "alternatives": M.MAX_GLOB_ALTERNATIVES,
            "steps": M.MAX_GLOB_STEPS}, field=field, value=D.excerpt(value))
        return None
    try:
        real = _realpath(lexical)
    except PA.Unresolvable as exc:
        r.unresolvable(field, lexical, exc)
        return None
    if not any(_covers(real, scope.real, scope.pattern, steps) for scope in inside):
        r.refuse("arg_symlink_escapes", "symlink", {"path": lexical, "real": real, "inside": ", ".join(
            "%s/%s" % (x.real.rstrip("/"), "/".join(x.pattern)) if x.pattern else x.real for x in inside)},
            field=field, value=D.excerpt(value))
        return None
    return real


def _pattern(scope: str, root: str) -> List[str]:
    """The components of a scope below its glob root ([] for a scope without a glob)."""
    rest = scope[len(root):].strip("/") if root != "/" else scope.strip("/")
    return rest.split("/") if rest else []


def _covers(path: str, root: str, pattern: List[str], steps: List[int]) -> Optional[bool]:
    """``path`` is at or below a path that the scope (``root`` + glob ``pattern``) matches. A pattern
    too complex to decide within manifest.glob_covers' bounds covers nothing (None: fail closed)."""
    if not PA.under(path, root):
        return False
    if not pattern:
        return True
    rest = path[len(root):].strip("/") if root != "/" else path.strip("/")
    return M.glob_covers(rest.split("/") if rest else [], pattern, steps)


def _mount_configured(r: _Render, cap: Capability, key: str, path: str, mode: str, rule: str) -> None:
    """A path the admin configures (a resource, an index): judged, mounted when it exists."""
    real = r.judge_host(key, path, mode, configured=True)
    if real is None:
        return
    if _kind(real) is not None:
        r.mounts.add(mode, real, real, rule, "capability:" + cap.text + _declared(path, real))
    else:
        r.skip("missing", {"what": cap.text, "path": path})


def _grant_metnos(r: _Render, cap: Capability) -> None:
    path = r.host["resources"].get(cap.target)
    if path is None:
        r.refuse("metnos_resource_unknown", "unknown", {
            "resource": D.excerpt(cap.target), "known": ", ".join(sorted(r.host["resources"]))}, capability=cap.text)
        return
    _mount_configured(r, cap, "resources.%s" % cap.target, path, _mode(cap), "R-CAP-METNOS")


def _grant_index(r: _Render, cap: Capability) -> None:
    path = r.host["indexes"].get(cap.target)
    if path is None:
        r.skip("unknown_index", {"what": cap.text, "index": D.excerpt(cap.target)}, capability=cap.text)
        return
    _mount_configured(r, cap, "indexes.%s" % cap.target, path, "ro", "R-CAP-INDEX")


def _sys_key(cap: Capability) -> str:
    return "systemd_read_paths" if cap.kind == Kind.SYSTEMD else "system_read_paths"


def _grant_sys(r: _Render, cap: Capability) -> None:
    key = _sys_key(cap)
    for i, path in enumerate(r.host[key]):
        real = r.judge_host("%s[%d]" % (key, i), path, "ro", configured=True, channel=True)
        if real is not None and _kind(real) is not None:
            r.mounts.add("ro", real, real, "R-CAP-SYS", "capability:" + cap.text + _declared(path, real))


def _mount_entry(r: _Render, key: str, entry: str, rule: str, source: str) -> Optional[bool]:
    """An entry of a reserved folder (``key``: integrations, dialog, undo) granted writable by its own
    capability: it must resolve to its own entry, and exist as a folder. None when refused, False
    when missing (the caller says what), True when mounted."""
    path = os.path.join(r.host[key], entry)
    real = r.judge_host(key, path, "rw", container=r.host[key], grant=key)
    if real is None:
        return None
    if _kind(real) != "dir":
        return False
    r.mounts.add("rw", real, real, rule, source + _declared(path, real))
    return True


def _grant_provider(r: _Render, cap: Capability) -> None:
    if cap.target is None:
        raise AssertionError("a provider capability without a target")
    if _mount_entry(r, "integrations_dir", cap.target, "R-CAP-PROVIDER", "capability:" + cap.text) is False:
        r.skip("missing_integration", {"what": cap.text, "path": os.path.join(r.host["integrations_dir"], cap.target)})


def _grant_mail(r: _Render, cap: Capability) -> None:
    if cap.target is None:
        raise AssertionError("a mail capability without a target")
    files = _mail_files(r.host, cap.target)
    explicit = cap.target in r.host["mail_accounts"]
    store = r.host["mail_credentials_dir"]
    granted = 0
    for path in files:
        real = r.judge_host("mail_accounts.%s" % cap.target if explicit else "mail_credentials_dir", path, "ro",
                            container=None if explicit else store, grant="mail_credentials_dir")
        if real is None:
            return
        if _kind(real) == "file":
            r.mounts.add("ro", real, real, "R-CAP-MAIL", "capability:" + cap.text + _declared(path, real))
            granted += 1
    if not granted:
        r.skip("no_credential", {"what": cap.text, "account": D.excerpt(cap.target)})


def _grant_dialog(r: _Render, cap: Capability) -> None:
    sender = r.invocation.get("sender")
    if not _component(sender):
        r.skip("no_sender", {"sender": D.excerpt(sender)})
        return
    if _mount_entry(r, "dialog_dir", sender, "R-CAP-DIALOG",
                    "capability:dialog.user_input (sender %s)" % sender) is False:
        r.skip("missing_dialog", {"path": os.path.join(r.host["dialog_dir"], sender)})


def _grant_undo(r: _Render) -> None:
    turn = r.invocation.get("turn_id")
    if not _component(turn):
        r.skip("no_turn", {"turn": D.excerpt(turn)})
        return
    if r.manifest.inverse is None:
        raise AssertionError("an undo grant without the manifest's inverse model")
    if _mount_entry(r, "undo_root", turn, "R-CAP-UNDO", "manifest inverse model %s (turn %s)"
                    % (r.manifest.inverse["model"], turn)) is False:
        r.skip("missing_turn", {"path": os.path.join(r.host["undo_root"], turn)})


# ---- what each grant may reach, from the declarations alone (for the final check, not the renderer)

class _Declaring(NamedTuple):
    manifest: Manifest
    host: HostContext
    invocation: Invocation


def _reals(paths: Iterable[str]) -> List[str]:
    """The resolved forms of declared roots; one the kernel would not resolve declares nothing."""
    return [real for real in (_real_or_none(p) for p in paths) if real is not None]


def _roots_fs(d: _Declaring, cap: Capability) -> List[str]:
    scopes = d.manifest.arguments[cap.arg]["within"] if cap.arg is not None else [cap.target or ""]
    roots = _reals(glob_root(s) for s in scopes)
    # a write is allowed only inside the admin's writable roots (as written and resolved)
    return [root for root in roots if d.host.writable().under(root)] if cap.writes() else roots


def _roots_metnos(d: _Declaring, cap: Capability) -> List[str]:
    known = d.host["resources"]
    return _reals([known[cap.target]]) if cap.target in known else []


def _roots_index(d: _Declaring, cap: Capability) -> List[str]:
    known = d.host["indexes"]
    return _reals([known[cap.target]]) if cap.target in known else []


def _roots_sys(d: _Declaring, cap: Capability) -> List[str]:
    return _reals(d.host[_sys_key(cap)])


def _roots_provider(d: _Declaring, cap: Capability) -> List[str]:
    return _reals([os.path.join(d.host["integrations_dir"], cap.target or "")])


def _roots_mail(d: _Declaring, cap: Capability) -> List[str]:
    account = cap.target or ""
    return _reals(d.host["mail_accounts"].get(account, []) + _mail_files(d.host, account))


def _roots_dialog(d: _Declaring, cap: Capability) -> List[str]:
    sender = d.invocation.get("sender")
    return _reals([os.path.join(d.host["dialog_dir"], sender)]) if _component(sender) else []


class Granter(NamedTuple):
    """What one capability kind grants: ``grant`` adds its mounts to a render (judging every path);
    ``roots`` says, from the declarations alone, the resolved roots it may reach (the final check
    compares the rendered argv with them); ``entry``: those roots are entries of a reserved folder
    (integrations, credentials, dialog), reachable only through this grant."""
    grant: Callable[[_Render, Capability], None]
    roots: Callable[[_Declaring, Capability], List[str]]
    entry: bool = False


# One table, keyed by the manifest grammar's kinds. Kind.NETWORK grants no mount (only the host network,
# see Capability.needs_network); Kind.UNDO is the pinned broker's, decided before any grant (_undo_decision).
_GRANTERS: Dict[str, Granter] = {
    Kind.FS: Granter(_grant_fs, _roots_fs),
    Kind.METNOS: Granter(_grant_metnos, _roots_metnos),
    Kind.INDEX: Granter(_grant_index, _roots_index),
    Kind.SYSTEMD: Granter(_grant_sys, _roots_sys),
    Kind.SYSTEM: Granter(_grant_sys, _roots_sys),
    Kind.PROVIDER: Granter(_grant_provider, _roots_provider, entry=True),
    Kind.SKILL: Granter(_grant_provider, _roots_provider, entry=True),
    Kind.MAIL: Granter(_grant_mail, _roots_mail, entry=True),
    Kind.DIALOG: Granter(_grant_dialog, _roots_dialog, entry=True),
}


def _component(value: Any) -> TypeGuard[str]:
    """A single path component from the invocation (sender, turn): matched whole by a grammar."""
    return isinstance(value, str) and _COMPONENT.fullmatch(value) is not None


def check_invocation(invocation: Any) -> List[Diag]:
    """The invocation is data too: a mapping of arguments/turn_id/sender, bounded. Returns diagnostics."""
    if invocation is None:
        return []
    if not isinstance(invocation, dict):
        return [D.make("invocation_invalid", wording="not_mapping", fill={"value": D.excerpt(invocation)})]
    unknown = sorted(str(k) for k in invocation if k not in ("arguments", "turn_id", "sender"))
    if unknown:
        return [D.make("invocation_invalid", wording="unknown_key", fill={"key": D.excerpt(unknown[0])})]
    args = invocation.get("arguments")
    if args is not None and (not isinstance(args, dict) or len(args) > MAX_INVOCATION_ARGUMENTS):
        return [D.make("invocation_invalid", wording="arguments",
                       fill={"value": D.excerpt(args), "limit": MAX_INVOCATION_ARGUMENTS})]
    return []


# ------------------------------------------------------------------ R-FAIL-2: the pinned undo broker

class Digest(NamedTuple):
    """executor_digest's answer: the digest, or None and the problem."""
    digest: Optional[str]
    problem: Optional[str]


class _Read(NamedTuple):
    data: Optional[bytes]
    problem: Optional[str]


def executor_digest(directory: str, files: Sequence[str]) -> Digest:
    """sha256 over the executor's files as they are on disk (docs/profile-invariants.md):
    for each listed file in sorted order: name, NUL, size in decimal, NUL, content.

    Files are opened below ``directory`` one component at a time without following symlinks,
    must be regular files, and are read with bounded size. The folder must hold no file that is
    not listed (a planted module next to the broker would run with it). Returns
    (digest or None, problem or None)."""
    hasher = hashlib.sha256()
    total = 0
    try:
        root_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return Digest(None, "cannot open %s: %s" % (directory, exc.strerror))
    try:
        listed = set(files)
        present = _listing(root_fd, "")
        if present is None:
            return Digest(None, "the folder holds more than %d entries" % MAX_UNDO_ENTRIES)
        unlisted = sorted(p for p, kind in present if kind != "dir" and p not in listed)
        if unlisted:
            return Digest(None, "%s holds entries that are not listed: %s" % (directory, D.excerpt(unlisted)))
        for name in sorted(files):
            data, problem = _read_beneath(root_fd, name)
            if problem or data is None:
                return Digest(None, "%s: %s" % (name, problem))
            total += len(data)
            if total > MAX_UNDO_TOTAL_BYTES:
                return Digest(None, "the files are larger than %d bytes in total" % MAX_UNDO_TOTAL_BYTES)
            hasher.update(name.encode("utf-8") + b"\0" + str(len(data)).encode("ascii") + b"\0")
            hasher.update(data)
    finally:
        os.close(root_fd)
    return Digest("sha256:" + hasher.hexdigest(), None)


def _listing(dir_fd: int, prefix: str, budget: Optional[List[int]] = None) -> Optional[List[Tuple[str, str]]]:
    """(relative path, kind) of every entry below dir_fd, without following symlinks; None if too many."""
    budget = budget if budget is not None else [MAX_UNDO_ENTRIES]
    out: List[Tuple[str, str]] = []
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError:
        return out
    for name in names:
        budget[0] -= 1
        if budget[0] < 0:
            return None
        rel = prefix + name
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            out.append((rel, "dir"))
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            try:
                sub = _listing(fd, rel + "/", budget)
            finally:
                os.close(fd)
            if sub is None:
                return None
            out += sub
        else:
            out.append((rel, "file" if stat.S_ISREG(info.st_mode) else "other"))
    return out


def _read_beneath(root_fd: int, name: str) -> _Read:
    parts = name.split("/")
    fds = []
    try:
        current = root_fd
        for part in parts[:-1]:
            current = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=current)
            fds.append(current)
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=current)
        fds.append(fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _Read(None, "not a regular file")
        if info.st_nlink > 1:
            # a second name elsewhere (a data folder a sandbox may write) would change what runs unsandboxed
            return _Read(None, "a file with %d names (hard links): its other names are the same file" % info.st_nlink)
        if info.st_size > MAX_UNDO_FILE_BYTES:
            return _Read(None, "larger than %d bytes" % MAX_UNDO_FILE_BYTES)
        chunks, size = [], 0
        while size <= MAX_UNDO_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_UNDO_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_UNDO_FILE_BYTES:
            return _Read(None, "larger than %d bytes" % MAX_UNDO_FILE_BYTES)
        return _Read(b"".join(chunks), None)
    except OSError as exc:
        return _Read(None, "missing, a symlink or unreadable (%s)" % exc.strerror)
    finally:
        for fd in fds:
            os.close(fd)


def _undo_decision(manifest: Manifest, host: HostContext, own_dir: str, command: List[str]) -> Result:
    """R-FAIL-2 / R-SEC-5: the byte-pinned broker runs direct only if everything matches."""
    pinned = host["undo_exception"]
    if manifest.name != UNDO_NAME:
        return refused(manifest.name, [D.make("capability_reserved", wording="not_broker",
                                              fill={"executor": manifest.name, "broker": UNDO_NAME})])
    if not pinned:
        fields = ["(no pinned exception on this host)"]
    else:
        caps = pinned.get("capabilities") or ([pinned["capability"]] if pinned.get("capability") else None)
        lacking = [k for k in ("name", "origin", "revision", "owner", "files", "digest") if pinned.get(k) is None]
        lacking += [] if caps else ["capability"]
        if lacking:
            fields = ["the pinned exception lacks %s" % ", ".join(lacking)]
        else:
            have = {"name": manifest.name, "origin": manifest.origin, "owner": manifest.owner,
                    "revision": None if manifest.revision is None else str(manifest.revision),
                    "capabilities": sorted(c.text for c in manifest.capabilities),
                    "files": sorted(manifest.files) if manifest.files is not None else None,
                    "digest": manifest.digest, "entrypoint": manifest.entrypoint or UNDO_ENTRYPOINT}
            want = {"name": pinned["name"], "origin": pinned["origin"], "owner": pinned["owner"],
                    "revision": str(pinned["revision"]), "capabilities": sorted(caps or []),
                    "files": sorted(pinned["files"]), "digest": pinned["digest"],
                    # what runs unsandboxed is part of the exception: another listed file is not the broker
                    "entrypoint": pinned.get("entrypoint") or UNDO_ENTRYPOINT}
            fields = sorted(k for k in want if want[k] != have[k])
    if fields:
        return refused(manifest.name, [D.make("undo_exception_mismatch", wording="fields", fill={
            "executor": manifest.name, "revision": D.excerpt(manifest.revision), "mismatched": ", ".join(fields)},
            fields=fields)])
    computed, problem = executor_digest(own_dir, pinned["files"])
    if problem:
        return refused(manifest.name, [D.make("undo_files_invalid", wording="unverified", fill={
            "executor": manifest.name, "folder": own_dir, "problem": problem})])
    if computed != pinned["digest"]:
        return refused(manifest.name, [D.make("undo_exception_mismatch", wording="digest", fill={
            "executor": manifest.name, "folder": own_dir, "pinned": pinned["digest"]},
            fields=["digest (computed from disk)"], computed=computed)])
    return {"executor": manifest.name, "decision": "direct", "refusal": None, "argv": list(command),
            "command_line": shell_join(command), "mounts": [], "namespaces": [],
            "network": None, "diagnostics": [],
            "exception": {"rule": "R-FAIL-2", "source": "pinned undo_last_turn exception", "digest": computed}}


# ------------------------------------------------------------------ render

def render(manifest: Manifest, host: HostContext, invocation: Optional[Invocation] = None,
           status: Optional[Dict[str, Any]] = None, command: Optional[List[str]] = None,
           bwrap_path: Optional[str] = None) -> Result:
    """Render one invocation of a validated Manifest. Never raises for bad input: refusals come
    back as diagnostics. ``status`` is the status() quartet of the host/service (None: assume active).
    Faces call ``render_safe`` (which also loads and validates any manifest source)."""
    _caches_clear()
    try:
        return _render(manifest, host, invocation, status, command, bwrap_path)
    finally:
        _caches_clear()


def _render(manifest: Manifest, host: HostContext, invocation: Optional[Invocation],
            status: Optional[Dict[str, Any]], command: Optional[List[str]], bwrap_path: Optional[str]) -> Result:
    problems = check_invocation(invocation)
    if problems:
        return refused(manifest.name, problems)
    invocation = invocation or {}
    status = status or {"bwrap_available": True, "bwrap_path": bwrap_path or "bwrap",
                        "disabled_via_env": False, "active": True}
    name = manifest.name
    own_dir = _executor_dir(host, name)
    entrypoint = manifest.entrypoint or "main.py"
    if name == UNDO_NAME or any(c.kind == Kind.UNDO for c in manifest.capabilities):
        return _undo_decision(manifest, host, own_dir, command or [host["python_executable"],
                                                                   os.path.join(own_dir, entrypoint)])

    host.use_bwrap(status.get("bwrap_path") or bwrap_path or "bwrap")
    r = _Render(manifest, host, invocation, own_dir)
    own_real = _grant_all(r)
    diags = r.diags
    if any(d["severity"] == D.ERROR for d in diags):
        return refused(name, diags)           # scope checks come before the bwrap check (spec §5.4)
    if not status.get("active"):
        diags.append(D.make("executor_os_sandbox_unavailable", fill={"executor": name},
                            wording="profile_no_bwrap" if not status.get("bwrap_available") else "profile_disabled"))
        return refused(name, diags)

    flags, network = _namespaces(manifest)
    ordered = r.mounts.ordered()
    descriptors = _stabilise(r, ordered)
    if any(d["severity"] == D.ERROR for d in diags):
        return refused(name, diags)
    if command is None:          # inside the sandbox, every grant is at its resolved path
        command = [_inside(host, host["python_executable"]), os.path.join(own_real or own_dir, entrypoint)]
    argv = [status.get("bwrap_path") or bwrap_path or "bwrap"] + [f["flag"] for f in flags]
    for entry in ordered:
        argv.extend(_mount_args(entry))
    argv.extend(["--chdir", own_real or "/", "--"])
    argv.extend(command)
    violations = check_invariants(argv, manifest, host, invocation, own_dir, descriptors)
    if violations:
        return refused(name, diags + [D.make("profile_invariant_violated", wording="withheld", fill={
            "executor": name, "violated": "; ".join(violations[:5])}, violations=violations[:20])])
    return {
        "executor": name, "decision": "wrapped", "refusal": None, "argv": argv,
        "command_line": shell_join(argv), "mounts": ordered, "namespaces": flags,
        "network": network, "diagnostics": _bounded(diags), "descriptors": descriptors,
        "manifest": {"name": name, "origin": manifest.origin, "revision": manifest.revision,
                     "digest": manifest.digest},
    }


def _inside(host: HostContext, path: str) -> str:
    """Where a configured file is inside the sandbox: in its folder's resolved path (every grant is mounted
    there), under its own name (a venv's python3 link must stay one: the venv is found through it)."""
    return os.path.join(host._resolve(os.path.dirname(path)), os.path.basename(path))


def _stabilise(r: _Render, ordered: List[MountEntry]) -> List[DS.Descriptor]:
    """Bind by descriptor every source that someone other than root could move (refused when this bwrap
    cannot), then prove with the mount model that every destination means inside what was judged."""
    descriptors: List[DS.Descriptor] = []
    can: Optional[bool] = None
    for entry in ordered:
        src = entry["src"]
        if entry["kind"] not in MM.BINDS or src is None:
            continue
        base = all(p["source"].startswith("base:") for p in entry["provenance"])
        folder = r.host.stable(src) if base else MM.unstable_folder(src, _STATS[0])
        if folder is None:
            continue
        can = r.host.fd_binds() if can is None else can
        info = _STATS[0].lstat(src)
        if not can or info is None:
            r.refuse("bind_source_unstable", "gone" if info is None else "no_fd" if can is False else "unknown", {
                "path": src, "folder": folder, "bwrap": r.host.bwrap_path() or "bwrap"})
            continue
        if len(descriptors) >= DS.MAX_DESCRIPTORS:
            r.refuse("bind_descriptors_exhausted", "many", {"limit": DS.MAX_DESCRIPTORS})
            break
        entry["fd"] = DS.FD_BASE + len(descriptors)
        descriptors.append(DS.identity(src, entry["fd"], info))
    for finding in _model(ordered):
        r.refuse("mount_dest_differs" if finding.kind == "differs" else "mount_dest_unstable", "model",
                 {"dest": finding.dest, "problem": finding.text})
    return descriptors


def _model(ordered: List[MountEntry]) -> List[MM.Finding]:
    """The renderer's own run of the mount model over the mounts it is about to emit (the final check runs
    it again on the argv it reads back)."""
    return MM.violations([_op(e) for e in ordered], _STATS[0])


def _op(entry: MountEntry) -> MM.Op:
    return MM.Op(entry["kind"], entry["src"], entry["dest"], "fd" in entry)


def _grant_all(r: _Render) -> Optional[str]:
    """The base mounts, the executor's own folder, every capability's grant through its kind's
    granter, and the undo turn. Returns the own folder resolved (None when not mounted)."""
    r.diags.extend(r.host.base_refusals())
    for entry in r.host.base():
        r.mounts.add(*entry)
    own_real = _own_folder(r)
    for cap in r.manifest.capabilities:
        granter = _GRANTERS.get(cap.kind)
        if granter is not None:
            granter.grant(r, cap)
    if r.manifest.inverse is not None:
        _grant_undo(r)
    for conflict in r.mounts.conflicts:
        r.refuse("profile_invariant_violated", "two_sources", dict(zip(("target", "first", "second", "by"),
                                                                       conflict)))
    return own_real


class _Namespaces(NamedTuple):
    flags: List[Dict[str, str]]       # public: the ``namespaces`` of a result
    network: Dict[str, Any]           # public: the ``network`` decision of a result


def _namespaces(manifest: Manifest) -> _Namespaces:
    """The namespace flags (R-BASE-6) and the network decision: the host network only when a
    capability needs it (R-NET-1), else --unshare-net (R-BASE-7)."""
    net_because = [cap.text for cap in manifest.capabilities if cap.needs_network()]
    flags = [{"flag": f, "rule": "R-BASE-6", "source": "base"} for f in BASE_FLAGS]
    network: Dict[str, Any]
    if net_because:
        network = {"host": True, "rule": "R-NET-1", "because": net_because}
    else:
        network = {"host": False, "rule": "R-BASE-7", "because": []}
        flags.append({"flag": "--unshare-net", "rule": "R-BASE-7", "source": "base (no network capability)"})
    flags.append({"flag": "--die-with-parent", "rule": "R-BASE-6", "source": "base"})
    return _Namespaces(flags, network)


def _own_folder(r: _Render) -> Optional[str]:
    """R-BASE-4: the executor's own folder, read-only, resolved; it must stay in the executors folder."""
    own = r.own
    key = "executor_dir" if r.host["executor_dir"] else "executors_dir"
    if not os.path.isdir(own):
        r.skip("missing_own", {"path": own})
        return None
    try:
        real = _realpath(own)
        home = r.host.real(r.host["executors_dir"])
    except PA.Unresolvable as exc:
        r.diags.append(host_refusal(key, own, Problem("links", _UNRESOLVABLE[exc.why] % exc.path)))
        return None
    if not r.host["executor_dir"] and os.path.join(home, os.path.basename(own)) != real:
        r.diags.append(host_refusal(key, own, Problem("leave", "the executor's folder resolves to %s through a "
                                                               "symlink, not to its own folder in %s"
                                                               % (real, r.host["executors_dir"]))))
        return None
    for form in (own, real):
        problem = r.host.judge(form, "ro", own=form)
        if problem:
            r.diags.append(host_refusal(key, own, problem))
            return None
    r.mounts.add("ro", real, real, "R-BASE-4", "base:executor_dir" + _declared(own, real))
    return real


def _mount_args(entry: MountEntry) -> List[str]:
    kind, src = entry["kind"], entry["src"]
    if "fd" in entry:                                   # a source that can move: bound by descriptor
        return ["--ro-bind-fd" if kind == "ro" else "--bind-fd", str(entry["fd"]), entry["dest"]]
    if src is not None:                                 # binds and symlinks name their source
        if kind == "ro":
            return ["--ro-bind", src, entry["dest"]]
        if kind == "rw":
            return ["--bind", src, entry["dest"]]
        if kind == "symlink":
            return ["--symlink", src, entry["dest"]]
    return ["--" + kind, entry["dest"]]                 # proc, dev, tmpfs


def _mail_files(host: HostContext, account: str) -> List[str]:
    """The credential files of exactly one account: the explicit host mapping, or the files named
    ``<account>.<ext>`` directly in the credential store (ext: 1-16 letters/digits). A file name
    minus its last extension is its account, so 'bob' never reaches 'bob.old.json'."""
    if account in host["mail_accounts"]:
        return list(host["mail_accounts"][account])
    names = _listdir(host["mail_credentials_dir"])
    directory = host["mail_credentials_dir"]
    out = []
    for name in names:
        stem, dot, ext = name.rpartition(".")
        if dot and stem == account and _CRED_EXT.fullmatch(ext):
            out.append(os.path.join(directory, name))
    return sorted(out)


# ------------------------------------------------------------------ the final check (defence in depth)

_ARITY = {"--unshare-user": 0, "--unshare-ipc": 0, "--unshare-uts": 0, "--unshare-net": 0, "--die-with-parent": 0,
          "--ro-bind": 2, "--bind": 2, "--ro-bind-fd": 2, "--bind-fd": 2, "--symlink": 2, "--proc": 1, "--dev": 1,
          "--tmpfs": 1, "--chdir": 1}
_FD_OPTS = {"--ro-bind-fd": "--ro-bind", "--bind-fd": "--bind"}
_SINGLE = {"--proc": "/proc", "--dev": "/dev", "--tmpfs": "/tmp"}


class _Allowed(NamedTuple):
    """What the declarations allow (computed from the manifest, host and invocation alone, not from
    the renderer's decisions): resolved roots that may be written, that may be read (with the base),
    the reserved folders' entries the capabilities name (their own grant), and the admin's read
    channels (sockets the systemd/system read paths may name)."""
    write: PA.Roots
    any: PA.Roots
    grants: Set[str]
    channels: FrozenSet[str]


def _allowed(manifest: Manifest, host: HostContext, invocation: Invocation, own_dir: str) -> _Allowed:
    d = _Declaring(manifest, host, invocation)
    write: List[str] = []
    read: List[str] = []
    grants: Set[str] = set()
    for cap in manifest.capabilities:
        granter = _GRANTERS.get(cap.kind)
        if granter is None:
            continue
        roots = granter.roots(d, cap)
        (write if cap.writes() else read).extend(roots)
        if granter.entry:
            grants.update(roots)
    if manifest.inverse is not None and _component(invocation.get("turn_id")):
        turns = _reals([os.path.join(host["undo_root"], invocation["turn_id"])])
        write += turns
        grants.update(turns)
    read += _reals([own_dir])
    return _Allowed(write=PA.Roots(write), any=PA.Roots(write + read + list(host.base_index().ro)),
                    grants=grants, channels=frozenset(_reals(host["systemd_read_paths"] + host["system_read_paths"])))


class _Bind(NamedTuple):
    opt: str          # --ro-bind or --bind (a descriptor bind is read back as one, with ``fd``)
    src: str
    dest: str
    fd: Optional[int] = None


class _Argv(NamedTuple):
    """A rendered argv read back: the flags, the binds (option, source, destination), every mount
    operation in order (the mount model's input), and what is already wrong with it (``stop``: an
    option that ends the reading, the only violation then reported)."""
    flags: List[str]
    binds: List[_Bind]
    ops: List[MM.Op]
    problems: List[str]
    stop: Optional[str] = None


def _read_argv(argv: List[str], sep: int, base: _BaseIndex, named: Mapping[int, str]) -> _Argv:
    """The options before '--', each with its arity; an unknown option ends the reading (c). ``named``:
    the path each declared descriptor was judged as."""
    out: List[str] = []
    binds: List[_Bind] = []
    ops: List[MM.Op] = []
    flags: List[str] = []
    seen: Set[str] = set()
    i = 1
    while i < sep:
        opt = argv[i]
        arity = _ARITY.get(opt)
        if arity is None or i + arity >= sep:
            return _Argv(flags, binds, ops, out, stop="unexpected option %s (c)" % D.excerpt(opt))
        if arity == 0:
            flags.append(opt)
        elif opt in _FD_OPTS:
            number, dest = argv[i + 1], argv[i + 2]
            src = named.get(int(number)) if number.isdigit() else None
            if src is None:
                out.append("%s %s %s binds no descriptor the profile declares (e)" % (opt, number, dest))
                src = "(descriptor %s)" % number
            binds.append(_Bind(_FD_OPTS[opt], src, dest, int(number) if number.isdigit() else -1))
            ops.append(MM.Op("ro" if opt == "--ro-bind-fd" else "rw", src, dest, True))
        elif arity == 2:
            src, dest = argv[i + 1], argv[i + 2]
            if opt == "--symlink":
                if (src, dest) not in base.symlinks:
                    out.append("--symlink %s %s is not a base symlink (c)" % (src, dest))
                ops.append(MM.Op("symlink", src, dest))
            else:
                binds.append(_Bind(opt, src, dest))
                ops.append(MM.Op("ro" if opt == "--ro-bind" else "rw", src, dest))
        elif opt != "--chdir":
            where = argv[i + 1]
            if where != _SINGLE[opt] or opt in seen:
                out.append("%s %s is not the profile's own single %s (c)" % (opt, where, _SINGLE[opt]))
            seen.add(opt)
            ops.append(MM.Op(opt[2:], None, where))
        i += 1 + arity
    return _Argv(flags, binds, ops, out)


def check_invariants(argv: List[str], manifest: Manifest, host: HostContext, invocation: Invocation,
                     own_dir: str, descriptors: Optional[Sequence[DS.Descriptor]] = None) -> List[str]:
    """Invariants (a)-(e) of docs/profile-invariants.md over a rendered argv. Returns violations.

    (a) every writable bind's source is resolved and inside a declared, allowed (writable roots),
        resolved scope; every read-only bind is a base mount or inside a declared scope;
    (b) no read-only base tree (system trees, runtime, the interpreter's installation and package
        roots, the bwrap binary's folder, the executors folder and the executor's own folder,
        i18n/lexicon databases) is writable or shadowed writable, no writable bind is above one, and
        none reaches a mount of a pseudo-filesystem;
    (c) only the flags the rules give: the base namespaces, --unshare-net exactly when no
        capability needs the network, /proc, /dev and /tmp once at their place, the base
        symlinks, no devices, nothing below /proc or /dev;
    (d) mounts in canonical order (parents first, then by path), so equal inputs give equal argv;
    (e) the mount model: every bind at its resolved source, nothing mounted before changes what its
        destination means inside; a source someone other than root could move is bound by a declared
        descriptor that is the object judged (``descriptors``: the render's)."""
    try:
        sep = argv.index("--")
    except ValueError:
        return ["no '--' before the command"]
    if M.has_control(" ".join(argv)):
        return ["an argv element contains control characters"]
    base = host.base_index()
    named = dict((int(d["fd"]), str(d["path"])) for d in descriptors or [])
    read = _read_argv(argv, sep, base, named)
    if read.stop is not None:
        return [read.stop]
    out = read.problems
    needs_net = any(c.needs_network() for c in manifest.capabilities)
    want = list(BASE_FLAGS) + ([] if needs_net else ["--unshare-net"]) + ["--die-with-parent"]
    if read.flags != want:
        out.append("flags %s, the rules give %s (c)" % (" ".join(read.flags), " ".join(want)))
    keys = [(op.dest.count("/"), op.dest) for op in read.ops]
    if keys != sorted(keys):
        out.append("mounts are not in canonical order (d)")
    out += _check_model(read, descriptors or [], host, base)
    trees = host.trees()
    allowed: Optional[_Allowed] = None
    own_real = _real_or_none(own_dir)
    for opt, src, dest, _fd in read.binds:
        if trees.forbidden.under(src) or trees.forbidden.under(dest):
            out.append("%s %s %s reaches /proc or /dev (c)" % (opt, src, dest))
        if opt == "--ro-bind" and (src in base.ro or (src == own_real and dest == own_real)):
            continue
        if allowed is None:
            allowed = _allowed(manifest, host, invocation, own_dir)
        out += _check_bind(opt, src, dest, host, trees, allowed, own_dir)
    return out


def _check_model(read: _Argv, descriptors: Sequence[DS.Descriptor], host: HostContext, base: _BaseIndex) -> List[str]:
    """(e): the mount model over the argv read back, each path bind's source stable, each descriptor
    the object judged (looked up again on the host)."""
    out = ["%s: %s (e)" % (f.dest, f.text) for f in MM.violations(read.ops, _STATS[0])]
    judged = dict((int(d["fd"]), d) for d in descriptors)
    for bind in read.binds:
        if bind.fd is None:
            folder = host.stable(bind.src) if bind.src in base.ro else MM.unstable_folder(bind.src, _STATS[0])
            if folder is not None:
                out.append("%s %s: someone other than root can write %s on its way, and it is not bound by "
                           "descriptor (e)" % (bind.opt, bind.src, folder))
            continue
        want, info = judged.get(bind.fd), _STATS[0].lstat(bind.src)
        if want is None or info is None or (info.st_dev, info.st_ino) != (want["dev"], want["ino"]):
            out.append("descriptor %s for %s is not the object judged (e)" % (bind.fd, bind.src))
    return out


def _check_bind(opt: str, src: str, dest: str, host: HostContext, trees: _Trees, allowed: _Allowed,
                own_dir: str) -> List[str]:
    """Invariants (a)-(c) of one bind that is not a base mount."""
    out = []
    kind = _file_type(src)
    real = _real_or_none(src)
    own_real = _real_or_none(own_dir)
    if kind in _SPECIAL and not (opt == "--ro-bind" and src in allowed.channels):
        out.append("%s %s %s is %s (c)" % (opt, src, dest, _SPECIAL[kind].split(":")[0]))
    for path in (src, real or src):
        if host.broad(path):
            out.append("%s %s %s exposes the shared tree %s (a)" % (opt, src, dest, path))
        if trees.reserved.related(path) and path not in allowed.grants and not (
                opt == "--ro-bind" and own_real is not None and PA.under(path, own_real)):
            out.append("%s %s %s reaches a reserved tree outside its own grant (a)" % (opt, src, dest))
    if opt == "--ro-bind":
        if not allowed.any.under(src):
            out.append("--ro-bind %s is outside the base and every declared scope (a)" % src)
        return out
    if real != src:
        out.append("--bind %s is not a resolved path (a)" % src)
    if kind == "linked file":
        out.append("--bind %s is a file with several names (hard links): writing it writes them all (b)" % src)
    if not allowed.write.under(src):
        out.append("--bind %s is outside every declared writable scope (a)" % src)
    pseudo = host.mount_table().pseudo_related(src)
    if pseudo is not None:
        out.append("--bind %s reaches the %s mounted at %s (b)" % (src, pseudo[1], pseudo[0]))
    own = (own_dir, own_real or own_dir)
    for path in (src, dest):
        hits = trees.readonly.which(path) if trees.readonly.related(path) else []
        hits += [Labelled("the executor's own folder", o) for o in own if PA.related(path, o)]
        if hits:
            out.append("--bind %s %s is at, below or above the read-only %s %s (b)" % (src, dest, hits[0].label,
                                                                                       hits[0].root))
    return out


# ------------------------------------------------------------------ the one entry every face calls

def render_safe(manifest_source: Any, host: HostContext, invocation: Optional[Invocation] = None,
                status: Optional[Dict[str, Any]] = None, command: Optional[List[str]] = None,
                preview: bool = False) -> Result:
    """coerce -> validate -> render -> final check, for any manifest source (a Manifest, a
    manifest.FileSource, bytes or text, or decoded data). Refusals are results, never exceptions.

    ``preview``: the caller renders off the target host (a filter on the controller): the result
    says so (``preview: true`` and a profile_preview diagnostic) and is never a final profile."""
    try:
        manifest = M.coerce(manifest_source)
    except ManifestError as exc:
        name = manifest_source.get("name") if isinstance(manifest_source, dict) else None
        prof = refused(name if isinstance(name, str) and M._NAME.fullmatch(name) else None, exc.diagnostics)
    else:
        prof = render(manifest, host, invocation, status, command)
    if preview:
        prof["preview"] = True
        prof["diagnostics"] = prof["diagnostics"] + [D.make("profile_preview", wording="preview")]
    return prof
