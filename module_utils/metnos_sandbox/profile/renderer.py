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

import os
from typing import (
    Any,
    Dict,
    List,
    Optional,
)

from ..base import diagnostics, envflags, paths
from ..base.records import Record
from . import (
    bus_proxy,
    channels,
    granters,
    host_context,
    host_layout,
    invariants,
    loopback,
    model,
    mountmodel,
    result,
    undo,
)
from .descriptors import FD_BASE, MAX_DESCRIPTORS, Descriptor, identity
from .manifest import coerce
from .model import Kind, Manifest, ManifestError


# ------------------------------------------------------------------ render
def render(manifest: Manifest, host: host_context.HostContext, invocation: Optional[host_context.Invocation] = None,
           status: Optional[envflags.Status] = None, command: Optional[List[str]] = None,
           bwrap_path: Optional[str] = None) -> result.Profile:
    """Render one invocation of a validated Manifest. Never raises for bad input: refusals come
    back as diagnostics. ``status`` is the runtime's status() on the host or in the service (None: assume active).
    Faces call ``render_safe`` (which also loads and validates any manifest source)."""
    return _render(manifest, host, invocation, status, command, bwrap_path, host_context.RenderState())


def _render(manifest: Manifest, host: host_context.HostContext, invocation: Optional[host_context.Invocation],
            status: Optional[envflags.Status], command: Optional[List[str]], bwrap_path: Optional[str],
            state: host_context.RenderState) -> result.Profile:
    problems = granters.check_invocation(invocation)
    if problems:
        return result.refused(manifest.name, problems)
    invocation = invocation or {}
    status = status or {"bwrap_available": True, "bwrap_path": bwrap_path or "bwrap",
                        "disabled_via_env": False, "active": True}
    name = manifest.name
    own_dir = granters.executor_dir(host, name)
    entrypoint = manifest.entrypoint or "main.py"
    if name == host_layout.UNDO_NAME or any(c.kind == Kind.UNDO for c in manifest.capabilities):
        return undo.undo_decision(manifest, host, own_dir, command or [host["python_executable"],
                                                                       os.path.join(own_dir, entrypoint)])

    host.use_bwrap(status.get("bwrap_path") or bwrap_path or "bwrap")
    r = granters.Render(manifest, host, invocation, own_dir, state)
    own_real = _grant_all(r)
    diags = r.diags
    diags.extend(_network_typos(manifest))
    if any(d["severity"] == diagnostics.ERROR for d in diags):
        return result.refused(name, diags)           # scope checks come before the bwrap check (spec §5.4)
    if not status.get("active"):
        diags.append(diagnostics.make("executor_os_sandbox_unavailable", fill={"executor": name},
                                      wording="profile_no_bwrap" if not status.get("bwrap_available")
                                      else "profile_disabled"))
        return result.refused(name, diags)

    flags, network = _namespaces(manifest, host)
    for cap in manifest.capabilities:
        if cap.kind == Kind.SYSTEM and cap.target == model.NETWORK_INTERFACES:
            diags.extend(loopback.findings("capability:" + cap.text, host.loopback_listeners()))   # host network
            break
    ordered = r.mounts.ordered()
    descriptors = _stabilise(r, ordered)
    if any(d["severity"] == diagnostics.ERROR for d in diags):
        return result.refused(name, diags)
    if command is None:          # inside the sandbox, every grant is at its resolved path
        command = [_inside(host, host["python_executable"]), os.path.join(own_real or own_dir, entrypoint)]
    bus = r.mounts.entries.get(channels.SYSTEM_BUS)
    uid = bus_proxy.mapped_uid(bus["src"], state.stats) if bus is not None else None
    if uid is not None:
        flags.append({"flag": "--uid", "value": str(uid), "rule": "R-CAP-SYS",
                      "source": "the filtering proxy's user (it owns the bound socket): the bus's EXTERNAL check"})
    argv = [status.get("bwrap_path") or bwrap_path or "bwrap"] + [f["flag"] for f in flags]
    if uid is not None:
        argv.append(str(uid))                        # the value of --uid, the last flag
    argv += _mount_argv(ordered)
    argv.extend(["--chdir", own_real or "/", "--"])
    argv.extend(command)
    violations = invariants.check_invariants(argv, manifest, host, invocation, own_dir, descriptors, state)
    if violations:
        return result.refused(name, diags + [diagnostics.make("profile_invariant_violated", wording="withheld", fill={
            "executor": name, "violated": "; ".join(violations[:5])}, violations=violations[:20])])
    placement = _device(host, diags) if host["placement"] == "device" else None
    done: result.Rendered = {
        "executor": name, "decision": "wrapped", "refusal": None, "argv": argv,
        "command_line": result.shell_join(argv), "mounts": ordered, "namespaces": flags,
        "network": network, "diagnostics": result.bounded(diags), "descriptors": descriptors,
        "manifest": {"name": name, "origin": manifest.origin, "revision": manifest.revision,
                     "digest": manifest.digest},
    }
    if r.channels:
        done["channels"] = r.channels
    if placement is not None:
        done["placement"] = placement
    return done


def _device(host: host_context.HostContext, diags: List[diagnostics.Diagnostic]) -> Dict[str, Any]:
    """A device's profile (R-SCOPE-4): the flags it adds and each declared downgrade, also a warning (never
    silent)."""
    for entry in host["device_downgrades"]:
        diags.append(diagnostics.make("device_profile_downgraded", fill={"flag": entry["flag"],
                                                                         "reason": entry["reason"]},
                                      flag=entry["flag"], reason=entry["reason"]))
    return {"placement": "device", "rule": host_layout.DEVICE_RULE, "flags": host_layout.device_flags(host.data),
            "downgrades": list(host["device_downgrades"])}


def _inside(host: host_context.HostContext, path: str) -> str:
    """Where a configured file is inside the sandbox (HostContext.inside)."""
    return host.inside(path)


def _stabilise(r: granters.Render, ordered: List[result.MountEntry]) -> List[Descriptor]:
    """Bind by descriptor every source that someone other than root could move (refused when this bwrap
    cannot), then prove with the mount model that every destination means inside what was judged."""
    descriptors: List[Descriptor] = []
    can: Optional[bool] = None
    stats = r.state.stats
    for entry in ordered:
        src = entry["src"]
        if entry["kind"] not in mountmodel.BINDS or src is None:
            continue
        provenance = entry["provenance"]
        base = provenance[0]["source"].startswith("base:") if len(provenance) == 1 else all(
            p["source"].startswith("base:") for p in provenance)
        folder = r.host.stable(src, r.state) if base else mountmodel.unstable_folder(src, stats)
        if folder is None:
            continue
        can = r.host.fd_binds() if can is None else can
        info = stats.lstat(src)
        if not can or info is None:
            r.refuse("bind_source_unstable", "gone" if info is None else "no_fd" if can is False else "unknown", {
                "path": src, "folder": folder, "bwrap": r.host.bwrap_path() or "bwrap"})
            continue
        if len(descriptors) >= MAX_DESCRIPTORS:
            r.refuse("bind_descriptors_exhausted", "many", {"limit": MAX_DESCRIPTORS})
            break
        entry["fd"] = FD_BASE + len(descriptors)
        descriptors.append(identity(src, entry["fd"], info, entry["dest"]))
    for finding in model_findings(ordered, stats):
        r.refuse("mount_dest_differs" if finding.kind == "differs" else "mount_dest_unstable", "model",
                 {"dest": finding.dest, "problem": finding.text})
    return descriptors


def model_findings(ordered: List[result.MountEntry], stats: mountmodel.Stats) -> List[mountmodel.Finding]:
    """The renderer's own run of the mount model over the mounts it is about to emit (the final check runs
    it again on the argv it reads back)."""
    return mountmodel.violations([_new(mountmodel.Op, (e["kind"], e["src"], e["dest"], "fd" in e)) for e in ordered],
                                 stats)


_new = tuple.__new__          # a record made without its Python-level __new__ (one per mount, every render)


def _grant_all(r: granters.Render) -> Optional[str]:
    """The base mounts, the executor's own folder, every capability's grant through its kind's
    granter, and the undo turn. Returns the own folder resolved (None when not mounted)."""
    r.diags.extend(r.host.base_refusals(r.state))
    r.mounts.add_all(r.host.base(r.state))
    own_real = _own_folder(r)
    for cap in r.manifest.capabilities:
        granter = granters.GRANTERS.get(cap.kind)
        if granter is not None:
            granter.grant(r, cap)
    if r.manifest.inverse is not None:
        granters.grant_undo(r)
    _search_channels(r)
    for conflict in r.mounts.conflicts:
        r.refuse("profile_invariant_violated", "two_sources", dict(zip(("target", "first", "second", "by"),
                                                                       conflict)))
    return own_real


# Base trees not searched for command channels: the system paths (the host's own, mounted whole), the
# interpreter's installation (its size is not the admin's data; docs/profile-invariants.md). The python package
# roots, the python prefix and the runtime are searched like a grant (issue 50: a daemon's socket there is a channel).
_UNSEARCHED = ("base:/", "base:python_installation")


def _search_channels(r: granters.Render) -> None:
    """Every granted folder searched as bwrap binds it (channels.walk, one budget per render): a socket, FIFO or
    device node below it is refused (its channel's code) unless the admin allows that exact path; a folder
    that cannot be searched is refused (channel_walk_bound). The base trees searched (package roots, prefix,
    runtime: a mount whose one reason is a base:) share their own, larger budget (channels.MAX_BASE_WALK_ENTRIES)."""
    searched: List[str] = []
    base_budget = [channels.MAX_BASE_WALK_ENTRIES]
    for dest in sorted(r.mounts.entries):
        entry = r.mounts.entries[dest]
        src = entry["src"]
        if entry["kind"] not in mountmodel.BINDS or src is None or src != dest or r.state.kind(src) != "dir":
            continue
        if any(p["source"].startswith("base:/") for p in entry["provenance"]) or all(
                p["source"].startswith(_UNSEARCHED) for p in entry["provenance"]):
            continue
        if any(paths.under(src, done) for done in searched):
            continue
        searched.append(src)
        what = entry["provenance"][0]["source"]
        odd = r.host.odd_filesystems(src)
        for point, fstype in odd:
            if not r.allowed(point, fstype or "unknown", what):
                r.diags.append(channels.filesystem_refusal(point, fstype, what, src))
        if any(paths.under(src, point) for point, _type in odd):
            continue                     # the folder itself is on one: nothing in it is a plain tree
        if len(entry["provenance"]) == 1 and what.startswith("base:"):     # a base tree alone (merged: a grant's)
            budget, limit = base_budget, channels.MAX_BASE_WALK_ENTRIES
        else:
            budget, limit = r.walk_budget, channels.MAX_WALK_ENTRIES
        walked = channels.walk(src, budget, frozenset(point for point, _type in odd))
        for found in walked.found:
            if not r.allowed(found.path, found.kind, what):
                r.diags.append(channels.refusal(found.path, found.kind, what, folder=src))
        if walked.stop is not None:
            r.diags.append(channels.bound_refusal(what, walked, limit))


class _Namespaces(Record):
    flags: List[Dict[str, str]]       # public: the ``namespaces`` of a result
    network: Dict[str, Any]           # public: the ``network`` decision of a result


def _network_typos(manifest: Manifest) -> List[diagnostics.Diagnostic]:
    """A warning for each net:/network: word a typo away from a known one (model.NETWORK_WORDS): the spec leaves
    the word open (net:*), so it is granted as written (the host network, R-NET-1), and said."""
    found = []
    for cap in manifest.capabilities:
        meant = cap.network_word_meant()
        if meant is not None:
            head = cap.text.partition(":")[0]
            found.append(diagnostics.make("network_word_unknown", field="capabilities", fill={
                "executor": manifest.name, "capability": diagnostics.excerpt(cap.text),
                "meant": "%s:%s" % (head, meant), "known": ", ".join(model.NETWORK_WORDS)}))
    return found


def _namespaces(manifest: Manifest, host: host_context.HostContext) -> _Namespaces:
    """The namespace flags (R-BASE-6) and the network decision: the host network only when a
    capability needs it (R-NET-1), else --unshare-net (R-BASE-7); on a device, its own PID namespace and
    session (R-SCOPE-4, host_layout.device_flags)."""
    net_because = [cap.text for cap in manifest.capabilities if cap.needs_network()]
    flags = [{"flag": f, "rule": "R-BASE-6", "source": "base"} for f in host_layout.BASE_FLAGS]
    network: Dict[str, Any]
    if net_because:
        network = {"host": True, "rule": "R-NET-1", "because": net_because}
    else:
        network = {"host": False, "rule": "R-BASE-7", "because": []}
        flags.append({"flag": "--unshare-net", "rule": "R-BASE-7", "source": "base (no network capability)"})
    flags.extend({"flag": f, "rule": host_layout.DEVICE_RULE, "source": "placement device"} for f
                 in host_layout.device_flags(host.data))
    flags.append({"flag": "--die-with-parent", "rule": "R-BASE-6", "source": "base"})
    return _Namespaces(flags, network)


def _own_folder(r: granters.Render) -> Optional[str]:
    """R-BASE-4: the executor's own folder, read-only, resolved; it must stay in the executors folder."""
    own = r.own
    key = "executor_dir" if r.host["executor_dir"] else "executors_dir"
    if not os.path.isdir(own):
        r.skip("missing_own", {"path": own})
        return None
    try:
        real = r.state.realpath(own)
        home = r.host.real(r.host["executors_dir"])
    except paths.Unresolvable as exc:
        r.diags.append(host_layout.host_refusal(key, own, host_layout.Problem("links", host_layout.UNRESOLVABLE[exc.why]
                                                                              % exc.path)))
        return None
    if not r.host["executor_dir"] and os.path.join(home, os.path.basename(own)) != real:
        leave = host_layout.Problem("leave", "the executor's folder resolves to %s through a symlink, not to its own "
                                    "folder in %s" % (real, r.host["executors_dir"]))
        r.diags.append(host_layout.host_refusal(key, own, leave))
        return None
    for form in (own, real) if real != own else (own,):       # the same path is judged once
        problem = r.host.judge(form, "ro", r.state, own=form)
        if problem:
            r.diags.append(host_layout.host_refusal(key, own, problem))
            return None
    r.mounts.add("ro", real, real, "R-BASE-4", "base:executor_dir" + granters.declared(own, real))
    return real


_SOURCED = {"ro": "--ro-bind", "rw": "--bind", "symlink": "--symlink"}


def _mount_argv(ordered: List[result.MountEntry]) -> List[str]:
    """The mount options of the argv, in order."""
    argv: List[str] = []
    for entry in ordered:
        kind, src = entry["kind"], entry["src"]
        if "fd" in entry:                               # a source that can move: bound by descriptor
            argv += ["--ro-bind-fd" if kind == "ro" else "--bind-fd", str(entry["fd"]), entry["dest"]]
        elif src is not None and kind in _SOURCED:      # binds and symlinks name their source
            argv += [_SOURCED[kind], src, entry["dest"]]
        else:
            argv += ["--" + kind, entry["dest"]]        # proc, dev, tmpfs
    return argv


# ------------------------------------------------------------------ the one entry every face calls

def render_safe(manifest_source: Any, host: host_context.HostContext,
                invocation: Optional[host_context.Invocation] = None,
                status: Optional[envflags.Status] = None, command: Optional[List[str]] = None,
                preview: bool = False) -> result.Profile:
    """coerce -> validate -> render -> final check, for any manifest source (a Manifest, a
    manifest.FileSource, bytes or text, or decoded data). Refusals are results, never exceptions.

    ``preview``: the caller renders off the target host (a filter on the controller): the result
    says so (``preview: true`` and a profile_preview diagnostic) and is never a final profile."""
    prof: result.Profile
    try:
        manifest = coerce(manifest_source)
    except ManifestError as exc:
        name = manifest_source.get("name") if isinstance(manifest_source, dict) else None
        prof = result.refused(name if isinstance(name, str) and model.NAME.fullmatch(name) else None, exc.diagnostics)
    else:
        prof = render(manifest, host, invocation, status, command)
    if preview:
        prof["preview"] = True
        prof["diagnostics"] = prof["diagnostics"] + [diagnostics.make("profile_preview", wording="preview")]
    return prof
