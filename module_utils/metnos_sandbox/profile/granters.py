# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each capability grants: the renderer's state (Render) and mounts with their provenance, one
granter per capability kind (fs, metnos, index, sys, provider, mail, dialog, undo) with what it may reach
from the declarations alone (for the final check), and the invocation's check.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from ..base import diagnostics
from ..base.paths import MAX_LINKS, MAX_RESOLVED, MAX_STEPS, Unresolvable, ancestors, under
from ..base.records import Record
from . import bus_proxy, channels, globs, model, result
from .globs import glob_root
from .model import Capability, Kind, Manifest

if TYPE_CHECKING:                     # annotations only (Python 3.10+ at check time; hosts run 3.8+)
    from typing import TypeGuard
from . import host_context, host_layout


class Conflict(Record):
    """One destination asked for with two different sources (never guessed: result.refused)."""
    dest: str
    first: Optional[str]
    second: Optional[str]
    source: str


class Mounts(object):
    def __init__(self, entries: Optional[Dict[str, result.MountEntry]] = None) -> None:
        self.entries: Dict[str, result.MountEntry] = entries if entries is not None else {}
        self.conflicts: List[Conflict] = []

    def add(self, kind: str, src: Optional[str], dest: str, rule: str, source: str) -> None:
        entry = self.entries.get(dest)
        prov: result.Provenance = {"rule": rule, "source": source}
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

    def add_all(self, mounts: Iterable[Tuple[str, Optional[str], str, str, str]]) -> None:
        """``add`` of each (kind, src, dest, rule, source), in order (the base mounts of every render)."""
        entries = self.entries
        for kind, src, dest, rule, source in mounts:
            if dest in entries:
                self.add(kind, src, dest, rule, source)
            else:
                entries[dest] = {"kind": kind, "src": src, "dest": dest,
                                 "provenance": [{"rule": rule, "source": source}]}

    def ordered(self) -> List[result.MountEntry]:
        """Parents before children; binds covered by an equal-or-stronger parent bind are merged into it."""
        binds = dict((d, e) for d, e in self.entries.items() if e["kind"] in ("ro", "rw") and e["src"] == d)
        keep = []
        for _depth, dest in sorted([(dest.count("/"), dest) for dest in self.entries]):     # depth, then path
            entry = self.entries[dest]
            parent = _covering_parent(dest, binds) if dest in binds else None
            if parent is not None and (binds[parent]["kind"] == "rw" or entry["kind"] == "ro"):
                for prov in entry["provenance"]:
                    if prov not in binds[parent]["provenance"]:
                        binds[parent]["provenance"].append({**prov, "covers": dest})
                continue
            keep.append(entry)
        return keep


def _covering_parent(dest: str, binds: Dict[str, result.MountEntry]) -> Optional[str]:
    for ancestor in ancestors(dest):
        if ancestor in binds:
            return ancestor
    return None


_SCOPE_CODES = {"forbidden": "scope_too_broad", "broad": "scope_too_broad", "readonly": "scope_too_broad",
                "shared": "scope_too_broad",
                "reserved": "scope_reserved_tree", "control": "scope_nul", "runtime": "scope_runtime_tree",
                "alias": "scope_mount_alias", "pseudo": "scope_pseudo_filesystem"}
# What a read-only or writable bind of these would really hand over.
SPECIAL = {"socket": "a socket: a channel to a host process (connecting and sending work through a read-only "
                     "bind)",
           "FIFO": "a FIFO: a channel to a host process (writing works through a read-only bind)",
           "device": "a device node"}


class Render(object):
    """The state of one render: inputs, the mounts being built and the diagnostics."""

    def __init__(self, manifest: Manifest, host: host_context.HostContext, invocation: host_context.Invocation,
                 own_dir: str,
                 state: host_context.RenderState) -> None:
        self.manifest = manifest
        self.host = host
        self.state = state            # what this render learns of the host's files
        self.invocation = invocation
        self.own = own_dir            # the executor's own folder (lexical)
        self.mounts = Mounts()
        self.diags: List[diagnostics.Diagnostic] = []
        self.glob_steps = [globs.MAX_GLOB_STEPS]     # every 'within' pattern match of this render shares it
        self.walk_budget = [channels.MAX_WALK_ENTRIES]  # every search of a granted folder for channels shares it
        self.channels: List[Dict[str, str]] = []  # the allowed channels this profile exposes (host.allow_channels)

    def allowed(self, path: str, kind: str, what: str) -> bool:
        """A channel the admin allows (host.allow_channels): recorded with its reason, for the result."""
        reason = self.host.allowed_channels().get(path)
        if reason is None:
            return False
        entry = {"path": path, "kind": kind, "reason": reason, "grant": what}
        if entry not in self.channels:
            self.channels.append(entry)
        return True

    def refuse(self, code: str, wording: str, fill: Mapping[str, Any], **ctx: Any) -> None:
        """A refusal: the code's registered ``wording``, its placeholders from ``fill``."""
        self.diags.append(diagnostics.make(code, wording=wording, fill=fill, **ctx))

    def skip(self, wording: str, fill: Mapping[str, Any], **ctx: Any) -> None:
        """A grant not mounted: grant_skipped's registered ``wording``, its placeholders from ``fill``."""
        self.diags.append(diagnostics.make("grant_skipped", wording=wording, fill=fill, **ctx))

    def _manifest_problem(self, path: str, mode: str, own: str) -> Optional[host_layout.Problem]:
        problem = self.host.judge(path, mode, self.state, own=own)
        if problem is None or problem.kind == "shared":      # /run/lock is the runtime tree first
            problem = self.host.judge_manifest_path(path) or problem
        return problem

    def unresolvable(self, field: str, path: str, exc: Unresolvable) -> None:
        """A manifest-written path the kernel would not resolve (ELOOP, too long, the render's budget)."""
        self.refuse("scope_too_many_links", exc.why, {"path": diagnostics.excerpt(path, 300),
                                                      "links": MAX_LINKS,
                                                      "length": MAX_RESOLVED, "steps": MAX_STEPS},
                    field=field)

    def judge_scope(self, field: str, what: str, lexical: str, mode: str) -> Optional[str]:
        """A manifest-written path (scope, glob root, 'within', argument value): judged as written,
        then fully resolved. Returns the resolved path, or None after recording the refusal."""
        access = "writable" if mode == "rw" else "read-only"
        problem = self._manifest_problem(lexical, mode, self.own)
        if problem:
            self.refuse(_SCOPE_CODES[problem.kind], "judged" if lexical == what else "judged_from", {
                "access": access, "path": lexical, "what": diagnostics.excerpt(what), "problem": problem.text},
                field=field)
            return None
        try:
            real = self.state.realpath(lexical)
            own_real = self.state.realpath(self.own)
        except Unresolvable as exc:
            self.unresolvable(field, lexical, exc)
            return None
        if real != lexical:
            problem = self._manifest_problem(real, mode, own_real)
            if problem:
                self.refuse("scope_symlink_refused", "symlink", {
                    "access": access, "path": lexical, "real": real, "problem": problem.text}, field=field)
                return None
        kind = self.state.file_type(real)
        if kind in SPECIAL and not (mode == "ro" and self.allowed(real, kind or "", field)):
            self.refuse("scope_special_file", "special" if real == lexical else "special_real", {
                "access": access, "path": lexical, "real": real, "kind": SPECIAL[kind]}, field=field)
            return None
        if kind == "linked file":
            self.refuse("scope_hard_link", "hard_link" if real == lexical else "hard_link_real", {
                "access": access, "path": lexical, "real": real}, field=field)
            return None
        if mode == "rw" and not (self.host.writable().under(lexical) and self.host.writable().under(real)):
            roots = self.host["writable_roots"]
            self.refuse("scope_outside_writable_roots", "outside" if roots else "none", {
                "path": lexical, "real": real, "roots": diagnostics.excerpt(", ".join(roots), 600)}, field=field)
            return None
        return real

    def judge_host(self, key: str, lexical: str, mode: str, container: Optional[str] = None,
                   grant: Optional[str] = None, configured: bool = False, channel: bool = False) -> Optional[str]:
        """A host-context path (resource, index, integration, credential, dialog, undo, read paths):
        the same rules, the refusal naming the host key. ``container``: the folder it must stay in.
        ``configured``: the path is the admin's own setting (a resource, an index, a read path),
        resolved once per context like the base paths; entries below a folder resolve per render.
        ``channel``: an admin's read path, which may name a command channel only if the admin allows it
        (host.allow_channels); refused with the channel's own code otherwise."""
        try:
            real = self.host.real(lexical) if configured else self.state.realpath(lexical)
            home = self.host.real(container) if container is not None else None
        except Unresolvable as exc:
            links = host_layout.Problem("links", host_layout.UNRESOLVABLE[exc.why] % exc.path)
            self.diags.append(host_layout.host_refusal(key, lexical, links))
            return None
        if home is not None and real != os.path.join(home, os.path.basename(lexical)):
            self.diags.append(host_layout.host_refusal(key, lexical, host_layout.Problem(
                "leave", "resolves to %s through a symlink, not to its own entry in %s" % (real, container))))
            return None
        kind = self.state.file_type(real)
        if channel and kind in SPECIAL and real not in self.host.allowed_channels():
            # the channel's own code first (/dev/log is a channel before it is a path below /dev)
            named = real if channels.code_of(real) != "channel_refused" else lexical
            self.diags.append(channels.refusal(named, kind or "", "host.%s = %s" % (key, lexical)))
            return None
        for form in ((lexical, real) if real != lexical else (lexical,)):
            problem = self.host.judge(form, mode, self.state, grant=grant)
            if problem:
                text = problem.text if form == lexical else "resolves to %s: %s" % (real, problem.text)
                self.diags.append(host_layout.host_refusal(key, lexical, host_layout.Problem(problem.kind, text)))
                return None
        if channel and kind in SPECIAL and self.allowed(real, kind or "", "host.%s" % key):
            return real
        problem = object_problem(real, self.state)
        if problem is not None:
            self.diags.append(host_layout.host_refusal(key, lexical, problem))
            return None
        return real


def object_problem(real: str, state: host_context.RenderState) -> Optional[host_layout.Problem]:
    """The rules on what a host-context path names (as for manifest paths): only files and folders
    (a channel only as an admin's allowed read path: judge_host), and one name per granted file (no hard links)."""
    kind = state.file_type(real)
    if kind in SPECIAL:
        return host_layout.Problem("special", "%s is %s" % (real, SPECIAL[kind or ""]))
    if kind == "linked file":
        return host_layout.Problem("hard_link",
                                   "%s is a file with more than one name (hard links): the other names are "
                                   "the same file, which realpath cannot see" % real)
    return None


def executor_dir(host: host_context.HostContext, name: str) -> str:
    return host["executor_dir"] or os.path.join(host["executors_dir"], name)


def _mode(cap: Capability) -> str:
    return "rw" if cap.writes() else "ro"


def _grant_fs(r: Render, cap: Capability) -> None:
    if cap.arg is not None:
        return _grant_arg(r, cap)
    if cap.target is None:
        raise AssertionError("an fs capability without a target or an arg: scope")
    mode = _mode(cap)
    root = glob_root(cap.target)
    real = r.judge_scope("capability %s" % diagnostics.excerpt(cap.text), cap.target, root, mode)
    if real is None:
        return None
    if r.state.kind(real) is None:
        r.skip("missing_scope", {"what": diagnostics.excerpt(cap.text), "path": root},
               capability=diagnostics.excerpt(cap.text))
        return None
    r.mounts.add(mode, real, real, "R-CAP-FS", "capability:" + cap.text + declared(root, real))
    return None


def declared(lexical: str, real: str) -> str:
    """A provenance note when a grant's declared path reaches it through a symlink (it is mounted at the
    resolved path only: the declared one does not exist inside)."""
    return "" if lexical == real else " (declared as %s)" % lexical


class _Scope(Record):
    """One 'within' scope of an argument: its glob root, that root resolved, and the glob's components."""
    root: str
    real: str
    pattern: List[str]


def _grant_arg(r: Render, cap: Capability) -> None:
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
    lexical = host_layout.norm(value if value.startswith("/") else os.path.join(scopes[0].root, value))
    real = _arg_inside(r, field, value, lexical, scopes, within)
    if real is None:
        return
    if not _normalised_value(value):
        # the kernel resolves '..' after the symlink before it, text collapses it before (as in scopes)
        r.refuse("scope_not_normalized", "arg", {"value": diagnostics.excerpt(value)}, field=field)
        return
    if r.judge_scope(field, value, lexical, mode) is None:
        return
    if r.state.kind(real) is None:
        r.skip("missing_arg_path", {"what": field, "value": diagnostics.excerpt(value), "path": lexical}, field=field)
        return
    r.mounts.add(mode, real, real, "R-ARG-1", "capability:%s (argument %s=%s)%s" % (cap.text, cap.arg, lexical,
                                                                                    declared(lexical, real)))


def _normalised_value(value: str) -> bool:
    """An argument value names its path as a scope does: no '.' or '..' component, no '//', no trailing
    '/' ('/' itself aside)."""
    if value == "/":
        return True
    parts = value[1:].split("/") if value.startswith("/") else value.split("/")
    return all(part not in ("", ".", "..") for part in parts)


def _arg_scopes(r: Render, cap: Capability, within: List[str], mode: str) -> Optional[List[_Scope]]:
    """The 'within' scopes obey every rule of a fixed scope; None once one is result.refused."""
    scopes = []
    for i, scope in enumerate(within):
        root = glob_root(scope)
        real = r.judge_scope("arguments.%s.within[%d] (used by %s)" % (cap.arg, i, cap.text), scope, root, mode)
        if real is None:
            return None
        scopes.append(_Scope(root, real, _pattern(scope, root)))
    return scopes


def _arg_value_ok(r: Render, field: str, value: Any) -> bool:
    """An argument value is a bounded path string without control characters or '~'."""
    if not isinstance(value, str) or not value or len(value) > host_layout.MAX_ARG_VALUE or value.startswith("~"):
        r.refuse("arg_value_invalid", "not_path", {"value": diagnostics.excerpt(value),
                                                   "limit": host_layout.MAX_ARG_VALUE}, field=field)
        return False
    if model.has_control(value):
        r.refuse("scope_nul", "arg", {"value": diagnostics.excerpt(value)}, field=field)
        return False
    return True


def _arg_inside(r: Render, field: str, value: str, lexical: str, scopes: List[_Scope],
                within: List[str]) -> Optional[str]:
    """R-ARG-1: the value is at or below a path its 'within' scope matches (the glob, not only its
    root), as written and resolved. Returns the resolved value, or None after recording the refusal."""
    steps = r.glob_steps
    covered = [(scope, covers(lexical, scope.root, scope.pattern, steps)) for scope in scopes]
    inside = [scope for scope, ok in covered if ok]
    if not inside:
        hard = any(ok is None for _scope, ok in covered)
        r.refuse("arg_escapes_scope", "outside_hard" if hard else "outside", {
            "path": lexical, "within": diagnostics.excerpt(", ".join(within),
                                                           300), "alternatives": globs.MAX_GLOB_ALTERNATIVES,
            "steps": globs.MAX_GLOB_STEPS}, field=field, value=diagnostics.excerpt(value))
        return None
    try:
        real = r.state.realpath(lexical)
    except Unresolvable as exc:
        r.unresolvable(field, lexical, exc)
        return None
    if not any(covers(real, scope.real, scope.pattern, steps) for scope in inside):
        r.refuse("arg_symlink_escapes", "symlink", {"path": lexical, "real": real, "inside": ", ".join(
            "%s/%s" % (x.real.rstrip("/"), "/".join(x.pattern)) if x.pattern else x.real for x in inside)},
            field=field, value=diagnostics.excerpt(value))
        return None
    return real


def _pattern(scope: str, root: str) -> List[str]:
    """The components of a scope below its glob root ([] for a scope without a glob)."""
    rest = scope[len(root):].strip("/") if root != "/" else scope.strip("/")
    return rest.split("/") if rest else []


def covers(path: str, root: str, pattern: List[str], steps: List[int]) -> Optional[bool]:
    """``path`` is at or below a path that the scope (``root`` + glob ``pattern``) matches. A pattern
    too complex to decide within manifest.glob_covers' bounds covers nothing (None: fail closed)."""
    if not under(path, root):
        return False
    if not pattern:
        return True
    rest = path[len(root):].strip("/") if root != "/" else path.strip("/")
    return globs.glob_covers(rest.split("/") if rest else [], pattern, steps)


def _mount_configured(r: Render, cap: Capability, key: str, path: str, mode: str, rule: str) -> None:
    """A path the admin configures (a resource, an index): judged, its layout uncrossed (_crossed), mounted
    when it exists."""
    real = r.judge_host(key, path, mode, configured=True)
    if real is None or _crossed(r, cap, key, path, real):
        return
    if r.state.kind(real) is not None:
        r.mounts.add(mode, real, real, rule, "capability:" + cap.text + declared(path, real))
    else:
        r.skip("missing", {"what": cap.text, "path": path})


def _crossed(r: Render, cap: Capability, key: str, path: str, real: str) -> bool:
    """The admin's layout crosses (HostContext.crossed): recorded."""
    problem = r.host.crossed(r.state, cap.text, key, path, real)
    if problem is not None:
        r.diags.append(problem)
    return problem is not None


def _grant_metnos(r: Render, cap: Capability) -> None:
    path = r.host["resources"].get(cap.target)
    if path is None:
        r.refuse("metnos_resource_unknown", "unknown", {
            "resource": diagnostics.excerpt(cap.target), "known": ", ".join(sorted(r.host["resources"]))},
            capability=cap.text)
        return
    _mount_configured(r, cap, "resources.%s" % cap.target, path, _mode(cap), "R-CAP-METNOS")


def _grant_index(r: Render, cap: Capability) -> None:
    path = r.host["indexes"].get(cap.target)
    if path is None:
        r.skip("unknown_index", {"what": cap.text, "index": diagnostics.excerpt(cap.target)}, capability=cap.text)
        return
    _mount_configured(r, cap, "indexes.%s" % cap.target, path, "ro", "R-CAP-INDEX")


def _sys_key(cap: Capability) -> str:
    return "systemd_read_paths" if cap.kind == Kind.SYSTEMD else "system_read_paths"


def _grant_sys(r: Render, cap: Capability) -> None:
    key = _sys_key(cap)
    for i, path in enumerate(r.host[key]):
        real = r.judge_host("%s[%d]" % (key, i), path, "ro", configured=True, channel=True)
        if real is not None and r.state.kind(real) is not None:
            r.mounts.add("ro", real, real, "R-CAP-SYS", "capability:" + cap.text + declared(path, real))
    _grant_bus(r, cap)


def _grant_bus(r: Render, cap: Capability) -> None:
    """The system bus, only through the filtering proxy's socket (host.system_bus_proxy: xdg-dbus-proxy
    letting only reads through), bound where the bus is expected; without it, not granted, and said."""
    proxy = r.host["system_bus_proxy"]
    if proxy is None:
        r.diags.append(diagnostics.make("system_bus_not_granted", wording="no_proxy", fill={"what": cap.text}))
        return
    try:
        real = r.host.real(proxy)
    except Unresolvable as exc:
        unresolvable = host_layout.Problem("links", host_layout.UNRESOLVABLE[exc.why] % exc.path)
        r.diags.append(host_layout.host_refusal("system_bus_proxy", proxy, unresolvable))
        return
    the_bus = bus_proxy.swapped(proxy, real, bus_proxy.bus_sockets(r.host["system_bus_sockets"], os.environ), r.state)
    if the_bus is not None:
        r.diags.append(the_bus)
        return
    for form in (proxy, real) if real != proxy else (proxy,):
        problem = r.host.judge(form, "ro", r.state)
        if problem:
            r.diags.append(host_layout.host_refusal("system_bus_proxy", proxy, problem))
            return
    kind = r.state.file_type(real)
    if kind is None:
        r.diags.append(diagnostics.make("system_bus_not_granted", wording="missing", fill={"what": cap.text},
                                        path=proxy))
    elif kind != "socket":
        r.diags.append(host_layout.host_refusal("system_bus_proxy", proxy,
                                                host_layout.Problem("special", "%s is not a socket" % real)))
    else:
        r.mounts.add("ro", real, channels.SYSTEM_BUS, "R-CAP-SYS",
                     "capability:%s (the system bus, filtered by the proxy listening on %s)" % (cap.text, real))


def _mount_entry(r: Render, key: str, entry: str, rule: str, source: str) -> Optional[bool]:
    """An entry of a reserved folder (``key``: integrations, dialog, undo) granted writable by its own
    capability: it must resolve to its own entry, and exist as a folder. None when result.refused, False
    when missing (the caller says what), True when mounted."""
    path = os.path.join(r.host[key], entry)
    real = r.judge_host(key, path, "rw", container=r.host[key], grant=key)
    if real is None:
        return None
    if r.state.kind(real) != "dir":
        return False
    r.mounts.add("rw", real, real, rule, source + declared(path, real))
    return True


def _grant_provider(r: Render, cap: Capability) -> None:
    if cap.target is None:
        raise AssertionError("a provider capability without a target")
    if _mount_entry(r, "integrations_dir", cap.target, "R-CAP-PROVIDER", "capability:" + cap.text) is False:
        r.skip("missing_integration", {"what": cap.text, "path": os.path.join(r.host["integrations_dir"], cap.target)})


def _grant_mail(r: Render, cap: Capability) -> None:
    if cap.target is None:
        raise AssertionError("a mail capability without a target")
    files = mail_files(r.host, cap.target, r.state)
    explicit = cap.target in r.host["mail_accounts"]
    store = r.host["mail_credentials_dir"]
    granted = 0
    for path in files:
        real = r.judge_host("mail_accounts.%s" % cap.target if explicit else "mail_credentials_dir", path, "ro",
                            container=None if explicit else store, grant="mail_credentials_dir")
        if real is None:
            return
        if r.state.kind(real) == "file":
            r.mounts.add("ro", real, real, "R-CAP-MAIL", "capability:" + cap.text + declared(path, real))
            granted += 1
    if not granted:
        r.skip("no_credential", {"what": cap.text, "account": diagnostics.excerpt(cap.target)})


def _grant_dialog(r: Render, cap: Capability) -> None:
    sender = r.invocation.get("sender")
    if not component(sender):
        r.skip("no_sender", {"sender": diagnostics.excerpt(sender)})
        return
    if _mount_entry(r, "dialog_dir", sender, "R-CAP-DIALOG",
                    "capability:dialog.user_input (sender %s)" % sender) is False:
        r.skip("missing_dialog", {"path": os.path.join(r.host["dialog_dir"], sender)})


def grant_undo(r: Render) -> None:
    turn = r.invocation.get("turn_id")
    if not component(turn):
        r.skip("no_turn", {"turn": diagnostics.excerpt(turn)})
        return
    if r.manifest.inverse is None:
        raise AssertionError("an undo grant without the manifest's inverse model")
    if _mount_entry(r, "undo_root", turn, "R-CAP-UNDO", "manifest inverse model %s (turn %s)"
                    % (r.manifest.inverse["model"], turn)) is False:
        r.skip("missing_turn", {"path": os.path.join(r.host["undo_root"], turn)})


# ---- what each grant may reach, from the declarations alone (for the final check, not the renderer)

class Declaring(Record):
    manifest: Manifest
    host: host_context.HostContext
    invocation: host_context.Invocation
    state: host_context.RenderState


def reals(state: host_context.RenderState, paths: Iterable[str]) -> List[str]:
    """The resolved forms of declared roots; one the kernel would not resolve declares nothing."""
    return [real for real in (state.real_or_none(p) for p in paths) if real is not None]


def _roots_fs(d: Declaring, cap: Capability) -> List[str]:
    scopes = d.manifest.arguments[cap.arg]["within"] if cap.arg is not None else [cap.target or ""]
    roots = reals(d.state, (glob_root(s) for s in scopes))
    # a write is allowed only inside the admin's writable roots (as written and resolved)
    return [root for root in roots if d.host.writable().under(root)] if cap.writes() else roots


def _roots_metnos(d: Declaring, cap: Capability) -> List[str]:
    known = d.host["resources"]
    return reals(d.state, [known[cap.target]]) if cap.target in known else []


def _roots_index(d: Declaring, cap: Capability) -> List[str]:
    known = d.host["indexes"]
    return reals(d.state, [known[cap.target]]) if cap.target in known else []


def _roots_sys(d: Declaring, cap: Capability) -> List[str]:
    proxy = d.host["system_bus_proxy"]
    return reals(d.state, d.host[_sys_key(cap)] + ([proxy] if proxy else []))


def _roots_provider(d: Declaring, cap: Capability) -> List[str]:
    return reals(d.state, [os.path.join(d.host["integrations_dir"], cap.target or "")])


def _roots_mail(d: Declaring, cap: Capability) -> List[str]:
    account = cap.target or ""
    return reals(d.state, d.host["mail_accounts"].get(account, []) + mail_files(d.host, account, d.state))


def _roots_dialog(d: Declaring, cap: Capability) -> List[str]:
    sender = d.invocation.get("sender")
    return reals(d.state, [os.path.join(d.host["dialog_dir"], sender)]) if component(sender) else []


class Granter(Record):
    """What one capability kind grants: ``grant`` adds its mounts to a render (judging every path);
    ``roots`` says, from the declarations alone, the resolved roots it may reach (the final check
    compares the rendered argv with them); ``entry``: those roots are entries of a reserved folder
    (integrations, credentials, dialog), reachable only through this grant."""
    grant: Callable[[Render, Capability], None]
    roots: Callable[[Declaring, Capability], List[str]]
    entry: bool = False


# One table, keyed by the manifest grammar's kinds. Kind.NETWORK grants no mount (only the host network,
# see Capability.needs_network); Kind.UNDO is the pinned broker's, decided before any grant (_undo_decision).
GRANTERS: Dict[str, Granter] = {
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


def component(value: Any) -> TypeGuard[str]:
    """A single path component from the invocation (sender, turn): matched whole by a grammar."""
    return isinstance(value, str) and host_layout.COMPONENT.fullmatch(value) is not None


def check_invocation(invocation: Any) -> List[diagnostics.Diagnostic]:
    """The invocation is data too: a mapping of arguments/turn_id/sender, bounded. Returns diagnostics."""
    if invocation is None:
        return []
    if not isinstance(invocation, dict):
        return [diagnostics.make("invocation_invalid", wording="not_mapping",
                                 fill={"value": diagnostics.excerpt(invocation)})]
    unknown = sorted(str(k) for k in invocation if k not in ("arguments", "turn_id", "sender"))
    if unknown:
        return [diagnostics.make("invocation_invalid", wording="unknown_key",
                                 fill={"key": diagnostics.excerpt(unknown[0])})]
    args = invocation.get("arguments")
    if args is not None and (not isinstance(args, dict) or len(args) > host_layout.MAX_INVOCATION_ARGUMENTS):
        return [diagnostics.make("invocation_invalid", wording="arguments",
                                 fill={"value": diagnostics.excerpt(args),
                                       "limit": host_layout.MAX_INVOCATION_ARGUMENTS})]
    return []


def mail_files(host: host_context.HostContext, account: str,
               state: Optional[host_context.RenderState] = None) -> List[str]:
    """The credential files of exactly one account: the explicit host mapping, or the files named
    ``<account>.<ext>`` directly in the credential store (ext: 1-16 letters/digits). A file name
    minus its last extension is its account, so 'bob' never reaches 'bob.old.json'."""
    if account in host["mail_accounts"]:
        return list(host["mail_accounts"][account])
    names = (state or host_context.RenderState()).listdir(host["mail_credentials_dir"])
    directory = host["mail_credentials_dir"]
    out = []
    for name in names:
        stem, dot, ext = name.rpartition(".")
        if dot and stem == account and host_layout.CRED_EXT.fullmatch(ext):
            out.append(os.path.join(directory, name))
    return sorted(out)
