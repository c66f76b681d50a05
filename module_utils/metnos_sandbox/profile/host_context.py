# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host context a profile is rendered against: the host's layout (host_layout.py: DEFAULT_HOST and
an admin's overrides, each path checked) made into one object, and how a host path is judged there
(resolved, its file type, shared folders, the trees each grant may reach).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import stat
from typing import (
    Any,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Optional,
    Set,
    Tuple,
)

from ..base import diagnostics, files, paths
from ..base.records import Record
from ..host import bwrap
from . import channels, host_layout, loopback, model, mountmodel
from .mounts import MAX_MOUNTINFO_BYTES, MOUNTINFO, MountTable

Invocation = Dict[str, Any]

# Besides host_layout.BROAD_ROOTS, no scope may be a folder found on the host that every user may write into
# (sticky and world-writable, mode 1777 like /tmp, /var/tmp, /dev/shm, /run/lock): other users' and
# services' files are in it.
_SHARED_MODE = stat.S_ISVTX | stat.S_IWOTH


class BaseMount(Record):
    """A base mount (R-BASE-1..5): kind (ro, symlink, proc, dev, tmpfs), source, destination, rule
    and what caused it."""
    kind: str
    src: Optional[str]
    dest: str
    rule: str
    source: str


class Labelled(Record):
    """A protected tree and what it is (a host key, 'system tree /usr', a shared root)."""
    label: str
    root: str


class TreeSet(paths.RelatedRoots):
    """Labelled trees: paths.RelatedRoots' C-speed tests (at or below one, or above one), and the
    label, looked up only when a test matches."""

    __slots__ = ("labelled", "_slashed")

    def __init__(self, labelled: Iterable[Labelled]) -> None:
        self.labelled = list(labelled)
        paths.RelatedRoots.__init__(self, (p for _l, p in self.labelled))
        # each entry with its root's 'root/' prefix: paths.under's test, inlined (asked for every judged path)
        self._slashed = [(entry, entry.root.rstrip("/") + "/") for entry in self.labelled]

    def which(self, path: str, related: bool = True) -> List[Labelled]:
        """The entries the path is at or below (or above, with ``related``): paths.under(path, root), or
        paths.under(root, path)."""
        above = path.rstrip("/") + "/"
        return [entry for entry, prefix in self._slashed
                if path == entry.root or entry.root == "/" or path.startswith(prefix)
                or (related and (path == "/" or entry.root.startswith(above)))]


class Trees(Record):
    """The refused and protected trees of a host, as written, resolved and through bind mounts."""
    forbidden: TreeSet
    broad: FrozenSet[str]
    broad_aliases: TreeSet        # a path above a bind mount of a shared root exposes it
    readonly: TreeSet
    reserved: TreeSet
    runtime: TreeSet
    system_mounted: List[str]
    alias_of: Dict[str, str]       # an alias (through a bind mount) -> the tree it shows


class _BaseState(Record):
    mounts: List[BaseMount]
    refusals: List[diagnostics.Diagnostic]


class _Candidate(Record):
    """A read-only base path the admin configures: its host key, the path, rule and source."""
    key: str
    path: Optional[str]
    rule: str
    source: str


class BaseIndex(Record):
    """The base mounts as the final check compares them."""
    ro: FrozenSet[str]
    symlinks: FrozenSet[Tuple[Optional[str], str]]


MAX_CACHED = 8192          # per render: the file types and shared folders kept (then asked again)
MAX_LISTED = 256          # per render: the folder listings kept


class RenderState(object):
    """What one render learns of this host's files, made fresh for each render (renderer.render) and handed
    along to everything that judges a path in it: the lstat answers (mountmodel.Stats: resolution,
    stability, the mount model), the resolver with its one cache and budget, each resolved path's file
    type, the shared folders, the folder listings. Nothing of it outlives the render."""

    __slots__ = ("stats", "resolver", "_types", "_shared", "_listed")

    def __init__(self) -> None:
        self.stats = mountmodel.Stats()
        self.resolver = paths.Resolver(lstat=self.stats.lstat)
        self._types: Dict[str, Optional[str]] = {}
        self._shared: Dict[str, bool] = {}
        self._listed: Dict[str, Tuple[str, ...]] = {}

    def realpath(self, path: str) -> str:
        """Every component resolved on this host, with the kernel's bounds (raises paths.Unresolvable)."""
        return self.resolver.resolve(path)

    def real_or_none(self, path: str) -> Optional[str]:
        try:
            return self.resolver.resolve(path)
        except paths.Unresolvable:
            return None

    def file_type(self, path: str) -> Optional[str]:
        """'dir', 'file', 'linked file' (a regular file with several hard links), 'socket', 'FIFO',
        'device' or None (missing) for a resolved path (the render's lstat answers, followed only if it is
        still a link)."""
        if path in self._types:
            return self._types[path]
        found = _file_type(self.stats.lstat(path), path)
        if len(self._types) < MAX_CACHED:
            self._types[path] = found
        return found

    def shared_folder(self, path: str) -> bool:
        """A resolved path that is a folder every user may write into (sticky and world-writable: mode
        1777), found on the host. A path through a symlink is judged on its resolved form
        (scope_symlink_refused), like every alias."""
        if path in self._shared:
            return self._shared[path]
        info = self.stats.lstat(path)
        found = False
        if info is not None:
            mode = info.st_mode
            found = stat.S_ISDIR(mode) and mode & _SHARED_MODE == _SHARED_MODE and self.real_or_none(path) == path
        if len(self._shared) < MAX_CACHED:
            self._shared[path] = found
        return found

    def kind(self, real: str) -> Optional[str]:
        """'dir', 'file' or 'other' for a resolved host path from the render's lstat answers; None if missing."""
        info = self.stats.lstat(real)
        if info is None:
            return None
        return "dir" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "other"

    def listdir(self, path: str) -> Tuple[str, ...]:
        """A folder's names (none when it cannot be listed), listed once per render."""
        if path in self._listed:
            return self._listed[path]
        try:
            found = tuple(os.listdir(path))
        except OSError:
            found = ()
        if len(self._listed) < MAX_LISTED:
            self._listed[path] = found
        return found


def _file_type(info: Optional[os.stat_result], path: str) -> Optional[str]:
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


class HostContext(object):
    """How a host path is judged on this host, against its layout (host_layout.Layout: the data): the
    refused and protected trees resolved, the base mounts, the mount table, each computed once per context.
    What one render learns of the host's files is that render's RenderState, handed to each judgement."""

    def __init__(self, overrides: Optional[Dict[str, Any]] = None) -> None:
        self.layout = host_layout.Layout(overrides)
        self.data: Dict[str, Any] = self.layout.data
        self._base: Optional[_BaseState] = None
        self._trees: Optional[Trees] = None
        self._mounts: Optional[MountTable] = None
        self._listeners: Optional[List[str]] = None
        self._odd: Dict[str, List[Tuple[str, str]]] = {}
        self._index: Optional[BaseIndex] = None
        self._real: Dict[str, str] = {}
        self._resolver = paths.Resolver()
        self._loops: Dict[str, str] = {}          # host paths the kernel would not resolve -> why
        self._bwrap: Tuple[Optional[str], Tuple[str, ...]] = (None, ())
        self._bwrap_given: Optional[str] = ""
        self._writable: Optional[paths.Roots] = None
        self._stable: Dict[str, Optional[str]] = {}
        self._inside: Dict[str, str] = {}
        self._channels: Optional[Dict[str, str]] = None

    def _resolve(self, path: str) -> str:
        """A host-context path resolved (once per context); one the kernel would not resolve stands for
        itself and is refused (base_refusals)."""
        if path not in self._real:
            try:
                self._real[path] = self._resolver.resolve(path)
            except paths.Unresolvable as exc:
                self._loops[path] = exc.why
                self._real[path] = path
        return self._real[path]

    def __getitem__(self, key: str) -> Any:
        return self.layout.data[key]

    # ---- the resolved trees every judgement uses (literal and resolved forms) ----
    def trees(self) -> Trees:
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

        readonly = [x for t in host_layout.SYSTEM_TREES for x in both("system tree " + t, t)]
        for key in ("runtime_dir", "python_prefix", "executors_dir", "executor_dir"):
            if self.data[key]:
                readonly += both("host." + key, self.data[key])
        for key in ("python_package_roots", "python_installation", "i18n_dbs", "lexicon_dbs"):
            for i, path in enumerate(self.data[key]):
                readonly += both("host.%s[%d]" % (key, i), path)
        for label, path in self._engine_trees():
            readonly += both(label, path)
        broad = [x for t in host_layout.BROAD_ROOTS for x in both(t, t, parts=False)]
        forbidden = TreeSet(x for t in host_layout.FORBIDDEN_TREES for x in both(t, t))
        # a path above a bind mount of a shared root exposes it (below it is like below the root);
        # built here, before the reserved and runtime trees join ``plain`` (the order is the behaviour)
        broad_aliases = TreeSet(entry for entry in broad if entry.root not in plain)
        reserved = TreeSet(x for key in host_layout.RESERVED_KEYS for x in both(key, self.data[key]))
        # an alias (/var/run -> /run) is caught once resolved, like every alias of a refused tree
        runtime = TreeSet(x for t in host_layout.RUNTIME_TREES if t == host_layout.RUNTIME_TREES[0] or
                          not os.path.islink(t)
                          for x in both(t, t))
        self._trees = Trees(
            forbidden=forbidden, broad=frozenset(p for _l, p in broad), broad_aliases=broad_aliases,
            readonly=TreeSet(readonly), reserved=reserved, runtime=runtime,
            system_mounted=[p for p in host_layout.SYSTEM_PATHS if os.path.isdir(p) and not os.path.islink(p)],
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
            # A bare name is looked up on this process's PATH in execvp's order (host/bwrap.py's one lookup).
            found = bwrap.which(path, os.environ.get("PATH", os.defpath), os.getcwd()) if "/" not in path else None
            path = found or path
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
        features = bwrap.help_features(self._bwrap[0])
        return None if features is None else all(f in features for f in bwrap.FD_BIND_FEATURES)

    def writable(self) -> paths.Roots:
        """The admin's writable roots, as written and resolved (host.writable_roots)."""
        if self._writable is None:
            roots = self.data["writable_roots"]
            self._writable = paths.Roots(list(roots) + [self._resolve(r) for r in roots])
        return self._writable

    def allowed_channels(self) -> Dict[str, str]:
        """The command channels the admin allows (host.allow_channels), as written and resolved -> the reason
        (once per context)."""
        if self._channels is None:
            self._channels = {}
            for entry in self.data["allow_channels"]:
                for form in (entry["path"], self._resolve(entry["path"])):
                    self._channels.setdefault(form, entry["reason"])
        return self._channels

    def crossed(self, state: RenderState, what: str, key: str, path: str,
                real: str) -> Optional[diagnostics.Diagnostic]:
        """Whether the admin's layout crosses at a configured root (``key``: 'indexes.<name>' or
        'resources.<name>'; ``real``: ``path`` resolved): the root is itself a symbolic link to another folder
        (layout_root_symlink; its parents may resolve), or it is at, below or above another configured index or
        resource root, as written or resolved (layout_roots_nested: the grant would reach that one too, or
        read and write inside another's folder)."""
        parent = state.real_or_none(os.path.dirname(path))
        if parent is not None and real != os.path.join(parent, os.path.basename(path)):
            return diagnostics.make("layout_root_symlink", wording="symlink", fill={"what": what, "real": real},
                                    key=key,
                                    path=path)
        for group in ("indexes", "resources"):
            for name, other in sorted(self.data[group].items()):
                other_key = "%s.%s" % (group, name)
                forms = (other, state.real_or_none(other) or other)
                if other_key != key and any(paths.related(form, mine) for form in forms for mine in (path, real)):
                    return diagnostics.make("layout_roots_nested", wording="nested", fill={
                        "what": what, "other": other, "other_key": other_key}, key=key, path=path)
        return None

    def inside(self, path: str) -> str:
        """Where a configured file is inside the sandbox: in its folder's resolved path (every grant is
        mounted there), under its own name (a venv's python3 link must stay one: the venv is found through
        it). Once per context, like the resolution it is made of."""
        if path not in self._inside:
            self._inside[path] = os.path.join(self._resolve(os.path.dirname(path)), os.path.basename(path))
        return self._inside[path]

    def stable(self, path: str, state: RenderState) -> Optional[str]:
        """mountmodel.unstable_folder for a base path (once per context: the first render that asks)."""
        if path not in self._stable:
            self._stable[path] = mountmodel.unstable_folder(path, state.stats)
        return self._stable[path]

    def odd_filesystems(self, folder: str) -> List[Tuple[str, str]]:
        """channels.odd_filesystems of ``folder`` against this context's mount table (read once), asked once per
        folder: the filesystems bound with it that are not plain trees."""
        found = self._odd.get(folder)
        if found is None:
            types = self.mount_table().types
            if "" not in self._odd:
                self._odd[""] = channels.unplain(types)      # the table's unplain mounts, kept under ''
            found = self._odd[folder] = channels.odd_filesystems(types, folder, self._odd[""])
        return found

    def loopback_listeners(self) -> List[str]:
        """The host's loopback, wildcard and abstract listeners (loopback.listeners), read once per context."""
        if self._listeners is None:
            self._listeners = loopback.listeners()[0]
        return self._listeners

    def mount_table(self) -> MountTable:
        """The host's mount table (mounts.MountTable), read once per context."""
        if self._mounts is None:
            self._mounts = MountTable.read()
        return self._mounts

    def broad(self, path: str, state: RenderState) -> bool:
        """A shared root, or (through a bind mount) an alias of one or a folder above such an alias,
        or (resolved) a folder every user may write into (mode 1777)."""
        t = self.trees()
        return path in t.broad or path in t.broad_aliases.above or state.shared_folder(path)

    def _note(self, kind: str, root: str, text: str) -> host_layout.Problem:
        """The refusal; an alias (a tree reached through a bind mount) is its own kind."""
        original = self.trees().alias_of.get(root)
        if original is None:
            return host_layout.Problem(kind, text)
        return host_layout.Problem("alias", "%s (%s is the same folder as %s, through a bind mount)" % (text, root,
                                                                                                        original))

    def real(self, path: str) -> str:
        """The resolved form of a host-context path (resolved once per context, with the trees); one the
        kernel would not resolve raises paths.Unresolvable."""
        self.trees()
        real = self._resolve(path)
        if path in self._loops:
            raise paths.Unresolvable(path, self._loops[path])
        return real

    def judge(self, path: str, mode: str, state: RenderState, grant: Optional[str] = None,
              own: Optional[str] = None) -> Optional[host_layout.Problem]:
        """Why ``path`` (absolute, normalised) may not be mounted with ``mode`` ('ro'/'rw'), or None.

        The same rules for every source: /proc and /dev are the profile's own; a shared root is
        never a scope; reserved trees (and their ancestors) only through their own capability
        (``grant``: the reserved key this grant belongs to; ``own``: the executor's own folder,
        readable); nothing at, below or above a read-only base tree is writable.
        Returns a host_layout.Problem whose kind is control/forbidden/broad/reserved/readonly/shared/alias."""
        t = self.trees()
        if model.has_control(path):
            return host_layout.Problem("control", "%s contains control or format characters"
                                       % diagnostics.excerpt(path))
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
                return host_layout.Problem("pseudo",
                                           "%s is at, below or above %s, a mount of the pseudo-filesystem %s: writing "
                                           "there changes the kernel's state, and bwrap binds it along (R-BASE-2)"
                                           % (path, pseudo[0], pseudo[1]))
        if state.shared_folder(path):
            return host_layout.Problem("shared",
                                       "%s is a folder every user may write into (mode 1777, like /tmp and /var/tmp): "
                                       "a shared tree, whatever its name (R-SEC-2)" % path)
        return None

    def _judge_reserved(self, reserved: TreeSet, path: str, mode: str, grant: Optional[str],
                        own: Optional[str]) -> Optional[host_layout.Problem]:
        """A reserved tree is reached only through its own grant; the executor's own folder (and
        below) in the executors folder is readable (R-BASE-4)."""
        for label, root in reserved.which(path):
            if label == grant:
                continue
            if (label == "executors_dir" and own is not None and mode == "ro" and paths.under(path, own)
                    and own != root and paths.under(own, root)):
                continue
            return self._note("reserved", root, "%s is at, below or above host.%s (%s), reachable only "
                                                "through its own capability (R-BASE-4)" % (path, label, root))
        return None

    def judge_manifest_path(self, path: str) -> Optional[host_layout.Problem]:
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

    def base(self, state: Optional[RenderState] = None) -> List[BaseMount]:
        """Base mounts (R-BASE-1..5) that exist on this host, resolved and judged once, by the first render
        that asks (``state``; a fresh one outside a render) (BaseMount: kind, src, dest, rule, source).
        Refused host paths: base_refusals()."""
        return self._base_state(state or RenderState()).mounts

    def base_refusals(self, state: Optional[RenderState] = None) -> List[diagnostics.Diagnostic]:
        """host_path_refused diagnostics for base paths that cannot be mounted safely."""
        return self._base_state(state or RenderState()).refusals

    def base_index(self, state: Optional[RenderState] = None) -> BaseIndex:
        """The base mounts as the final check compares them (once per context)."""
        if self._index is None:
            base = self.base(state)
            self._index = BaseIndex(ro=frozenset(e.src for e in base if e.kind == "ro" and e.src is not None),
                                    symlinks=frozenset((e.src, e.dest) for e in base if e.kind == "symlink"))
        return self._index

    def _base_state(self, state: RenderState) -> _BaseState:
        if self._base is not None:
            return self._base
        out: List[BaseMount] = []
        refusals: List[diagnostics.Diagnostic] = []
        if not self.mount_table().complete:
            refusals.append(diagnostics.make("host_path_refused", host_key="(mount table)",
                                             path=MOUNTINFO,
                                             wording="mount_table", fill={"limit": MAX_MOUNTINFO_BYTES}))
        for path in host_layout.SYSTEM_PATHS:
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
            if not given:
                continue
            try:      # by descriptor, no link followed that someone other than root controls (files.reached)
                seen, folder = files.reached(given)
            except files.NotAFolder:             # a file on the way: nothing there to mount, as a missing path
                continue
            except files.PathRefused as exc:
                refusals.append(host_layout.host_refusal(candidate.key, given, host_layout.Problem("links", str(exc))))
                continue
            except OSError:                      # nothing there (or nothing root can reach): no base mount
                continue
            if candidate.key.startswith(("python_package_roots", "python_installation")) and not folder:
                continue
            real = self._resolve(given)          # mounted at its resolved host path only (the mount model)
            # a component swapped between the two walks: refused unjudged (what the swap names is not told)
            problem = host_layout.Problem("links", "it changed while it was judged (a component was swapped)") \
                if real != seen else self.judge_base(given, state)
            if problem:
                refusals.append(host_layout.host_refusal(candidate.key, given, problem))
                continue
            out.append(BaseMount("ro", real, real, candidate.rule, candidate.source))
        refusals += [host_layout.host_refusal("(host path)", path,
                                              host_layout.Problem("links", host_layout.UNRESOLVABLE[why] % path))
                     for path, why in sorted(self._loops.items())]
        self._base = _BaseState(out, refusals)
        return self._base

    def _reserved_in_system(self, system: List[str]) -> List[diagnostics.Diagnostic]:
        """Every sandbox mounts the system paths whole: a reserved tree inside one would be readable by
        every executor, whatever its capabilities (judged as written, resolved and through bind mounts)."""
        refusals = []
        for key in host_layout.RESERVED_KEYS:
            path = self.data[key]
            real = self._resolve(path)
            for form in [path, real] + self.mount_table().aliases(real, parts=False):
                inside = [s for s in system if paths.under(form, s)]
                if inside:
                    refusals.append(host_layout.host_refusal(key, path, host_layout.Problem("readonly", (
                        "%s is inside %s, which every sandbox mounts read-only (R-BASE-1): every executor would "
                        "read all of it, whatever its capabilities (R-BASE-4)" % (form, inside[0])))))
                    break
        return refusals

    def _base_candidates(self) -> List[_Candidate]:
        """The read-only base paths the admin configures."""
        candidates = [_Candidate(key, self.data[key], "R-BASE-4", "base:%s" % key)
                      for key in ("runtime_dir", "python_prefix")]
        candidates += [_Candidate("python_package_roots[%d]" % i, p, "R-BASE-4", "base:python_package_root")
                       for i, p in enumerate(self.data["python_package_roots"]) if not host_layout.is_home(p)]
        candidates += [_Candidate("python_installation[%d]" % i, p, "R-BASE-4", "base:python_installation")
                       for i, p in enumerate(self.data["python_installation"]) if not host_layout.is_home(p)]
        for key in ("i18n_dbs", "lexicon_dbs"):
            candidates += [_Candidate("%s[%d]" % (key, i), p, "R-BASE-5", "base:%s" % key)
                           for i, p in enumerate(self.data[key])]
        return candidates

    def judge_base(self, path: str, state: RenderState) -> Optional[host_layout.Problem]:
        """A read-only base path: judged as written and resolved; below a mounted system path it is
        already visible, so only /proc, /dev and reserved trees matter there."""
        for form in (path, self._resolve(path)):
            problem = self.judge(form, "ro", state)
            if problem and not (problem.kind == "broad" and any(
                    paths.under(form, s) and form != s for s in self.trees().system_mounted)):
                return problem if form == path else host_layout.Problem(problem.kind,
                                                                        "resolves to %s: %s" % (form, problem.text))
        return None
