"""The audit playbook's metnos_audit_* variables judged before any host task (report/audit_vars.py, issue 54 item
1): one line per problem naming the variable, its value and the accepted values; every variable the table knows
comes from the option specs (spec.AUDIT, spec.AUDIT_REPORT); an unknown metnos_audit_* name is refused with the
nearest known one. The playbook run itself is in tests/integration/test_validate_before_acting.py."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import play_vars, spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import audit_vars

CWD = "/srv/ops"

# (variables, the one problem line expected; None: valid)
CASES = [
    ({"metnos_audit_fail_on": "newest"},
     "metnos_audit_fail_on: 'newest' is not accepted (did you mean new?); accepted: any, new"),
    ({"metnos_audit_fail_on": "new"}, None),
    ({"metnos_audit_probe": "banana"},
     "metnos_audit_probe: 'banana' is not a boolean; accepted: true or false (also yes/no, on/off, 1/0)"),
    ({"metnos_audit_probe": "False"}, None),
    ({"metnos_audit_probe": True}, None),
    ({"metnos_audit_warnings_as_failures": "maybe"},
     "metnos_audit_warnings_as_failures: 'maybe' is not a boolean; accepted: true or false (also yes/no, on/off, "
     "1/0)"),
    ({"metnos_audit_collect_monitor": "yes"}, None),
    ({"metnos_audit_host_timeout": "0"},
     "metnos_audit_host_timeout: '0' is not a number of seconds above 0; accepted: e.g. 300"),
    ({"metnos_audit_host_timeout": "soon"},
     "metnos_audit_host_timeout: 'soon' is not a number of seconds above 0; accepted: e.g. 300"),
    ({"metnos_audit_host_timeout": True},
     "metnos_audit_host_timeout: True is not a number of seconds above 0; accepted: e.g. 300"),
    ({"metnos_audit_monitor_max_age": "60"}, None),
    ({"metnos_audit_unit": "../x.service"},
     "metnos_audit_unit: '../x.service' is not a unit name; accepted: a systemd unit name like metnos.service"),
    ({"metnos_audit_unit": "worker.service"}, None),
    ({"metnos_audit_unit": ""}, None),          # no service unit: the audit runs without one (the action allows it)
    ({"metnos_audit_manifests": "/m/a.yml"},
     "metnos_audit_manifests: '/m/a.yml' is a str, not a list; accepted: a YAML list, e.g. "
     "[/etc/metnos/manifests/a.yml]"),
    ({"metnos_audit_manifests": []}, None),
    ({"metnos_audit_waivers": ""}, None),
    ({"metnos_audit_waivers": ["w.yml"]}, "metnos_audit_waivers: ['w.yml'] is a list, not a string"),
    ({"metnos_audit_dest": "a\nb"},
     "metnos_audit_dest: 'a\\nb' is not a path; accepted: a file name, absolute or relative to the working "
     "directory /srv/ops"),
    ({"metnos_audit_fail_no": "new"}, "metnos_audit_fail_no: no such variable of the audit; did you mean "
                                      "metnos_audit_fail_on? (a variable of your own: name it without the "
                                      "metnos_audit_ prefix)"),
    ({"metnos_audit_root": "/srv/metnos-audit"}, None),        # the AWX recipe's (docs/audit-report.md)
    ({"metnos_audit_report": {"gate": {}}}, None),       # the playbook's own register
]


@pytest.mark.parametrize("variables,expected", CASES, ids=[repr(case[0])[:60] for case in CASES])
def test_each_variable_is_judged_by_its_options_spec(variables, expected):
    got = audit_vars.problems(dict(variables, unrelated_variable="x", metnos_sandbox_unit_scope="ignored"), CWD)
    assert got == ([expected] if expected else []), got


def test_every_problem_in_one_pass_in_name_order():
    got = audit_vars.problems({"metnos_audit_probe": "banana", "metnos_audit_fail_on": "newest"}, CWD)
    assert [line.split(":")[0] for line in got] == ["metnos_audit_fail_on", "metnos_audit_probe"]


def test_the_table_is_the_option_specs():
    """Each metnos_audit_* variable of options/play_vars.py and of the report task is in the table with its
    option's own spec entry (one table, no second copy of types or choices)."""
    table = audit_vars.table()
    for option, names in play_vars.FIRST_DEFINED.items():
        for name in names:
            if name.startswith("metnos_audit_"):
                assert table[name] == (option, spec.AUDIT[option])
    assert table["metnos_audit_fail_on"] == ("fail_on", spec.AUDIT_REPORT["fail_on"])
    assert sorted(table) == sorted(set(table))


def test_the_playbook_sets_only_variables_the_table_knows():
    """playbooks/audit.yml's play variables are all known (a knob renamed in one place only fails here)."""
    import os

    import yaml
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "playbooks", "audit.yml")) as handle:
        (play,) = yaml.safe_load(handle)
    assert audit_vars.problems(play["vars"], CWD) == []
    assert sorted(play["vars"]) == sorted(set(audit_vars.REPORT_VARS) | set(
        name for names in play_vars.FIRST_DEFINED.values() for name in names
        if name.startswith("metnos_audit_") and name not in ("metnos_audit_unit", "metnos_audit_manifests")))


def test_paths_are_shown_absolute_from_the_working_directory():
    got = audit_vars.paths({"metnos_audit_waivers": "waivers.yml", "metnos_audit_dest": "/abs/reports",
                            "metnos_audit_baseline": "", "metnos_audit_probe": "true"}, CWD)
    assert got == {"metnos_audit_waivers": "/srv/ops/waivers.yml", "metnos_audit_dest": "/abs/reports"}
