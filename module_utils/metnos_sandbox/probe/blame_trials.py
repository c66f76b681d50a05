# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trials of blame by experiment (blame.py) as real transient units carrying the unit's context: the whole
probe (probe.run_systemd), the search's cheaper run, and the runtime's interpreter starting bwrap.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import subprocess
import time
import typing as t

from ..base.records import Json, Record
from ..host import bwrap_errors
from ..service import systemd_exit
from . import payload, runners
from .blame import Assignment, Outcome, outcome_of

SIGTERM = 15

# The runtime's interpreter starting a process the way the runtime starts bwrap (fork and exec).
INTERPRETER_CHECK = ("import subprocess, sys\n"
                     "subprocess.run([sys.argv[1], '--version'], stdout=subprocess.DEVNULL, "
                     "stderr=subprocess.DEVNULL)\n")


# The search's launcher: like the probe's (it reports its pid, then executes bwrap), without the handshake.
LIGHT_LAUNCHER = 'printf \'{"launcher-pid": %s}\\n\' "$$$$"; exec "$@"'


class _Run(Record):
    stdout: str
    stderr: str                          # the command's own, without systemd-run's report lines
    main: t.Optional[str]                # "Main processes terminated with: ..." of systemd-run
    result: t.Optional[str]              # "Finished with result: ..."
    seconds: float


class SystemdTrials(object):
    """Trials as real transient units carrying the given assignments: ``confirm`` is the whole probe
    (probe.run_systemd, every check); ``probe`` (the search) is the whole probe too, or - when the probe failed
    before its payload ran (``light``) - bwrap with the profile's argv and a one-line payload, which fails or not
    for the same reasons and costs a fraction; ``interpreter`` is the runtime's interpreter starting bwrap."""

    def __init__(self, job: runners.RunSpec, light: bool = False) -> None:
        self.job = job      # the failed probe's run (its trust: bwrap_trust.for_run() of argv[0], verified once)
        self.argv, self.spec, self.python, self.timeout, self.light = list(job.argv), job.spec, job.python, \
            job.timeout, light

    def confirm(self, assignments: t.List[Assignment], user: Json) -> Outcome:
        job = self.job._replace(spec=dict(self.spec, token=os.urandom(6).hex()))
        verdict = runners.run_systemd(job, user, {"assignments": assignments}, {},
                                      "metnos-probe-%s" % os.urandom(5).hex())
        return outcome_of(verdict)

    def probe(self, assignments: t.List[Assignment], user: Json) -> Outcome:
        if not self.light:
            return self.confirm(assignments, user)
        token = "metnos-search-%s" % os.urandom(6).hex()
        sep = self.argv.index("--") if "--" in self.argv else len(self.argv)
        command = ["/bin/sh", "-c", LIGHT_LAUNCHER, "sh"] + payload.descriptor_launcher(self.argv[:sep] + [
            "--", self.python, "-I", "-S", "-c", "print(%r)" % token], self.python, self.spec)
        run, unit = self._run(assignments, user, ("/bin/sh",), command)
        if token in run.stdout.splitlines() and run.main is not None and "status=0" in run.main:
            return Outcome(True, "passed", None, "", run.seconds)
        failure = systemd_exit.unit_failure(run.main, '"launcher-pid"' in run.stdout, unit)
        if failure:
            said = "%s/%s: %s" % (failure["status"], failure["name"], failure.get("reason") or failure["meaning"])
            return Outcome(False, "unit", failure["name"], said, run.seconds)
        if run.result == "timeout":
            return Outcome(False, "timeout", "timeout", "the run timed out", run.seconds)
        sig = systemd_exit.signal_number(run.main)
        cls = bwrap_errors.classify(run.stderr, 128 + sig if sig is not None else _exit_status(run.main))
        return Outcome(False, "setup", cls.get("cause"), cls.get("stderr_line") or cls.get("cause_text") or "",
                       run.seconds)

    def interpreter(self, assignments: t.List[Assignment], user: Json) -> Outcome:
        run, _unit = self._run(assignments, user, (self.python,),
                               [self.python, "-I", "-S", "-c", INTERPRETER_CHECK, self.argv[0]])
        sig = systemd_exit.signal_number(run.main)
        if sig is not None and sig != SIGTERM and run.result != "timeout":   # SIGTERM: the trial's own RuntimeMaxSec=
            ending = systemd_exit.parse_main(run.main)
            name = ending.name if ending is not None and ending.name else str(sig)
            return Outcome(False, "interpreter", "SIG%s" % name, "the runtime's interpreter (%s) was killed by SIG%s "
                           "as it started bwrap" % (self.python, name), run.seconds)
        return Outcome(True, "passed", None, "", run.seconds)

    def _run(self, assignments: t.List[Assignment], user: Json, own: t.Sequence[str],
             command: t.List[str]) -> t.Tuple[_Run, str]:
        """systemd-run --wait --pipe of ``command`` in a transient unit with ``assignments``; bounded."""
        unit = "metnos-probe-%s" % os.urandom(5).hex()
        argv = runners.systemd_run_argv(unit, user, {"assignments": assignments}, {}, self.timeout, own=own)
        argv += ["-p", "TimeoutStopSec=%d" % runners.STOP_TIMEOUT] + command
        start = time.time()
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                                  timeout=self.timeout + 15, check=False,
                                  env={"SYSTEMD_COLORS": "0", "LC_ALL": "C", "PATH": "/usr/bin:/bin"})
            out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
        except (OSError, subprocess.SubprocessError) as exc:
            out, err = "", str(exc)
            subprocess.run(["systemctl", "stop", unit + ".service"], stdout=subprocess.DEVNULL,  # pylint: disable=ansible-bad-function
                           stderr=subprocess.DEVNULL, check=False)
        subprocess.run(["systemctl", "reset-failed", unit + ".service"], stdout=subprocess.DEVNULL,  # pylint: disable=ansible-bad-function
                       stderr=subprocess.DEVNULL, check=False)
        report = dict((key, line.split(":", 1)[1].strip()) for line in err.splitlines()
                      for key in ("Main processes terminated with", "Finished with result") if line.startswith(key))
        own_err = "\n".join(line for line in err.splitlines() if not line.startswith(_SYSTEMD_RUN_LINES))
        return _Run(out, own_err, report.get("Main processes terminated with"), report.get("Finished with result"),
                    time.time() - start), unit


_SYSTEMD_RUN_LINES = ("Running as unit", "Finished with result:", "Main processes terminated with:",
                      "Service runtime:", "CPU time consumed:", "Memory peak:", "IP traffic", "IO bytes", "Press ^]")


def _exit_status(main: t.Optional[str]) -> t.Optional[int]:
    ending = systemd_exit.parse_main(main)
    return ending.status if ending is not None and ending.code == "exited" else None
