# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of metnos-sandbox-exec (profile/descriptors.py, the launcher's one file of the core) and
of the stored profile it reads (profile/store.py): each refusal of the launcher, and the findings of render and
audit about the profile folder and the .args/.json pair.

The launcher runs alone on a host (stdlib only, no registry): it prints ``<code>: <message>`` and the first step
of the code's remediation (descriptors.FIXES, kept equal to these by tests/unit/test_launcher_codes.py). Data
only, importing base/registry.py alone. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from .registry import ERROR, NOT_ROOTS_FIXES, NOT_ROOTS_HINT, PROFILES, SANDBOX_ACTIVE, Code, not_roots_messages

RENDER_AGAIN = "ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"

CODES: List[Code] = []
CODES.extend([
    Code(code="launcher_profile_missing", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The stored profile to run does not exist",
         cause="metnos-sandbox-exec --profile was given a path where no stored profile (<executor>.json and its .args) "
               "is, or that is not an absolute path of one. Nothing was run.",
         detection="Opening the profile's folder from / one component at a time, then the .json and the .args in it.",
         remediation=["ls -l {quoted}"],
         messages={"launcher": "{problem}"},
         hint="Check the path; a profile is written by the sandbox_profile module (the role's profiles step)."),
    Code(code="launcher_profile_unreadable", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The stored profile cannot be read",
         cause="The profile is a symbolic link, a FIFO or another non-regular file, larger than 4 MiB, or cannot be "
               "opened. Nothing was run.",
         detection="open(O_NOFOLLOW|O_NONBLOCK) in the checked folder, fstat: a regular file of at most 4 MiB.",
         remediation=["ls -l {quoted}"],
         messages={"launcher": "{problem}"},
         hint="Render the profile again: the role writes it as a regular file."),
    Code(code="launcher_profile_not_json", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The stored profile is not JSON",
         cause="The .json of the profile is not UTF-8 JSON text (an .args file given for the .json, a truncated or "
               "hand-edited file). Nothing was run.",
         detection="Decoding the file as UTF-8 JSON.",
         remediation=[RENDER_AGAIN],
         messages={"launcher": "{problem}"},
         hint="Give the <executor>.json, or render the profile again."),
    Code(code="launcher_profile_invalid", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The stored profile is not one the launcher runs",
         cause="The JSON is not a wrapped profile: no decision wrapped, no argv of strings starting with bwrap's "
               "absolute path, no args_sha256 (written before the pair carried its digest), or a malformed run_as. "
               "Nothing was run.",
         detection="Checking the profile's keys and types before anything is opened or run.",
         remediation=[RENDER_AGAIN],
         messages={"launcher": "{problem}"},
         hint="Render the profile again with this release of the collection."),
    Code(code="launcher_root_refused", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The launcher will not run an executor as root",
         cause="metnos-sandbox-exec was started by root, and the profile records no service user to run as "
               "(run_as), records root, records a user this host does not have with that uid and gid, or the drop "
               "to it did not hold (a uid, gid, supplementary group or capability left). Nothing was run.",
         detection="setgroups([]), setresgid, setresuid to the recorded user, then getresuid/getresgid/getgroups, the "
                   "capabilities in /proc/self/status and a setuid(0) that must fail.",
         remediation=[RENDER_AGAIN + " -e metnos_sandbox_run_as=<user>"],
         messages={"launcher": "{problem}"},
         hint=("<user> is the service's User= (the one the executors run as); or start the launcher as that "
               "user.")),
    Code(code="launcher_keyring_kept", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The executor would keep its caller's session keyring",
         cause="metnos-sandbox-exec, started by root, dropped to the service user but could not give it a session "
               "keyring of its own: keyrings are not namespaced and survive execve and bwrap, so the executor would "
               "hold root's (pam_keyinit's, a root unit's) as possessor and read every key in it. A seccomp filter "
               "that kills keyctl (SystemCallFilter=~@keyring without an errno) is refused too: unknown is a failure. "
               "Nothing was run.",
         detection="After the drop: /proc/self/status Seccomp (under a filter keyctl is first asked in a child: EPERM "
                   "or ENOSYS proves no keyring is reachable), keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL), then "
                   "KEYCTL_GET_KEYRING_ID of the session keyring: the joined serial, not the one held before.",
         remediation=["grep Seccomp /proc/self/status"],
         messages={"launcher": "{problem}"},
         hint=("In a unit that filters @keyring, add SystemCallErrorNumber=EPERM (keyctl then answers EPERM "
               "instead of killing the launcher).")),
    Code(code="launcher_core_unsafe", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The launcher's core is not root's alone",
         cause="metnos-sandbox-exec, started by root, found its core (descriptors.py beside it) or a folder above it "
               "owned by another user or writable by a group or everyone: root would import code someone else can "
               "change. Nothing was run.",
         detection="lstat of the core and of every folder up to / (a sticky folder like /var/tmp on the way excepted).",
         remediation=["chown root:root {quoted}", "chmod go-w {quoted}"],
         messages={"launcher": "{problem}"},
         hint="Or install the launcher again with the metnos_sandbox role (metnos_sandbox_exec: true)."),
    Code(code="launcher_channel_appeared", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="A channel appeared in a granted folder after rendering",
         cause="A socket, FIFO or device node is below a folder the profile grants, and the render did not record it "
               "there (the stored profile's channels): a host process made it later, and the executor could talk to it "
               "through the bind. Nothing was run.",
         detection="At launch, as the service user: a scandir of the granted folders (links not followed, bounded like "
                   "the render's channel search) compared with the channels the render recorded.",
         remediation=["ls -l {quoted}"],
         messages={"launcher": "{problem}"},
         hint=("Find who made it (the command shows its owner); remove it, or allow it with a reason in "
               "host.allow_channels and render the profile again.")),
    Code(code="launcher_channel_search_changed", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="A granted folder changed while the launcher searched it for channels",
         cause="At launch the granted folders are searched by descriptor (each folder opened in its parent, never "
               "through a symbolic link, checked to be the folder listed). One vanished or was swapped while searched: "
               "the search cannot be trusted, so nothing was run.",
         detection="At launch, as the service user: the walk by descriptor of the granted folders (descriptors.tree).",
         remediation=["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"],
         messages={"launcher": "{problem}"},
         hint="Run it again when nothing renames folders in the granted tree, or render the profile again."),
    Code(code="profile_folder_unsafe", severity=ERROR, rule="R-SEC-1", section=PROFILES,
         title="A stored profile's folder or file is not root's alone",
         cause="The profile folder, a folder on its way from /, or the profile file is owned by another user than "
               "root, writable by a group or by everyone, or a symbolic link: whoever can write it can make root run "
               "any command (the launcher runs what the profile says). The launcher refuses it, the render does "
               "not write into it.",
         detection="fstat of every component from / (opened without following links): owner root, no group or other "
                   "write bit.",
         remediation=["chown root:root {quoted}", "chmod go-w {quoted}"],
         messages={"launcher": "{problem}",
                   "": "{path} is owned by {owner}, mode {mode}: a profile folder is root's and writable by no "
                       "one else"},
         hint=("Run the commands on the path the message names (and on each folder the next finding names), or "
               "set metnos_sandbox_profile_dir to a folder below /etc.")),
    Code(code="profile_pair_mismatch", severity=ERROR, rule="R-SCOPE-3", section=PROFILES,
         title="A stored profile's .args and .json are not one profile",
         cause="The .json records the sha256 of its argv (args_sha256); its own argv or the .args file has another: "
               "a write was interrupted between the two files, or one was edited. The launcher refuses the profile.",
         detection="Comparing the .json's args_sha256 with the digest of its argv and of the .args file's bytes.",
         remediation=[RENDER_AGAIN],
         messages={"launcher": "{problem}",
                   "": "{executor}: {problem}"},
         hint="Render the profile again (the write replaces both files)."),
    Code(code="launcher_python_not_roots", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The launcher's interpreter is not root's alone",
         cause="metnos_sandbox_exec_python, the interpreter root runs metnos-sandbox-exec with, can be changed by "
               "someone other than root: a folder on the way, a link, the file, its loader, the pyvenv.cfg Python "
               "reads beside it or one folder up, the home that names or the standard library there. Whoever that is "
               "runs their code as root at the launcher's next start. The role installs nothing.",
         detection="lstat() of every component from /, each link judged in its folder, the ELF loader walked again, "
                   "the pyvenv.cfg and its home walked too (base/owners.py, module metnos_root_python), before the "
                   "install.",
         remediation=list(NOT_ROOTS_FIXES["unknown"]), variants=NOT_ROOTS_FIXES,
         messages=not_roots_messages("root would run metnos-sandbox-exec with {program}"),
         hint=NOT_ROOTS_HINT + " Or set metnos_sandbox_exec_python to the host's /usr/bin/python3."),
    Code(code="launcher_python_unsafe", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The interpreter running the launcher is not root's alone",
         cause="metnos-sandbox-exec, started by root, found the interpreter it runs on (its path, a folder on the way, "
               "the file a link names, the pyvenv.cfg beside it or one folder up, or the standard library it loaded) "
               "owned by another user or writable by a group or everyone: that user's code would run as root. "
               "Nothing was run.",
         detection="At start, before the core is loaded: lstat of sys.executable and every folder up to /, each link's "
                   "target the same way, pyvenv.cfg beside it and one folder up, and the folder of the standard "
                   "library.",
         remediation=["chown root:root {quoted}", "chmod go-w {quoted}"],
         messages={"launcher": "{problem}"},
         hint=("Install the launcher again with metnos_sandbox_exec_python set to the host's /usr/bin/python3 "
               "(the role refuses an interpreter that is not root's: launcher_python_not_roots).")),
])
