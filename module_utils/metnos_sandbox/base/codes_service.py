# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of the service's own environment and unit, the directives that break bwrap.

The codes of the service/ package's checks, kept on the ground floor (base/ imports nothing above it): data
only, importing base/registry.py alone; base/diagnostics.py gathers every codes_*.py's CODES into the one
registry (docs/diagnostics.md is generated from it). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from .registry import ERROR, MODULE, SERVICE_ENVIRONMENT, WARNING, Code, Restriction, restriction

CODES: List[Code] = []
CODES.extend([
    # ---- the service's own environment and unit (R-DIAG-3) ----
    Code(code="unit_not_found", severity=WARNING, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="The Metnos service unit does not exist",
         cause="No unit file or drop-in for the unit was found (systemd: LoadState=not-found).",
         detection="systemctl show -p LoadState, or the unit search path on disk.",
         remediation=["systemctl list-unit-files 'metnos*'",
                      "systemctl --user list-unit-files 'metnos*'"],
         hint=("Check the unit's name (metnos_sandbox_unit) and its scope (metnos_sandbox_unit_scope: system, or "
               "user with metnos_sandbox_unit_user): the commands list the units of each manager.")),
    Code(code="unit_file_link_refused", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="A unit file or drop-in is reached through a link someone else controls",
         cause="A unit file or drop-in, below a folder that a user other than root can write, is (or is reached "
               "through) a symbolic link: root reads nothing through it, and its settings are not counted (issue 49).",
         detection="Opening the path without following links from the first folder root does not control alone "
                   "(openat2 RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH, or O_NOFOLLOW per component).",
         remediation=["rm -- {file}"],
         messages={"": "{unit}: {file} is a symbolic link in a folder {owner} can write (it points to a file owned "
                       "by {target_owner}); root does not follow it"},
         hint="Remove the link and put the unit file or drop-in itself there (a regular file)."),
    Code(code="unit_file_fifo", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="A unit file or drop-in is a FIFO",
         cause="A unit file or drop-in is a FIFO (named pipe): it is refused at once, never waited on.",
         detection="fstat of the file opened O_NONBLOCK.",
         remediation=["rm -- {file}"],
         messages={"": "{unit}: {file} is a FIFO (named pipe), owned by {owner}; root does not wait on it"}),
    Code(code="unit_file_unreadable_by_owner", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="A unit file or drop-in is a file its folder's owner could not read",
         cause="A unit file or drop-in is in a folder a user other than root controls, and that user could not read "
               "it: root does not read it for them (a hard link to a root-only file).",
         detection="The file's fstat judged as the folder's owner would see it (owner, groups, mode bits).",
         remediation=["rm -- {file}"],
         messages={"": "{unit}: {owner} controls the folder of {file} but could not read it (owned by "
                       "{target_owner}); root does not read it for them"}),
    Code(code="unit_file_changed_while_read", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="A unit file or drop-in changed while it was read",
         cause="A unit file or drop-in changed between the fstat before and after its one read (size, times, inode): "
               "its settings are not counted. Check again.",
         detection="fstat before and after reading the file once, again after a short settle time for a file that had "
                   "just changed.",
         remediation=["ls -l --time-style=full-iso -- {file}"],
         messages={"": "{unit}: {file} changed while read: check again (owned by {owner})"},
         hint="Run the check again once nothing is writing the file."),
    Code(code="unit_file_unreadable", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="A unit file or drop-in cannot be read",
         cause="A unit file or drop-in is not a regular file, is larger than the limit, or cannot be read: its "
               "settings are not counted.",
         detection="Opening and fstat of the file (regular, at most 1 MiB).",
         remediation=["ls -l -- {file}"],
         messages={"": "{unit}: {file} cannot be read ({why})"}),
    Code(code="unit_masked", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="The Metnos service unit is masked",
         cause="The unit is linked to /dev/null: it cannot start at all.",
         detection="A unit file symlinked to /dev/null, or LoadState=masked.",
         remediation=["systemctl unmask {unit}"]),
    Code(code="unit_needs_daemon_reload", severity=WARNING, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="Unit files changed since systemd loaded them",
         cause="The unit files on disk differ from what systemd runs (NeedDaemonReload=yes): the checked "
               "configuration is not yet the service's.",
         detection="systemctl show -p NeedDaemonReload.",
         remediation=["systemctl daemon-reload", "systemctl restart {unit}"]),
    Code(code="service_user_missing", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="The service's User= does not exist",
         cause="User= names an account that does not exist on this host: the service cannot start.",
         detection="getpwnam() of the unit's User=.",
         remediation=["getent passwd {user}", "useradd --system --no-create-home --shell /usr/sbin/nologin {user}"],
         messages={"": "{unit}: User={user} does not exist."},
         hint=("Create the account (the second command) or fix User= in the unit; the first command prints nothing "
               "while the account is missing.")),
    Code(code="service_runs_as_root", severity=ERROR, rule="R-BASE-6", section=SERVICE_ENVIRONMENT,
         title="The service runs as root: its sandboxes are no boundary",
         cause="The service's processes (and so every executor bwrap starts for it) run as uid 0: no User=, "
               "User=root, or the running process is root. bwrap --unshare-user maps uid 0 to itself, so the "
               "sandbox keeps every capability of its user namespace: any read-only bind can be remounted "
               "writable (the host's files behind it written), /proc/sys opens for writing. No grant of a "
               "profile holds for such a service.",
         detection="User=/DynamicUser= resolved as systemd does (run_user.py); the uid of the running MainPID "
                   "from /proc/<pid>/status.",
         remediation=["useradd --system --no-create-home --shell /usr/sbin/nologin <user>",
                      "mkdir -p /etc/systemd/system/{unit}.d",
                      "printf '[Service]\\nUser=<user>\\n' > /etc/systemd/system/{unit}.d/10-metnos-user.conf",
                      "{handover}",
                      "systemctl daemon-reload", "systemctl restart {unit}"],
         messages={"configured": "{unit}: the service runs as root ({why}): every executor's sandbox keeps "
                                 "root's capabilities in its user namespace, so read-only binds can be "
                                 "remounted writable. The drop-in changes: {changes}.",
                   "live": "{unit}: the running process (PID {pid}) is root although the configuration "
                           "gives user {user} ({why}): until it restarts, every executor's sandbox keeps "
                           "root's capabilities. The drop-in changes: {changes}."},
         hint=("Run the service as an unprivileged user with a drop-in (enforce mode writes it only when asked - "
               "metnos_sandbox_service_run_as=<user> or dynamic, the module's run_as - as it changes who owns the "
               "service's files). Or, with an allocated user and no account to create, write DynamicUser=yes in "
               "place of User=<user> and skip useradd.")),
    Code(code="service_env_credential", severity=ERROR, rule="R-SEC-1", section=SERVICE_ENVIRONMENT,
         title="The service's environment carries a credential to every executor",
         cause="A variable whose name says it holds a credential (*_TOKEN, *_SECRET*, *PASSWORD*, *_KEY, "
               "AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, DATABASE_URL, ...) is in the service's environment. The profile "
               "has no --clearenv: every executor the service starts reads it. (A unit's Environment= is also "
               "readable by any local user over D-Bus.) The value is never shown.",
         detection="The names of the live process's environment (/proc/<MainPID>/environ), else the configuration's.",
         remediation=["systemctl cat {unit}",
                      "mkdir -p /etc/systemd/system/{unit}.d",
                      "printf '[Service]\\nLoadCredential=<name>:<path>\\n' > "
                      "/etc/systemd/system/{unit}.d/20-metnos-credential.conf",
                      "systemctl daemon-reload", "systemctl restart {unit}"],
         messages={"": "{unit}: {name} ({origin}) looks like a credential and reaches every executor (the "
                       "profile does not clear the environment); its value is not shown."},
         hint=("Hand the secret to the service as a credential file instead (LoadCredential=: the service reads "
               "$CREDENTIALS_DIRECTORY/<name>), and remove the variable from the unit's "
               "Environment=/EnvironmentFile= (systemctl cat shows where it is set).")),
    Code(code="service_env_agent_socket", severity=ERROR, rule="R-SEC-1", section=SERVICE_ENVIRONMENT,
         title="The service's environment points executors at a key agent",
         cause="SSH_AUTH_SOCK, GPG_AGENT_INFO, GNUPGHOME or KRB5CCNAME is in the service's environment: every "
               "executor is told where an agent that signs or decrypts for its caller listens (a channel, whatever "
               "the socket's bind). The value is never shown.",
         detection="The names of the live process's environment, else the configuration's.",
         remediation=[
             "systemctl cat {unit}",
             "mkdir -p /etc/systemd/system/{unit}.d",
             "printf '[Service]\\nUnsetEnvironment=<name>\\n' > /etc/systemd/system/{unit}.d/20-metnos-unset.conf",
             "systemctl daemon-reload",
             "systemctl restart {unit}"],
         messages={"": "{unit}: {name} ({origin}) tells every executor where a key agent listens; its value is "
                       "not shown."},
         hint=("Remove the variable from the service (UnsetEnvironment=<name> in a drop-in, or from the unit's "
               "Environment=/EnvironmentFile=, which systemctl cat shows); give the service a key file through "
               "LoadCredential= if it needs one.")),
    Code(code="service_env_channel", severity=ERROR, rule="R-SEC-1", section=SERVICE_ENVIRONMENT,
         title="The service's environment points executors at a channel to another process",
         cause="DBUS_SESSION_BUS_ADDRESS, DBUS_SYSTEM_BUS_ADDRESS, DISPLAY, WAYLAND_DISPLAY, XDG_RUNTIME_DIR, "
               "LISTEN_FDS/LISTEN_PID/LISTEN_FDNAMES or NOTIFY_SOCKET is in the service's environment: every executor "
               "is told where a bus, a display server, a user's sockets, the service's own activated sockets or "
               "systemd's notify socket are (an abstract socket such as unix:abstract=... needs no bind at all: an "
               "executor with net: reaches it). The value is never shown.",
         detection="The names of the live process's environment (/proc/<MainPID>/environ), else the configuration's.",
         remediation=["systemctl cat {unit}",
                      "mkdir -p /etc/systemd/system/{unit}.d",
                      "printf '[Service]\\nUnsetEnvironment={name}\\n' > "
                      "/etc/systemd/system/{unit}.d/20-metnos-unset-{name}.conf",
                      "systemctl daemon-reload", "systemctl restart {unit}"],
         messages={"": "{unit}: {name} ({origin}) tells every executor where {what} is; its value is not shown."},
         hint=("Remove {name} from the service (UnsetEnvironment={name} in a drop-in, or from the unit's "
               "Environment=/EnvironmentFile=, which systemctl cat shows); the runtime should start executors "
               "from a cleared environment.")),
    Code(code="service_supplementary_group", severity=WARNING, rule="R-SEC-1", section=SERVICE_ENVIRONMENT,
         title="The service's process holds a supplementary group every executor keeps",
         cause="bwrap keeps its caller's supplementary groups: every executor holds each group the service's process "
               "holds (SupplementaryGroups=, the user's memberships in the group database, or what the running process "
               "holds), and reads or writes whatever that group may (shadow: /etc/shadow; ssl-cert: private keys).",
         detection="SupplementaryGroups= of the unit, initgroups() of its User= in the group database, and the live "
                   "process's Groups: line in /proc/<MainPID>/status.",
         remediation=["getent group {group}"],
         variants={"unit": ("systemctl cat {unit}", "mkdir -p /etc/systemd/system/{unit}.d",
                            "printf '[Service]\\nSupplementaryGroups=\\n' > "
                            "/etc/systemd/system/{unit}.d/20-metnos-groups.conf",
                            "systemctl daemon-reload", "systemctl restart {unit}"),
                   "database": ("gpasswd -d {user} {group}", "systemctl restart {unit}"),
                   "live": ("systemctl restart {unit}",)},
         messages={"unit": "{unit}: the service holds group {group} ({sources}): every executor keeps it",
                   "database": "{unit}: the service's user {user} holds group {group} ({sources}): every executor "
                               "keeps it",
                   "live": "{unit}: the running process holds group {group} ({sources}) that its configuration "
                           "does not give: every executor keeps it until the service restarts"},
         hint="Remove the group from the service (the commands), or move what the service needs from it into a "
              "credential (LoadCredential=)."),
    Code(code="service_group_file", severity=ERROR, rule="R-SEC-1", section=SERVICE_ENVIRONMENT,
         title="A group the service holds opens a file in every sandbox's base binds",
         cause="A file or folder in the system paths every sandbox binds (/etc, /usr, ...) is owned by a group the "
               "service's process holds, with the group's read or write bit and not the others': every executor "
               "reads (or writes) it through the inherited group.",
         detection="A bounded walk of the base binds (links not followed, lstat of each entry) against the service's "
                   "supplementary groups.",
         remediation=["ls -l {path}", "getent group {group}"],
         messages={"readable": "{unit}: {path} is readable by group {group}, which the service holds: every "
                               "executor reads it",
                   "writable": "{unit}: {path} is writable by group {group}, which the service holds: every "
                               "executor writes it",
                   "bound": "{unit}: the search for files the groups {group} open stopped after {limit} entries "
                            "at {path}: the rest of the base binds is not judged"},
         hint="Remove the group from the service (service_supplementary_group's commands); the file stays as its "
              "owner needs it."),
    Code(code="service_env_loader", severity=WARNING, rule="R-SEC-1", section=SERVICE_ENVIRONMENT,
         title="The service's environment makes executors load code",
         cause="A variable that makes the dynamic loader, an interpreter or a shell load code (LD_PRELOAD, "
               "LD_LIBRARY_PATH, LD_AUDIT, PYTHONPATH, PYTHONHOME, PYTHONSTARTUP, BASH_ENV, ENV, PERL5LIB, "
               "PERL5OPT, RUBYOPT, NODE_OPTIONS, GCONV_PATH, exported bash functions, ...) reaches every "
               "executor (no --clearenv). An error when an entry it loads from can be written by someone other "
               "than root, or is relative: one executor plants code another runs. The value is never shown.",
         detection="The names of the live process's environment, else the configuration's; each entry of a load path "
                   "judged like a PATH entry (owner and mode of it and every folder on its way, links followed).",
         remediation=[
             "systemctl cat {unit}",
             "mkdir -p /etc/systemd/system/{unit}.d",
             "printf '[Service]\\nUnsetEnvironment=<name>\\n' > /etc/systemd/system/{unit}.d/20-metnos-unset.conf",
             "systemctl daemon-reload",
             "systemctl restart {unit}"],
         messages={"loads": "{unit}: {name} ({origin}) makes every executor's interpreter or shell load code "
                            "from what it names; its value is not shown.",
                   "writable": "{unit}: {name} ({origin}) makes every executor load code from a place someone "
                               "other than root can write ({why}): one executor can plant code another runs; "
                               "its value is not shown."},
         hint=("Remove the variable from the service (UnsetEnvironment=<name> in a drop-in, or from the unit's "
               "Environment=/EnvironmentFile=, which systemctl cat shows).")),
    Code(code="sandbox_env_rejected_by_systemd", severity=WARNING, rule="R-FAIL-1", section=SERVICE_ENVIRONMENT,
         title="systemd ignores part of a METNOS_SANDBOX assignment",
         cause="An Environment= line that mentions METNOS_SANDBOX contains words systemd rejects (e.g. "
               "'Environment=METNOS_SANDBOX= 0' sets an empty value and ignores '0').",
         detection="The unit's Environment= lines split with systemd's quoting rules.",
         remediation=["systemctl cat {unit}"],
         messages={"ignored": "{unit}: systemd ignores {text} ({reason}) at {where}; the value you meant is not the "
                              "one the service gets (effective METNOS_SANDBOX={effective})."},
         hint=("Write the assignment without spaces around '=': Environment=METNOS_SANDBOX=1 (or remove it); the "
               "command shows the file that holds it.")),
    Code(code="service_path_missing_bwrap", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="bwrap is not on the service's PATH",
         cause="bwrap does not resolve through the PATH the service's processes get, with the service user's "
               "permissions. The runtime fails closed for every executor, although the admin's shell finds bwrap.",
         detection="Lookup through the effective PATH (Environment=/EnvironmentFile=/systemd default) as the unit's "
                   "User=.",
         remediation=["ansible-playbook metnos.sandbox.site -e metnos_sandbox_service_env_state=enforce"],
         messages={"": "{unit}: bwrap does not resolve through the service's PATH={path} as user {user} "
                       "(PATH from {origin}). The runtime looks it up with this PATH, not the admin's."},
         hint=("Set the unit's PATH to include the bwrap directory: enforce mode writes a drop-in with "
               "Environment=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin (or install "
               "bubblewrap).")),
    Code(code="service_path_unsafe", severity=ERROR, rule="R-SEC-6", section=SERVICE_ENVIRONMENT,
         title="The service's PATH lets someone shadow bwrap",
         cause="An empty or relative PATH entry (the current directory), or a directory before the bwrap "
               "directory that is not root-owned or is group/world-writable: anyone who can write there can "
               "plant a fake bwrap.",
         detection="Each PATH entry up to the bwrap directory: ownership and mode of it and its parents.",
         remediation=["ansible-playbook metnos.sandbox.site -e metnos_sandbox_service_env_state=enforce",
                      "chmod go-w <directory>", "chown root:root <directory>"],
         messages={"": "{unit}: PATH={path}: {problems}"},
         hint=("Remove the offending entries from the unit's PATH (enforce mode, the first command, writes a clean "
               "PATH), or make each directory named in the message root's and not group- or world-writable.")),
    Code(code="service_bwrap_mismatch", severity=WARNING, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="The service runs a different bwrap",
         cause="The bwrap the service resolves is not the one the admin's PATH resolves, or no package owns it.",
         detection="realpath() of both lookups; package ownership query.",
         remediation=["systemctl show {unit} -p Environment", "command -v bwrap"],
         variants={"different": ["systemctl show {unit} -p Environment", "ls -l {admin_bwrap}"],
                   "unpackaged": ["ls -l {service_bwrap}", "systemctl show {unit} -p Environment"]},
         messages={"different": "{unit} resolves bwrap to {service_bwrap}, the admin's shell to {admin_bwrap}: they "
                                "are different binaries.",
                   "unpackaged": "{unit} resolves bwrap to {service_bwrap}, which no installed package owns."},
         hint="Remove the unexpected binary, or fix the unit's PATH.",
         hints={"different": "Remove the unexpected binary or fix the unit's PATH so that it resolves the "
                             "package-owned {admin_bwrap}.",
                "unpackaged": "Remove {service_bwrap} or put the package's directory first in the unit's PATH."}),
    Code(code="environment_file_missing", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="An EnvironmentFile cannot be read",
         cause="A file listed in EnvironmentFile= is missing or unreadable. With the '-' prefix systemd skips it "
               "silently (warning), so variables you expect (METNOS_SANDBOX, PATH) are not set; without it the "
               "service fails to start (error).",
         detection="Reading each EnvironmentFile= path.",
         remediation=["ls -l {path}", "systemctl cat {unit}"],
         messages={"optional": "{unit}: EnvironmentFile=-{path} ({where}) cannot be read: {error}. systemd skips it "
                               "silently ('-' prefix)",
                   "required": "{unit}: EnvironmentFile={path} ({where}) cannot be read: {error}. The service fails "
                               "to start."},
         hint="Create {path} or remove the EnvironmentFile= line (systemctl cat shows the file that holds it)."),
    Code(code="service_env_live_differs", severity=WARNING, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="The running service has an older environment",
         cause="/proc/<MainPID>/environ differs from the configuration for METNOS_SANDBOX or PATH in a way that "
               "neither disables nor misroutes the sandbox (those are service_env_live_disables and "
               "service_env_live_misroutes): a restart is pending.",
         detection="Comparing the live environment of MainPID with the configured one.",
         remediation=["systemctl restart {unit}"],
         messages={"differs": "{unit}: the running process has {key}={value}, the configuration gives {configured}: "
                              "restart the service to apply."}),
    Code(code="service_env_live_disables", severity=ERROR, rule="R-FAIL-1", section=SERVICE_ENVIRONMENT,
         title="The running service has the sandbox disabled",
         cause="The running process's own environment (/proc/<MainPID>/environ, the authority while it runs) "
               "disables the sandbox although the configuration does not: METNOS_SANDBOX has a disabling value, or "
               "bwrap does not resolve through its PATH. The message names the origin when it can be determined "
               "(the start command line, a pending restart, the manager's environment).",
         detection="/proc/<MainPID>/environ read as root or, where root is refused (no CAP_SYS_PTRACE), as the "
                   "process's own uid; compared with the configuration and ExecStart='s env(1)/sh -c prefixes.",
         remediation=["systemctl show-environment", "systemctl show {unit} -p ExecStart", "systemctl restart {unit}"],
         messages={"value": "{unit}: the running process (PID {pid}) has {key}={value}, which disables the sandbox; "
                            "the configuration gives {configured} ({origin_conf}). Origin: {origin}.",
                   "path": "{unit}: bwrap does not resolve through the running process's PATH={value} (PID {pid}), so "
                           "the runtime refuses every executor; the configuration's PATH resolves {resolved}. Origin: "
                           "{origin}."},
         hint=("Find and remove the origin named in the message (ExecStart= prefix, wrapper, manager environment: "
               "the first two commands show them), then restart the service.")),
    Code(code="service_env_live_misroutes", severity=ERROR, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="The running service resolves a different bwrap",
         cause="The running process's PATH resolves bwrap to another binary than the configuration's PATH does: "
               "the runtime wraps executors with that binary.",
         detection="The live PATH resolved as the service user, compared (realpath) with the configured one.",
         remediation=["systemctl show {unit} -p ExecStart -p Environment", "systemctl restart {unit}"],
         messages={"packaged": "{unit}: the running process's PATH={value} resolves bwrap to {live_bwrap} "
                               "(package-owned), the configuration to {resolved}. Origin: {origin}.",
                   "unpackaged": "{unit}: the running process's PATH={value} resolves bwrap to {live_bwrap} (owned by "
                                 "no package), the configuration to {resolved}. Origin: {origin}."},
         hint=("Remove the origin named in the message, then restart the service; remove an unexpected bwrap binary"
               " from the directories named in the message.")),
    Code(code="service_env_live_unreadable", severity=WARNING, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="The running service's environment could not be read",
         cause="The service runs but /proc/<MainPID>/environ could not be read, neither as root nor as the "
               "process's own uid (the reason is in the message): what is reported is the configuration's view, not "
               "the live process's.",
         detection="Reading /proc/<MainPID>/environ as root, then in a helper that drops to the process's uid and gid.",
         remediation=["setpriv --reuid=<uid> --regid=<gid> --clear-groups cat /proc/<pid>/environ | tr '\\0' '\\n'"],
         messages={"": "{unit} runs as PID {pid} but its environment (/proc/{pid}/environ) could not be read "
                       "({error}): the status shown is the configuration's view, not the live process's."},
         hint="Read it by hand as the service user."),
    Code(code="service_execstart_sets_env", severity=ERROR, rule="R-FAIL-1", section=SERVICE_ENVIRONMENT,
         title="The start command line changes METNOS_SANDBOX or PATH",
         cause="ExecStart= runs the program through env(1) (NAME=VALUE, -u NAME, -i) or a shell (sh -c 'NAME=VALUE "
               "exec ...') that sets or unsets METNOS_SANDBOX or PATH: the program's environment is not the unit's. An "
               "error when it disables the sandbox or changes which bwrap resolves, a warning otherwise.",
         detection="ExecStart= lines of the unit files split with systemd's quoting, $VAR substitution applied, env(1) "
                   "options and simple shell scripts followed.",
         remediation=["systemctl cat {unit}"],
         variants={"healable": ["ansible-playbook metnos.sandbox.site -e metnos_sandbox_service_env_state=enforce"],
                   "unhealable": ["systemctl edit --full {unit}"]},
         messages={"changes": "{unit}: {line} changes the environment before the program runs ({changes}).",
                   "disables": "{unit}: {line} changes the environment before the program runs ({changes}): the "
                               "sandbox is disabled.",
                   "misroutes": "{unit}: {line} changes the environment before the program runs ({changes}): bwrap "
                                "resolves to {new_bwrap} instead of {old_bwrap}."},
         hint="Remove the assignment from ExecStart= (enforce mode rewrites an env(1) prefix in its drop-in).",
         hints={"healable": "Enforce mode (the command) rewrites ExecStart= in its drop-in without those "
                            "assignments; or edit the unit: {fix}",
                "unhealable": "A drop-in cannot neutralise it ({why}): edit the unit's ExecStart= ({where}) by "
                              "hand."}),
    Code(code="service_execstart_env_unknown", severity=WARNING, rule="R-DIAG-3", section=SERVICE_ENVIRONMENT,
         title="The start command line's effect on the environment cannot be determined",
         cause="ExecStart= runs a shell script or env(1) form (env -S, control structures, expansions, sourced files) "
               "that may change METNOS_SANDBOX or PATH in a way that cannot be determined from the unit.",
         detection="ExecStart= parsing as for service_execstart_sets_env.",
         remediation=["systemctl start {unit}", "systemctl show {unit} -p ExecStart"],
         messages={"": "{unit}: {line} runs {how}; how it changes METNOS_SANDBOX or PATH cannot be determined "
                       "({note}). Only the live process can tell."},
         hint=("Start the service and let the audit read the live environment (/proc/<MainPID>/environ), or "
               "simplify ExecStart= so that it does not touch METNOS_SANDBOX or PATH.")),
    restriction(Restriction(
        code="unit_blocks_namespaces", rule="R-BASE-6",
        title="The unit forbids the namespaces bwrap needs",
        cause="RestrictNamespaces= excludes user, mnt, ipc, uts or net: bwrap fails inside the service only, "
              "with a misleading 'No permissions to create new namespace' text.",
        detection="RestrictNamespaces= of the unit (systemd-analyze security scores it as good: a trade-off).",
        fix="RestrictNamespaces=user mnt ipc uts net",
        messages={"seen": "{unit}: RestrictNamespaces={values} forbids the {missing} namespace(s) bwrap creates: "
                          "bwrap fails with 'No permissions to create new namespace' inside the service only."})),
    restriction(Restriction(
        code="unit_syscall_filter_blocks_bwrap", rule="R-BASE-6",
        title="The unit's SystemCallFilter kills bwrap",
        cause="SystemCallFilter= does not allow mount/pivot_root/umount2/unshare/clone: bwrap is killed by "
              "SIGSYS (exit 159) with no message.",
        detection="SystemCallFilter= evaluated with systemd's allow/deny semantics and syscall groups.",
        fix="SystemCallFilter=mount pivot_root umount2",
        messages={"killed": "{unit}: SystemCallFilter= blocks {blocked}: bwrap is killed by SIGSYS (exit 159, no "
                            "message) inside the service.",
                  "errno": "{unit}: SystemCallFilter= blocks {blocked}: bwrap fails with {errno} "
                           "(SystemCallErrorNumber=), e.g. 'Failed to make / slave: Operation not permitted' inside "
                           "the service."},
        fix_note="It names the blocked calls: it adds them to an allow list, removes them from a deny list.")),
    restriction(Restriction(
        code="unit_address_families_block_netlink", rule="R-BASE-7",
        title="The unit's RestrictAddressFamilies leaves out AF_NETLINK",
        cause="RestrictAddressFamilies= does not allow AF_NETLINK: bwrap --unshare-net cannot bring up loopback "
              "('loopback: Failed to create NETLINK_ROUTE socket: Address family not supported by protocol'), so "
              "every executor without network fails inside the service only.",
        detection="RestrictAddressFamilies= evaluated with systemd's allow/deny merge rules (measured on a real unit: "
                  "docs/unit-directives.md).",
        fix="RestrictAddressFamilies=AF_NETLINK",
        messages={"seen": "{unit}: RestrictAddressFamilies={values} leaves out {families}: bwrap cannot bring up "
                          "loopback in the sandbox's network namespace ('loopback: Failed to create NETLINK_ROUTE "
                          "socket: Address family not supported by protocol') for every executor without network."},
        fix_note="It adds AF_NETLINK to an allow list, removes it from a deny list.")),
    restriction(Restriction(
        code="unit_proc_subset_pid", rule="R-BASE-2",
        title="The unit hides /proc/sys",
        cause="ProcSubset=pid: bwrap reads /proc/sys/kernel/overflowuid on start and fails with "
              "'Can't read /proc/sys/kernel/overflowuid' (measured with bubblewrap 0.8 and 0.12).",
        detection="ProcSubset= of the unit.",
        fix="ProcSubset=all",
        messages={"seen": "{unit}: ProcSubset=pid hides /proc/sys: bwrap fails with 'Can't read "
                          "/proc/sys/kernel/overflowuid'."})),
    restriction(Restriction(
        code="unit_restrict_suidsgid", rule="R-BASE-6",
        title="RestrictSUIDSGID breaks bubblewrap 0.12",
        cause="RestrictSUIDSGID=yes (or DynamicUser=yes) makes openat2() fail with ENOSYS; bubblewrap 0.12 "
              "then fails with 'Can't mkdir parents for /tmp: Function not implemented'. Older bwrap: warning.",
        detection="RestrictSUIDSGID=/DynamicUser= of the unit and the bwrap version.",
        fix="RestrictSUIDSGID=no",
        messages={"fails": "{unit}: {why} makes openat2() return ENOSYS; bubblewrap {version} fails ('Can't mkdir "
                           "parents for ...: Function not implemented').",
                  "warns": "{unit}: {why} makes openat2() return ENOSYS; bubblewrap {version} works today but 0.12+ "
                           "fails ('Can't mkdir parents for ...: Function not implemented')."})),
    Code(code="unit_no_new_privileges_setuid", severity=WARNING, rule="R-BASE-6", section=SERVICE_ENVIRONMENT,
         title="NoNewPrivileges cancels a setuid bwrap",
         cause="The unit sets (or implies) NoNewPrivileges and bwrap is setuid: the setuid bit is ignored, so "
               "bwrap needs unprivileged user namespaces.",
         detection="NoNewPrivileges= and the implying directives, with the bwrap binary's mode.",
         remediation=["chmod 0755 {bwrap_path}"],
         messages={"": "{unit}: NoNewPrivileges (explicit or implied) cancels the setuid bit of {bwrap_path}: bwrap "
                       "takes the unprivileged path and needs user namespaces."},
         hint="Enable unprivileged user namespaces first (see the userns_* diagnostics), then drop the setuid bit."),
])
# ---- enforce's own refusals (fail_json(code=...), service/enforce_write.py): nothing was written ----
CODES.extend([
    Code(code="enforce_path_not_a_folder", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A file stands where enforce's drop-in folder is expected",
         cause="A component of the drop-in folder's path is a regular file (or another non-folder): enforce cannot "
               "create the folder there and wrote nothing.",
         detection="Each folder opened component by component (O_NOFOLLOW|O_DIRECTORY, base/files.py).",
         remediation=["ls -ld <path>", "rm <path>"],
         hint="The result's refused.path names the file and its owner; remove it (second command) if it is debris."),
    Code(code="enforce_link_refused", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A symbolic link on the way to enforce's files, in a folder someone else can write",
         cause="A folder on the way to the drop-in is a symbolic link in a folder that a user other than root (or the "
               "writer) can write: root does not follow it (it could point into a root-only folder); nothing was "
               "written.",
         detection="Each folder opened component by component without following links, except links in folders only "
                   "root can write (base/files.py).",
         remediation=["ls -ld <path>", "rm <path>"],
         hint="Remove the link (second command) and run enforce again: it creates a real folder there."),
    Code(code="enforce_file_not_regular", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A FIFO, link or other non-regular file stands in place of enforce's drop-in or PATH file",
         cause="The managed drop-in or its PATH file is not a regular file (a FIFO, a socket, a device, a folder or a "
               "symbolic link): it is neither read (a FIFO would block) nor followed; nothing was written.",
         detection="open(O_NOFOLLOW|O_NONBLOCK) and fstat of the file (base/files.py).",
         remediation=["ls -l <path>", "rm <path>"],
         hint="Remove it (second command) and run enforce again: it writes a regular file there."),
    Code(code="enforce_path_refused", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A path enforce does not go through",
         cause="The drop-in's path has a '..' component, or a managed file is larger than enforce reads back.",
         detection="The checks of base/files.py.",
         remediation=["ls -ld <path>"],
         hint="The result's refused.reason says which."),
    Code(code="enforce_write_failed", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="enforce could not write its drop-in",
         cause="Writing the drop-in or its PATH file failed (as root for a system unit, as the user for a user unit: "
               "the kernel refused the user a folder it cannot write, e.g. a link into a root-only folder).",
         detection="The error of the write (base/files.py), done as the unit's user in user scope.",
         remediation=["ls -ld <path>"],
         hint="The result's refused.path names the folder; in user scope it must be the user's own."),
    Code(code="enforce_content_not_users", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="The user unit's ExecStart= comes from a file its user cannot read",
         cause="The drop-in enforce writes for a user unit would copy ExecStart= lines from a unit file the user "
               "cannot read (a link to a root-only unit): root-only content never goes into a file the user can "
               "read; nothing was written.",
         detection="Opening each unit file the lines come from as the user (a child forked as the user).",
         remediation=["ls -lL <path>"],
         hint="Give the user a unit file of its own instead of a link to a root-only one."),
    Code(code="enforce_exec_not_roots", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="enforce would write an ExecStart= that runs as root a program someone else can change",
         cause="The drop-in's ExecStart= runs as root (the service's user is root, or a + or ! prefix) and its "
               "program, a folder on the way, a link or its interpreter can be changed by a user other than root: "
               "systemd would run that user's code as root at the next start. Nothing was written.",
         detection="base/owners.py on each program of the line (the command, and the program env(1) runs).",
         remediation=["ls -ld <path>", "chown root:root <path>", "chmod go-w <path>"],
         hint="The result's refused.fix is the command for the first component found; or run the service as its "
              "own user (run_as)."),
    Code(code="enforce_script_not_roots", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="enforce would write an ExecStart= that runs as root a script someone else can change",
         cause="The drop-in's ExecStart= runs as root (the service's user is root, or a + or ! prefix) an interpreter "
               "(python, sh, bash, perl...) with a script file, and that script, a folder on its way or a link can be "
               "changed by a user other than root, or the script is not an absolute path: systemd would run that "
               "user's code as root at the next start. Nothing was written. Code given with -c is judged as data.",
         detection="The first word after the interpreter's options (none after -c or -m) judged by base/owners.py: "
                   "every component from /, each link in its folder.",
         remediation=["ls -ld <path>", "chown root:root <path>", "chmod go-w <path>"],
         hint="The result's refused.fix is the command for the first component found; or install the script where "
              "root keeps it (/usr/local/lib), or run the service as its own user (run_as)."),
    Code(code="enforce_exec_word_not_roots", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="enforce would write an ExecStart= that runs as root with a path someone else can change",
         cause="The drop-in's ExecStart= runs as root (the service's user is root, or a + or ! prefix) and one of its "
               "words holds an absolute path (the word, after '=', in inline code, after an option's letter) that a "
               "user other than root can change, or whose nearest existing folder they can write: a program, a wrapper "
               "or code given on the line may run or load it as root. Nothing was written.",
         detection="base/owners.py on every absolute path in every word of the line: every component from /, each "
                   "link.",
         remediation=["ls -ld <path>", "chown root:root <path>", "chmod go-w <path>"],
         hint="The result's refused.path names the word's path, refused.fix the command for its first component."),
    Code(code="enforce_exec_env_refused", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="enforce would write an ExecStart= whose env(1) sets a variable that loads code",
         cause="The drop-in's ExecStart= runs as root through env(1) with an assignment of BASH_ENV, ENV, HOME, "
               "PYTHON*, PERL*, RUBY*, NODE_*, LD_* or a like variable, or of a PATH with a relative folder or "
               "followed by a command named without its path: a shell, an interpreter or the loader would read code or "
               "find programs in a place this check does not judge. Nothing was written.",
         detection="The names of env(1)'s NAME=value words, matched against the list of variables that load code.",
         remediation=["systemctl cat <unit>"],
         hint="Remove the assignment (refused.path names the variable), or run the service as its own user."),
    Code(code="enforce_exec_option_refused", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="enforce would write an ExecStart= with an option that loads code this check does not judge",
         cause="The drop-in's ExecStart= runs as root a program with an option that gives code or a place to find code "
               "(env -S, python -m/-c without -I, perl -x/-d/-i, ruby -C, php -d, lua -l), shell -c code that builds "
               "words the check cannot see ($, `, ~, globs, ./, '.', source, eval), or loads a file by a relative "
               "path: the code would come from a place this check does not judge. Nothing was written.",
         detection="The options of the line's programs, walked by the table of each known program "
                   "(service/enforce_write.py).",
         remediation=["systemctl cat <unit>"],
         hint="refused.path names the option; drop it, add -I to python, or run a script root owns."),
    Code(code="enforce_exec_option_unknown", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="enforce would write an ExecStart= with an option this check does not know",
         cause="The drop-in's ExecStart= runs as root a wrapper (env, nice, timeout, setpriv...) or an interpreter "
               "(python, sh, bash, perl...) with an option that is not in its table, or without the argument it needs: "
               "unknown is a failure, since it could load code. Nothing was written.",
         detection="The options of the line's programs, walked by the table of each known program "
                   "(service/enforce_write.py).",
         remediation=["systemctl cat <unit>"],
         hint="refused.path names the option; drop it, or run the service as its own user (run_as)."),
    Code(code="enforce_exec_wrapper_refused", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="enforce would write an ExecStart= whose program runs other code in a way this check does not model",
         cause="The drop-in's ExecStart= runs as root a program that runs another command or code (sudo, su, xargs, "
               "flock, chroot, find, awk...) whose words this check does not model, or wrappers nested too deep: "
               "deny by default. Nothing was written.",
         detection="The base name of the line's program (and of what each modelled wrapper runs) against the known "
                   "wrappers.",
         remediation=["systemctl cat <unit>"],
         hint="refused.path names the program; run the program itself, or run the service as its own user."),
    Code(code="enforce_exec_relative_path", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="enforce would write an ExecStart= that runs as root with a path relative to its working directory",
         cause="The drop-in's ExecStart= runs as root with a word (or a value after '=') that starts with ./ or ../: "
               "it is found from the unit's working directory, which this check does not judge. Nothing was written.",
         detection="Every word of the line and every value after '=' in it.",
         remediation=["systemctl cat <unit>"],
         hint="Name it by its absolute path (refused.fix runs realpath on it)."),
])
