"""The audit's options from the host's variables (options/play_vars.py, metnos_audit from_vars): the same
variables, in the same order, as playbooks/audit.yml's Jinja expressions used to read them."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import play_vars, spec


def lookup(variables):
    return lambda name: (name in variables, variables.get(name))


def test_without_variables_only_the_host_context_is_set_to_the_roles_default():
    assert play_vars.options({}, lookup({})) == {"host": {"writable_roots": ["/var/lib/metnos"]}}


def test_each_option_from_its_first_defined_variable():
    got = play_vars.options({}, lookup({
        "metnos_sandbox_unit": "worker.service", "metnos_sandbox_unit_scope": "user",
        "metnos_sandbox_manifests": ["/m/a.yml"], "metnos_sandbox_profile_dir": "/p",
        "metnos_audit_probe": False, "metnos_audit_collect_monitor": True, "metnos_audit_monitor_max_age": 60,
        "metnos_sandbox_writable_roots": ["/srv/data"], "metnos_sandbox_host": {"runtime_dir": "/srv/rt"}}))
    assert got == {"unit": "worker.service", "scope": "user", "manifest_sources": ["/m/a.yml"], "profile_dir": "/p",
                   "probe": False, "collect_monitor": True, "monitor_max_age": 60,
                   "host": {"writable_roots": ["/srv/data"], "runtime_dir": "/srv/rt"}}


def test_the_audits_own_variables_come_before_the_roles():
    got = play_vars.options({}, lookup({"metnos_audit_unit": "a.service", "metnos_sandbox_unit": "b.service",
                                        "metnos_audit_manifests": [], "metnos_sandbox_manifests": ["/m/a.yml"]}))
    assert got["unit"] == "a.service" and got["manifest_sources"] == []


def test_a_defined_variable_wins_whatever_its_value_as_is_defined_did():
    assert play_vars.options({}, lookup({"metnos_sandbox_unit": ""}))["unit"] == ""


def test_metnos_sandbox_host_overrides_the_writable_roots_as_dict_did():
    got = play_vars.options({}, lookup({"metnos_sandbox_writable_roots": ["/a"], "metnos_sandbox_host": {
        "writable_roots": ["/b"]}}))
    assert got["host"] == {"writable_roots": ["/b"]}


def test_the_tasks_own_options_win():
    got = play_vars.options({"unit": "x.service", "host": {}, "probe": True},
                            lookup({"metnos_sandbox_unit": "y.service", "metnos_audit_probe": False,
                                    "metnos_sandbox_host": {"runtime_dir": "/r"}}))
    assert got["unit"] == "x.service" and got["host"] == {} and got["probe"] is True


def test_a_host_context_that_is_not_a_mapping_is_refused():
    with pytest.raises(play_vars.VarsError, match="metnos_sandbox_host must be a mapping"):
        play_vars.options({}, lookup({"metnos_sandbox_host": ["runtime_dir"]}))


def _types(value, out):
    out.add(type(value))
    if isinstance(value, dict):
        for key, item in value.items():
            _types(key, out)
            _types(item, out)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _types(item, out)
    return out


def test_plain_copies_ansibles_values_as_the_builtin_types():
    """Values as Ansible hands them to the action (loaded by its own DataLoader: each str, int, float, list and
    dict carries its origin as a subclass) come out as the builtin types with the same content (mutation:
    returning the value as it is leaves the subclasses)."""
    from ansible.parsing.dataloader import DataLoader
    loaded = DataLoader().load('{"unit": "a.service", "probe": true, "monitor_max_age": 60, "ratio": 1.5, '
                               '"host": {"writable_roots": ["/srv"], "": null}, "nested": [[1, "x"], {"k": "v"}]}')
    assert _types(loaded, set()) - {str, int, float, bool, type(None), dict, list}, "the loader tags nothing here"
    got = spec.plain(loaded)
    assert got == loaded
    assert _types(got, set()) <= {str, int, float, bool, type(None), dict, list}


def test_plain_keeps_shared_parts_shared_and_a_cycle_a_cycle():
    shared = ["/a"]
    loop = []
    loop.append(loop)
    got = spec.plain({"x": shared, "y": shared, "loop": loop, "t": (1, "2")})
    assert got["x"] is got["y"] and got["x"] == ["/a"] and got["x"] is not shared
    assert got["loop"][0] is got["loop"] and got["t"] == (1, "2")


def test_plain_leaves_other_values_as_they_are():
    """Whatever is not JSON-like (a set, bytes) goes to the validator as it is, which refuses it as before."""
    odd = {1, 2}
    assert spec.plain({"x": odd, "b": b"x"}) == {"x": odd, "b": b"x"} and spec.plain({"x": odd})["x"] is odd


def test_the_placement_variable_is_the_host_contexts_placement_and_wins_over_metnos_sandbox_host():
    got = play_vars.options({}, lookup({"metnos_sandbox_placement": "device",
                                        "metnos_sandbox_host": {"placement": "server", "runtime_dir": "/r"}}))
    assert got["host"] == {"writable_roots": ["/var/lib/metnos"], "placement": "device", "runtime_dir": "/r"}
