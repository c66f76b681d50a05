# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metnos.sandbox.audit_interrupt: on Ctrl-C, the audit's reports of the hosts that finished (issue 52).

How ansible-core (2.15 to 2.21) ends on SIGINT: the main process's handler (TaskQueueManager._signal_handler)
forwards the signal to every worker, each of which kills its own process group (it called setsid) and leaves
with os._exit; the handler sets SIGINT back to its default and raises KeyboardInterrupt, the strategy unwinds,
the CLI prints "User interrupted execution" and exits with status 99; the run's temp dir (with the spool of the
hosts' results, report/spool.py) is removed by an atexit function. No task after the interrupted one runs, so
the play's report task never does. This callback, in the main process:

- wraps Ansible's SIGINT handler when a play with a metnos_audit_report task starts: Ansible's handler runs as
  before, and SIGINT is ignored from then on until the reports are written (Ansible's default would kill the
  process in the middle of the write): a second Ctrl-C loses nothing;
- at exit (an atexit function registered after Ansible's temp dir one, so it runs first, with the spool still
  there), when the run was interrupted and the report task had not returned: every host of the play with no
  result kept gets one, ``host_interrupted`` (its own code, naming the host), and the play's own report task
  runs here, its arguments templated for the host it runs for (run_once: the first), exactly as the play
  would have run it (unique names, ``latest`` swapped in one rename, nothing partial on a failed write). The
  exit status stays 99: the gate fails.

Enabled like any callback that is not the stdout one: ``callbacks_enabled = metnos.sandbox.audit_interrupt``
in ansible.cfg (this repository's has it) or ANSIBLE_CALLBACKS_ENABLED. Controller only.
"""
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
name: audit_interrupt
type: aggregate
short_description: On Ctrl-C, write the audit's reports of the hosts that finished
version_added: "1.0.0"
description:
  - When ansible-playbook running the audit play (metnos.sandbox.audit) is interrupted (Ctrl-C, SIGINT), the
    play's report task still runs, at exit, on the results of the hosts that finished; every other host of the
    play is the finding host_interrupted. The exit status stays 99 (the gate fails).
  - A second Ctrl-C while the reports are written is ignored.
  - Plays without a metnos_audit_report task are not touched.
requirements:
  - enabled in ansible.cfg (callbacks_enabled = metnos.sandbox.audit_interrupt) or with ANSIBLE_CALLBACKS_ENABLED
"""

import atexit
import functools
import json
import signal

from ansible import constants as C
from ansible.playbook.play_context import PlayContext
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import action_loader, connection_loader
from ansible.template import Templar

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import spool

REPORT_ACTION = "metnos_audit_report"
INTERRUPTED = {"failed": True, "code": "host_interrupted"}


def is_report(task):
    """True for a metnos_audit_report task (by its short or full name)."""
    action = getattr(task, "action", None) or ""
    return isinstance(action, str) and action.rpartition(".")[2] == REPORT_ACTION


def tasks_of(blocks):
    """The tasks of the blocks as written, nested blocks included (never play.compile(): no copies, no roles)."""
    for block in blocks:
        for item in (block.block or []) + (block.rescue or []) + (block.always or []):
            if hasattr(item, "block"):
                yield from tasks_of([item])
            else:
                yield item


def report_task(play):
    """The play's first metnos_audit_report task (pre_tasks, tasks, post_tasks), or None."""
    return next((task for task in tasks_of(play.pre_tasks + play.tasks + play.post_tasks) if is_report(task)), None)


class CallbackModule(CallbackBase):
    """On Ctrl-C, the reports of the hosts that finished (module docstring)."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "metnos.sandbox.audit_interrupt"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.play = None
        self.task = None
        self.reported = False
        self.interrupted = False
        self.armed = False

    def v2_playbook_on_play_start(self, play):
        self.play, self.task, self.reported = play, report_task(play), False
        if self.task is None or self.armed:
            return
        forward = signal.getsignal(signal.SIGINT)
        if callable(forward):       # Ansible's own handler (TaskQueueManager's): wrapped, never replaced
            signal.signal(signal.SIGINT, functools.partial(self.interrupt, forward))
            atexit.register(self.report_interrupted)
            self.armed = True

    def interrupt(self, forward, signum, frame):
        """The first SIGINT: Ansible's handler (the workers told, KeyboardInterrupt raised), then ignored."""
        self.interrupted = True
        try:
            forward(signum, frame)
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    def finished(self, result, ignore_errors=False):
        """A task's result (v2_runner_on_failed passes ignore_errors too): the report task's marks the reports
        written."""
        if not self.reported and is_report(getattr(result, "_task", None)):
            self.reported = True        # the play wrote its reports: nothing is written twice

    v2_runner_on_ok = finished
    v2_runner_on_failed = finished

    def report_interrupted(self):
        """At exit: the reports of an interrupted run (module docstring); SIGINT back to its default after."""
        if not self.interrupted or self.reported or self.task is None:
            return
        try:
            self.write_reports()
        except Exception as exc:  # pylint: disable=broad-except  # said; the run still ends interrupted (99)
            self._display.error("metnos.sandbox.audit_interrupt: the reports of the interrupted run were not "
                                "written: %s" % exc)
        finally:
            signal.signal(signal.SIGINT, signal.SIG_DFL)

    def write_reports(self):
        play, task = self.play, self.task
        variables = play.get_variable_manager()
        hosts = variables._inventory.get_hosts(play.hosts, order=play.order)
        names = [host.name for host in hosts]
        if not names:
            return
        kept = spool.spool_dir(C.DEFAULT_LOCAL_TMP)
        finished = spool.spooled(kept, names)
        interrupted = [name for name in names if name not in set(finished)]
        self._display.warning("metnos.sandbox.audit_interrupt: interrupted; writing the reports of the %d host(s) "
                              "that finished, %d host_interrupted (Ctrl-C is ignored until they are written)"
                              % (len(finished), len(interrupted)))
        for name in interrupted:
            spool.write_spooled(kept, name, json.dumps(INTERRUPTED))
        task_vars = variables.get_vars(play=play, host=hosts[0], task=task, _hosts=names, _hosts_all=names)
        templar = Templar(loader=variables._loader, variables=task_vars)
        run_task = task.copy()
        run_task.post_validate(templar=templar._engine)
        play_context = PlayContext(play=play)
        connection = connection_loader.get("local", play_context, "/dev/null")
        action = action_loader.get(run_task.action, task=run_task, connection=connection, play_context=play_context,
                                   loader=variables._loader, templar=templar, shared_loader_obj=None)
        result = action.run(task_vars=task_vars)
        for line in result.get("summary") or [result.get("msg") or "metnos_audit_report: no summary"]:
            self._display.display(line)
