"""run_context.with_inventory / carry: the commands a report's findings give, with the run's inventory sources
(cases as data). The pasted, real run is tests/integration/test_fix_commands_inventory.py."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import run_context

FLEET = ["/home/me/my fleet"]
CASES = [
    ("ansible 'ghost' -m ansible.builtin.ping", FLEET,
     "ansible -i '/home/me/my fleet' 'ghost' -m ansible.builtin.ping"),
    ("ansible-playbook metnos.sandbox.audit --limit 'ghost'", ["/a", "h1,h2,"],
     "ansible-playbook -i /a -i h1,h2, metnos.sandbox.audit --limit 'ghost'"),
    ("ansible-playbook -i <inventory> metnos.sandbox.site --limit <host>", FLEET,
     "ansible-playbook -i '/home/me/my fleet' metnos.sandbox.site --limit <host>"),
    ("ansible-playbook -i other.yml metnos.sandbox.audit", FLEET, "ansible-playbook -i other.yml metnos.sandbox.audit"),
    ("ansible-playbook --inventory=x metnos.sandbox.audit", FLEET,
     "ansible-playbook --inventory=x metnos.sandbox.audit"),
    ("systemctl status metnos.service", FLEET, "systemctl status metnos.service"),
    ("ansible-galaxy collection list", FLEET, "ansible-galaxy collection list"),
    ("ansible 'ghost' -m ansible.builtin.ping", [], "ansible 'ghost' -m ansible.builtin.ping"),
    ("ansible-playbook x.yml; rm -rf /", ["/a;b"], "ansible-playbook -i '/a;b' x.yml; rm -rf /"),
]


@pytest.mark.parametrize("command,sources,expected", CASES)
def test_with_inventory(command, sources, expected):
    assert run_context.with_inventory(command, sources) == expected


def test_carry_reaches_every_finding_and_keeps_the_sources():
    doc = {"hosts": [{"host": "ghost", "diagnostics": [{"remediation": ["ansible 'ghost' -m ansible.builtin.ping"]}],
                      "waived": [{"remediation": {"hint": "h",
                                                  "commands": ["ansible-playbook metnos.sandbox.audit"]}}]}],
           "findings": [{"remediation": ["ansible-playbook metnos.sandbox.audit"]}]}
    run_context.carry(doc, ("/f",))
    assert doc["context"] == {"inventory": ["/f"]}
    assert doc["hosts"][0]["diagnostics"][0]["remediation"] == ["ansible -i /f 'ghost' -m ansible.builtin.ping"]
    assert doc["hosts"][0]["waived"][0]["remediation"]["commands"] == ["ansible-playbook -i /f metnos.sandbox.audit"]
    assert doc["findings"][0]["remediation"] == ["ansible-playbook -i /f metnos.sandbox.audit"]


def test_carry_of_nothing_usable_changes_no_command():
    doc = {"hosts": [{"host": "h", "diagnostics": [{"remediation": ["ansible 'h' -m ansible.builtin.ping"]}]}]}
    run_context.carry(doc, "not a list")
    assert doc["context"] == {"inventory": []}
    assert doc["hosts"][0]["diagnostics"][0]["remediation"] == ["ansible 'h' -m ansible.builtin.ping"]
