"""Every module has complete documentation that ansible-doc renders (with the project's ansible.cfg)."""
import glob
import os
import subprocess

import pytest

from conftest import ROOT, _bin, ansible_env

MODULES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "library", "*.py")))


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc(module):
    proc = subprocess.run([_bin("ansible-doc"), "-t", "module", "--json", module], capture_output=True, text=True,
                          cwd=ROOT, env=ansible_env())
    assert proc.returncode == 0, proc.stderr
    import json
    doc = json.loads(proc.stdout)[module]
    assert doc["doc"]["short_description"] and doc["doc"]["description"]
    assert doc["examples"].strip() and doc["return"]
    assert doc["doc"].get("attributes", {}).get("check_mode", {}).get("support") == "full"
