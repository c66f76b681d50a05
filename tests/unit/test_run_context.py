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


LIMITED = [
    ("ansible-playbook metnos.sandbox.site --tags x", "web-*:&prod",
     "ansible-playbook --limit 'web-*:&prod' metnos.sandbox.site --tags x"),
    ("ansible-playbook metnos.sandbox.audit --limit 'ghost'", "web-*", "ansible-playbook metnos.sandbox.audit --limit "
                                                                      "'ghost'"),
    ("ansible-playbook -l ghost x.yml", "web-*", "ansible-playbook -l ghost x.yml"),
    ("ansible-playbook x.yml; rm -rf /", "a;b", "ansible-playbook --limit 'a;b' x.yml; rm -rf /"),
    ("ansible 'ghost' -m ansible.builtin.ping", "web-*", "ansible 'ghost' -m ansible.builtin.ping"),
    ("systemctl status metnos.service", "web-*", "systemctl status metnos.service"),
    ("ansible-playbook metnos.sandbox.site", "", "ansible-playbook metnos.sandbox.site"),
]


@pytest.mark.parametrize("command,limit,expected", LIMITED)
def test_with_limit(command, limit, expected):
    assert run_context.with_limit(command, limit) == expected


def test_carry_keeps_the_runs_limit_in_the_context_and_the_commands():
    doc = {"hosts": [{"host": "web-1", "diagnostics": [{"remediation": ["ansible-playbook metnos.sandbox.site"]}]}]}
    run_context.carry(doc, ("/f",), "web-*")
    assert doc["context"] == {"inventory": ["/f"], "limit": "web-*"}
    assert doc["hosts"][0]["diagnostics"][0]["remediation"] == [
        "ansible-playbook --limit 'web-*' -i /f metnos.sandbox.site"]
    run_context.carry(doc, ("/f",), "x" * 5000)
    assert "limit" not in doc["context"]


def test_a_finding_made_on_the_host_names_it_as_the_inventory_does():
    """containment_not_proven is made on the host, which knows its hostname only (vm), not the alias the run
    used: pasted, --limit 'vm' matched no host (found by the integration test that pastes every command)."""
    diag = {"details": {"host": "vm"}, "remediation": [
        "ansible-playbook metnos.sandbox.audit --limit 'vm' -e metnos_audit_probe=true", "grep vm /etc/hosts"]}
    doc = {"hosts": [{"host": "alias-a", "hostname": "vm", "diagnostics": [diag]}]}
    run_context.carry(doc, ("/f",))
    assert diag["remediation"] == ["ansible-playbook -i /f metnos.sandbox.audit --limit 'alias-a' "
                                   "-e metnos_audit_probe=true", "grep vm /etc/hosts"]
