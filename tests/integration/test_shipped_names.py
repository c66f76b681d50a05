"""The collection ships what its docs name. Every path of this project and every name of its own commands, modules,
roles, filters and playbooks that a user reads - in the modules' DOCUMENTATION and RETURN (what ansible-doc shows),
in every remediation of the codes' registries (what a report tells them to run) and in the README - is found in
the built tarball (dist/metnos-sandbox-X.Y.Z.tar.gz, a checkout's folder mapped to its place in the collection:
library/ -> plugins/modules/, ...) or among the files the metnos_sandbox role installs on a host (its defaults'
paths: the launcher metnos-sandbox-exec, the monitor's folder). The README's few clone-only paths (it says to run
them in a clone) are listed here with the reason and must exist in the checkout."""
import ast
import glob
import os
import re
import tarfile

import yaml

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from conftest import ROOT
from helpers import installed_collection

TOP = ("module_utils", "library", "action_plugins", "callback_plugins", "filter_plugins", "doc_fragments", "roles",
       "playbooks", "inventory", "examples", "molecule", "scripts", "tests", "docs", "tools", "monitoring")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./@+-]*)" % "|".join(TOP))
FQCN = re.compile(r"\bmetnos\.sandbox\.([a-z_][a-z0-9_]*)")
# the project's own command and unit names; not its name or the report schemas' ids (metnos-sandbox-audit/1)
COMMAND = re.compile(r"(?<![\w/-])(metnos-sandbox-[a-z]+(?:-[a-z]+)*)(?![\w-]*/\d)")
PROJECT = "metnos-sandbox-ops"
IN_COLLECTION = {"library": "plugins/modules", "module_utils": "plugins/module_utils",
                 "action_plugins": "plugins/action", "callback_plugins": "plugins/callback",
                 "filter_plugins": "plugins/filter", "doc_fragments": "plugins/doc_fragments"}
# The README's "two commands" and "audit your fleet" run in a clone of the repository (it says so): these are the
# clone's, not the collection's.
CLONE_ONLY = {"scripts/bootstrap.sh": "make run sets up the controller's venv in a clone",
              "inventory/example-fleet": "the fleet to copy for make audit in a clone",
              "scripts/host-packages.sh": "what make test installs, for contributors in a clone"}


def named_texts():
    """{where: text} of what a user reads."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "library", "*.py"))):
        with open(path) as handle:
            tree = ast.parse(handle.read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in ("DOCUMENTATION", "RETURN"):
                out["%s %s" % (os.path.relpath(path, ROOT), node.targets[0].id)] = node.value.value
    for code in diagnostics.REGISTRY.values():
        out["code %s remediation" % code.code] = "\n".join(code.remediation)
    with open(os.path.join(ROOT, "README.md")) as handle:
        out["README.md"] = handle.read()
    return out


def shipped():
    """(the tarball's paths, relative to the collection; what the role installs on a host: its defaults' paths)."""
    with tarfile.open(installed_collection.tarball()) as tar:
        members = set(m.name.rstrip("/") for m in tar.getmembers())
    installed = set()
    with open(os.path.join(ROOT, "roles", "metnos_sandbox", "defaults", "main.yml")) as handle:
        for value in yaml.safe_load(handle).values():
            if isinstance(value, str) and value.startswith("/"):
                installed.add(value)
    return members, installed


def missing_names(texts, members, installed):
    basenames = set(os.path.basename(m) for m in members) | set(os.path.basename(p) for p in installed)
    plugins = set()
    for member in members:
        parts = member.split("/")
        if parts[0] == "roles" and len(parts) == 2:
            plugins.add(parts[1])
        elif parts[0] == "playbooks" and member.endswith(".yml"):
            plugins.add(parts[-1][:-4])
        elif parts[:2] in (["plugins", "modules"], ["plugins", "filter"]) and len(parts) == 3:
            plugins.add(parts[2].rsplit(".", 1)[0])
    filters = set()
    for member in members:
        if member.startswith("plugins/filter/") and member.endswith(".yml"):
            filters.add(os.path.basename(member)[:-4])
    missing = []
    for where, text in texts.items():
        for match in PATH.finditer(text):
            rel = match.group(1).split("#")[0].rstrip(".,:;)/")
            top = rel.split("/", 1)[0]
            place = IN_COLLECTION.get(top, top) + rel[len(top):]
            if place in members or any(m.startswith(place + "/") for m in members):
                continue
            if where == "README.md" and rel in CLONE_ONLY and os.path.exists(os.path.join(ROOT, rel)):
                continue
            missing.append("%s: path %s" % (where, rel))
        for match in FQCN.finditer(text):
            if match.group(1) not in plugins | filters:
                missing.append("%s: %s" % (where, match.group(0)))
        for match in COMMAND.finditer(text):
            name = match.group(1)
            if name != PROJECT and not any(b == name or b.startswith(name + ".") for b in basenames):
                missing.append("%s: command %s" % (where, name))
    return missing


def test_every_name_the_docs_give_is_shipped():
    members, installed = shipped()
    texts = named_texts()
    assert len(texts) > 100 and "metnos-sandbox-exec" in texts["README.md"]
    missing = missing_names(texts, members, installed)
    assert not missing, "named but not shipped:\n" + "\n".join(missing)


def test_the_check_sees_what_is_not_shipped():
    members, installed = shipped()
    texts = {"README.md": "run scripts/merge-audit-reports.py, see examples/manifests/ and metnos-sandbox-exec; "
                          "ansible-playbook metnos.sandbox.nothing_here, then metnos-sandbox-merge",
             "code x remediation": "cp inventory/example-fleet"}
    assert missing_names(texts, members, installed) == [
        "README.md: path scripts/merge-audit-reports.py", "README.md: metnos.sandbox.nothing_here",
        "README.md: command metnos-sandbox-merge", "code x remediation: path inventory/example-fleet"]
