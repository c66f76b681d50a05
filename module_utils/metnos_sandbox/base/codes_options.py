# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of a module's own failure (fail_json(code=...)): the task fails, no host finding is made.

The codes of the options/ package's checks, kept on the ground floor (base/ imports nothing above it): data
only, importing base/registry.py alone; base/diagnostics.py gathers every codes_*.py's CODES into the one
registry (docs/diagnostics.md is generated from it). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from .registry import ERROR, MODULE, Code

CODES: List[Code] = []
# ---- a module's own failure (fail_json(code=...)): the task fails, no host finding is made ----
CODES.extend([
    Code(code="invalid_option", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A module option has a bad value",
         cause="An option of the task is missing, has the wrong type or a value outside its rule; the message "
               "names the option and the rule. Nothing was changed.",
         detection="The module's argument_spec, then the option checks of module_utils/metnos_sandbox/options/spec.py "
                   "(unit name, positive timeout, a running systemd where one is asked for, users that exist).",
         remediation=["ansible-doc -t module <module>"],
         hint="Fix the option named in the message (the command lists each option's rule)."),
    Code(code="systemctl_failed", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="systemctl could not be queried",
         cause="systemctl show (or another read-only query) failed for the unit, so its configuration could not "
               "be read through systemd.",
         detection="The exit status of the systemctl query.",
         remediation=["systemctl show <unit>"],
         hint=("Run the query by hand (systemctl --user -M <user>@ show <unit> for scope=user), or read the unit "
               "files on disk: mode=disk.")),
    Code(code="daemon_reload_failed", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="systemctl daemon-reload failed after the drop-in was written",
         cause="The managed drop-in was written, but systemd could not reload its configuration: the service "
               "still runs with the old one.",
         detection="The exit status of systemctl daemon-reload.",
         remediation=["systemctl daemon-reload", "systemd-analyze verify <unit>"],
         hint=("Run it by hand and read the error; check the drop-in named in the result (dropin.path) with the "
               "second command.")),
    Code(code="restart_failed", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="The service could not be restarted",
         cause="The managed drop-in was written and systemd reloaded, but restarting the unit failed.",
         detection="The exit status of systemctl restart.",
         remediation=["systemctl status <unit>", "journalctl -u <unit> -n 50"],
         hint="Read why the unit failed."),
    Code(code="dest_unwritable", severity=ERROR, rule="R-SCOPE-3", section=MODULE,
         title="The rendered profile could not be written",
         cause="The profile directory (dest) cannot be created or written, or a file there cannot be replaced.",
         detection="Creating dest and writing each profile file atomically (a temporary file, then a rename).",
         remediation=["ls -ld <dest>"],
         hint="Check dest and its permissions: it must be a directory root can write."),
    Code(code="monitor_install_failed", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="The monitor's core could not be installed",
         cause="The release folder of the continuous proof could not be written, renamed into place or an old release "
               "removed (metnos_monitor_install); the monitor keeps running the release that was there.",
         detection="The file operations of core_install.install (a hidden folder, then a rename).",
         remediation=["ls -ld <metnos_sandbox_monitor_prefix>"],
         hint="Check the prefix and its permissions: root must write it."),
    Code(code="internal_error", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="The module failed unexpectedly",
         cause="An unexpected error: a defect of the toolkit, never a verdict about the host. The result carries "
               "the traceback (exception).",
         detection="Any exception a module does not map to its own code.",
         remediation=[],
         hint="Report the message and the exception of the result (run with -vvv to see it)."),
])
