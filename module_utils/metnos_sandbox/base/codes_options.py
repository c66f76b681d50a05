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
    Code("invalid_option", ERROR, "R-DIAG-3", MODULE,
         "A module option has a bad value",
         "An option of the task is missing, has the wrong type or a value outside its rule; the message "
         "names the option and the rule. Nothing was changed.",
         "The module's argument_spec, then the option checks of module_utils/metnos_sandbox/options/spec.py "
         "(unit name, positive timeout, a running systemd where one is asked for, users that exist).",
         ["ansible-doc -t module <module>"],
         hint="Fix the option named in the message (the command lists each option's rule)."),
    Code("systemctl_failed", ERROR, "R-DIAG-3", MODULE,
         "systemctl could not be queried",
         "systemctl show (or another read-only query) failed for the unit, so its configuration could not "
         "be read through systemd.",
         "The exit status of the systemctl query.",
         ["systemctl show <unit>"],
         hint=("Run the query by hand (systemctl --user -M <user>@ show <unit> for scope=user), or read the unit "
               "files on disk: mode=disk.")),
    Code("daemon_reload_failed", ERROR, "R-DIAG-3", MODULE,
         "systemctl daemon-reload failed after the drop-in was written",
         "The managed drop-in was written, but systemd could not reload its configuration: the service "
         "still runs with the old one.",
         "The exit status of systemctl daemon-reload.",
         ["systemctl daemon-reload", "systemd-analyze verify <unit>"],
         hint=("Run it by hand and read the error; check the drop-in named in the result (dropin.path) with the "
               "second command.")),
    Code("restart_failed", ERROR, "R-DIAG-3", MODULE,
         "The service could not be restarted",
         "The managed drop-in was written and systemd reloaded, but restarting the unit failed.",
         "The exit status of systemctl restart.",
         ["systemctl status <unit>", "journalctl -u <unit> -n 50"],
         hint="Read why the unit failed."),
    Code("dest_unwritable", ERROR, "R-SCOPE-3", MODULE,
         "The rendered profile could not be written",
         "The profile directory (dest) cannot be created or written, or a file there cannot be replaced.",
         "Creating dest and writing each profile file atomically (a temporary file, then a rename).",
         ["ls -ld <dest>"],
         hint="Check dest and its permissions: it must be a directory root can write."),
    Code("monitor_install_failed", ERROR, "R-DIAG-3", MODULE,
         "The monitor's core could not be installed",
         "The release folder of the continuous proof could not be written, renamed into place or an old release "
         "removed (metnos_monitor_install); the monitor keeps running the release that was there.",
         "The file operations of monitor_install.install (a hidden folder, then a rename).",
         ["ls -ld <metnos_sandbox_monitor_prefix>"],
         hint="Check the prefix and its permissions: root must write it."),
    Code("internal_error", ERROR, "R-DIAG-3", MODULE,
         "The module failed unexpectedly",
         "An unexpected error: a defect of the toolkit, never a verdict about the host. The result carries "
         "the traceback (exception).",
         "Any exception a module does not map to its own code.",
         [],
         hint="Report the message and the exception of the result (run with -vvv to see it)."),
])
