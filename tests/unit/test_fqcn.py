"""FQCN everywhere: roles, playbooks, Molecule, examples, inventory, the modules' and filters' docs, the tests'
inline playbooks and the Markdown name this collection's modules, filters and roles as metnos.sandbox.*
(tests/helpers/fqcn.py finds every unqualified use). The checkout
itself proves that unqualified names do not resolve: ansible.cfg gives no library/roles path any more."""
import subprocess

import pytest

from conftest import ROOT, ansible_env, ansible_tool
from helpers import fqcn


def test_no_unqualified_name_in_the_tree():
    found = fqcn.unqualified()
    assert not found, "unqualified names:\n" + "\n".join(found)


@pytest.fixture(scope="module")
def rewriter():
    return fqcn.Rewriter(*fqcn.names())


@pytest.mark.parametrize("old, new", [
    ("- name: x\n  bwrap_facts:\n    smoke_test: false\n",
     "- name: x\n  metnos.sandbox.bwrap_facts:\n    smoke_test: false\n"),
    ("- bwrap_facts:\n", "- metnos.sandbox.bwrap_facts:\n"),
    ('msg: "{{ argv | shell_join }}"', 'msg: "{{ argv | metnos.sandbox.shell_join }}"'),
    ("x: \"{{ paths | map('metnos_manifest_source') | list }}\"",
     "x: \"{{ paths | map('metnos.sandbox.metnos_manifest_source') | list }}\""),
    ("roles:\n  - role: bwrap_host\n  - metnos_sandbox\n", "roles:\n  - role: metnos.sandbox.bwrap_host\n"
                                                          "  - metnos.sandbox.metnos_sandbox\n"),
    ("- ansible.builtin.include_role:\n    name: bwrap_host\n",
     "- ansible.builtin.include_role:\n    name: metnos.sandbox.bwrap_host\n"),
    ("  - Same as M(sandbox_probe), see O(metnos_audit_report#module:hosts) and C(bwrap_facts).",
     "  - Same as M(metnos.sandbox.sandbox_probe), see O(metnos.sandbox.metnos_audit_report#module:hosts) and "
     "M(metnos.sandbox.bwrap_facts)."),
    ("extends_documentation_fragment: [metnos_sandbox, metnos_sandbox.service]",
     "extends_documentation_fragment: [metnos.sandbox.metnos_sandbox, metnos.sandbox.metnos_sandbox.service]"),
    ('res = run_module("sandbox_profile", {})', 'res = run_module("metnos.sandbox.sandbox_profile", {})'),
    ('ansible localhost -m bwrap_facts', 'ansible localhost -m metnos.sandbox.bwrap_facts'),
])
def test_the_rewrite_qualifies_each_form(rewriter, old, new):
    assert rewriter.text(old) == new
    assert rewriter.text(new) == new            # idempotent


@pytest.mark.parametrize("kept", [
    "bwrap_facts:\n  description: The bwrap_facts result.\n",      # a RETURN entry named like a module: data
    "metnos_sandbox_probe: true\n",                                  # a role variable
    'msg: "sandbox_profile: path must be a string"',                 # a message's own prefix
    "- name: The bwrap_host role against fake platforms\n",
])
def test_data_and_messages_are_not_rewritten(rewriter, kept):
    assert rewriter.text(kept) == kept


def test_markdown_prose_and_code_blocks(rewriter):
    text = "Run `sandbox_probe` here.\n```yaml\n- role: bwrap_host\n```\n"
    assert rewriter.text(text, markdown=True) == ("Run `metnos.sandbox.sandbox_probe` here.\n```yaml\n"
                                                  "- role: metnos.sandbox.bwrap_host\n```\n")


def test_an_unqualified_module_does_not_resolve_from_the_checkout():
    """Nothing but the collection provides the modules: a short name fails, the FQCN works."""
    args = ["localhost", "-m", "bwrap_facts", "-a", "smoke_test=false"]
    short = subprocess.run([ansible_tool("ansible")] + args, capture_output=True, text=True, cwd=ROOT,
                           env=ansible_env())
    assert short.returncode != 0 and "bwrap_facts" in short.stdout + short.stderr
    args[2] = "metnos.sandbox.bwrap_facts"
    full = subprocess.run([ansible_tool("ansible")] + args, capture_output=True, text=True, cwd=ROOT,
                          env=ansible_env())
    assert full.returncode == 0, full.stdout + full.stderr
