# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' options, spelled once: shared option specs, the audit's whole spec, and the checks
every module runs before it calls the core (unit name, timeout, a running systemd, users).

One name per idea across modules: ``timeout`` (seconds before the timed run is killed: the smoke test
of bwrap_facts, the probe of sandbox_probe and metnos_audit; the old names ``smoke_timeout`` and
``probe_timeout`` stay as aliases), ``python`` (an interpreter path on the managed host, type path),
``unit``/``scope``/``user`` (the service unit and its manager).

A check raises ``checks.OptionError`` (a ValueError) naming the option and its rule; a face turns
any option error into a failed task with code ``invalid_option`` through ``checked``. Pure Python, no
Ansible imports: the audit payload applies ``AUDIT``'s defaults on the host too.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, TypeVar, cast

from ..base.diagnostics import utf8_safe
from ..host.bwrap_trust import normalise_accepted
from ..host.facts import UserError, resolve_user
from ..profile.host_layout import ContextError
from ..service.environment import systemd_running as running
from ..service.systemd_unit import valid_unit_name
from .checks import OptionError

Spec = Dict[str, Dict[str, Any]]
T = TypeVar("T")

UNIT: Dict[str, Any] = {"type": "str", "default": "metnos.service"}
SCOPE: Dict[str, Any] = {"type": "str", "choices": ["system", "user"], "default": "system"}
USER: Dict[str, Any] = {"type": "str"}
PYTHON: Dict[str, Any] = {"type": "path"}
HOST: Dict[str, Any] = {"type": "dict", "default": {}}
# The sha256 of self-built bwraps the probe trusts besides the packaged one (bwrap_trust; issue 20).
ACCEPT_BWRAP: Dict[str, Any] = {"type": "list", "elements": "str", "default": []}
SERVICE: Spec = {"unit": UNIT, "scope": SCOPE, "user": USER}
# scope=user needs the user whose manager runs the unit (AnsibleModule's required_if).
USER_SCOPE_NEEDS_USER = [("scope", "user", ("user",))]


def timeout(default: float, *old_names: str) -> Dict[str, Any]:
    """The ``timeout`` option (seconds); ``old_names`` stay accepted as aliases."""
    out: Dict[str, Any] = {"type": "float", "default": default}
    if old_names:
        out["aliases"] = list(old_names)
    return out


def spec(*parts: Mapping[str, Mapping[str, Any]], **more: Mapping[str, Any]) -> Spec:
    """An argument_spec made of shared parts and a module's own options, each a copy that shares nothing
    mutable with its part (Ansible's validator hands an option's default object itself to the caller, who may
    change it)."""
    out: Spec = {}
    for part in parts + (more,):
        for name, option in part.items():
            out[name] = plain(dict(option))
    return out


def plain(value: Any) -> Any:
    """``value`` with every str, int, float, list, tuple and dict in it (subclasses included: the values Ansible
    hands an action carry their origin as subclasses of these) copied as the builtin type itself, same
    content; anything else (None, a type given as a callable, ...) as it is. Shared parts stay shared and a
    cycle stays a cycle, as with copy.deepcopy, which it replaces for option specs and values at a fraction of
    its cost: the audit's action copies its spec for every host, and Ansible's validator deep-copies the
    options it checks - a tagged value the slow way (copy's __reduce_ex__ path; its cost: docs/benchmarks.md)."""
    return _plain(value, {})


def _plain(value: Any, memo: Dict[int, Any]) -> Any:
    kind = type(value)
    if kind in _ATOMS:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):        # bool has no subclasses: an int subclass here is a tagged int
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if not isinstance(value, (dict, list, tuple)):
        return value
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, dict):
        mapping: Dict[Any, Any] = {}
        memo[id(value)] = mapping
        for key, item in value.items():
            mapping[_plain(key, memo)] = _plain(item, memo)
        return mapping
    if isinstance(value, list):
        items: List[Any] = []
        memo[id(value)] = items
        items.extend(_plain(item, memo) for item in value)
        return items
    return tuple(_plain(item, memo) for item in value)


_ATOMS = (str, int, float, bool, type(None))


# metnos_audit: its defaults are applied once on each path, by this spec: Ansible's validator with it in the action
# (validate_argument_spec) and in library/metnos_audit.py (AnsibleModule), with_defaults in the monitor and any
# other caller; host_audit.audit_host takes the options complete.
AUDIT: Spec = spec(
    SERVICE,
    manifests={"type": "list", "elements": "raw", "default": []},
    # metnos_sandbox_manifests entries (paths or {file|manifest}), loaded on the controller by the action
    manifest_sources={"type": "list", "elements": "raw", "default": []},
    host=HOST,
    profile_dir={"type": "path", "default": "/etc/metnos/sandbox/profiles"},
    probe={"type": "bool", "default": True},
    # where the host runs executors (metnos_sandbox_placement): a server, or a user's paired device (R-SCOPE-4)
    placement={"type": "str", "choices": ["server", "device"], "default": "server"},
    timeout=timeout(60.0, "probe_timeout"),
    smoke_user={"type": "str"},
    python=PYTHON,
    accept_bwrap_sha256=ACCEPT_BWRAP,
    # the continuous proof (monitor_state.py): take the monitor's stored result instead of running the checks
    collect_monitor={"type": "bool", "default": False},
    monitor_max_age={"type": "float", "default": 3600.0},
    # the controller's bound on one host's whole audit (seconds; metnos_audit_host_timeout): past it the host is
    # host_timeout and its payload killed. Not "timeout": that is the probe's (one name per idea)
    deadline={"type": "float", "default": 300.0},
    monitor_result={"type": "path", "default": "/var/lib/metnos-sandbox-monitor/last.json"},
    # the launcher root starts (metnos_sandbox_exec_link): it and its interpreter judged (audit/launcher_trust.py)
    exec_link={"type": "path", "default": "/usr/local/sbin/metnos-sandbox-exec"},
    # what the action returns to Ansible (the spool always keeps the whole record): the whole record, or a
    # summary that costs Ansible far less to send back and register (playbooks/audit.yml)
    result={"type": "str", "choices": ["full", "summary"], "default": "full"},
    # the options the task leaves out, from the host's variables (options/play_vars.py; playbooks/audit.yml)
    from_vars={"type": "bool", "default": False},
)


# metnos_audit_report (an action plugin on the controller): hosts (results kept by metnos_audit in this
# run) or results (host -> registered metnos_audit result).
AUDIT_REPORT: Spec = spec(
    results={"type": "dict"},
    hosts={"type": "list", "elements": "str"},
    dest={"type": "path", "default": "reports"},
    warnings_as_failures={"type": "bool", "default": False},
    waivers={"type": "path"},
    baseline={"type": "path"},
    fail_on={"type": "str", "choices": ["any", "new"], "default": "any"},
    latest={"type": "bool", "default": True},
    textfile_dir={"type": "path"},
)
AUDIT_REPORT_ONE_OF = [("results", "hosts")]

# metnos_role_vars: the roles whose variables are validated before any task touches a host.
# audit: the audit playbook's metnos_audit_* variables too (report/audit_vars.py), judged by AUDIT and AUDIT_REPORT.
ROLE_VARS: Spec = spec(
    roles={"type": "list", "elements": "str", "required": True, "choices": ["bwrap_host", "metnos_sandbox"]},
    audit={"type": "bool", "default": False},
    all_hosts={"type": "bool", "default": False},
)

# metnos_audit_merge (an action plugin on the controller): JSON reports made elsewhere (ansible-pull, AWX slices),
# named one by one, by shell patterns or in a list file, merged into one fleet report (report/merge.py).
AUDIT_MERGE: Spec = spec(
    reports={"type": "list", "elements": "path", "default": []},
    patterns={"type": "list", "elements": "str", "default": []},
    from_list={"type": "path"},
    dest={"type": "path", "required": True},
    warnings_as_failures={"type": "bool", "default": False},
)


def one_name(option_spec: Mapping[str, Mapping[str, Any]], params: Mapping[str, Any]) -> Dict[str, Any]:
    """``params`` with old names (aliases) read under the option's one name, no default applied: what follows
    Ansible's validator, which applied the defaults already (and keeps the old names beside the new)."""
    out = dict(params)
    for name, option in option_spec.items():
        for alias in option.get("aliases") or []:
            if out.get(name) is None and out.get(alias) is not None:
                out[name] = out[alias]
            out.pop(alias, None)
    return out


def with_defaults(option_spec: Mapping[str, Mapping[str, Any]], params: Mapping[str, Any]) -> Dict[str, Any]:
    """``params`` with each option's default where it is missing or None, and old names (aliases) read
    under the option's one name: the spec's defaults applied where no Ansible validator ran."""
    out = one_name(option_spec, params)
    for name, option in option_spec.items():
        if out.get(name) is None and "default" in option:
            out[name] = plain(option["default"])
    return out


# --------------------------------------------------------------------------- the checks

def unit_name(value: Any, option: str = "unit", required: bool = True) -> None:
    """A systemd unit name (no path, no '..'); an empty one only where it is not ``required``."""
    if (required or value) and not cast(Callable[[Any], bool], valid_unit_name)(value):
        raise OptionError("%s: %r is not a unit name like metnos.service" % (option, value))


def positive_seconds(value: Any, option: str = "timeout") -> None:
    if value is None or value <= 0:
        raise OptionError("%s must be a positive number of seconds, got %r" % (option, value))


def systemd_running(option: str, instead: str, root: str = "/") -> None:
    """``option``=systemd asks for systemd: it must run here (``instead`` names the other choices)."""
    if not cast(Callable[[str], bool], running)(root):
        raise OptionError("%s=systemd but systemd is not running here (use %s)" % (option, instead))


def users(*names: Optional[str]) -> None:
    """Each given user (name or uid) exists on this host (facts.UserError names the one that does not)."""
    for name in names:
        if name:
            cast(Callable[[str], object], resolve_user)(name)


def sha256_list(values: Any, option: str = "accept_bwrap_sha256") -> None:
    """Each value is a sha256 digest: exactly 64 hexadecimal digits (the probe trusts a bwrap with that content)."""
    _good, bad = normalise_accepted(values or [])
    if bad:
        raise OptionError("%s: %r is not a sha256 digest (64 hexadecimal digits, e.g. from sha256sum)"
                          % (option, bad[0]))


def option_errors() -> Tuple[Type[Exception], ...]:
    """What a refused option raises: our checks, an unknown user, a bad host-context key."""
    return (OptionError, UserError, ContextError)


def checked(fail: Callable[..., Any], face: str, check: Callable[[], T]) -> T:
    """Run ``check`` (a module's option preamble); an option error fails the task with ``invalid_option``
    through ``fail`` (AnsibleModule.fail_json): "<face>: <the option and its rule>"."""
    try:
        return check()
    except option_errors() as exc:
        fail(msg="%s: %s" % (face, exc), code="invalid_option")
        raise   # fail_json exits; a stand-in that returns must not let the task go on


def utf8_module(base: Type[T]) -> Type[T]:
    """``base`` (AnsibleModule, handed in: the core imports no Ansible) whose replies and invocation log keep
    every string valid UTF-8 (diagnostics.utf8_safe: a lone surrogate escaped as text). An argument value
    holding one (an undecodable byte) made AnsibleModule's own invocation log raise before the module ran, and
    a reply echoing it (the refusal's message, the module_args Ansible adds at -vvv) was refused by the
    controller: either way the refusal code never reached the play. Overrides AnsibleModule's
    _log_invocation and _return_formatted, the two places that read or print every argument."""

    class Utf8Module(base):  # type: ignore[valid-type,misc]
        def _log_invocation(self) -> Any:
            held: Any = self.params  # type: ignore[has-type]
            self.params = utf8_safe(held)
            try:
                return super()._log_invocation()
            finally:
                self.params = held

        def _return_formatted(self, kwargs: Any) -> Any:
            held: Any = self.params
            self.params = utf8_safe(held)
            try:
                return super()._return_formatted(utf8_safe(kwargs))
            finally:
                self.params = held

    return cast(Type[T], Utf8Module)
