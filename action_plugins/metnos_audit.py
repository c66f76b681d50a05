# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metnos_audit: the whole read-only host audit in one round trip.

Instead of packaging a module per task (AnsiballZ), this action ships one self-contained payload: the
toolkit's core compressed once per run, plus a bootstrap that imports it from memory. How it travels
and how its answer is framed: module_utils/metnos_sandbox/audit/transport.py (one message, on the command's
stdin where the connection pipelines, else as its arguments; never a file on the host). The
interpreter is found as Ansible finds it for a module: the task's ``python``, else
ansible_python_interpreter (or interpreter_python), else Ansible's own discovery for the host, kept as
the host's discovered_interpreter_python fact. Each host's result is also kept in the run's
controller-side temp dir for metnos_audit_report (see keep()). Nothing is done at import time.
Documentation: library/metnos_audit.py.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import shlex
import signal
import time

from ansible import constants as C
from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure, AnsibleFilterError
from ansible.executor.interpreter_discovery import discover_interpreter
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import (
    containment,  # a host whose facts say it is not Linux: its level, without the Linux payload
    host_audit,  # finish: a host's result as output, its verdict attached once
    monitor_state,  # AUDIT_SCHEMA: the audit record's schema
    transport,  # the message, its two carriers and the frame of the answer
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.sources import CORE
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import play_vars, spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    manifest,  # controller side: the one manifest loader (manifest_sources: what the filter loads, from_source)
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import spool

AUTO = ("auto", "auto_silent", "auto_legacy", "auto_legacy_silent")
GRACE = 10      # seconds the controller waits past a host's deadline for the host's own kill to end the command


class HostTimeout(Exception):
    """The host's audit ran past host_timeout (raised by the controller's alarm in this worker)."""


def _alarm(_signum, _frame):
    raise HostTimeout()


DISCOVERED = "discovered_interpreter_python"


def _run_tmp():
    return C.DEFAULT_LOCAL_TMP


def payload():
    """(the core's sources as one zlib-compressed JSON object, its sha256), built by the first host's worker of
    the run and read by the others from the run's private temp dir."""
    return transport.cached_payload(CORE, _run_tmp())


def keep(host, record):
    """Keep one host's result (a failure record here; the payload's answer goes in as the JSON text it came as,
    see keep_text) for the report, so that the report reads files instead of templating every host's
    registered result through Jinja (at a thousand hosts that templating alone costs a worker seconds of CPU:
    docs/benchmarks.md)."""
    keep_text(host, json.dumps(record))


def keep_text(host, text):
    """Keep one host's result given as JSON text (report/spool.py: the directory both actions ask)."""
    spool.write_spooled(spool.spool_dir(_run_tmp()), host, text)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _answer_without_result(self, python):
        """After an answer without a result, asked over the raw connection (sh only): "no_python" when the host
        answers but ``python`` does not start, "answers" when it does, None when the host does not answer
        (the connection itself fails: reported unreachable)."""
        probe = "command -v %s >/dev/null 2>&1 || exit 3; %s -c '' >/dev/null 2>&1 || exit 3; echo metnos-answers" % (
            shlex.quote(python), shlex.quote(python))
        try:
            res = self._low_level_execute_command(probe, sudoable=True)
        except Exception:   # the connection itself failed: unreachable
            return None
        if res.get("rc") == 3:
            return "no_python"
        return "answers" if res.get("rc") == 0 and "metnos-answers" in (res.get("stdout") or "") else None

    def _interpreter(self, args, task_vars, result):
        """The interpreter as Ansible finds it for a module (module_common._get_shebang): the task's option,
        else interpreter_python (ansible_python_interpreter first), else ansible_playbook_python on a local
        connection, else the host's discovered interpreter, discovered now (one raw command) when not yet."""
        explicit = args.pop("python", None)
        if explicit:
            return self._templar.template(explicit)
        configured = self._templar.template(C.config.get_config_value("INTERPRETER_PYTHON", variables=task_vars))
        if configured and configured not in AUTO:
            return configured
        if getattr(self._connection, "_remote_is_local", False) and task_vars.get("ansible_playbook_python"):
            return task_vars["ansible_playbook_python"]
        facts = task_vars.get("ansible_facts") or {}
        if facts.get(DISCOVERED):
            return facts[DISCOVERED]
        found = discover_interpreter(action=self, interpreter_name="python", discovery_mode=configured or "auto",
                                     task_vars=task_vars)
        result.setdefault("ansible_facts", {})[DISCOVERED] = found     # kept for the host's later tasks
        return found

    def _variable(self, task_vars, name):
        """(defined, value) of one of the host's variables, templated only when it is a template."""
        if name not in task_vars:
            return False, None
        return True, self._templar.template(task_vars[name])

    def _options(self, result, task_vars):
        """The validated options with their defaults, or None after a refusal put in ``result``."""
        given = {}
        if boolean(self._task.args.get("from_vars", False), strict=False):
            # The options the task leaves out, from the host's variables (options/play_vars.py): read here, they
            # cost no template compiled by every worker for every host.
            try:
                self._task.args = play_vars.options(self._task.args, lambda name: self._variable(task_vars, name),
                                                    given)
            except play_vars.VarsError as exc:
                result.update(failed=True, code="invalid_option", msg="metnos_audit: %s" % exc)
                return None
        # Types, choices, unknown options and defaults (applied here, once, on the action's path): Ansible's own
        # validator, with the module's spec. It
        # deep-copies the options; Ansible's values carry their origin (subclasses of str, list, ...), which copy
        # the slow way, so they go in as the builtin types (docs/benchmarks.md).
        self._task.args = spec.plain(self._task.args)
        try:
            _validation, validated = self.validate_argument_spec(argument_spec=spec.spec(spec.AUDIT))
        except AnsibleActionFail:
            named = self._named_problems(given)      # only on a refusal: each variable the user set, by its name
            if not named:
                raise
            result.update(failed=True, code="invalid_option", problems=named,
                          msg="metnos_audit: invalid variables, nothing was run on the host: %s" % "; ".join(named))
            return None
        args = spec.one_name(spec.AUDIT, validated)      # the validator applied the defaults: old names only
        # Manifest text is loaded by the core's one reader/decoder (the host then needs no YAML library); a
        # refused load travels as the core's refusal record, refused on the host. manifest_sources are what the
        # metnos_manifest_source filter takes (paths, {file|manifest}), loaded by the function that filter calls
        # (profile/manifest.py from_source; not the filter module itself: importing it costs the main process
        # the compile of the 14 modules only the filter needs: docs/benchmarks.md).
        sources = args.pop("manifest_sources", None) or []
        try:
            args["manifests"] = [manifest.transport(item) for item in args.get("manifests") or []] + [
                manifest.from_source(item) for item in sources]       # from_source applies transport() itself
        except manifest.SourceError as exc:      # the filter's own refusal, as when the task used the filter
            raise AnsibleFilterError("metnos_manifest_source: %s" % exc) from None
        try:
            spec.sha256_list(args.get("accept_bwrap_sha256"))
        except spec.OptionError as exc:
            result.update(failed=True, code="invalid_option", msg="metnos_audit: %s" % exc)
            return None
        return args

    def _named_problems(self, given):
        """The validator's messages for the options the host's variables gave, each under the variable's name
        (value of metnos_sandbox_unit_scope must be one of: system, user, got: sys)."""
        audit_spec = spec.spec(spec.AUDIT)
        named_spec = dict((name, audit_spec[option]) for option, name in given.items())
        values = dict((name, self._task.args[option]) for option, name in given.items())
        return list(ArgumentSpecValidator(named_spec).validate(values).error_messages)

    def _refuse(self, result, host, code, msg, **context):
        result.update(failed=True, code=code, msg=msg)
        keep(host, {"failed": True, "code": code, "msg": msg, "context": context})
        return result

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._options(result, task_vars)
        if args is None:
            return result
        host = task_vars.get("inventory_hostname") or "localhost"
        shape = args.pop("result")     # only the controller's concern: never shipped
        args.pop("from_vars")
        deadline = args.pop("deadline")
        if not 0 < deadline <= transport.MAX_DEADLINE:
            result.update(failed=True, code="invalid_option", msg="metnos_audit: deadline (metnos_audit_host_timeout) "
                          "must be more than 0 and at most %d seconds, not %r" % (transport.MAX_DEADLINE, deadline))
            return result
        foreign = self._not_linux(host, args, task_vars)
        if foreign is not None:       # the facts say another platform: no Linux check applies there
            keep(host, foreign)
            result.update(foreign if shape == "full" else transport.summary(foreign))
            result["changed"] = False
            return result
        start = time.monotonic()
        # The host's own deadline (timeout(1) kills the payload's process group) ends the command first; this
        # alarm, GRACE seconds later, is for what it cannot end (a connection that hangs, a host without timeout,
        # the question after an answer without a result).
        outer = signal.getitimer(signal.ITIMER_REAL)[0]      # the task's own timeout keyword's alarm, if any
        before = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, min(deadline + GRACE, outer) if outer else deadline + GRACE)
        try:
            return self._audit(result, host, args, task_vars, shape, deadline)
        except HostTimeout:
            return self._timed_out(result, host, deadline, time.monotonic() - start)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, before)
            if outer:      # given back, less the time spent here (at once when it has passed)
                signal.setitimer(signal.ITIMER_REAL, max(0.001, outer - (time.monotonic() - start)))

    def _audit(self, result, host, args, task_vars, shape, deadline):
        """Ship the payload, keep and return its answer (HostTimeout from the alarm, whenever it rings)."""
        frame = transport.new_frame()
        start = time.monotonic()
        try:
            python = self._interpreter(args, task_vars, result)
            blob, blob_digest = payload()
            res = self._ship(python, transport.message(frame, args, blob, payload_digest=blob_digest), deadline)
        except AnsibleConnectionFailure as exc:
            keep(host, {"unreachable": True, "msg": str(exc)})
            raise
        except transport.TransportError as exc:
            return self._refuse(result, host, "audit_transport_unsupported", "metnos_audit: %s" % exc, why=str(exc))
        found = transport.framed(res.get("stdout", ""), frame)
        if found is None and (res.get("rc") in transport.KILLED or time.monotonic() - start >= deadline):
            return self._timed_out(result, host, deadline, time.monotonic() - start)
        if found is None:
            return self._without_result(result, host, python, res)
        out, text = found
        keep_text(host, text)      # the host's own JSON text: the same record, not encoded a second time
        # The whole record, or its summary (the whole one is in the spool): Ansible sends every result back to
        # the main process and walks a registered one: a large share of a worker's CPU for the whole record.
        result.update(out if shape == "full" else transport.summary(out))
        result["changed"] = False
        return result

    def _not_linux(self, host, args, task_vars):
        """The record of a host whose facts (ansible_system, ansible_os_family; gathered, or set in the
        inventory) name another platform than Linux: its containment level from those facts (a Windows host's
        version from ansible_distribution_version), nothing shipped or run there. None for Linux, or without
        facts (the payload then checks the kernel's own name)."""
        facts = task_vars.get("ansible_facts") or {}
        names = ("system", "os_family", "distribution_version")
        system, family, version = (facts.get(name, task_vars.get("ansible_" + name)) for name in names)
        if system is None and family is None:
            return None
        if containment.platform_of(system, family) == "linux":
            return None
        return host_audit.finish(containment.record(host, args["placement"], system, family, version,
                                                    args.get("manifests") or [], monitor_state.AUDIT_SCHEMA))

    def _timed_out(self, result, host, deadline, elapsed):
        """The host's audit ran past its deadline: host_timeout, kept for the report (never asked again: a host
        that hangs once would hang the question too)."""
        return self._refuse(result, host, "host_timeout", "metnos_audit: %s: no audit result within %g s "
                            "(metnos_audit_host_timeout); the payload on the host was killed" % (host, deadline),
                            timeout="%g" % deadline, elapsed="%.1f" % elapsed)

    def _without_result(self, result, host, python, res):
        """No framed result: the host has no such interpreter (host_no_python), it answers but the payload gave
        no result (audit_result_unframed), or it does not answer (a failure the report calls unreachable)."""
        answer = self._answer_without_result(python)
        detail = transport.tail([res.get("stderr"), res.get("stdout")])
        if answer == "no_python":
            missing = ("metnos_audit: the host answers, but the interpreter the audit runs (%s: "
                       "ansible_python_interpreter, else Ansible's discovery) does not start there; install Python "
                       "with the raw module, e.g. ansible HOST -m ansible.builtin.raw -a 'apt-get install -y python3', "
                       "or set ansible_python_interpreter" % python)
            result.update(failed=True, code="host_no_python", msg=missing)
            keep(host, {"failed": True, "code": "host_no_python", "msg": missing})
            return result
        if answer == "answers":
            return self._refuse(result, host, "audit_result_unframed", "metnos_audit: no framed audit result from the "
                                "host (rc=%s): %s" % (res.get("rc"), detail), rc=res.get("rc"), detail=detail,
                                python=python)
        result.update(failed=True, rc=res.get("rc"), msg="metnos_audit: the host did not answer (rc=%s): %s" % (
            res.get("rc"), detail))
        keep(host, {"failed": True, "msg": result["msg"]})
        return result

    def _ship(self, python, data, deadline):
        """Run the payload on the host in one command: the message on its stdin where the connection pipelines
        (local, ssh), as its arguments otherwise (podman, docker); under timeout(1) with ``deadline`` in both.
        transport.TransportError when neither can."""
        if getattr(self._connection, "has_pipelining", False):
            # The local connection runs the command with /bin/sh already: without executable=False Ansible wraps
            # it in a second "/bin/sh -c" (one more shell started per host). Over ssh the remote
            # login shell runs it, and that wrapper keeps it under /bin/sh whatever that shell is.
            local = getattr(self._connection, "transport", None) == "local"
            return self._low_level_execute_command(transport.stdin_command(python, deadline), in_data=data,
                                                   sudoable=True,
                                                   executable=False if local else None)
        argv = transport.argv_command(python, data, become=bool(getattr(self._play_context, "become", False)),
                                      deadline=deadline)
        return self._low_level_execute_command(argv, sudoable=True, executable=False)
