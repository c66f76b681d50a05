#!/usr/bin/env python3
"""Every diagnostic the core can be made to say, as sorted JSON: the proof that a reorganisation of the
core changed no behaviour (issue 22: run it before and after, compare the outputs byte for byte).

    python3 scripts/dump-diagnostics.py OUT.json [WORKDIR]

What it dumps (each diagnostic as code, severity, message, remediation, rule, section, plus details):
- the registry itself: every code's static fields, by code (the registry's order is not behaviour: the
  docs sort it, reports sort diagnostics by severity);
- every code made with every message template and remediation variant, each placeholder filled with its
  own name (what a call site can make the registry say);
- every manifest of the hostile corpora (tests/corpus/hostile_manifests.py on hostile_tree.py, and
  tests/corpus/hostile_bwrap.py), rendered by the core with and without its invocation: decision,
  refusal, argv, mounts and every diagnostic;
- the unit-file corpus (tests/corpus/systemd_units.py) read by the offline systemd parser.

WORKDIR (default /tmp/metnos-dump-diagnostics) is emptied and rebuilt: the same WORKDIR gives the same
paths in the messages, so two runs compare byte for byte; what differs between any two runs is masked
(this process's pid, seen through the corpus' /proc/self links, and inode numbers). The core is imported
by its module names in the capability packages (base.diagnostics, profile.renderer, ...) or, on a tree
before issue 22, by the flat names.
"""
import importlib
import json
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import core_path  # noqa: E402

core_path.use_core()
NAME = core_path.NAME
ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}


def core(attribute, *names):
    """The first of ``names`` (module paths under the core) that imports and defines ``attribute``."""
    for name in names:
        try:
            module = importlib.import_module(NAME + "." + name)
        except ImportError:
            continue
        if hasattr(module, attribute):
            return module
    raise ImportError(names)


diagnostics = core("make", "base.diagnostics", "diagnostics")
model = core("FileSource", "profile.model", "manifest")
profile = core("render_safe", "profile.renderer", "profile")
host_context = core("HostContext", "profile.host_context", "profile.renderer", "profile")
systemd_unit = core("load_unit", "service.systemd_unit", "systemd_unit")
unit_environment = core("compose_environment", "service.unit_environment", "service.systemd_unit", "systemd_unit")
# A message template's {placeholder} (named _PLACEHOLDER on a tree before issue 44).
PLACEHOLDER = getattr(diagnostics, "PLACEHOLDER", None) or diagnostics._PLACEHOLDER


def registry():
    out = []
    for _code, entry in sorted(diagnostics.REGISTRY.items()):
        # A Code's fields (a record since issue 55; a class with __slots__ before it).
        out.append(dict((k, getattr(entry, k)) for k in getattr(entry, "_fields", None) or entry.__slots__))
    return out


class _Names(dict):
    def __missing__(self, key):
        return "<%s>" % key


def made():
    """Every code, every message template and every remediation variant, placeholders filled with their names."""
    out = []
    for code, entry in sorted(diagnostics.REGISTRY.items()):
        for wording in [None] + sorted(k for k in entry.messages if k):
            for variant in [None] + sorted(entry.variants):
                fill = _Names()
                for text in [entry.cause] + list(entry.messages.values()) + list(entry.remediation) + \
                        [t for v in entry.variants.values() for t in v]:
                    for name in PLACEHOLDER.findall(text):
                        fill[name] = "<%s>" % name
                kwargs = dict(fill)
                try:
                    made = diagnostics.make(code, variant=variant, wording=wording, **kwargs)
                    out.append([code, wording, variant, made])
                except Exception as exc:   # a combination the registry refuses: its refusal is behaviour too
                    out.append([code, wording, variant, "refused: %s: %s" % (type(exc).__name__, exc)])
    return out


def profiles(work):
    from corpus import hostile_bwrap, hostile_tree
    out = []
    _root, _host, entries = hostile_tree.materialize(os.path.join(work, "hostile"))
    for entry, path, host, inv in entries:
        for label, invocation in (("with_invocation", inv), ("without_invocation", {})):
            context = host_context.HostContext(host)
            out.append([entry.id, label, profile.render_safe(model.FileSource(path), context, invocation, ACTIVE)])
    _root, _host, entries = hostile_bwrap.materialize(os.path.join(work, "hostile_bwrap"))
    for entry, path, host, inv, bwrap in entries:
        status = dict(ACTIVE, bwrap_path=bwrap) if bwrap else ACTIVE
        context = host_context.HostContext(host)
        out.append([entry.id, "bwrap", profile.render_safe(model.FileSource(path), context, inv, status)])
    return out


def units(work):
    from corpus import systemd_units
    out = []
    for name, case in sorted(systemd_units.CORPUS.items()):
        root = os.path.join(work, "units", name)
        for path, text in list(case.get("files", {}).items()) + \
                [("/etc/systemd/system/metnos-%s.service" % name, case.get("unit", ""))]:
            full = root + path
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as handle:
                handle.write(text)
        state = systemd_unit.load_unit("metnos-%s.service" % name, root=root)
        out.append([name, state, unit_environment.compose_environment(state, root, {}, "DEFAULT")])
    return out


def _masked(value):
    if isinstance(value, dict):
        return dict((k, "<ino>" if k == "ino" else _masked(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_masked(v) for v in value]
    return value


def main(argv):
    out_path = argv[0]
    work = argv[1] if len(argv) > 1 else "/tmp/metnos-dump-diagnostics"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    dump = {"registry": registry(), "made": made(), "profiles": profiles(work), "units": units(work)}
    text = json.dumps(_masked(dump), sort_keys=True, indent=1, default=repr)
    text = re.sub(r"/proc/%d\b" % os.getpid(), "/proc/<pid>", text)
    with open(out_path, "w") as handle:
        handle.write(text + "\n")
    print("%s: %d codes, %d made, %d renders, %d units" % (out_path, len(dump["registry"]), len(dump["made"]),
                                                         len(dump["profiles"]), len(dump["units"])))


if __name__ == "__main__":
    main(sys.argv[1:])
