# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The final check (defence in depth): the rendered argv read back option by option and every invariant of
docs/profile-invariants.md enforced with the same mount model; a violation withholds the profile
(profile_invariant_violated).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
from typing import (
    FrozenSet,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
)

from ..base import diagnostics, paths
from ..base.records import Record
from ..host import bwrap_options
from . import bus_proxy, channels, granters, host_context, host_layout, model, mountmodel
from .descriptors import Descriptor
from .model import Manifest

# ------------------------------------------------------------------ the final check (defence in depth)

# The options a rendered profile may use (their arity: host/bwrap_options.py); any other is unexpected.
_RENDERED = frozenset(("--unshare-user", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent",
                       "--unshare-pid", "--new-session",
                       "--ro-bind", "--bind", "--ro-bind-fd", "--bind-fd", "--symlink", "--proc", "--dev", "--tmpfs",
                       "--chdir", "--uid"))
_FD_OPTS = {"--ro-bind-fd": "--ro-bind", "--bind-fd": "--bind"}
_SINGLE = {"--proc": "/proc", "--dev": "/dev", "--tmpfs": "/tmp"}
_PATH_BINDS = {"--ro-bind": "ro", "--bind": "rw"}
_new = tuple.__new__


class _Allowed(Record):
    """What the declarations allow (computed from the manifest, host and invocation alone, not from
    the renderer's decisions): resolved roots that may be written, that may be read (with the base),
    and the reserved folders' entries the capabilities name (their own grant). The admin's read
    channels (sockets the systemd/system read paths may name) are resolved only when a bind is a
    special file (``_channels``)."""
    write: paths.Roots
    any: paths.Roots
    grants: Set[str]


def _allowed(manifest: Manifest, host: host_context.HostContext, invocation: host_context.Invocation, own_dir: str,
             state: host_context.RenderState) -> _Allowed:
    d = granters.Declaring(manifest, host, invocation, state)
    write: List[str] = []
    read: List[str] = []
    grants: Set[str] = set()
    for cap in manifest.capabilities:
        granter = granters.GRANTERS.get(cap.kind)
        if granter is None:
            continue
        roots = granter.roots(d, cap)
        (write if cap.writes() else read).extend(roots)
        if granter.entry:
            grants.update(roots)
    if manifest.inverse is not None and granters.component(invocation.get("turn_id")):
        turns = granters.reals(state, [os.path.join(host["undo_root"], invocation["turn_id"])])
        write += turns
        grants.update(turns)
    read += granters.reals(state, [own_dir])
    return _Allowed(write=paths.Roots(write), any=paths.Roots(write + read + list(host.base_index(state).ro)),
                    grants=grants)


def _channels(host: host_context.HostContext, state: host_context.RenderState) -> FrozenSet[str]:
    """The command channels the admin allows (host.allow_channels, as written and resolved), and the
    filtering proxy's socket (host.system_bus_proxy, resolved)."""
    proxy = host["system_bus_proxy"]
    return frozenset(list(host.allowed_channels()) + granters.reals(state, [proxy] if proxy else []))


def _proxy(host: host_context.HostContext, state: host_context.RenderState) -> Optional[str]:
    proxy = host["system_bus_proxy"]
    return state.real_or_none(proxy) if proxy else None


class _Bind(Record):
    opt: str          # --ro-bind or --bind (a descriptor bind is read back as one, with ``fd``)
    src: str
    dest: str
    fd: Optional[int] = None


class _Argv(Record):
    """A rendered argv read back: the flags, the binds (option, source, destination), every mount
    operation in order (the mount model's input), and what is already wrong with it (``stop``: an
    option that ends the reading, the only violation then reported)."""
    flags: List[str]
    binds: List[_Bind]
    ops: List[mountmodel.Op]
    problems: List[str]
    stop: Optional[str] = None


def _read_argv(argv: List[str], sep: int, base: host_context.BaseIndex, named: Mapping[int, str]) -> _Argv:
    """The options before '--', each with its arity; an unknown option ends the reading (c). ``named``:
    the path each declared descriptor was judged as."""
    out: List[str] = []
    binds: List[_Bind] = []
    ops: List[mountmodel.Op] = []
    flags: List[str] = []
    seen: Set[str] = set()
    i = 1
    while i < sep:
        opt = argv[i]
        kind = _PATH_BINDS.get(opt)
        if kind is not None and i + 2 < sep:           # the most frequent option first: a bind of a path
            src, dest = argv[i + 1], argv[i + 2]
            binds.append(_new(_Bind, (opt, src, dest, None)))        # _Bind(opt, src, dest), without a frame
            ops.append(_new(mountmodel.Op, (kind, src, dest, False)))         # mountmodel.Op(kind, src, dest)
            i += 3
            continue
        arity = bwrap_options.ARITY[opt] if opt in _RENDERED else None
        if arity is None or i + arity >= sep:
            return _Argv(flags, binds, ops, out, stop="unexpected option %s (c)" % diagnostics.excerpt(opt))
        if arity == 0:
            flags.append(opt)
        elif opt in _FD_OPTS:
            number, dest = argv[i + 1], argv[i + 2]
            judged = named.get(int(number)) if number.isdigit() else None
            if judged is None:
                out.append("%s %s %s binds no descriptor the profile declares (e)" % (opt, number, dest))
                judged = "(descriptor %s)" % number
            binds.append(_Bind(_FD_OPTS[opt], judged, dest, int(number) if number.isdigit() else -1))
            ops.append(mountmodel.Op("ro" if opt == "--ro-bind-fd" else "rw", judged, dest, True))
        elif arity == 2:
            src, dest = argv[i + 1], argv[i + 2]
            if opt == "--symlink":
                if (src, dest) not in base.symlinks:
                    out.append("--symlink %s %s is not a base symlink (c)" % (src, dest))
                ops.append(mountmodel.Op("symlink", src, dest))
            else:
                binds.append(_Bind(opt, src, dest))
                ops.append(mountmodel.Op("ro" if opt == "--ro-bind" else "rw", src, dest))
        elif opt == "--uid":                            # the proxy's user's number (bus_proxy.mapped_uid)
            flags.append("--uid " + argv[i + 1])
        elif opt != "--chdir":
            where = argv[i + 1]
            if where != _SINGLE[opt] or opt in seen:
                out.append("%s %s is not the profile's own single %s (c)" % (opt, where, _SINGLE[opt]))
            seen.add(opt)
            ops.append(mountmodel.Op(opt[2:], None, where))
        i += 1 + arity
    return _Argv(flags, binds, ops, out)


def check_invariants(argv: List[str], manifest: Manifest, host: host_context.HostContext,
                     invocation: host_context.Invocation,
                     own_dir: str, descriptors: Optional[Sequence[Descriptor]] = None,
                     state: Optional[host_context.RenderState] = None) -> List[str]:
    """Invariants (a)-(e) of docs/profile-invariants.md over a rendered argv. Returns violations.

    (a) every writable bind's source is resolved and inside a declared, allowed (writable roots),
        resolved scope; every read-only bind is a base mount or inside a declared scope;
    (b) no read-only base tree (system trees, runtime, the interpreter's installation and package
        roots, the bwrap binary's folder, the executors folder and the executor's own folder,
        i18n/lexicon databases) is writable or shadowed writable, no writable bind is above one, and
        none reaches a mount of a pseudo-filesystem;
    (c) only the flags the rules give: the base namespaces, --unshare-net exactly when no
        capability needs the network, a device's --unshare-pid and --new-session (but its declared downgrades),
        the filtering proxy's user's uid (--uid) exactly when its socket is bound (bus_proxy.mapped_uid),
        /proc, /dev and /tmp once at their place, the base
        symlinks, no devices, nothing below /proc or /dev;
    (d) mounts in canonical order (parents first, then by path), so equal inputs give equal argv;
    (e) the mount model: every bind at its resolved source, nothing mounted before changes what its
        destination means inside; a source someone other than root could move is bound by a declared
        descriptor that is the object judged (``descriptors``: the render's).
    ``state``: the render's RenderState (a fresh one when the argv is checked on its own)."""
    state = state or host_context.RenderState()
    try:
        sep = argv.index("--")
    except ValueError:
        return ["no '--' before the command"]
    if model.has_control(" ".join(argv)):
        return ["an argv element contains control characters"]
    base = host.base_index(state)
    named = dict((int(d["fd"]), str(d["path"])) for d in descriptors or [])
    read = _read_argv(argv, sep, base, named)
    if read.stop is not None:
        return [read.stop]
    out = read.problems
    needs_net = any(c.needs_network() for c in manifest.capabilities)
    want = list(host_layout.BASE_FLAGS) + ([] if needs_net
                                           else ["--unshare-net"]) + host_layout.device_flags(host.data) + [
        "--die-with-parent"]
    if channels.SYSTEM_BUS in argv:                    # the proxy's socket bound: its user's uid (bus_proxy)
        uid = bus_proxy.mapped_uid(next((b.src for b in read.binds if b.dest == channels.SYSTEM_BUS), None),
                                   state.stats)
        want += ["--uid %d" % uid] if uid is not None else []
    if read.flags != want:
        out.append("flags %s, the rules give %s (c)" % (" ".join(read.flags), " ".join(want)))
    keys = [(op.dest.count("/"), op.dest) for op in read.ops]
    if keys != sorted(keys):
        out.append("mounts are not in canonical order (d)")
    out += _check_model(read, descriptors or [], host, base, state)
    trees = host.trees()
    allowed: Optional[_Allowed] = None
    own: Optional[List[Optional[str]]] = None          # [the own folder resolved], once a bind asks
    for bind in read.binds:
        opt, src, dest = bind.opt, bind.src, bind.dest
        if trees.forbidden.under(src) or (dest != src and trees.forbidden.under(dest)):
            out.append("%s %s %s reaches /proc or /dev (c)" % (opt, src, dest))
        if opt == "--ro-bind" and src in base.ro:
            continue
        own = own or [state.real_or_none(own_dir)]
        if opt == "--ro-bind" and src == own[0] and dest == own[0]:
            continue
        if allowed is None:
            allowed = _allowed(manifest, host, invocation, own_dir, state)
        out += _check_bind(bind, host, trees, allowed, own_dir, own[0], state)
    return out


def _check_model(read: _Argv, descriptors: Sequence[Descriptor], host: host_context.HostContext,
                 base: host_context.BaseIndex, state: host_context.RenderState) -> List[str]:
    """(e): the mount model over the argv read back, each path bind's source stable, each descriptor
    the object judged (looked up again on the host)."""
    out = ["%s: %s (e)" % (f.dest, f.text) for f in mountmodel.violations(read.ops, state.stats)]
    judged = dict((int(d["fd"]), d) for d in descriptors)
    for bind in read.binds:
        if bind.fd is None:
            folder = host.stable(bind.src, state) if bind.src in base.ro else mountmodel.unstable_folder(bind.src,
                                                                                                         state.stats)
            if folder is not None:
                out.append("%s %s: someone other than root can write %s on its way, and it is not bound by "
                           "descriptor (e)" % (bind.opt, bind.src, folder))
            continue
        want, info = judged.get(bind.fd), state.stats.lstat(bind.src)
        if want is None or info is None or (info.st_dev, info.st_ino) != (want["dev"], want["ino"]):
            out.append("descriptor %s for %s is not the object judged (e)" % (bind.fd, bind.src))
    return out


def _check_bind(bind: _Bind, host: host_context.HostContext, trees: host_context.Trees, allowed: _Allowed,
                own_dir: str, own_real: Optional[str], state: host_context.RenderState) -> List[str]:
    """Invariants (a)-(c) of one bind that is not a base mount (``own_real``: ``own_dir`` resolved)."""
    opt, src, dest = bind.opt, bind.src, bind.dest
    out = []
    kind = state.file_type(src)
    real = state.real_or_none(src)
    if dest != src and not (opt == "--ro-bind" and dest in mountmodel.RELOCATED and src == _proxy(host, state)):
        out.append("%s %s %s: the source is not the destination, and not the filtering proxy's socket bound "
                   "where the bus is expected (e)" % (opt, src, dest))
    if kind in granters.SPECIAL and not (opt == "--ro-bind" and src in _channels(host, state)):
        out.append("%s %s %s is %s (c)" % (opt, src, dest, granters.SPECIAL[kind].split(":")[0]))
    for path in (src, real or src):
        if host.broad(path, state):
            out.append("%s %s %s exposes the shared tree %s (a)" % (opt, src, dest, path))
        if trees.reserved.related(path) and path not in allowed.grants and not (
                opt == "--ro-bind" and own_real is not None and paths.under(path, own_real)):
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
        hits += [host_context.Labelled("the executor's own folder", o) for o in own if paths.related(path, o)]
        if hits:
            out.append("--bind %s %s is at, below or above the read-only %s %s (b)" % (src, dest, hits[0].label,
                                                                                       hits[0].root))
    return out
