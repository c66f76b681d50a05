"""Every module and every filter has complete documentation that ansible-doc renders by its FQCN from the
checkout (the collection through collections/; filters through their YAML doc sidecars in filter_plugins/)."""
import glob
import json
import os
import subprocess

import pytest

from conftest import ROOT, ansible_env, ansible_tool
from helpers import faces

NS = "metnos.sandbox."
MODULES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "library", "*.py")))


def ansible_doc(kind, *names):
    """ansible-doc's JSON for plugins of this checkout (one run for all of them)."""
    proc = subprocess.run([ansible_tool("ansible-doc"), "-t", kind, "--json"] + list(names), capture_output=True,
                          text=True, cwd=ROOT, env=ansible_env())
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc(module):
    doc = ansible_doc("module", NS + module)[NS + module]
    assert doc["doc"]["short_description"] and doc["doc"]["description"]
    assert doc["examples"].strip() and doc["return"]
    assert doc["doc"].get("attributes", {}).get("check_mode", {}).get("support") == "full"


FILTERS = sorted(os.path.splitext(os.path.basename(p))[0]
                 for p in glob.glob(os.path.join(ROOT, "filter_plugins", "*.yml")))


def test_every_filter_is_documented():
    """Each filter of filter_plugins/metnos_sandbox.py has a YAML doc sidecar that ansible-doc lists and renders."""
    filters = faces.load("filter_plugins/metnos_sandbox.py", "mfilters")
    assert sorted(filters.FilterModule().filters()) == FILTERS
    listed = subprocess.run([ansible_tool("ansible-doc"), "-t", "filter", "-l"], capture_output=True, text=True,
                            cwd=ROOT, env=ansible_env())
    assert listed.returncode == 0, listed.stderr
    ours = [line.split() for line in listed.stdout.splitlines() if line.split()[:1]
            and line.split()[0] in [NS + f for f in FILTERS]]
    assert len(ours) == len(FILTERS) and not [f for f in ours if f[1] == "UNDOCUMENTED"], ours


@pytest.fixture(scope="module")
def filter_docs():
    return ansible_doc("filter", *[NS + f for f in FILTERS])


@pytest.mark.parametrize("name", FILTERS)
def test_filter_doc_renders(filter_docs, name):
    doc = filter_docs[NS + name]
    assert doc["doc"]["short_description"] and doc["doc"]["description"] and doc["doc"]["options"]["_input"]
    assert doc["examples"].strip() and doc["return"]["_value"]["type"]
