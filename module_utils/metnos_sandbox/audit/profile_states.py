# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state of each manifest as a finding, and what changed between two renders of a profile.

Every state a manifest can be in on a host is one finding with its own code, for the audit (host_audit.py
profile_drift's entries) and the role's summary (site_summary.profiles_section over sandbox_profile's results) alike:
``in_sync`` (profile_in_sync, info), ``drift`` (profile_drift), ``missing`` (profile_missing), ``refused``
(profile_refused, naming the refusal's own code), ``half_written`` (profile_pair_mismatch: the .args and the .json
are not one render's), ``duplicate`` (profile_name_duplicate: a second manifest of an executor name already
rendered, naming both) and ``error`` (profile_context_error); the profile folder itself, when someone other than
root can change it, is ``folder_unsafe`` (profile_folder_unsafe). Nothing is dropped.

A drift is told as bwrap would build the sandbox, not as argv words: the mounts added, removed or changed (with
their modes and sources) and the other options added or removed, read with bwrap's own option table
(host/bwrap_options.py). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..base import diagnostics
from ..host import bwrap_options
from ..profile import model

FINDING_OF_STATE = {"in_sync": "profile_in_sync", "drift": "profile_drift", "missing": "profile_missing",
                    "refused": "profile_refused", "error": "profile_context_error",
                    "half_written": "profile_pair_mismatch", "folder_unsafe": "profile_folder_unsafe",
                    "duplicate": "profile_name_duplicate"}
MAX_LABEL = 4096          # the longest manifest path kept as a refused manifest's label
MAX_CHANGES = 20          # changes of each kind kept in an entry (the rest counted)

# The mount of each bwrap option that places something at a destination: (mode, words: source then destination).
_MOUNT_MODES = {"--ro-bind": "ro", "--ro-bind-try": "ro", "--ro-bind-fd": "ro (descriptor)",
                "--bind": "rw", "--bind-try": "rw", "--bind-fd": "rw (descriptor)",
                "--dev-bind": "dev", "--dev-bind-try": "dev", "--symlink": "symlink",
                "--tmpfs": "tmpfs", "--proc": "proc", "--dev": "dev", "--dir": "dir", "--mqueue": "mqueue",
                "--remount-ro": "remount-ro", "--ro-bind-data": "ro (data)", "--bind-data": "rw (data)",
                "--file": "file"}

Mount = Dict[str, Optional[str]]      # {path, mode, source}


def _read(argv: Sequence[str]) -> Tuple[Dict[str, Mount], List[str], List[str]]:
    """(mounts by destination, other options each as one text, the command after '--') of a bwrap argv; a word
    bwrap does not know is kept as an option (never guessed at)."""
    mounts: Dict[str, Mount] = {}
    options: List[str] = []
    words = list(argv[1:]) if argv and not str(argv[0]).startswith("-") else list(argv)
    for i, opt, args in bwrap_options.options(words):
        if opt == "--":
            return mounts, options, words[i + 1:]
        mode = _MOUNT_MODES.get(opt)
        if mode is not None and args:
            dest = args[-1]
            mounts[dest] = {"path": dest, "mode": mode, "source": args[0] if len(args) > 1 else None}
        else:
            options.append(" ".join([opt] + args))
    return mounts, options, []


def describe_drift(want: Sequence[str], on_disk: Sequence[str]) -> Dict[str, Any]:
    """What the render today changes against the profile on disk: {mounts: {added, removed, changed},
    options: {added, removed}, command_changed}; added/removed mounts are {path, mode, source}, changed ones
    {path, was: {mode, source}, now: {mode, source}}."""
    now, now_opts, now_cmd = _read(want)
    was, was_opts, was_cmd = _read(on_disk)
    added = [now[p] for p in now if p not in was]
    removed = [was[p] for p in was if p not in now]
    changed = [{"path": p, "was": {"mode": was[p]["mode"], "source": was[p]["source"]},
                "now": {"mode": now[p]["mode"], "source": now[p]["source"]}}
               for p in now if p in was and now[p] != was[p]]
    return {"mounts": {"added": added[:MAX_CHANGES], "removed": removed[:MAX_CHANGES],
                       "changed": changed[:MAX_CHANGES]},
            "options": {"added": [o for o in now_opts if o not in was_opts][:MAX_CHANGES],
                        "removed": [o for o in was_opts if o not in now_opts][:MAX_CHANGES]},
            "command_changed": now_cmd != was_cmd}


def _mount_text(mount: Mapping[str, Any]) -> str:
    source = mount.get("source")
    return "%s (%s%s)" % (mount.get("path"), mount.get("mode"),
                          ", from %s" % source if source is not None and source != mount.get("path") else "")


def drift_text(change: Mapping[str, Any]) -> str:
    """One line: 'mount added /var/log (ro); mount changed /srv/notes: ro -> rw; option removed --unshare-net'."""
    parts: List[str] = []
    mounts = change.get("mounts") or {}
    parts += ["mount added %s" % _mount_text(m) for m in mounts.get("added") or []]
    parts += ["mount removed %s" % _mount_text(m) for m in mounts.get("removed") or []]
    for m in mounts.get("changed") or []:
        was, now = m["was"], m["now"]
        if was["mode"] != now["mode"]:
            parts.append("mount changed %s: %s -> %s" % (m["path"], was["mode"], now["mode"]))
        else:
            parts.append("mount changed %s: source %s -> %s" % (m["path"], was["source"], now["source"]))
    options = change.get("options") or {}
    parts += ["option added %s" % o for o in options.get("added") or []]
    parts += ["option removed %s" % o for o in options.get("removed") or []]
    if change.get("command_changed"):
        parts.append("the command changed")
    return "; ".join(parts) or "the order of the same mounts and options changed"


def findings(entries: Iterable[Mapping[str, Any]]) -> List[diagnostics.Diagnostic]:
    """One finding for each manifest's state (the entries of host_audit.profile_drift, or the role's, see
    role_entries); a state without a code is itself a defect (KeyError)."""
    out = []
    for item in entries:
        state = item.get("state")
        code = FINDING_OF_STATE[str(state)]
        if state == "drift":
            out.append(diagnostics.make(code, executor=item["executor"], path=item["path"],
                                        mounts=item.get("mounts"), options=item.get("options"),
                                        fill={"changes": drift_text(item)}))
        elif state == "half_written":       # the .json's argv digest is not its own argv's or the .args file's
            out.append(diagnostics.make(code, executor=item["executor"], path=item["path"],
                                        fill={"problem": diagnostics.excerpt(item.get("problem"), 600)[1:-1]}))
        elif state == "folder_unsafe":      # the profile folder (or one on its way) is not root's alone
            out.append(diagnostics.make(code, path=item.get("path"), quoted=item.get("quoted"), owner=item.get("owner"),
                                        mode=item.get("mode")))
        elif state in ("missing", "in_sync"):
            out.append(diagnostics.make(code, executor=item["executor"], path=item["path"]))
        elif state == "duplicate":
            out.append(diagnostics.make(code, executor=item["executor"], path=item["path"], first=item["first"],
                                        second=item["second"], subject=item["executor"],
                                        wording="withheld" if item.get("withheld") else None))
        elif state == "refused":
            label = entry_label(item)
            out.append(diagnostics.make(code, executor=label, manifest=item.get("manifest"), subject=label,
                                        refusal=item.get("refusal"), fill={"reason": refusal_reason(item)}))
        else:
            out.append(diagnostics.make(code, fill={"reason": diagnostics.excerpt(item.get("message"), 300)[1:-1]}))
    return out


def entry_label(entry: Mapping[str, Any]) -> str:
    """The text a manifest's entry is shown and keyed by: its executor name, else its file's path, else its place
    in the list of manifests (never a placeholder)."""
    return str(entry.get("executor") or entry.get("manifest") or "manifest #%s" % (entry.get("index") or "?"))


def refused_label(source: Any, name: Any) -> Dict[str, Any]:
    """What a refused manifest is known by: {executor: its readable name or None, manifest: the file's path when
    the controller read it (the refusal record's ``source``) or None}. A name is used only when it is a valid
    executor name (model.NAME, whole); a path only when it is text of at most MAX_LABEL characters."""
    body = source.get(model.REFUSAL_KEY) if isinstance(source, dict) else None
    body = body if isinstance(body, dict) else {}
    names = [n for n in (name, body.get("name")) if isinstance(n, str) and model.NAME.fullmatch(n)]
    path = body.get("source")
    return {"executor": names[0] if names else None,
            "manifest": path if isinstance(path, str) and 0 < len(path) <= MAX_LABEL and path.isprintable() else None}


def place(source: Any, index: int) -> str:
    """How a manifest is named in a finding about two of them: its file when the controller read it, else its
    place in the host's list of manifests."""
    path = refused_label(source, None)["manifest"]
    return path if path else "manifest #%d of the host's list" % index


def refusal_reason(item: Mapping[str, Any]) -> str:
    """The first error of a refused manifest (a render's result, or an entry), as its own finding said it."""
    if item.get("message"):
        return str(item["message"])
    for diag in item.get("diagnostics") or []:
        if diag.get("severity") == diagnostics.ERROR:
            return str(diag.get("message"))
    return str(item.get("refusal"))


def _item_place(item: Any, index: int) -> str:
    """A metnos_sandbox_manifests entry as a finding names it: its file (a path, or {file: ...}), else its place."""
    path = item if isinstance(item, str) else item.get("file") if isinstance(item, dict) else None
    if isinstance(path, str) and 0 < len(path) <= MAX_LABEL and path.isprintable():
        return path
    return "manifest #%d of the host's list" % index


def role_entries(loop_results: Optional[Iterable[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
    """The states of a sandbox_profile loop's results (the role renders and writes: a rendered profile is in
    sync), in the audit's entry shape."""
    out = []
    first: Dict[str, str] = {}          # executor name: the loop item that rendered it first
    for index, res in enumerate(loop_results or [], 1):
        if res.get("skipped"):
            continue
        name = res.get("executor")
        if res.get("decision") in ("wrapped", "direct"):
            files = res.get("files") or ["%s.args" % name]     # store.write: [args, json]
            where = _item_place(res.get("item"), index)
            if name in first:           # the second render wrote over the first's profile: said, never silent
                out.append({"executor": name, "state": "duplicate", "path": files[0], "first": first[name],
                            "second": where})
                continue
            first[str(name)] = where
            out.append({"executor": name, "state": "in_sync", "path": files[0]})
        elif res.get("decision") == "refused":
            out.append({"executor": name, "state": "refused", "refusal": res.get("refusal"), "index": index,
                        "diagnostics": res.get("diagnostics") or []})
        else:       # the module itself failed (an invalid host context, a profile directory it cannot write)
            out.append({"executor": name, "state": "error", "message": res.get("msg") or "sandbox_profile failed"})
    return out


def shared_names(items: Sequence[Any], sources: Sequence[Any], profile_dir: str) -> Dict[str, Any]:
    """The role's plan before it writes (the metnos_manifest_names filter): ``names``, each manifest's executor
    name as the controller loaded it (``sources``: manifest.from_source of each of ``items``; None when loading
    was refused or the name is not text), and ``shared``, each name more than one manifest has, with the places
    of its manifests and the one profile file they would write (``path``). The role writes neither (nothing for
    that name is the safe choice: which one the runtime would run is no one's decision)."""
    names: List[Optional[str]] = []
    places: Dict[str, List[str]] = {}
    for index, (item, source) in enumerate(zip(items, sources), 1):
        name = source.get("name") if isinstance(source, dict) and model.REFUSAL_KEY not in source else None
        name = name if isinstance(name, str) and name else None
        names.append(name)
        if name is not None:
            places.setdefault(name, []).append(_item_place(item, index))
    shared = dict((name, {"places": where, "path": "%s/%s.args" % (profile_dir.rstrip("/"), name)})
                  for name, where in sorted(places.items()) if len(where) > 1)
    return {"names": names, "shared": shared}


def withheld_entries(plan: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The entries (state duplicate, withheld) of the names ``plan`` (shared_names) made the role skip."""
    shared = (plan or {}).get("shared") or {}
    return [{"executor": name, "state": "duplicate", "path": shared[name]["path"], "withheld": True,
             "first": shared[name]["places"][0], "second": " and ".join(shared[name]["places"][1:])}
            for name in sorted(shared)]
