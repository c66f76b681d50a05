# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of what the sandbox holds: every descriptor by where it leads, the session, the keyrings,
the root's content and the payload's process attributes (issues 41 and 51).

Split from codes_probe.py (the probe's other codes) to keep each module under the size limit; data only,
importing base/registry.py alone; base/diagnostics.py gathers it into the one registry right after codes_probe.py,
so the registry's order is unchanged. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from .registry import (
    ERROR,
    INFO,
    NOT_ROOTS_FIXES,
    NOT_ROOTS_HINT,
    PROBE,
    Code,
    not_roots_messages,
)

CODES: List[Code] = []
# ---- what the sandbox holds (issue 41): every descriptor by where it leads, the session, the root's content ----
_HELD_EVIDENCE = ("The payload's descriptors read from the host's /proc/PID/fd and fdinfo while it waits (never "
                  "its own report): the stdio slots among the probe's own pipes (its own descriptor table), every "
                  "other pipe's and socket's holders found in one pass over /proc/*/fd and /proc/*/task/*/fd (each "
                  "pipe end with its direction, from fdinfo), a socket's network namespace "
                  "from /proc/PID/net, a device by its device number.")
_HELD_FIX = ("systemctl show -p ExecStart -p Environment <unit>", "command -v bwrap", "dpkg -S \"$(command -v bwrap)\"")
_HELD_HINT = ("Find what handed it in: compare the rendered argv with the one the service runs "
              "(metnos.sandbox.sandbox_profile), and check the bwrap the service executes and what wraps it (the "
              "commands). Start the executor with only its own pipes open (close every other descriptor before "
              "bwrap, e.g. close_fds=True), then run the probe again.")
_ATTRIBUTE_EVIDENCE = ("The payload's /proc/PID/personality, stat (nice, priority, policy), limits, oom_score_adj and "
                       "status (NoNewPrivs, Seccomp, the capability sets), read from the host while it waits, compared "
                       "with the same files of its starter: the probe itself, or in a transient unit the unit's "
                       "process before it ran bwrap.")
_ATTRIBUTE_FIX = ("command -v bwrap", "dpkg -S \"$(command -v bwrap)\"")
_ATTRIBUTE_HINT = ("Find what wraps bwrap (setarch, nice, prlimit, choom, a wrapper script): compare the command the "
                   "service runs with the rendered argv (metnos.sandbox.sandbox_profile), start bwrap directly, then "
                   "run the probe again.")
CODES.extend([
    Code(code="probe_descriptor_outside", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds a pipe or socket that leads outside it",
         cause="A pipe or socket the payload holds has another holder outside the sandbox and the probe (a host shell "
               "reading what the sandbox writes runs it in the host's namespaces), is a socket made in another network "
               "namespace, is a named pipe of the host, or one of its stdin, stdout and stderr is not the probe's own "
               "pipe.", detection=_HELD_EVIDENCE, remediation=list(_HELD_FIX),
         messages={"": "the payload holds a channel that leads outside the sandbox: {said}{traced}"},
         hint=_HELD_HINT),
    Code(code="probe_descriptor_unseen", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds a pipe or socket whose other end the probe cannot find",
         cause="A pipe the payload holds beyond its stdin, stdout and stderr, or a unix socket's peer (sock_diag), has "
               "no other end held by the sandbox or the probe: no process is seen holding it (every process's and "
               "thread's descriptor table read, /proc/*/fd and /proc/*/task/*/fd), so it is kept in flight in a "
               "socket's queue (sent with SCM_RIGHTS, received later by whoever reads that socket), held out of sight, "
               "or in a table that could not be read. Unknown is a failure: whoever takes that end reads what the "
               "sandbox writes, or writes what it reads.",
         detection=_HELD_EVIDENCE, remediation=list(_HELD_FIX),
         messages={"": "the payload holds a pipe or socket whose other end is not the sandbox's or the probe's: "
                       "{said}{traced}"},
         hint=_HELD_HINT),
    Code(code="probe_descriptor_terminal", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds a terminal",
         cause="The payload holds a descriptor of a terminal (a pty master or slave, /dev/tty, a console, a virtual "
               "console's screen /dev/vcs*, a serial line): it types into the shell that reads that terminal "
               "(TIOCSTI, or a pty master's input), reads its screen or writes to it.",
         detection=_HELD_EVIDENCE, remediation=list(_HELD_FIX),
         messages={"": "the payload holds a terminal: {said}{traced}"},
         hint=_HELD_HINT),
    Code(code="probe_descriptor_device", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds a device the profile does not give it",
         cause="The payload holds a character device other than the memory-class nodes bwrap's --dev makes (null, "
               "zero, full, random, urandom): a tun/tap device attached to an interface outside (the sandbox's "
               "packets leave despite --unshare-net), /dev/kmsg (the kernel log, read and forged), /dev/mem, ...",
         detection=_HELD_EVIDENCE, remediation=list(_HELD_FIX),
         messages={"": "the payload holds a device the profile does not give it: {said}{traced}"},
         hint=_HELD_HINT),
    Code(code="probe_descriptor_block", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds a block device",
         cause="The payload holds a block device: every file on it is readable (and writable) past the mounts.",
         detection=_HELD_EVIDENCE, remediation=list(_HELD_FIX),
         messages={"": "the payload holds a block device: {said}{traced}"},
         hint=_HELD_HINT),
    Code(code="probe_descriptor_namespace", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds a namespace of another process",
         cause="The payload holds a namespace descriptor: it can join that namespace (setns) or keep it alive.",
         detection=_HELD_EVIDENCE, remediation=list(_HELD_FIX),
         messages={"": "the payload holds a namespace: {said}{traced}"},
         hint=_HELD_HINT),
    Code(code="probe_descriptor_pidfd", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds a process descriptor",
         cause="The payload holds a pidfd: it can signal that process and take its descriptors (pidfd_getfd) where "
               "the kernel lets it.",
         detection=_HELD_EVIDENCE, remediation=list(_HELD_FIX),
         messages={"": "the payload holds a process descriptor: {said}{traced}"},
         hint=_HELD_HINT),
    Code(code="probe_descriptor_watch", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds an event descriptor made outside it",
         cause="The payload holds an epoll, inotify, fanotify, signalfd or other anonymous-inode descriptor it did not "
               "make: it watches files or processes outside the sandbox.",
         detection=_HELD_EVIDENCE, remediation=list(_HELD_FIX),
         messages={"": "the payload holds an event descriptor: {said}{traced}"},
         hint=_HELD_HINT),
    Code(code="probe_descriptor_file", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds a file or directory from outside",
         cause="The payload holds a descriptor of a file or directory of the host (openat reaches every host file past "
               "the mounts), or a descriptor the probe could not read (not proven).",
         detection=_HELD_EVIDENCE, remediation=list(_HELD_FIX),
         messages={"": "the payload holds a file or directory from outside: {said}{traced}"},
         hint=_HELD_HINT),
    Code(code="probe_controlling_terminal", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox has a controlling terminal",
         cause="The payload's session has a controlling terminal (the service under systemd has none): with no "
               "descriptor left to it, the sandbox opens /dev/tty, reads and writes the terminal, and pushes input to "
               "the shell reading it with the TIOCSTI ioctl - allowed unless the kernel's dev.tty.legacy_tiocsti is 0 "
               "(Linux 6.2 and later; the setting is absent before, and TIOCSTI always allowed).",
         detection="The payload's session, process group and tty_nr from the host's /proc/PID/stat; "
                   "/proc/sys/dev/tty/legacy_tiocsti.",
         remediation=["sysctl -w dev.tty.legacy_tiocsti=0"],
         messages={"": "{said}{traced}"},
         hint=("Start bwrap with --new-session (setsid: no controlling terminal), or run the executor only from the"
               " service (systemd gives it none), then run the probe again; the command refuses TIOCSTI host-wide "
               "(Linux 6.2+).")),
    Code(code="probe_attribute_personality", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox runs with personality flags its starter does not have",
         cause="The payload's personality(2) flags differ from its starter's (the probe, or the service's unit "
               "process): ADDR_NO_RANDOMIZE (setarch -R) switches address space layout randomisation off, "
               "READ_IMPLIES_EXEC makes every readable mapping executable; each makes an exploit of the executor "
               "easier.",
         detection=_ATTRIBUTE_EVIDENCE, remediation=list(_ATTRIBUTE_FIX),
         messages={"": "the payload's process attributes are weaker than its starter's: {said}{traced}"},
         hint=_ATTRIBUTE_HINT),
    Code(code="probe_attribute_priority", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox runs at a higher scheduling priority than its starter",
         cause="The payload's nice value is lower (a higher priority: nice -15), or its scheduling policy or real-time "
               "priority differs from its starter's: the sandbox takes the CPU from the host and the service.",
         detection=_ATTRIBUTE_EVIDENCE, remediation=list(_ATTRIBUTE_FIX),
         messages={"": "the payload's process attributes are weaker than its starter's: {said}{traced}"},
         hint=_ATTRIBUTE_HINT),
    Code(code="probe_attribute_rlimit", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox runs with higher resource limits than its starter",
         cause="A resource limit of the payload (soft or hard, /proc/PID/limits) is higher than its starter's, or "
               "unlimited where the starter's is not: the limits the service sets do not hold in the sandbox.",
         detection=_ATTRIBUTE_EVIDENCE, remediation=list(_ATTRIBUTE_FIX),
         messages={"": "the payload's process attributes are weaker than its starter's: {said}{traced}"},
         hint=_ATTRIBUTE_HINT),
    Code(code="probe_attribute_oom", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox is spared by the OOM killer before its starter",
         cause="The payload's oom_score_adj is lower than its starter's: under memory pressure the kernel kills the "
               "host's processes before the sandbox.",
         detection=_ATTRIBUTE_EVIDENCE, remediation=list(_ATTRIBUTE_FIX),
         messages={"": "the payload's process attributes are weaker than its starter's: {said}{traced}"},
         hint=_ATTRIBUTE_HINT),
    Code(code="probe_attribute_privileges", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox runs with no_new_privs or seccomp weaker than its starter's",
         cause="The payload's no_new_privs flag or seccomp mode is lower than its starter's (the service's unit "
               "process sets them: NoNewPrivileges=, SystemCallFilter=), or they could not be read.",
         detection=_ATTRIBUTE_EVIDENCE, remediation=list(_ATTRIBUTE_FIX),
         messages={"": "the payload's process attributes are weaker than its starter's: {said}{traced}"},
         hint=_ATTRIBUTE_HINT),
    Code(code="probe_attribute_ambient", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds ambient capabilities its starter has not",
         cause="The payload's ambient capability set (CapAmb) has a capability its starter's has not (setpriv "
               "--ambient-caps before bwrap run as root without --unshare-user): every program the payload executes "
               "keeps it.",
         detection=_ATTRIBUTE_EVIDENCE, remediation=list(_ATTRIBUTE_FIX),
         messages={"": "the payload's process attributes are weaker than its starter's: {said}{traced}"},
         hint=_ATTRIBUTE_HINT),
    Code(code="probe_attribute_bounding", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox's capability bounding set is wider than its starter's",
         cause="In its starter's user namespace, the payload's bounding set (CapBnd) has a capability its starter's "
               "has not: the kernel never widens a bounding set within a user namespace, so the payload was not "
               "started from its starter's context.",
         detection=_ATTRIBUTE_EVIDENCE, remediation=list(_ATTRIBUTE_FIX),
         messages={"": "the payload's process attributes are weaker than its starter's: {said}{traced}"},
         hint=_ATTRIBUTE_HINT),
    Code(code="probe_attribute_capabilities", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox holds capabilities its starter has not",
         cause="The payload's inheritable set (CapInh), or in its starter's user namespace its permitted or effective "
               "set, has a capability its starter's has not, or a set could not be read.",
         detection=_ATTRIBUTE_EVIDENCE, remediation=list(_ATTRIBUTE_FIX),
         messages={"": "the payload's process attributes are weaker than its starter's: {said}{traced}"},
         hint=_ATTRIBUTE_HINT),
    Code(code="probe_attribute_securebits", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox runs with fewer securebits than its starter",
         cause="In its starter's user namespace, the payload's securebits (securebits(7): noroot, no_setuid_fixup, "
               "keep_caps_locked, no_cap_ambient_raise and their locks) lack a bit its starter's hold: something "
               "between them cleared it (a wrapper with CAP_SETPCAP before bwrap), and the payload regains what the "
               "bit denied (root's capabilities on execve, raising ambient capabilities). A new user namespace starts "
               "with none (the kernel's rule): there they are not compared.",
         detection="The payload's own prctl(PR_GET_SECUREBITS), reported through the collector (/proc does not show "
                   "them), compared with the probe's own, or in a transient unit with the unit's SecureBits=.",
         remediation=list(_ATTRIBUTE_FIX),
         messages={"": "the payload's process attributes are weaker than its starter's: {said}{traced}"},
         hint=_ATTRIBUTE_HINT),
    Code(code="probe_keyring_shared", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="The sandbox shares a session keyring with processes outside it",
         cause="Keyrings are not namespaced: bwrap has no keyring option, and a process keeps the session keyring it "
               "inherits in any namespace. The payload's session keyring is not its own: it was joined before the "
               "payload started (its starter's: a login's pam_keyinit keyring, a service's KeyringMode=private "
               "keyring, which the service and every executor it starts share), or it is the probe's own. The sandbox "
               "then reads and links the keys the others put there, and adds keys they read: a channel no namespace "
               "closes, between the host and the sandbox and between executors.",
         detection="The serials of the payload's session, user and user-session keyrings (keyctl "
                   "KEYCTL_GET_KEYRING_ID, never creating one, reported through the collector), compared with the "
                   "probe's own and with each other: a session keyring that is not the user-session keyring of the "
                   "payload's own user namespace was joined by whoever started it.",
         remediation=[
             "systemctl show -p KeyringMode -p SystemCallFilter <unit>",
             "systemctl edit --drop-in=metnos-keyring <unit>"],
         messages={"": "the payload's keyrings are not its own: {said}{traced}"},
         hint=("Severity error, measured: a sandbox that joined a host process's session keyring read its key, and "
               "the host read back a key the sandbox added (tests/integration/test_probe_keyrings.py); in a "
               "service, two executors share the service's keyring the same way. KeyringMode=private only keeps "
               "services apart, not the executors of one service: give the unit a drop-in with "
               "'[Service]' 'SystemCallFilter=~@keyring:EPERM' (bwrap makes no keyctl call: the probe runs under it; "
               "keyctl then fails with EPERM instead of killing its caller), "
               "then run the probe again. Run directly, start the probe from a shell without a session keyring "
               "(not a login that ran pam_keyinit), or through the service.")),
    Code(code="probe_keyring_keys", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="Keys of others are linked where the sandbox can reach them",
         cause="A key or keyring is linked in the payload's session, user or user-session keyring (the payload adds "
               "none): the service's or another executor's key, possessed by the sandbox, which may read, update or "
               "revoke it as their owner's permissions allow. Or /proc/keys shows the payload a key of another "
               "keyring: keyrings are not namespaced and bwrap cannot hide them (no keyring option; /proc/keys is the "
               "kernel's, filtered by permission only, and a key's owner is a kuid: the sandbox runs with the "
               "service user's). The service user's own user keyring (@u, the host's) is reachable by its serial: "
               "the sandbox links it into its own session keyring, then reads every key in it, and can add keys the "
               "service reads. KeyringMode= does not help (a user keyring is the uid's, not the unit's).",
         detection="The serials linked in the payload's keyrings (KEYCTL_READ) and each key's type, owner, group and "
                   "permissions (KEYCTL_DESCRIBE; never its description or payload), and the keys other than keyrings "
                   "that /proc/keys shows the payload (serial, type, owner, group, permissions; public 'asymmetric' "
                   "keys aside), reported through the collector.",
         remediation=[
             "systemctl show -p KeyringMode -p SystemCallFilter <unit>",
             "systemctl edit --drop-in=metnos-keyring <unit>"],
         messages={"": "the payload reaches keys it did not add: {said}{traced}"},
         hint=("Keep keys out of the executor's reach: a drop-in with '[Service]' 'SystemCallFilter=~@keyring:EPERM' "
               "for the unit that starts the executors (enforce's filter_keyrings, role variable "
               "metnos_sandbox_filter_keyrings: keyctl then fails inside, and nothing is reachable by serial), or no "
               "keys in the service user's own user keyring (keyctl show @u as that user; keyctl clear @u) nor in a "
               "keyring the executors inherit, then run the probe again.")),
    Code(code="probe_keyring_unit", severity=INFO, rule="R-SCOPE-3", section=PROBE,
         title="The service's executors share the unit's session keyring",
         cause="In the service's unit the payload holds the unit's own session keyring (systemd's KeyringMode=private, "
               "the default for system services: one keyring per start of the service, with systemd's invocation_id "
               "key in it). Keyrings are not namespaced: every executor the service starts holds the same keyring, and "
               "one executor can add a key that the next reads. Not the host's keyring: other keys in it are "
               "probe_keyring_keys.",
         detection="The payload's session keyring serial is not its user-session keyring's (KEYCTL_GET_KEYRING_ID, "
                   "through the collector), run in the transient unit that carries the service's context; a key "
                   "named invocation_id in it is systemd's only when the probe reads it from outside as a user key of "
                   "uid 0 whose content is the unit's InvocationID (systemctl show; the content compared, never "
                   "reported), else it is probe_keyring_keys.",
         remediation=["systemctl show -p KeyringMode -p SystemCallFilter -p NoNewPrivileges <unit>",
                      "systemctl edit --drop-in=metnos-keyring <unit>"],
         messages={"": "executors of this service share its session keyring: {said}{traced}"},
         hint=("Severity info, decided on evidence: the keyring is the unit's, created by systemd at start, with "
               "only systemd's invocation_id key in it (any other key is the error probe_keyring_keys, and the "
               "host's keyrings the error probe_keyring_shared): a channel between executors of one service that "
               "needs code on both ends, not a way to the host. As a warning it would make every audit of a "
               "well-kept unit 'warn' with a fix that costs a setuid bwrap. Closing it takes a drop-in with "
               "'[Service]' 'SystemCallFilter=~@keyring:EPERM' (keyctl answers EPERM, bwrap makes no keyctl call: "
               "the probe proves it under the drop-in). For a unit with User= systemd then implies "
               "NoNewPrivileges=yes, which stops a setuid bwrap: opt in where bwrap is not setuid (the default, "
               "unprivileged user namespaces), then run the probe again.")),
    Code(code="probe_keyring_invocation_ids", severity=INFO, rule="R-SCOPE-3", section=PROBE,
         title="A root payload sees other units' invocation IDs",
         cause="Keyrings are not namespaced: /proc/keys shows a process every key it may view, and systemd puts an "
               "invocation_id key (type user, owner uid 0, user view, read and search) in the session keyring of "
               "each unit it starts. A payload that runs as root (uid 0 in its user namespace is the host's root) "
               "sees the invocation_id key of every running unit and may read it, or invalidate it (search "
               "permission). An InvocationID is no secret (the journal names it), so this is not an error.",
         detection="Each key of type user that /proc/keys shows the payload beyond its own keyrings (at most 64) is "
                   "described and read (at most 64 bytes, compared, never reported) by the probe from outside, and "
                   "compared with the InvocationIDs systemd publishes (the links "
                   "/run/systemd/units/invocation:<unit>, read on a folder descriptor, the folders root's only): a "
                   "user key of uid 0 named invocation_id whose content is the InvocationID of a unit other than "
                   "the probe's own. Any other key is probe_keyring_keys, the invocation_id keys of another "
                   "systemd's units too (a container's: keyrings are the kernel's, and that systemd publishes its "
                   "IDs in its own /run).",
         remediation=["systemctl show -p User -p SystemCallFilter <unit>",
                      "systemctl edit --drop-in=metnos-keyring <unit>"],
         messages={"": "the payload runs as root and sees other units' invocation IDs: {said}{traced}"},
         hint=("Run the executors as a user other than root (User= in the unit: a non-root payload views no root "
               "key), or give the unit a drop-in with '[Service]' 'SystemCallFilter=~@keyring:EPERM' (keyctl then "
               "fails inside and /proc/keys is not reachable by serial), then run the probe again.")),
    Code(code="probe_root_undeclared", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="Something on the sandbox's root was not created by the profile",
         cause="A file, directory or symlink lies on the sandbox's own root file system (not under any mount) that the "
               "profile does not create, or not of the type it makes there: a host file copied in with --file FD PATH "
               "or --bind-data (under a new name, or under the name of a symlink the profile makes), a symlink with "
               "another target, readable inside without a mount or a descriptor left over.",
         detection="The sandbox's root listed from outside through the host's /proc/PID/root (bounded, not entering "
                   "mounts, symlinks read and never followed), compared with the profile's destinations and the "
                   "directories above them, and each symlink the profile makes with its declared target.",
         remediation=["command -v bwrap", "dpkg -S \"$(command -v bwrap)\""],
         messages={"": "{said}{traced}"},
         hint=("Compare the rendered argv (metnos.sandbox.sandbox_profile) with the one the service runs, and the "
               "bwrap it executes (the commands).")),
    Code(code="probe_root_swapped", severity=ERROR, rule="R-SCOPE-1", section=PROBE,
         title="A file the profile copies onto the sandbox's root holds other content",
         cause="A file the profile copies onto the sandbox's root (--file FD DEST) has the declared size but not the "
               "declared content: the descriptor bwrap read was swapped for another file of the same size (a host "
               "secret under a declared name, readable inside without a mount), or the content could not be hashed.",
         detection="The file's sha256, read from outside through the host's /proc/PID/root (each component opened "
                   "with O_NOFOLLOW on the root's own file system, bounded), compared with the sha256 of the content "
                   "the profile gives bwrap there.",
         remediation=["command -v bwrap", "dpkg -S \"$(command -v bwrap)\""],
         messages={"": "{said}{traced}"},
         hint=("Compare the rendered argv (metnos.sandbox.sandbox_profile) and the descriptors it opens with the ones "
               "the service runs, and the bwrap it executes (the commands).")),
    # ---- root runs only what root owns (issue 49; base/owners.py) ----
    Code(code="probe_python_not_roots", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="The interpreter the probe would run as root is not root's: the probe did not run",
         cause="The probe would run the payload as root (the service runs as root, or no user was given) on an "
               "interpreter (host.python_executable, the probe's python) that someone other than root can change: a "
               "folder on the way, a link, the file or its interpreter. It was not started.",
         detection="lstat() of every component from /, each link judged in its folder, the file's #! or ELF "
                   "interpreter walked again (base/owners.py), before anything runs it.",
         remediation=list(NOT_ROOTS_FIXES["unknown"]), variants=NOT_ROOTS_FIXES,
         messages=not_roots_messages("{program} was not run as root"), hint=NOT_ROOTS_HINT),
])
