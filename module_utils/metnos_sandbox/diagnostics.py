# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One shape for every finding, and the one registry of codes.

Every failure anywhere in the toolkit becomes a ``Diagnostic`` built from
``REGISTRY``: the code is stable and machine-readable, the message says what
was seen on this host, and the remediation is a list with one command or step
per item (copy-pasteable, never run together).

The registry is the only place a code's severity, spec rule, report section,
title, cause (the default message), message templates and remediation live; a
call site fills ``{placeholders}``, may pick one of the code's named message
templates (``wording``) and remediation ``variants``, and never writes its own
message or remediation (``make`` refuses both). Codes a module returns when it
fails (``fail_json(code=...)``) are registered too (section ``module``).
tests/unit/test_diagnostics_registry.py walks the sources and fails on a code
that is emitted but not registered.

The documentation's code reference (docs/diagnostics.md) is generated from
this table by ``scripts/gen-diagnostics-doc.py``; a unit test fails when the
two drift apart.

Pure Python, no Ansible imports: it runs on managed hosts (Python >= 3.8) and
on the controller.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
import reprlib
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, cast

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)
_RANK = {ERROR: 0, WARNING: 1, INFO: 2}

# Report sections (one JUnit test case per host and section; see report.py). Every code has one.
SANDBOX_ACTIVE = "sandbox_active"
BWRAP_BINARY = "bwrap_binary"
KERNEL_USERNS = "kernel_userns"
SMOKE_TEST = "smoke_test"
SERVICE_ENVIRONMENT = "service_environment"
PROFILES = "profiles"
PROBE = "probe"
REACHABILITY = "reachability"
MODULE = "module"          # a module's own failure (fail_json): never a finding of a host report
MONITOR = "monitor"        # the continuous proof's own install, configuration and outputs (monitor.py)
SECTIONS = (SANDBOX_ACTIVE, BWRAP_BINARY, KERNEL_USERNS, SMOKE_TEST, SERVICE_ENVIRONMENT, PROFILES, PROBE,
            REACHABILITY, MODULE, MONITOR)

Diagnostic = Dict[str, Any]
"""The dict form of a finding: code, severity, rule, title, message, remediation[, details]."""


class UnregisteredCode(KeyError):
    """A code that is not in the registry was asked for (a defect of the toolkit, never of the input)."""


class Code(object):
    """Static description of one diagnostic code."""

    __slots__ = ("code", "severity", "rule", "section", "title", "cause", "detection", "remediation",
                 "variants", "messages")

    def __init__(self, code: str, severity: str, rule: str, section: str, title: str, cause: str,
                 detection: str, remediation: Sequence[str],
                 variants: Optional[Mapping[str, Sequence[str]]] = None,
                 messages: Optional[Mapping[str, str]] = None) -> None:
        if severity not in SEVERITIES or section not in SECTIONS:
            raise ValueError("%s: severity %r / section %r" % (code, severity, section))
        self.code = code
        self.severity = severity
        self.rule = rule
        self.section = section
        self.title = title
        self.cause = cause
        self.detection = detection
        self.remediation: Tuple[str, ...] = tuple(remediation)
        self.variants: Dict[str, Tuple[str, ...]] = dict((k, tuple(v)) for k, v in (variants or {}).items())
        # The message template (what was seen) by variant; "" is the default, the cause when absent.
        self.messages: Dict[str, str] = dict(messages or {})


def _c(code: str, severity: str, rule: str, section: str, title: str, cause: str, detection: str,
       remediation: Sequence[str], variants: Optional[Mapping[str, Sequence[str]]] = None,
       messages: Optional[Mapping[str, str]] = None) -> Code:
    return Code(code, severity, rule, section, title, cause, detection, remediation, variants, messages)


# The smallest drop-in that relaxes one unit directive for bwrap ({relax} is the line to add).
_DROPIN_FIX = ("Smallest fix, as a drop-in (enforce mode writes it with metnos_sandbox_relax_restrictions=true):",
               "mkdir -p /etc/systemd/system/{unit}.d",
               "printf '[Service]\\n{relax}\\n' >> /etc/systemd/system/{unit}.d/zz-metnos-sandbox.conf",
               "systemctl daemon-reload", "systemctl restart {unit}")
_RESTRICTION_VARIANTS = {"dropin": _DROPIN_FIX, "no_dropin": ("{relax_note}",)}


def _restriction(code: str, rule: str, title: str, cause: str, detection: str, fix: str,
                 messages: Mapping[str, str]) -> Code:
    """A unit directive that breaks bwrap inside the service (service_env.DIRECTIVE_CODES): fixed by the
    drop-in line ``fix`` and a daemon-reload, or by the smallest drop-in enforce mode can write."""
    return _c(code, ERROR, rule, SERVICE_ENVIRONMENT, title, cause, detection,
              ["Drop-in: " + fix, "systemctl daemon-reload"], _RESTRICTION_VARIANTS, messages)


# Remediation items may contain ``{placeholders}`` filled from the context given to ``make``;
# an item that is exactly one placeholder whose value is a list becomes that list's items.
# Unknown placeholders are left as they are.
# bwrap_smoke_failed / probe_setup_failed: the steps of the cause bwrap's stderr was classified as
# (bwrap.CAUSES, documented with this registry).
_CLASSIFIED = {"classified": ("{cause_remediation}",)}

# A manifest value refused with the accepted forms (manifest._err): {value} is an excerpt, {expected} the forms.
_REFUSED = {"refused": "{field}: {value} is refused: {expected}"}

# A manifest-written path refused by the host's rules (profile judge_scope): {access} is read-only/writable.
_JUDGED = {"judged": "{field}: {access} {path}: {problem}",
           "judged_from": "{field}: {access} {path} (from {what}): {problem}"}

_CODES: List[Code] = [
    # ---- status() quartet and the runtime outcome (R-DIAG-1, R-FAIL-1) ----
    _c("executor_os_sandbox_unavailable", ERROR, "R-FAIL-1", SANDBOX_ACTIVE,
       "The runtime would refuse every ordinary executor",
       "bwrap is not on the PATH that was checked, or METNOS_SANDBOX disables the sandbox. "
       "runtime/sandbox.py fails closed before any subprocess starts.",
       "status(): bwrap_available is false or disabled_via_env is true.",
       ["Fix the diagnostics listed with it (bwrap_missing, sandbox_disabled_via_env, "
        "service_path_missing_bwrap); this one clears when they do."],
       messages={"profile_no_bwrap": "{executor} refused: bwrap is not on PATH (R-FAIL-1)",
                 "profile_disabled": "{executor} refused: METNOS_SANDBOX disables it (R-FAIL-1)",
                 "why": "The runtime would refuse every ordinary executor with executor_os_sandbox_unavailable: "
                        "{why}.",
                 "running": "The running process would refuse every ordinary executor with "
                            "executor_os_sandbox_unavailable ({view})."}),
    _c("bwrap_missing", ERROR, "R-DIAG-2", SANDBOX_ACTIVE,
       "bwrap is not on PATH",
       "No executable named bwrap was found in the PATH that was checked ({path}).",
       "Lookup of 'bwrap' through each PATH entry, as execvp would.",
       ["Debian/Ubuntu: apt-get install bubblewrap",
        "Fedora/RHEL: dnf install bubblewrap",
        "Arch: pacman -S bubblewrap",
        "If bwrap is installed elsewhere, add its directory to the PATH the service uses."]),
    _c("sandbox_disabled_via_env", ERROR, "R-FAIL-1", SANDBOX_ACTIVE,
       "METNOS_SANDBOX disables the sandbox",
       "METNOS_SANDBOX is set to a disabling value (0, off, no, false; any case).",
       "The effective METNOS_SANDBOX value is compared case-insensitively with 0/off/no/false.",
       ["Remove METNOS_SANDBOX from the environment of the service, or set METNOS_SANDBOX=1.",
        "Find where it is set: systemctl show {unit} -p Environment -p EnvironmentFiles"],
       messages={"where": "METNOS_SANDBOX={shown} in the {where} disables the sandbox (R-FAIL-1)."}),
    _c("sandbox_env_value_ambiguous", WARNING, "R-FAIL-1", SANDBOX_ACTIVE,
       "METNOS_SANDBOX has a surprising value",
       "The value is not one the runtime treats as disabling, but it looks like an attempt to "
       "disable (surrounding whitespace, another spelling of false such as n/f/disabled) or is "
       "empty. The runtime keeps the sandbox on; the admin may believe it is off, or the reverse.",
       "The value is compared with systemd's boolean spellings and stripped/lower-cased forms.",
       ["Set an explicit value: METNOS_SANDBOX=1 (sandbox on) or remove the variable.",
        "Do not rely on spellings other than 0/off/no/false to disable it."],
       messages={"reason": "METNOS_SANDBOX: {reason}."}),
    # ---- the bwrap binary ----
    _c("bwrap_setuid", WARNING, "R-SEC-6", BWRAP_BINARY,
       "bwrap is installed setuid root",
       "The bwrap binary has the setuid bit. bubblewrap 0.12 refuses setuid use; setuid mode "
       "refuses several options, scrubs LD_LIBRARY_PATH/TMPDIR and is disabled by NoNewPrivileges.",
       "stat() of the resolved bwrap: mode & 04000.",
       ["Debian/Ubuntu: dpkg-statoverride --quiet --remove {bwrap_path} || true",
        "chmod 0755 {bwrap_path}",
        "Arch: pacman -S bubblewrap   (replaces bubblewrap-suid)",
        "Enable unprivileged user namespaces (see userns_* diagnostics)."],
       messages={"": "{bwrap_path} is setuid root (mode {mode}).",
                 "refused": "{bwrap_path} is setuid root (mode {mode}); bubblewrap {version} refuses setuid use."}),
    _c("bwrap_not_root_owned", ERROR, "R-SEC-6", BWRAP_BINARY,
       "bwrap is not owned by root or is writable by others",
       "The resolved bwrap binary (or a directory above it) is not owned by root, or is group/"
       "world-writable: anyone with that access can replace the sandbox.",
       "stat() of the binary and of every parent directory up to /.",
       ["chown root:root {bwrap_path}",
        "chmod 0755 {bwrap_path}",
        "Reinstall the distro package: apt-get install --reinstall bubblewrap "
        "(dnf reinstall bubblewrap; pacman -S bubblewrap)"],
       messages={"": "{problems}."}),
    _c("bwrap_not_packaged", WARNING, "R-DIAG-2", BWRAP_BINARY,
       "bwrap is not owned by a distro package",
       "The bwrap that resolves on PATH is not owned by any installed package (self-built or "
       "copied), so it gets no security updates and may shadow the packaged one.",
       "dpkg -S / rpm -qf / pacman -Qo on the resolved path.",
       ["Remove the unmanaged copy: rm {bwrap_path}",
        "Install the distro package (bubblewrap) and make sure /usr/bin comes first in PATH."],
       messages={"": "{bwrap_path} is not owned by any installed package."}),
    _c("bwrap_feature_missing", ERROR, "R-BASE-6", BWRAP_BINARY,
       "bwrap lacks an option the profile needs",
       "'bwrap --help' does not list {missing}. The version string alone is not trusted "
       "(distros backport options).",
       "Options parsed from 'bwrap --help'.",
       ["Upgrade bubblewrap from the distro: apt-get install --only-upgrade bubblewrap "
        "(dnf upgrade bubblewrap; pacman -Syu bubblewrap)"],
       messages={"": "bwrap {version} at {bwrap_path} lacks {missing} (parsed from --help)."}),
    _c("bwrap_smoke_failed", ERROR, "R-DIAG-3", SMOKE_TEST,
       "A real bwrap invocation failed",
       "bwrap could not set up the sandbox when run as {user}: {cause_text}",
       "A real bwrap run with --unshare-user --unshare-ipc --unshare-uts --unshare-net "
       "--die-with-parent and --json-status-fd; a missing exit-code record means setup failed; "
       "stderr is classified by pattern.",
       ["See the remediation of the classified cause ({cause})."], _CLASSIFIED),
    _c("bwrap_smoke_skipped", INFO, "R-DIAG-3", SMOKE_TEST,
       "The smoke test was not run",
       "{reason}",
       "smoke_test option or missing prerequisites.",
       ["Run with smoke_test=true as root (so the module can switch to an unprivileged user)."],
       {"no_bwrap": ["Install bubblewrap first (see bwrap_missing)."]}),
    _c("smoke_ran_as_root", WARNING, "R-DIAG-3", SMOKE_TEST,
       "The smoke test ran as root",
       "Running bwrap as root hides user-namespace failures: root does not need a user "
       "namespace, the service user does.",
       "The effective uid of the smoke test was 0.",
       ["Run the smoke test as the service user: smoke_user=<the unit's User=>"]),
    # ---- kernel knobs (F1, F2, F3, F4, F6) ----
    _c("userns_disabled_sysctl", ERROR, "R-BASE-6", KERNEL_USERNS,
       "kernel.unprivileged_userns_clone is 0",
       "Unprivileged user namespaces are disabled by kernel.unprivileged_userns_clone=0 "
       "(Debian/Ubuntu/Arch kernels; often set by hardening roles such as dev-sec os_hardening). "
       "bwrap fails with 'No permissions to create new namespace'.",
       "/proc/sys/kernel/unprivileged_userns_clone; the file that sets it via "
       "systemd-sysctl --cat-config.",
       ["echo 'kernel.unprivileged_userns_clone = 1' > /etc/sysctl.d/99-zz-metnos-bwrap.conf",
        "sysctl --system",
        "If a hardening role sets it to 0, override it there (dev-sec: sysctl_overwrite) rather "
        "than fighting it on every run."]),
    _c("userns_max_namespaces_zero", ERROR, "R-BASE-6", KERNEL_USERNS,
       "user.max_user_namespaces is 0",
       "No user namespaces may be created (RHEL/STIG default RHEL-09-213105, or Debian's "
       "recommended way to disable them). bwrap fails with ENOSPC.",
       "/proc/sys/user/max_user_namespaces.",
       ["echo 'user.max_user_namespaces = 15000' > /etc/sysctl.d/99-zz-metnos-bwrap.conf",
        "sysctl --system",
        "On STIG-managed hosts record a documented exception instead of flipping the value back "
        "and forth with the compliance tool."]),
    _c("userns_apparmor_restricted", ERROR, "R-BASE-6", KERNEL_USERNS,
       "AppArmor restricts unprivileged user namespaces",
       "kernel.apparmor_restrict_unprivileged_userns=1 (Ubuntu 24.04+) and no AppArmor profile "
       "grants userns to bwrap. bwrap fails with 'setting up uid map: Permission denied' or "
       "'loopback: Failed RTM_NEWADDR'.",
       "/proc/sys/kernel/apparmor_restrict_unprivileged_userns; profiles attached to bwrap in "
       "/sys/kernel/security/apparmor/profiles.",
       ["apt-get install apparmor-profiles apparmor-utils",
        "install -m0644 /usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/",
        "apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict",
        "Check first that no other profile already attaches to /usr/bin/bwrap (two attachments "
        "cancel each other)."],
       messages={"profiles_loaded": "AppArmor restricts unprivileged user namespaces, and profile(s) for bwrap "
                                    "are loaded ({profiles}); if bwrap still fails, two attachments may conflict."}),
    _c("selinux_enforcing", INFO, "R-BASE-6", KERNEL_USERNS,
       "SELinux is enforcing",
       "SELinux may deny user_namespace create for confined domains "
       "('Creating new namespace failed: Permission denied').",
       "/sys/fs/selinux/enforce.",
       ["If bwrap fails: ausearch -m AVC,USER_AVC -c bwrap",
        "Build a local policy module from the reviewed AVCs (audit2allow); do not setenforce 0."]),
    _c("running_in_container", INFO, "R-BASE-6", KERNEL_USERNS,
       "The host is a container",
       "Running inside {container}: the outer runtime's seccomp, AppArmor and /proc masking "
       "decide whether bwrap can work.",
       "systemd-detect-virt --container, /run/.containerenv, /.dockerenv, /proc/1/environ.",
       ["podman: --security-opt unmask=ALL (bwrap --proc needs an unmasked /proc)",
        "docker: a seccomp profile that allows unshare/clone(CLONE_NEWUSER)"]),
    # ---- manifests and profiles (R-CAP-*, R-ARG-1, R-SEC-*) ----
    _c("manifest_parse_error", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "The manifest cannot be read",
       "The manifest file is unreadable, or not valid YAML/JSON.",
       "Loading the manifest.",
       ["Check the file named in the message; validate it with: python3 -c 'import yaml,sys; "
        "yaml.safe_load(open(sys.argv[1]))' FILE"],
       messages={"no_yaml": "YAML needs PyYAML on this host; give the manifest as JSON (or render it through the "
                            "role, which parses it on the controller)",
                 "syntax": "not valid YAML/JSON: {problem}{at}",
                 "alias": "undefined alias *{anchor}",
                 "not_path": "manifest file: {where} is not a path",
                 "unreadable": "{where}: cannot read: {error}",
                 "not_regular": "{where}: not a regular file",
                 "not_text": "{where}: a manifest is text, got {type}"}),
    _c("manifest_missing", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "The manifest file does not exist",
       "The manifest file named by the task does not exist on the host that reads it.",
       "Opening the manifest file.",
       ["Check the path (manifest_file, or the manifest list of the role); a manifest file is read on "
        "the host that renders it."],
       messages={"unreadable": "{where}: cannot read: {error}"}),
    _c("manifest_not_utf8", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "The manifest is not UTF-8 text",
       "The manifest contains bytes that are not valid UTF-8, or a NUL byte.",
       "Decoding the file as UTF-8.",
       ["Re-export the manifest as UTF-8: iconv -f <encoding> -t UTF-8 FILE"],
       messages={"byte": "{where}: byte {byte} is not valid UTF-8 ({reason}); manifests are UTF-8 text",
                 "surrogates": "{where}: contains lone surrogates; manifests are UTF-8 text",
                 "nul": "{where}: contains a NUL byte"}),
    _c("manifest_invalid", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "A manifest field is invalid",
       "A required field is missing, a field has the wrong type, or an unknown field is present.",
       "Strict validation of every manifest field.",
       ["Fix the field named in the message; see examples/manifests/ for valid manifests."],
       messages=dict(_REFUSED, **{
           "number_range": "the number {number} is out of range",
           "path_number_range": "{field}: the number is out of range",
           "path_key": "{field}: the key {key} is not a string",
           "not_data": "{field}: a {type} is not manifest data (mappings, lists, strings, numbers, booleans)"})),
    _c("capability_unknown", ERROR, "R-CAP-FS", SANDBOX_ACTIVE,
       "Unknown capability",
       "The capability is not in the closed grammar; an unknown capability is never rendered.",
       "Parsing every capability against the closed set of forms.",
       ["Use one of the accepted forms listed in the message."],
       messages=_REFUSED),
    _c("capability_reserved", ERROR, "R-SEC-5", SANDBOX_ACTIVE,
       "A reserved capability was requested",
       "system:undo belongs to the byte-pinned undo_last_turn broker only.",
       "Any manifest other than the pinned undo broker declaring system:undo.",
       ["Remove system:undo from the manifest."],
       messages={"not_broker": "{executor} declares system:undo, reserved for the pinned {broker} broker (R-SEC-5)"}),
    _c("scope_relative", ERROR, "R-CAP-FS", SANDBOX_ACTIVE,
       "A path scope is relative",
       "Fixed scopes must be absolute paths or globs.",
       "Lexical check of each fs: scope.",
       ["Write the scope as an absolute path, e.g. fs:read:/srv/metnos/data/**"],
       messages=_REFUSED),
    _c("scope_nul", ERROR, "R-CAP-FS", SANDBOX_ACTIVE,
       "A path contains NUL or control characters",
       "NUL bytes and control characters are never valid in a path scope or argument path.",
       "Lexical check of each scope and argument value.",
       ["Remove the control characters from the scope or argument."],
       messages=dict(_REFUSED, **_JUDGED,
                     arg="{field}: {value} contains NUL, control or format characters (R-ARG-1)")),
    _c("scope_not_normalized", ERROR, "R-ARG-1", SANDBOX_ACTIVE,
       "A path scope is not normalised",
       "'.', '..' or '//' in a scope hide what it really grants.",
       "Lexical check of each scope.",
       ["Write the normalised absolute path (realpath) instead."],
       messages=dict(_REFUSED, arg="{field}: {value} has a '.' or '..' component, '//' or a trailing '/': the "
                                   "kernel resolves '..' after the symbolic link before it, text would collapse it "
                                   "before (R-ARG-1)")),
    _c("scope_too_broad", ERROR, "R-SEC-2", SANDBOX_ACTIVE,
       "A scope is too broad",
       "The scope's root (after glob reduction) is '/', a system tree, or a shared tree such as /opt "
       "or /home; rendering it would expose or make writable far more than one executor needs.",
       "Glob reduction to the root, then comparison with the broad and system trees.",
       ["Narrow the scope to the executor's own folder, e.g. fs:write:/var/lib/metnos/<executor>/**"],
       messages=_JUDGED),
    _c("arg_undeclared", ERROR, "R-ARG-1", SANDBOX_ACTIVE,
       "An arg: scope names an undeclared argument",
       "fs:*:arg:<name> refers to an argument the manifest does not declare.",
       "Cross-check of capabilities and arguments.",
       ["Declare the argument under 'arguments' with its 'within' scopes, or fix the name."],
       messages=_REFUSED),
    _c("arg_scope_unbounded", ERROR, "R-ARG-1", SANDBOX_ACTIVE,
       "A path argument has no bounding scope",
       "An argument used as a path scope must declare the scopes it may narrow ('within'); "
       "otherwise the argument could widen the sandbox.",
       "Each argument used by an arg: scope has a non-empty 'within'.",
       ["Add within: [/the/allowed/root/**] to the argument's declaration."],
       messages=_REFUSED),
    _c("arg_escapes_scope", ERROR, "R-ARG-1", SANDBOX_ACTIVE,
       "An argument value escapes its declared scope",
       "The argument's path, once '..' is resolved, is outside every 'within' scope: an argument may "
       "narrow a capability, never widen it. A 'within' scope written as a glob is a pattern: the value "
       "must be at or below a path it matches (with 'within: [/srv/notes/*.md]' the folder /srv/notes "
       "itself is outside).",
       "Normalisation of the value, then containment in the declared roots and a match of the glob "
       "below them ('**' any number of components, '*' '?' '[...]' within one, '{a,b}' alternatives; "
       "a pattern with more than 64 alternatives or 65,536 matching steps matches nothing).",
       ["Pass a path inside the declared scope, or change the manifest's declared scope (re-signing it)."],
       messages={"outside": "{field}={value} resolves to {path}, outside the declared scope {within} (R-ARG-1: "
                            "narrow, never widen)",
                 "outside_hard": "{field}={value} resolves to {path}, outside the declared scope {within} (R-ARG-1: "
                                 "narrow, never widen) (a pattern with more than {alternatives} brace alternatives, "
                                 "or that needs more than {steps} steps to match, matches nothing)"}),
    _c("arg_symlink_escapes", ERROR, "R-ARG-1", SANDBOX_ACTIVE,
       "An argument value leads out of its scope through a symlink",
       "The argument's path is inside the scope lexically but a symlink on it resolves outside (or to a "
       "path the 'within' pattern does not match).",
       "realpath() of the value, then containment in the realpath of the declared roots and the same "
       "pattern match below them.",
       ["Pass the real path, or remove the symlink that points outside the scope."],
       messages={"symlink": "{field}={value}: {path} leads through a symlink to {real}, outside {inside} (R-ARG-1)"}),
    _c("arg_value_invalid", ERROR, "R-ARG-1", SANDBOX_ACTIVE,
       "An argument value is not a usable path",
       "The argument value is not a string, is empty, or contains control characters.",
       "Type and lexical checks of the invocation's argument values.",
       ["Pass the argument as a non-empty path string."],
       messages={"not_path": "{field}: {value} is not a path string (non-empty, at most {limit} characters, no '~' "
                             "expansion) (R-ARG-1)"}),
    _c("metnos_resource_unknown", ERROR, "R-CAP-METNOS", SANDBOX_ACTIVE,
       "Unknown Metnos resource",
       "metnos:* capabilities name a closed set of semantic resources; this one is not in it.",
       "Lookup in the resource map of the host context.",
       ["Use a known resource (listed in the message) or add it to metnos_sandbox_resources."],
       messages={"unknown": "{capability}: unknown resource {resource}; known: {known} (R-CAP-METNOS)"}),
    _c("undo_exception_mismatch", ERROR, "R-FAIL-2", SANDBOX_ACTIVE,
       "undo_last_turn does not match the pinned exception",
       "A manifest named undo_last_turn differs from the byte-pinned exception (name, origin, revision, "
       "owner, capability, file list, entrypoint (the file that runs unsandboxed, main.py unless pinned), "
       "or the digest computed from the broker's files on disk). A later "
       "revision does not inherit the exception: it fails closed.",
       "Exact comparison with the pinned exception of the host context; the digest is computed from the "
       "executor's files on disk, never taken from the manifest alone.",
       ["Pin the reviewed revision in metnos_sandbox_host.undo_exception: name, origin, revision, owner, "
        "capability, files and the digest the message shows (computed from disk); or restore the reviewed "
        "broker."],
       messages={"fields": "{executor} (revision {revision}) does not match the pinned exception on: {mismatched}. It "
                           "fails closed (R-FAIL-2)",
                 "digest": "{executor}: the digest computed from the files on disk in {folder} is {computed}, not the "
                           "pinned {pinned}. It fails closed (R-FAIL-2)"}),
    # ---- input limits: a manifest is data, bounded before it is interpreted (docs/profile-invariants.md) ----
    _c("manifest_too_large", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "The manifest is larger than the limit",
       "The manifest text is larger than {limit} bytes (a real manifest is a few hundred bytes).",
       "Size of the file (fstat) or text, before it is decoded.",
       ["Check that the right file is given; a manifest lists capabilities, not data."],
       messages={"size": "{where}: {size} bytes is larger than the {limit}-byte limit for a manifest"}),
    _c("manifest_too_many_nodes", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "The manifest has too many YAML/JSON nodes",
       "The manifest has more than {limit} nodes, counting every YAML alias as the nodes it expands "
       "to (counted before anything is expanded), or an alias refers to itself.",
       "Counting events while composing the document, aliases by their anchor's expanded size.",
       ["Write the manifest without anchors and aliases, listing each value once."],
       messages={"yaml": "more than {limit} YAML nodes (aliases counted as the nodes they expand to)",
                 "self_alias": "the alias *{anchor} refers to itself (infinite expansion)",
                 "nodes": "more than {limit} nodes"}),
    _c("manifest_too_deep", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "The manifest is nested too deeply",
       "Mappings and lists are nested more than {limit} levels deep.",
       "Nesting depth while composing the document.",
       ["A manifest needs at most five levels (manifest > arguments > name > within > scope)."],
       messages={"interpreter": "nested deeper than the interpreter can parse (limit {limit})",
                 "yaml": "nested too deeply",
                 "levels": "nested more than {limit} levels deep",
                 "path_levels": "{field}: nested more than {limit} levels deep"}),
    _c("manifest_duplicate_key", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "A key appears twice in one mapping",
       "The same key appears twice in one YAML/JSON mapping. YAML and JSON loaders usually keep the last "
       "one silently, so a reviewer and the renderer could read two different manifests.",
       "Duplicate detection while composing each mapping.",
       ["Keep one occurrence of the key named in the message."],
       messages={"json_key": "key {key} appears twice in one mapping",
                 "yaml_key": "the key {key} appears twice in one mapping"}),
    _c("manifest_yaml_unsupported", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "The manifest uses a YAML feature that is not accepted",
       "Explicit tags, merge keys ('<<'), non-string keys, several documents, or YAML 1.1 number forms "
       "(octal, hexadecimal, sexagesimal) that silently change a value.",
       "The closed set of YAML features accepted while composing the document.",
       ["Write plain mappings, lists and quoted strings; quote values such as revisions."],
       messages={"documents": "a manifest is one YAML document",
                 "alias_key": "an alias cannot be a mapping key",
                 "key_type": "the key {key} is not a string (quote it)",
                 "merge": "YAML merge keys ('<<') are not accepted",
                 "key_anchor": "anchors on keys are not accepted",
                 "explicit_tag": "the explicit YAML tag {tag} is not accepted (plain strings, numbers, booleans, "
                                 "null, lists and mappings only)",
                 "tag": "the YAML tag {tag} is not accepted (plain strings, numbers, booleans, null, lists and "
                        "mappings only)",
                 "not_number": "{number} is not a number",
                 "yaml11_number": "{number} is a YAML 1.1 number form (octal, hex, sexagesimal, digit separators) "
                                  "that changes its value; quote it",
                 "collection_tag": "the YAML tag {tag} is not accepted",
                 "collection_key": "a mapping key must be a string, not a collection"}),
    _c("manifest_string_too_long", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "A string in the manifest is longer than the limit",
       "A key or string value is longer than {limit} characters.",
       "Length of every key and string while checking the document.",
       ["Shorten the value named in the message."],
       messages={"length": "{field}: a string of {length} characters is longer than the {limit}-character limit"}),
    _c("manifest_control_character", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "A manifest string contains control characters",
       "A string field contains a control, format or line-separator character (C0/C1 controls, "
       "bidirectional overrides, zero-width characters, lone surrogates): what a reviewer sees would "
       "not be what is granted.",
       "Every string field is matched against its grammar; control and format characters never match.",
       ["Remove the invisible characters (cat -A FILE shows them)."],
       messages=_REFUSED),
    _c("manifest_too_many_capabilities", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "The manifest declares too many capabilities",
       "More than {limit} capabilities are declared.",
       "Length of the capabilities list, before any capability is parsed.",
       ["Split the executor or use glob scopes; a real executor needs a handful of capabilities."],
       messages={"count": "{field}: {count} capabilities; the limit is {limit}"}),
    _c("capability_too_long", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "A capability is longer than the limit",
       "A capability string is longer than {limit} characters.",
       "Length of each capability string, before it is parsed.",
       ["Shorten the scope path of the capability named in the message."],
       messages={"length": "{field}: {value} is {length} characters long; the limit is {limit}"}),
    _c("manifest_too_many_arguments", ERROR, "R-ARG-1", SANDBOX_ACTIVE,
       "The manifest declares too many arguments",
       "More than {limit} arguments are declared.",
       "Length of the arguments mapping, before any argument is checked.",
       ["Declare only the arguments used as path scopes."],
       messages={"count": "{field}: {count} arguments; the limit is {limit}"}),
    _c("manifest_too_many_scopes", ERROR, "R-ARG-1", SANDBOX_ACTIVE,
       "An argument declares too many 'within' scopes",
       "An argument lists more than {limit} 'within' scopes.",
       "Length of each 'within' list.",
       ["Use fewer, narrower scopes."],
       messages={"count": "{field}: {count} scopes; the limit is {limit}"}),
    _c("manifest_too_many_files", ERROR, "R-FAIL-2", SANDBOX_ACTIVE,
       "The manifest lists too many files",
       "The 'files' list has more than {limit} entries.",
       "Length of the 'files' list.",
       ["List only the executor's own files."],
       messages={"count": "{field}: {count} files; the limit is {limit}"}),
    _c("invocation_invalid", ERROR, "R-ARG-1", SANDBOX_ACTIVE,
       "The invocation is not usable",
       "The invocation is not a mapping of arguments, turn_id and sender, has unknown keys, or has "
       "too many argument values.",
       "Type, key and size checks of the invocation before rendering.",
       ["Pass invocation: {arguments: {name: value}, turn_id: <id>, sender: <name>}."],
       messages={"not_mapping": "invocation: {value} is not a mapping",
                 "unknown_key": "invocation: unknown key {key}; accepted: arguments, turn_id, sender",
                 "arguments": "invocation.arguments: {value} is not a mapping of at most {limit} values"}),
    # ---- resolved paths and the invariants of a rendered profile (docs/profile-invariants.md) ----
    _c("scope_reserved_tree", ERROR, "R-BASE-4", SANDBOX_ACTIVE,
       "A scope reaches a tree reserved to another grant",
       "The scope is at, below or above a tree that only its own capability may reach: the executors "
       "folder (every executor's code), the integrations folder, the mail credential store, the dialog "
       "folder or the undo root. Granting it would expose every sibling (other executors, accounts, "
       "senders or turns).",
       "Resolved scope compared with the resolved reserved trees of the host context.",
       ["Use the capability made for that resource (provider:access, mail:read, dialog.user_input, the "
        "inverse model) instead of an fs: scope."],
       messages=_JUDGED),
    _c("scope_symlink_refused", ERROR, "R-CAP-FS", SANDBOX_ACTIVE,
       "A scope leads through a symlink to a refused tree",
       "The scope's text passes the checks but its fully resolved form on this host (every symlink "
       "followed, e.g. /var/run -> /run, /lib -> usr/lib, a link into /etc) is refused by the same rules. "
       "The mount would have exposed the symlink's target.",
       "os.path.realpath() of the scope on the host that renders, then the same refusal rules.",
       ["Replace the symlink by a real directory, or declare the real path if it is acceptable."],
       messages={"symlink": "{field}: {access} {path} resolves through a symlink to {real}: {problem}"}),
    _c("scope_mount_alias", ERROR, "R-BASE-4", SANDBOX_ACTIVE,
       "A scope reaches a refused tree through a bind mount",
       "The scope is at, below or above a folder that is a refused tree mounted again under another "
       "path: the Metnos install on a data disk bind-mounted at its configured path (fstab "
       "'/data/metnos /srv/metnos none bind'), /etc or a part of it mounted for a backup or a "
       "container, a bind of /, /proc or /run. realpath cannot see bind mounts, so the path passes "
       "every rule as written and resolved, while the mount would expose the tree (or make a "
       "read-only one writable).",
       "/proc/self/mountinfo of the host that renders: every mount's filesystem and root give each "
       "refused tree's aliases (every path showing the same folder, or a part of it); the scope is "
       "then judged against them with the same rules. The final check does the same on the argv.",
       ["Declare the path under its configured name if it is acceptable, or remove the bind mount "
        "(findmnt -o TARGET,SOURCE lists them)."],
       messages=_JUDGED),
    _c("scope_special_file", ERROR, "R-CAP-FS", SANDBOX_ACTIVE,
       "A scope is a socket, a FIFO or a device node",
       "A fixed scope, the root of a glob, a 'within' scope or an argument value resolves to a Unix "
       "socket, a FIFO or a device node. A bind mount does not make these read-only in any useful "
       "sense: through a read-only bind the sandbox can still connect to a socket and send commands "
       "to the host process behind it (a container engine, systemd, an agent) or write into a FIFO. "
       "Only plain files and folders are granted.",
       "stat() of the fully resolved path on the host that renders (after the symlink rules); the "
       "final check refuses any bind whose source is one, except the admin's systemd/system read paths.",
       ["Declare the folder or file the executor really needs; reach host services through their own "
        "capability (systemd:read, system:read, provider:access)."],
       messages={"special": "{field}: {access} {path} is {kind}; only files and folders are granted (R-CAP-FS)",
                 "special_real": "{field}: {access} {path} ({real}) is {kind}; only files and folders are granted "
                                 "(R-CAP-FS)"}),
    _c("scope_hard_link", ERROR, "R-BASE-4", SANDBOX_ACTIVE,
       "A file scope has several names (hard links)",
       "A fixed scope or an argument value resolves to a regular file whose link count is above one. "
       "A hard link is the same file under another name, and realpath cannot tell where the other "
       "names are: writing it may write a file of a read-only base tree (the runtime, /etc), and "
       "reading it may read a reserved one (a mail credential file). Files inside a granted folder "
       "are not examined (the bind is the whole tree).",
       "os.stat() of the fully resolved path: a regular file with st_nlink > 1; the final check "
       "refuses any writable bind of one.",
       ["Grant the folder the file lives in, or give the file a single name "
        "(find / -xdev -samefile FILE lists its names)."],
       messages={"hard_link": "{field}: {access} {path} is a file with several names (hard links): its other names "
                              "may be in a read-only or reserved tree, which realpath cannot see (R-BASE-4, R-ARG-1)",
                 "hard_link_real": "{field}: {access} {path} ({real}) is a file with several names (hard links): its "
                                   "other names may be in a read-only or reserved tree, which realpath cannot see "
                                   "(R-BASE-4, R-ARG-1)"}),
    _c("scope_runtime_tree", ERROR, "R-CAP-SYS", SANDBOX_ACTIVE,
       "A scope is at, below or above /run (the host daemons' sockets)",
       "/run (and its alias /var/run) holds the sockets of the host's daemons: systemd, D-Bus, "
       "container engines, user sessions. A read-only bind of any of it still lets the sandbox talk "
       "to them. Manifest-written paths (scopes, 'within' scopes, argument values) may not reach it, "
       "as written or resolved; host state is read through systemd:read / system:read, whose paths "
       "the admin configures (metnos_sandbox_host.systemd_read_paths, system_read_paths).",
       "The scope as written and fully resolved, at, below or above /run or /var/run (resolved too).",
       ["Use systemd:read or system:read and configure the needed paths in the host context; keep "
        "executor data out of /run."],
       messages=_JUDGED),
    _c("host_path_refused", ERROR, "R-BASE-4", SANDBOX_ACTIVE,
       "A host-context path cannot be mounted safely",
       "A path of the host context (the Metnos install's real paths: runtime, Python prefix and package "
       "roots, executors, i18n/lexicon databases, resources, indexes, integrations, credentials, "
       "dialog, undo) resolves to a tree that would expose or make writable more than its grant: a "
       "shared root, /proc or /dev, a reserved tree, a read-only base tree made writable, or it leaves "
       "its folder through a symlink.",
       "os.path.realpath() of each host path at render time, then the same refusal rules as for scopes.",
       ["Fix the host key named in the message (metnos_sandbox_host) to the real, dedicated path."],
       messages={"host_key": "host.{host_key} = {path}: {problem}",
                 "mount_table": "{path} is larger than {limit} bytes: the bind mounts that alias a refused tree "
                                "cannot all be seen, so no profile is rendered"}),
    _c("profile_invariant_violated", ERROR, "R-SEC-1", SANDBOX_ACTIVE,
       "A rendered profile broke an invariant and was withheld",
       "The final check of the rendered mounts and flags found a writable mount outside every declared, "
       "resolved scope, a read-only base tree writable or shadowed, a flag no rule grants, or a mount "
       "out of canonical order. The profile is refused (fail closed); this is a defect of the renderer "
       "or a filesystem that changed while rendering.",
       "An independent check of the rendered argv against invariants (a)-(d) of docs/profile-invariants.md.",
       ["Render again; if it persists, report the manifest and host context (the renderer has a bug)."],
       messages={"withheld": "{executor}: the rendered profile was withheld: {violated}",
                 "two_sources": "{target} would be mounted from two sources ({first} and {second}, by {by})"}),
    _c("profile_preview", INFO, "R-DIAG-3", SANDBOX_ACTIVE,
       "This profile is a preview rendered off the target host",
       "The profile was rendered where the manifest's paths cannot be resolved as the target host sees "
       "them (a filter on the controller): symlinks, existence and base paths are the controller's.",
       "Rendered by a controller-side face.",
       ["Render the final profile on the host: the metnos.sandbox.sandbox_profile module (make run)."],
       messages={"preview": "rendered off the target host (controller paths, symlinks and existence); the final "
                 "profile is rendered on the host by metnos.sandbox.sandbox_profile"}),
    _c("undo_files_invalid", ERROR, "R-FAIL-2", SANDBOX_ACTIVE,
       "The pinned undo broker's files cannot be verified",
       "The digest of the undo broker is computed from its files on disk; a listed file is missing, not a "
       "regular file, a symlink, too large, or the folder holds files that are not listed.",
       "Reading each listed file below the executor's folder without following symlinks.",
       ["Restore the reviewed broker's files exactly as listed, then pin their digest."],
       messages={"unverified": "{executor}: the broker's files in {folder} cannot be verified: {problem}. It fails "
                               "closed (R-FAIL-2)"}),
    _c("grant_skipped", INFO, "R-ARG-1", SANDBOX_ACTIVE,
       "A grant was not mounted",
       "A declared resource does not exist on this host or is not known (unknown index name, missing "
       "argument value, missing mail account, no authenticated sender or turn): nothing is granted.",
       "Existence and lookup checks at render time.",
       ["Nothing to do if expected; otherwise create the path or fix the name in the message."],
       messages={"missing_scope": "{what}: {path} does not exist on this host; not mounted",
                 "missing": "{what}: {path} does not exist; not mounted",
                 "no_arg_value": "{what}: no value for argument {arg} in this invocation; nothing mounted",
                 "missing_arg_path": "{what}={value}: {path} does not exist; not mounted (R-ARG-1)",
                 "unknown_index": "{what}: unknown index {index} grants nothing (R-CAP-INDEX)",
                 "missing_integration": "{what}: integration folder {path} does not exist; not mounted",
                 "no_credential": "{what}: no credential file for account {account}; nothing mounted (R-CAP-MAIL)",
                 "no_sender": "dialog.user_input: no authenticated sender (or an invalid one: {sender}) in the "
                              "invocation; nothing mounted (R-CAP-DIALOG)",
                 "missing_dialog": "dialog.user_input: {path} does not exist; not mounted",
                 "no_turn": "inverse model declared but the turn (turn_id={turn}) is missing or invalid; nothing "
                            "mounted (R-CAP-UNDO)",
                 "missing_turn": "inverse model declared but the turn folder {path} is missing; nothing mounted "
                                 "(R-CAP-UNDO)",
                 "missing_own": "executor folder {path} does not exist; not mounted"}),
    # ---- the real wrapped probe (R-DIAG-3) ----
    _c("probe_not_isolated", ERROR, "R-DIAG-3", PROBE,
       "bwrap ran the payload without isolation",
       "The probe payload ran and reported, but not inside a sandbox: the process that ran it is not the "
       "child bwrap reported (no or a false --json-status-fd child-pid: a bwrap look-alike), or it shares "
       "every namespace the profile unshares with bwrap's parent context. The message lists the checks that "
       "show it.",
       "Outside evidence from the host's /proc: the payload process is found by its exact command line and "
       "tied to bwrap's child-pid and to the bwrap that was started; its namespace inodes are compared with "
       "bwrap's.",
       ["Check which binary ran: ls -l {bwrap_path} ; dpkg -S {bwrap_path} (rpm -qf, pacman -Qo)",
        "Reinstall the distro package and remove look-alikes from the service's PATH: "
        "apt-get install --reinstall bubblewrap"],
       messages={"unisolated": "{tool} ran the payload (as {user}) without isolation: {failed}.{traced}"}),
    _c("probe_check_failed", ERROR, "R-DIAG-3", PROBE,
       "The sandbox does not hold what the profile promises",
       "A check of the probe failed or could not be proven: a namespace is shared, a read-only bind is "
       "mounted read-write, a bind (or a mount below it) is not the declared host path, something is mounted "
       "where the profile mounts nothing, a hidden path is visible, /tmp or /dev is not a fresh tmpfs (or /dev "
       "holds device nodes bwrap's --dev does not make), /proc is not a procfs showing the payload, the network "
       "is not isolated, another process holds a namespace said to be private, the payload holds capabilities, "
       "a seccomp filter of its own, a descriptor from outside or code mapped from outside the binds, or the "
       "parent-death signal is missing. A "
       "permission error is never taken as proof (\"not proven\").",
       "Two witnesses per check: the kernel's view from outside (the payload's /proc/PID/ns, mountinfo, "
       "status, fd, maps and net/dev on the host, against bwrap's parent context) and the payload's own (statfs, "
       "statvfs, lstat, a real write, if_nameindex, prctl).",
       ["Compare the rendered argv (metnos.sandbox.sandbox_profile) with the one the runtime uses; re-render the "
        "profiles.",
        "If bwrap itself misbehaves, upgrade bubblewrap."],
       messages={"failed": "{said}{traced}"}),
    _c("probe_payload_root", WARNING, "R-BASE-6", PROBE,
       "The sandboxed payload runs as root",
       "The probe ran as {user} (uid 0 outside the sandbox): bwrap keeps root's capabilities in the "
       "sandbox's user namespace, so an executor can remount the read-only binds read-write and write "
       "the host's /usr and /etc (measured with bubblewrap 0.8). The checks pass - the mounts are as "
       "the profile says when the payload starts - but they are not a boundary for root.",
       "The payload's uid and capability sets, read from /proc/PID/status on the host.",
       ["Run the Metnos service as an unprivileged user: a drop-in with User=metnos (create it with "
        "useradd --system metnos), then systemctl daemon-reload and restart the service."]),
    _c("probe_setup_failed", ERROR, "R-DIAG-3", PROBE,
       "bwrap failed before the payload ran",
       "bwrap failed before the payload ran, in the service's context (as {user}): {cause_text}",
       "The payload never reported and --json-status-fd has no exit-code record; bwrap's stderr is "
       "classified by pattern and quoted.",
       ["See the remediation of the classified cause ({cause}) and the unit directives listed with it."],
       _CLASSIFIED),
    _c("probe_timeout", ERROR, "R-DIAG-3", PROBE,
       "The probe timed out",
       "The probe did not finish in time; its whole process group was killed. If the payload had already "
       "reported and been read from outside (e.g. a bwrap look-alike that never exits after running it), its "
       "checks are still judged and their findings are reported with this one.",
       "A timer around the probe's process group.",
       ["Look for hung mounts (NFS) or a stuck service unit; raise the probe timeout if the host is slow."],
       messages={"killed": "the probe did not finish within {timeout}s; its whole process group was killed",
                 "judged": "the probe did not finish within {timeout}s; its whole process group was killed (after the "
                           "payload had reported and been read from outside: its checks are judged)"}),
    _c("probe_payload_failed", ERROR, "R-DIAG-3", PROBE,
       "The probe payload could not report",
       "bwrap set up the sandbox and ran the payload (a Python program run by the runtime's interpreter), "
       "but it exited without a result.",
       "--json-status-fd has an exit-code record, and the payload's stdout has no result line.",
       ["Check that the runtime's interpreter exists inside the sandbox (host.python_executable) and runs."],
       messages={"silent": "bwrap ran the payload (as {who}) but it did not report: it exited {exit}; {stderr}"}),
    _c("probe_context_incomplete", WARNING, "R-DIAG-3", PROBE,
       "The probe's unit does not carry the service's whole context",
       "Some of the service's directives could not be carried to the probe's transient unit (systemd-run "
       "refuses them in this systemd version, a specifier is unknown, or copying would act on the service's "
       "own directories), or `systemctl show` of the probe's unit differs from the service's on a property: "
       "a passing probe proves less there.",
       "Every directive of the unit minus the documented deny list (docs/unit-directives.md) is passed to "
       "systemd-run; refusals are retried without the directive; then `systemctl show` of both units is "
       "compared property by property.",
       ["Review the directives named in the message: each is one the probe could not reproduce.",
        "Check them by hand: systemctl show {unit} -p <directive>"],
       messages={"reasons": "{unit}: the probe's transient unit does not carry the service's whole execution "
                            "context, so a pass proves less: {why}."}),
    # ---- the service's own environment and unit (R-DIAG-3) ----
    _c("unit_not_found", WARNING, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "The Metnos service unit does not exist",
       "No unit file or drop-in for the unit was found (systemd: LoadState=not-found).",
       "systemctl show -p LoadState, or the unit search path on disk.",
       ["Check the unit name (metnos_sandbox_unit) and scope (system/user): systemctl list-unit-files 'metnos*'"]),
    _c("unit_masked", ERROR, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "The Metnos service unit is masked",
       "The unit is linked to /dev/null: it cannot start at all.",
       "A unit file symlinked to /dev/null, or LoadState=masked.",
       ["systemctl unmask {unit}"]),
    _c("unit_needs_daemon_reload", WARNING, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "Unit files changed since systemd loaded them",
       "The unit files on disk differ from what systemd runs (NeedDaemonReload=yes): the checked "
       "configuration is not yet the service's.",
       "systemctl show -p NeedDaemonReload.",
       ["systemctl daemon-reload", "systemctl restart {unit}"]),
    _c("service_user_missing", ERROR, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "The service's User= does not exist",
       "User= names an account that does not exist on this host: the service cannot start.",
       "getpwnam() of the unit's User=.",
       ["Create the account (useradd --system {user}) or fix User= in the unit."],
       messages={"": "{unit}: User={user} does not exist."}),
    _c("sandbox_env_rejected_by_systemd", WARNING, "R-FAIL-1", SERVICE_ENVIRONMENT,
       "systemd ignores part of a METNOS_SANDBOX assignment",
       "An Environment= line that mentions METNOS_SANDBOX contains words systemd rejects (e.g. "
       "'Environment=METNOS_SANDBOX= 0' sets an empty value and ignores '0').",
       "The unit's Environment= lines split with systemd's quoting rules.",
       ["Write the assignment without spaces around '=': Environment=METNOS_SANDBOX=1 (or remove it)."],
       messages={"ignored": "{unit}: systemd ignores {text} ({reason}) at {where}; the value you meant is not the one "
                            "the service gets (effective METNOS_SANDBOX={effective})."}),
    _c("service_path_missing_bwrap", ERROR, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "bwrap is not on the service's PATH",
       "bwrap does not resolve through the PATH the service's processes get, with the service user's "
       "permissions. The runtime fails closed for every executor, although the admin's shell finds bwrap.",
       "Lookup through the effective PATH (Environment=/EnvironmentFile=/systemd default) as the unit's User=.",
       ["Set the unit's PATH to include the bwrap directory (enforce mode writes a drop-in): "
        "Environment=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
        "Or install bubblewrap: apt-get install bubblewrap"],
       messages={"": "{unit}: bwrap does not resolve through the service's PATH={path} as user {user} "
                     "(PATH from {origin}). The runtime looks it up with this PATH, not the admin's."}),
    _c("service_path_unsafe", ERROR, "R-SEC-6", SERVICE_ENVIRONMENT,
       "The service's PATH lets someone shadow bwrap",
       "An empty or relative PATH entry (the current directory), or a directory before the bwrap "
       "directory that is not root-owned or is group/world-writable: anyone who can write there can "
       "plant a fake bwrap.",
       "Each PATH entry up to the bwrap directory: ownership and mode of it and its parents.",
       ["Remove the offending entries from the unit's PATH (enforce mode writes a clean PATH).",
        "chmod go-w <directory> ; chown root:root <directory>"],
       messages={"": "{unit}: PATH={path}: {problems}"}),
    _c("service_bwrap_mismatch", WARNING, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "The service runs a different bwrap",
       "The bwrap the service resolves is not the one the admin's PATH resolves, or no package owns it.",
       "realpath() of both lookups; package ownership query.",
       ["Remove the unexpected binary, or fix the unit's PATH."],
       {"different": ["Remove the unexpected binary or fix the unit's PATH so that it resolves the "
                      "package-owned {admin_bwrap}"],
        "unpackaged": ["Remove {service_bwrap} or put the package's directory first in the unit's PATH"]},
       {"different": "{unit} resolves bwrap to {service_bwrap}, the admin's shell to {admin_bwrap}: they are "
                     "different binaries.",
        "unpackaged": "{unit} resolves bwrap to {service_bwrap}, which no installed package owns."}),
    _c("environment_file_missing", ERROR, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "An EnvironmentFile cannot be read",
       "A file listed in EnvironmentFile= is missing or unreadable. With the '-' prefix systemd skips it "
       "silently (warning), so variables you expect (METNOS_SANDBOX, PATH) are not set; without it the "
       "service fails to start (error).",
       "Reading each EnvironmentFile= path.",
       ["Create {path} or remove the EnvironmentFile= line"],
       messages={"optional": "{unit}: EnvironmentFile=-{path} ({where}) cannot be read: {error}. systemd skips it "
                             "silently ('-' prefix)",
                 "required": "{unit}: EnvironmentFile={path} ({where}) cannot be read: {error}. The service fails "
                             "to start."}),
    _c("service_env_live_differs", WARNING, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "The running service has an older environment",
       "/proc/<MainPID>/environ differs from the configuration for METNOS_SANDBOX or PATH in a way that "
       "neither disables nor misroutes the sandbox (those are service_env_live_disables and "
       "service_env_live_misroutes): a restart is pending.",
       "Comparing the live environment of MainPID with the configured one.",
       ["systemctl restart {unit}"],
       messages={"differs": "{unit}: the running process has {key}={value}, the configuration gives {configured}: "
                            "restart the service to apply."}),
    _c("service_env_live_disables", ERROR, "R-FAIL-1", SERVICE_ENVIRONMENT,
       "The running service has the sandbox disabled",
       "The running process's own environment (/proc/<MainPID>/environ, the authority while it runs) "
       "disables the sandbox although the configuration does not: METNOS_SANDBOX has a disabling value, or "
       "bwrap does not resolve through its PATH. The message names the origin when it can be determined "
       "(the start command line, a pending restart, the manager's environment).",
       "/proc/<MainPID>/environ read as root or, where root is refused (no CAP_SYS_PTRACE), as the "
       "process's own uid; compared with the configuration and ExecStart='s env(1)/sh -c prefixes.",
       ["Find and remove the origin named in the message (ExecStart= prefix, wrapper, manager environment: "
        "systemctl show-environment)", "systemctl restart {unit}"],
       messages={"value": "{unit}: the running process (PID {pid}) has {key}={value}, which disables the sandbox; the "
                 "configuration gives {configured} ({origin_conf}). Origin: {origin}.",
                 "path": "{unit}: bwrap does not resolve through the running process's PATH={value} (PID {pid}), so "
                         "the runtime refuses every executor; the configuration's PATH resolves {resolved}. Origin: "
                         "{origin}."}),
    _c("service_env_live_misroutes", ERROR, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "The running service resolves a different bwrap",
       "The running process's PATH resolves bwrap to another binary than the configuration's PATH does: "
       "the runtime wraps executors with that binary.",
       "The live PATH resolved as the service user, compared (realpath) with the configured one.",
       ["Remove the origin named in the message, then: systemctl restart {unit}",
        "Remove an unexpected bwrap binary from the directories named in the message"],
       messages={"packaged": "{unit}: the running process's PATH={value} resolves bwrap to {live_bwrap} "
                             "(package-owned), the configuration to {resolved}. Origin: {origin}.",
                 "unpackaged": "{unit}: the running process's PATH={value} resolves bwrap to {live_bwrap} (owned by "
                               "no package), the configuration to {resolved}. Origin: {origin}."}),
    _c("service_env_live_unreadable", WARNING, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "The running service's environment could not be read",
       "The service runs but /proc/<MainPID>/environ could not be read, neither as root nor as the "
       "process's own uid (the reason is in the message): what is reported is the configuration's view, not "
       "the live process's.",
       "Reading /proc/<MainPID>/environ as root, then in a helper that drops to the process's uid and gid.",
       ["Read it by hand as the service user: setpriv --reuid=<uid> --regid=<gid> --clear-groups "
        "cat /proc/<pid>/environ | tr '\\0' '\\n'"],
       messages={"": "{unit} runs as PID {pid} but its environment (/proc/{pid}/environ) could not be read "
                     "({error}): the status shown is the configuration's view, not the live process's."}),
    _c("service_execstart_sets_env", ERROR, "R-FAIL-1", SERVICE_ENVIRONMENT,
       "The start command line changes METNOS_SANDBOX or PATH",
       "ExecStart= runs the program through env(1) (NAME=VALUE, -u NAME, -i) or a shell (sh -c 'NAME=VALUE exec "
       "...') that sets or unsets METNOS_SANDBOX or PATH: the program's environment is not the unit's. An "
       "error when it disables the sandbox or changes which bwrap resolves, a warning otherwise.",
       "ExecStart= lines of the unit files split with systemd's quoting, $VAR substitution applied, env(1) "
       "options and simple shell scripts followed.",
       ["Remove the assignment from ExecStart= (enforce mode rewrites an env(1) prefix in its drop-in)"],
       {"healable": ["Enforce mode rewrites ExecStart= in its drop-in without those assignments "
                     "(metnos_sandbox_service_env_state=enforce)", "Or edit the unit: {fix}"],
        "unhealable": ["A drop-in cannot neutralise it ({why}): edit the unit's ExecStart= ({where}) by hand"]},
       messages={"changes": "{unit}: {line} changes the environment before the program runs ({changes}).",
                 "disables": "{unit}: {line} changes the environment before the program runs ({changes}): the "
                             "sandbox is disabled.",
                 "misroutes": "{unit}: {line} changes the environment before the program runs ({changes}): bwrap "
                              "resolves to {new_bwrap} instead of {old_bwrap}."}),
    _c("service_execstart_env_unknown", WARNING, "R-DIAG-3", SERVICE_ENVIRONMENT,
       "The start command line's effect on the environment cannot be determined",
       "ExecStart= runs a shell script or env(1) form (env -S, control structures, expansions, sourced files) "
       "that may change METNOS_SANDBOX or PATH in a way that cannot be determined from the unit.",
       "ExecStart= parsing as for service_execstart_sets_env.",
       ["Start the service and let the audit read the live environment (/proc/<MainPID>/environ)",
        "Or simplify ExecStart= so that it does not touch METNOS_SANDBOX or PATH"],
       messages={"": "{unit}: {line} runs {how}; how it changes METNOS_SANDBOX or PATH cannot be determined "
                     "({note}). Only the live process can tell."}),
    _restriction(
        "unit_blocks_namespaces", "R-BASE-6",
        "The unit forbids the namespaces bwrap needs",
        "RestrictNamespaces= excludes user, mnt, ipc, uts or net: bwrap fails inside the service only, "
        "with a misleading 'No permissions to create new namespace' text.",
        "RestrictNamespaces= of the unit (systemd-analyze security scores it as good: a trade-off).",
        "RestrictNamespaces=user mnt ipc uts net",
        {"seen": "{unit}: RestrictNamespaces={values} forbids the {missing} namespace(s) bwrap creates: bwrap fails "
                 "with 'No permissions to create new namespace' inside the service only."}),
    _restriction(
        "unit_syscall_filter_blocks_bwrap", "R-BASE-6",
        "The unit's SystemCallFilter kills bwrap",
        "SystemCallFilter= does not allow mount/pivot_root/umount2/unshare/clone: bwrap is killed by "
        "SIGSYS (exit 159) with no message.",
        "SystemCallFilter= evaluated with systemd's allow/deny semantics and syscall groups.",
        "SystemCallFilter=mount pivot_root umount2 (the blocked ones; adds them to an allow list, "
        "removes them from a deny list)",
        {"killed": "{unit}: SystemCallFilter= blocks {blocked}: bwrap is killed by SIGSYS (exit 159, no message) "
                   "inside the service.",
         "errno": "{unit}: SystemCallFilter= blocks {blocked}: bwrap fails with {errno} "
                  "(SystemCallErrorNumber=), e.g. 'Failed to make / slave: Operation not permitted' inside the "
                  "service."}),
    _restriction(
        "unit_address_families_block_netlink", "R-BASE-7",
        "The unit's RestrictAddressFamilies leaves out AF_NETLINK",
        "RestrictAddressFamilies= does not allow AF_NETLINK: bwrap --unshare-net cannot bring up loopback "
        "('loopback: Failed to create NETLINK_ROUTE socket: Address family not supported by protocol'), so "
        "every executor without network fails inside the service only.",
        "RestrictAddressFamilies= evaluated with systemd's allow/deny merge rules (measured on a real unit: "
        "docs/unit-directives.md).",
        "RestrictAddressFamilies=AF_NETLINK (adds it to an allow list, removes it from a deny list)",
        {"seen": "{unit}: RestrictAddressFamilies={values} leaves out {families}: bwrap cannot bring up loopback "
                 "in the sandbox's network namespace ('loopback: Failed to create NETLINK_ROUTE socket: Address "
                 "family not supported by protocol') for every executor without network."}),
    _restriction(
        "unit_proc_subset_pid", "R-BASE-2",
        "The unit hides /proc/sys",
        "ProcSubset=pid: bwrap reads /proc/sys/kernel/overflowuid on start and fails with "
        "'Can't read /proc/sys/kernel/overflowuid' (measured with bubblewrap 0.8 and 0.12).",
        "ProcSubset= of the unit.",
        "ProcSubset=all",
        {"seen": "{unit}: ProcSubset=pid hides /proc/sys: bwrap fails with 'Can't read "
                 "/proc/sys/kernel/overflowuid'."}),
    _restriction(
        "unit_restrict_suidsgid", "R-BASE-6",
        "RestrictSUIDSGID breaks bubblewrap 0.12",
        "RestrictSUIDSGID=yes (or DynamicUser=yes) makes openat2() fail with ENOSYS; bubblewrap 0.12 "
        "then fails with 'Can't mkdir parents for /tmp: Function not implemented'. Older bwrap: warning.",
        "RestrictSUIDSGID=/DynamicUser= of the unit and the bwrap version.",
        "RestrictSUIDSGID=no",
        {"fails": "{unit}: {why} makes openat2() return ENOSYS; bubblewrap {version} fails ('Can't mkdir "
                  "parents for ...: Function not implemented').",
         "warns": "{unit}: {why} makes openat2() return ENOSYS; bubblewrap {version} works today but 0.12+ "
                  "fails ('Can't mkdir parents for ...: Function not implemented')."}),
    _c("unit_no_new_privileges_setuid", WARNING, "R-BASE-6", SERVICE_ENVIRONMENT,
       "NoNewPrivileges cancels a setuid bwrap",
       "The unit sets (or implies) NoNewPrivileges and bwrap is setuid: the setuid bit is ignored, so "
       "bwrap needs unprivileged user namespaces.",
       "NoNewPrivileges= and the implying directives, with the bwrap binary's mode.",
       ["Enable unprivileged user namespaces (see userns_* diagnostics)", "chmod 0755 {bwrap_path}"],
       messages={"": "{unit}: NoNewPrivileges (explicit or implied) cancels the setuid bit of {bwrap_path}: bwrap "
                     "takes the unprivileged path and needs user namespaces."}),
    # ---- fleet audit ----
    _c("profile_drift", ERROR, "R-SCOPE-3", PROFILES,
       "A rendered profile differs from its manifest",
       "The profile on disk is not what the manifest renders today on this host (the manifest, the "
       "host's paths or the toolkit changed), or no profile was rendered.",
       "Rendering each manifest on the host and comparing with <profile_dir>/<executor>.args.",
       ["Re-render the profiles: make run (or ansible-playbook playbooks/site.yml --tags metnos_sandbox_profiles)"],
       {"missing": ["Render the profiles: make run"]},
       {"": "{executor}: the profile on disk ({path}) differs from what the manifest renders today "
            "(added {added}; removed {removed}).",
        "missing": "{executor}: no rendered profile at {path}."}),
    _c("bwrap_package_drift", WARNING, "R-DIAG-2", BWRAP_BINARY,
       "bwrap package revision differs from the fleet majority",
       "This host's bubblewrap package revision is not the one most of the fleet runs.",
       "Comparing the package revision of every audited host.",
       ["Align the package: apt-get install bubblewrap={majority} (or dnf/pacman equivalent)"],
       messages={"": "{host} runs bubblewrap {revision}; most of the fleet ({majority_hosts} of {hosts} hosts) "
                     "runs {majority}."}),
    _c("host_unreachable", ERROR, "R-DIAG-3", REACHABILITY,
       "The host could not be audited",
       "Ansible could not connect to the host, or the audit payload failed there.",
       "The connection or the payload's exit status.",
       ["Check connectivity: ansible {host} -m ping", "Re-run the audit for this host: --limit {host}"],
       messages={"": "{host}: {why}"}),
]

_CODES.append(_c(
    "host_no_python", ERROR, "R-DIAG-3", REACHABILITY,
    "The host has no Python for the audit",
    "Ansible reached the host, but the interpreter the audit runs ({python}) is missing there, so nothing "
    "could be checked. Not the same as an unreachable host: the connection works.",
    "After the audit payload fails, `command -v` for the interpreter, python3 and python, run over the raw "
    "connection (no Python needed).",
    ["Install Python without Python: ansible {host} -m ansible.builtin.raw -a 'apt-get install -y python3' "
     "(dnf install -y python3; pacman -S --noconfirm python)",
     "Or point ansible_python_interpreter at an existing interpreter, then re-run the audit: --limit {host}"],
    messages={"": "{host}: {msg}"}))


# ---- profiles as bwrap sees them when it acts: the mount model, sources that cannot move, writable roots,
# bounded resolution, pseudo-filesystems (docs/profile-invariants.md; issue 19) ----
_CODES.extend([
    _c("scope_outside_writable_roots", ERROR, "R-CAP-FS", SANDBOX_ACTIVE,
       "A writable scope is outside the writable roots the admin allows",
       "fs:write (or a writable 'within' scope, or an argument value of one) reaches a path outside every "
       "writable root of the host context (host.writable_roots; the role's metnos_sandbox_writable_roots, "
       "by default Metnos's own data folder /var/lib/metnos). Writes are denied by default: no list of "
       "dangerous places (/root/.ssh, a home folder, /var/lib/dpkg, /var/lib/systemd, crontab spools, "
       "container storage, ...) can be complete, so only the admin's roots are writable.",
       "The scope as written and resolved, each at or below a writable root as written or resolved; the "
       "final check allows a writable bind only inside fs:write roots that are inside a writable root.",
       ["Write below one of the writable roots named in the message, or let the admin add a root "
        "(metnos_sandbox_writable_roots: [/var/lib/metnos, /srv/metnos/data])."],
       messages={"outside": "{field}: writable {path} (resolved {real}) is outside the writable roots the admin "
                            "allows: {roots} (host.writable_roots)",
                 "none": "{field}: writable {path} (resolved {real}): no writable roots are configured "
                         "(host.writable_roots is empty), so nothing is writable"}),
    _c("scope_too_many_links", ERROR, "R-CAP-FS", SANDBOX_ACTIVE,
       "A path cannot be resolved within the kernel's bounds",
       "Resolving the path follows more than 40 symbolic links (the kernel answers ELOOP), or its resolved "
       "form is longer than PATH_MAX, or this render has already looked up 100,000 path components (a "
       "manifest whose scopes lead into long chains of links planted in a data folder). Unbounded "
       "resolution would crash or stall the renderer; the kernel would refuse the path anyway.",
       "An iterative resolver with the kernel's limits and one cache shared by every path of a render "
       "(module_utils/metnos_sandbox/paths.py, Resolver).",
       ["Replace the chain of symbolic links by the real path (readlink -f PATH shows where it leads)."],
       messages={"links": "{field}: {path}: resolving it follows more than {links} symbolic links (ELOOP)",
                 "long": "{field}: {path}: its resolved form is longer than {length} characters (PATH_MAX)",
                 "budget": "{field}: {path}: resolving it exceeds this render's budget of {steps} path "
                           "lookups"}),
    _c("scope_pseudo_filesystem", ERROR, "R-BASE-2", SANDBOX_ACTIVE,
       "A writable scope reaches a mount of a pseudo-filesystem",
       "The writable path is at, below or above a mount of one of the kernel's pseudo-filesystems (proc, "
       "sysfs, cgroup, cgroup2, debugfs, tracefs, bpf, securityfs, configfs, devpts, mqueue, efivarfs, ...). "
       "bwrap binds recursively, so such a mount below a granted folder comes along, writable: writing "
       "there changes the kernel's state (cgroup limits and membership, EFI variables, BPF pins).",
       "The host's mount table (/proc/self/mountinfo): the filesystem type of every mount at, below or "
       "above the scope as written and resolved; the final check does the same on each writable bind.",
       ["Grant a folder without such mounts below it (findmnt -R PATH lists them), or unmount it."],
       messages=_JUDGED),
    _c("mount_dest_differs", ERROR, "R-SEC-1", SANDBOX_ACTIVE,
       "Inside the sandbox a destination would not be the path judged",
       "bwrap creates and mounts each destination inside the new root as the earlier mounts left it: "
       "below an earlier bind a component is the host's entry of that folder (a symbolic link planted "
       "there is followed inside the sandbox, a relative one elsewhere than on the host), a --symlink or "
       "/proc may stand on the way. Every grant is mounted at its resolved host path only; this mount "
       "would not be, or something mounted before it changes what its path means inside.",
       "The mount model (module_utils/metnos_sandbox/mountmodel.py): bwrap's mount table built in argv "
       "order, every destination walked through it component by component; the final check runs it again "
       "on the argv.",
       ["Render again; if it persists, replace the symbolic link named in the message by a real folder."],
       messages={"model": "{dest}: {problem}"}),
    _c("mount_dest_unstable", ERROR, "R-SEC-1", SANDBOX_ACTIVE,
       "A destination could be moved between rendering and running",
       "A descriptor-bound grant is mounted below an earlier bind, through a folder that someone other "
       "than root (the service user, another sandbox of the same executor) can write: that component "
       "can be replaced by a symbolic link after rendering, and bwrap would mount the grant wherever it "
       "then leads inside the sandbox (bwrap only checks the last component of a descriptor bind).",
       "The mount model: owner and mode of every folder between the earlier mount point and the "
       "destination (a sticky folder of root's protects root's own entries).",
       ["Grant the nested folder on its own (not below another grant), or make the folders on its way "
        "root's and not group- or world-writable."],
       messages={"model": "{dest}: {problem}"}),
    _c("bind_source_unstable", ERROR, "R-SEC-1", SANDBOX_ACTIVE,
       "A source could be moved and this bwrap cannot bind it by descriptor",
       "The source's path from / passes through a folder that someone other than root can write: it can "
       "be swapped for a symbolic link or another folder between rendering and running, and bwrap "
       "follows symbolic links in a source path when it mounts it. Such a source is bound by descriptor "
       "(--bind-fd / --ro-bind-fd, opened race-free when the profile runs), which this bwrap does not "
       "offer (upstream 0.10.0; backported by Debian to 0.8.0 and 0.4.1 and to 0.6.3 for CVE-2024-42472), "
       "or its --help could not be read.",
       "Owner and mode of every folder on the source's way from / (lstat); 'bwrap --help' of the bwrap "
       "the service uses lists --bind-fd and --ro-bind-fd.",
       ["Install a bubblewrap that offers --bind-fd (Debian: apt-get install --only-upgrade bubblewrap), "
        "or make the folders on the source's way root's and not group- or world-writable."],
       messages={"no_fd": "{path} can be moved (someone other than root can write {folder}) and {bwrap} cannot "
                          "bind it by descriptor (no --bind-fd/--ro-bind-fd in its --help)",
                 "unknown": "{path} can be moved (someone other than root can write {folder}) and whether {bwrap} "
                            "binds descriptors is unknown (its --help could not be read)",
                 "gone": "{path} disappeared while the profile was rendered"}),
    _c("bind_descriptors_exhausted", ERROR, "R-SCOPE-1", SANDBOX_ACTIVE,
       "The profile would need too many descriptors",
       "More sources that can move than a profile may bind by descriptor (each is one open descriptor "
       "of the launcher and of bwrap).",
       "The count of descriptor binds of one profile.",
       ["Grant fewer, larger folders, or make the folders on their way root's."],
       messages={"many": "more than {limit} sources would be bound by descriptor"}),
    _c("bind_source_moved", ERROR, "R-SEC-1", SANDBOX_ACTIVE,
       "A descriptor bind's source is no longer the object judged",
       "When the profile was executed, the launcher (scripts/metnos-sandbox-exec, or the probe's) opened "
       "the source of a descriptor bind one component at a time from / without following symbolic "
       "links and found another object than the one the profile was rendered for (device and inode), "
       "a symbolic link, or nothing: it was moved or swapped. Nothing was run.",
       "open(O_PATH|O_NOFOLLOW) of each component, fstat of the result against the device and inode the "
       "profile records (its descriptors); bwrap then compares the mount with the descriptor again.",
       ["Find who changed the folder (the message names it), then render the profile again."],
       messages={"launcher": "{problem}"}),
])

# ---- blame by experiment (blame.py, issue 21): what the probe finds when it fails in the service's context ----
_FOUND_BY_EXPERIMENT = ("Found by experiment (blame.py): the probe re-ran in transient units carrying the unit's "
                        "context with directives removed, and passed only without this one; the relaxation offered "
                        "was tried for real the same way (docs/unit-directives.md, \"Blame by experiment\").")
_CODES.extend([
    _c("probe_unit_start_failed", ERROR, "R-DIAG-3", PROBE,
       "systemd could not start the probe's process in the service's context",
       "The transient unit carrying the service's context ended with one of systemd's own exit statuses "
       "(200-245: EXEC, USER, NAMESPACE, ...) before its command ran: systemd failed to set the process up "
       "(change user, build the mount namespace, execute the command). bwrap never ran; the status is not "
       "bwrap's.",
       "systemd-run's \"Main processes terminated with: code=exited, status=N/NAME\" while the probe's launcher "
       "had not reported its pid; systemd's own reason from the transient unit's journal.",
       ["This is a failure of the unit's settings, not of bwrap: see the directives found by experiment with it.",
        "What the status means: systemd-analyze exit-status {status}"],
       messages={"": "systemd could not start the probe's process in the service's context (as {user}): exit "
                     "status {status}/{name}: {meaning}; bwrap never ran.{said}"}),
    _c("probe_unit_killed", ERROR, "R-DIAG-3", PROBE,
       "The unit's own process was killed before bwrap started",
       "A signal ended the probe's process in the service's context before it started bwrap (it had not "
       "reported its pid): the unit's settings killed it, not bwrap (SIGSYS: the unit's SystemCallFilter=).",
       "systemd-run's \"Main processes terminated with: code=killed, status=N/NAME\" while the probe's launcher "
       "had not reported.",
       ["SIGSYS comes from the unit's SystemCallFilter=: see the directives found by experiment with it."],
       messages={"": "the probe's process in the service's context (as {user}) was killed by SIG{signal} before it "
                     "started bwrap: the unit's settings killed it, not bwrap.{said}",
                 "interpreter": "{unit}: the runtime's interpreter ({python}) is killed by SIG{signal} in the "
                                "service's context as it starts bwrap (shown by experiment): the unit's settings "
                                "kill it before bwrap runs, so bwrap's own failure there says nothing about bwrap."}),
    _restriction(
        "unit_ambient_capabilities", "R-BASE-6",
        "The unit gives the service capabilities, and bwrap refuses to run with them",
        "AmbientCapabilities= puts capabilities into the permitted set of the service's processes (a non-root "
        "User=); a bwrap that is not setuid refuses to start holding any ('Unexpected capabilities but not "
        "setuid, old file caps config?'), so every executor fails inside the service only.",
        _FOUND_BY_EXPERIMENT + " bwrap's text 'Unexpected capabilities but not setuid'.",
        "AmbientCapabilities= (an empty assignment clears the ambient set; or have the runtime clear its ambient "
        "capabilities before it executes bwrap)",
        {}),
    _restriction(
        "unit_resource_limit_blocks_bwrap", "R-BASE-6",
        "A resource limit of the unit stops bwrap",
        "A Limit*= of the unit is too small for bwrap: LimitNPROC= counts every process of the service's user on "
        "the host (its own included), so bwrap cannot create its sandbox process ('Creating new namespace "
        "failed: Resource temporarily unavailable'), or systemd cannot even execute the command (EAGAIN at "
        "execve: 203/EXEC).",
        _FOUND_BY_EXPERIMENT + " Values are tried in powers of two, and one more process for the runtime, which "
        "forks bwrap where the probe's launcher executes it.",
        "LimitNPROC=<the value the probe passed with>",
        {}),
    _restriction(
        "unit_read_only_proc", "R-BASE-6",
        "The unit makes /proc read-only",
        "ReadOnlyPaths=/ (or another read-only mount of /proc) makes /proc read-only in the service: bwrap cannot "
        "write its user namespace's uid map ('setting up uid map: Read-only file system').",
        _FOUND_BY_EXPERIMENT + " bwrap's text 'setting up uid map: Read-only file system'.",
        "ReadWritePaths=/proc (ReadOnlyPaths= minus /proc)",
        {}),
    _restriction(
        "unit_noexec_bwrap", "R-FAIL-1",
        "The unit does not let the service execute bwrap",
        "NoExecPaths= covers bwrap (e.g. NoExecPaths=/) and ExecPaths= does not name it: the runtime cannot "
        "execute bwrap ('Permission denied'; systemd's 203/EXEC when it is the unit's own command).",
        _FOUND_BY_EXPERIMENT + " The probe's launcher (/bin/sh) stands for the service's own process and is "
        "given an ExecPaths= of its own; bwrap and the payload's interpreter are not.",
        "ExecPaths=/usr/bin/bwrap",
        {}),
    _restriction(
        "unit_syscall_filter_kills_interpreter", "R-DIAG-3",
        "The unit's SystemCallFilter kills the runtime's own interpreter",
        "SystemCallFilter= does not allow a system call the runtime's interpreter makes to start a process "
        "(fork/clone, pipes, ...): the interpreter itself is killed by SIGSYS before bwrap runs, so no "
        "executor can start, sandboxed or not. Reported as the unit's, never as 'bwrap was killed by SIGSYS'.",
        _FOUND_BY_EXPERIMENT + " The runtime's interpreter starting a process (bwrap --version) in a transient "
        "unit with the same context is killed by SIGSYS; without the filter it is not.",
        "SystemCallFilter=@system-service @mount (the smallest group set the probe passed with)",
        {}),
    _restriction(
        "unit_directive_breaks_bwrap", "R-DIAG-3",
        "A unit directive breaks bwrap (found by experiment)",
        "A directive of the unit that the directive table (docs/unit-directives.md) does not name breaks bwrap "
        "inside the service, alone or only together with the other directives named with it.",
        _FOUND_BY_EXPERIMENT,
        "the relaxation named in the message (each tried for real)",
        {}),
    _c("probe_relaxation_found", INFO, "R-DIAG-3", PROBE,
       "A drop-in that makes the probe pass in the service's context",
       "Every culprit found by experiment relaxed at once, as one drop-in on top of the unit's files: the probe "
       "ran with it in a transient unit carrying the service's context, and passed.",
       "One more probe run with the unit's whole context plus the drop-in's lines.",
       ["mkdir -p /etc/systemd/system/{unit}.d",
        "printf '%s\\n' '[Service]' {relax_words} >> /etc/systemd/system/{unit}.d/zz-metnos-relax.conf",
        "systemctl daemon-reload", "systemctl restart {unit}"],
       messages={"": "{unit}: the probe passes in the service's context with this drop-in (tried for real): "
                     "{lines}."}),
    _c("probe_blame_inconclusive", WARNING, "R-DIAG-3", PROBE,
       "The experiment could not name every culprit",
       "Blame by experiment stopped before it had the smallest set of directives whose removal makes the probe "
       "pass (its bounds in runs or time were reached), the results were not consistent (a run that passed "
       "once failed again), or no relaxation it tried made the probe pass with all of them at once.",
       "The experiment's own record (blame.runs, blame.seconds, blame.bounds).",
       ["Run the probe again on a quieter host, or with a larger bound (sandbox_probe blame_max_runs, "
        "blame_max_seconds).", "Check the directives it did name by hand: systemctl show {unit}"],
       messages={"exhausted": "{unit}: the experiment stopped after {runs} runs and {seconds}s (bounds: {max_runs} "
                              "runs, {max_seconds}s){named}.",
                 "inconsistent": "{unit}: the experiment's runs disagree ({why}){named}.",
                 "no_relaxation": "{unit}: no relaxation the experiment tried made the probe pass with every "
                                  "culprit relaxed at once ({why})."}),
])


# ---- the continuous proof (monitor.py on the host, monitor_state.py in the audit) ----
_MONITOR_RERUN = ("Reinstall the monitor with the role: ansible-playbook playbooks/site.yml -l {host} "
                  "-e metnos_sandbox_monitor=true")
_CODES.extend([
    _c("monitor_proof_stale", ERROR, "R-DIAG-3", PROBE,
       "The monitor's last proof is too old",
       "The audit collected the monitor's stored result instead of running the checks, and that proof is older "
       "than the limit: the sandbox may have broken since, so it is not a pass.",
       "The stored result's proof time (metnos_audit collect_monitor) against monitor_max_age.",
       ["See why the timer did not run: systemctl status metnos-sandbox-monitor.timer metnos-sandbox-monitor.service",
        "journalctl -u metnos-sandbox-monitor.service -n 50",
        "Prove it now: systemctl start metnos-sandbox-monitor.service",
        "Or audit the host live: ansible-playbook playbooks/audit.yml -l {host} "
        "(without metnos_audit_collect_monitor)"],
       messages={"": "The monitor's last proof ({finished}) is {age} s old, more than the limit of {max_age} s "
                     "({result}): not a pass."}),
    _c("monitor_result_unusable", WARNING, "R-DIAG-3", MONITOR,
       "The monitor's stored result cannot be used",
       "The monitor's last result on the host is not what the monitor writes (unreadable, too large, not JSON, "
       "another schema, a proof time in the future, a diagnostic outside the registry) or is not root's alone; "
       "the audit does not trust it and ran the checks itself.",
       "Reading the stored result bounded and exactly (monitor_state.check_record).",
       ["Let the monitor write it again: systemctl start metnos-sandbox-monitor.service",
        "Check who can write it: ls -ld /var/lib/metnos-sandbox-monitor /var/lib/metnos-sandbox-monitor/last.json"],
       messages={"": "The monitor's stored result {path} cannot be used: {why}."}),
    _c("monitor_config_invalid", ERROR, "R-DIAG-3", MONITOR,
       "The monitor's configuration is invalid",
       "The monitor's configuration file is missing, too large, not JSON, of another schema, or has an unknown "
       "key or a value of the wrong kind; the monitor ran no check and the sandbox counts as not proven.",
       "Reading the configuration bounded and exactly (monitor.read_config).",
       ["Write it again with the role: ansible-playbook playbooks/site.yml -l {host} -e metnos_sandbox_monitor=true",
        "Read it: python3 -m json.tool {path}"],
       messages={"": "The monitor's configuration {path} is refused: {why}."}),
    _c("monitor_config_unsafe", ERROR, "R-DIAG-3", MONITOR,
       "The monitor's configuration is not root's alone",
       "The configuration (or a directory above it) is not owned by root or is writable by group or others: "
       "whoever can change it decides what the monitor, running as root, checks and reports. The monitor did not "
       "use it.",
       "stat() of the file and of every directory above it.",
       ["chown root:root {path}", "chmod 0644 {path}", "chmod go-w \"$(dirname {path})\""],
       messages={"": "The monitor's configuration {path} is not trusted: {why}."}),
    _c("monitor_core_writable", ERROR, "R-DIAG-3", MONITOR,
       "The monitor's installed core can be changed by others",
       "A file or folder of the core the monitor runs is not owned by root or is writable by group or others "
       "(the service user among them): the continuous proof is only as trustworthy as the code that makes it.",
       "stat() of the installed folder, every file in it and every directory above it.",
       ["chown -R root:root {folder}", "chmod -R go-w {folder}", _MONITOR_RERUN],
       messages={"": "The monitor's core at {folder} can be changed by others: {problems}."}),
    _c("monitor_core_modified", ERROR, "R-DIAG-3", MONITOR,
       "The monitor's installed core is not its release",
       "The digest of the core's sources in the installed folder is not the one its versioned folder name says "
       "(a file was changed, added or removed after the install), so nobody can tell which code made the proof.",
       "sha256 of the installed sources (monitor_state.release) against the folder's name "
       "(<toolkit version>+<digest>).",
       ["rm -rf {folder}", _MONITOR_RERUN],
       messages={"": "The monitor's core at {folder} has digest {digest}; its folder names {expected}."}),
    _c("monitor_run_failed", ERROR, "R-DIAG-3", MONITOR,
       "The monitor's run failed",
       "The checks raised an unexpected error (a defect of the toolkit, not a verdict about the sandbox); the "
       "sandbox counts as not proven.",
       "Any exception of the audit inside the monitor's run.",
       ["Read the run's journal entry: journalctl -u metnos-sandbox-monitor.service -n 20 -o verbose",
        "Report the message with the toolkit version (metnos_sandbox_info{toolkit_version=...})."],
       messages={"": "The monitor's run failed: {why}."}),
    _c("monitor_output_failed", ERROR, "R-DIAG-3", MONITOR,
       "The monitor could not write its result",
       "The textfile for node_exporter or the stored result could not be written (the directory is missing or "
       "not writable in the monitor's unit), so monitoring does not see this run.",
       "The atomic write of each output (a temporary file in the same folder, then a rename).",
       ["mkdir -p \"$(dirname {path})\"",
        "Check the unit's writable paths: systemctl show metnos-sandbox-monitor.service -p ReadWritePaths"],
       messages={"": "The monitor could not write {path}: {why}."}),
])

# ---- a module's own failure (fail_json(code=...)): the task fails, no host finding is made ----
_CODES.extend([
    _c("invalid_option", ERROR, "R-DIAG-3", MODULE,
       "A module option has a bad value",
       "An option of the task is missing, has the wrong type or a value outside its rule; the message "
       "names the option and the rule. Nothing was changed.",
       "The module's argument_spec, then the option checks of module_utils/metnos_sandbox/options.py "
       "(unit name, positive timeout, a running systemd where one is asked for, users that exist).",
       ["Fix the option named in the message (ansible-doc -t module <module> lists each option's rule)."]),
    _c("systemctl_failed", ERROR, "R-DIAG-3", MODULE,
       "systemctl could not be queried",
       "systemctl show (or another read-only query) failed for the unit, so its configuration could not "
       "be read through systemd.",
       "The exit status of the systemctl query.",
       ["Run the query by hand: systemctl show <unit> (systemctl --user -M <user>@ for scope=user)",
        "Or read the unit files on disk: mode=disk"]),
    _c("daemon_reload_failed", ERROR, "R-DIAG-3", MODULE,
       "systemctl daemon-reload failed after the drop-in was written",
       "The managed drop-in was written, but systemd could not reload its configuration: the service "
       "still runs with the old one.",
       "The exit status of systemctl daemon-reload.",
       ["Run it by hand and read the error: systemctl daemon-reload",
        "Check the drop-in named in the result (dropin.path): systemd-analyze verify <unit>"]),
    _c("restart_failed", ERROR, "R-DIAG-3", MODULE,
       "The service could not be restarted",
       "The managed drop-in was written and systemd reloaded, but restarting the unit failed.",
       "The exit status of systemctl restart.",
       ["Read why: systemctl status <unit> ; journalctl -u <unit> -n 50"]),
    _c("dest_unwritable", ERROR, "R-SCOPE-3", MODULE,
       "The rendered profile could not be written",
       "The profile directory (dest) cannot be created or written, or a file there cannot be replaced.",
       "Creating dest and writing each profile file atomically (a temporary file, then a rename).",
       ["Check dest and its permissions (it must be a directory root can write): ls -ld <dest>"]),
    _c("monitor_install_failed", ERROR, "R-DIAG-3", MODULE,
       "The monitor's core could not be installed",
       "The release folder of the continuous proof could not be written, renamed into place or an old release "
       "removed (metnos_monitor_install); the monitor keeps running the release that was there.",
       "The file operations of monitor_install.install (a hidden folder, then a rename).",
       ["Check the prefix and its permissions (root must write it): ls -ld <metnos_sandbox_monitor_prefix>"]),
    _c("internal_error", ERROR, "R-DIAG-3", MODULE,
       "The module failed unexpectedly",
       "An unexpected error: a defect of the toolkit, never a verdict about the host. The result carries "
       "the traceback (exception).",
       "Any exception a module does not map to its own code.",
       ["Report the message and the exception of the result (run with -vvv to see it)."]),
])

# ---- issue 20: the probe accounts for everything its bwrap starts, and trusts only the packaged bwrap ----
_REINSTALL = "Reinstall the distro package: apt-get install --reinstall bubblewrap (dnf reinstall bubblewrap; " \
             "pacman -S bubblewrap)"
_TREE_FIX = ("Find what started it (its parent, executable and command line are in the details): "
             "ps -o pid,ppid,user,args -p <pid> ; ls -l /proc/<pid>/exe",
             "Check which bwrap the service runs and remove look-alikes from its PATH: "
             "systemctl show -p Environment <unit> ; command -v bwrap ; dpkg -S \"$(command -v bwrap)\"",
             _REINSTALL)
_CODES.extend([
    _c("probe_bwrap_unpackaged", ERROR, "R-DIAG-2", PROBE,
       "The probe's bwrap is not the packaged one",
       "The bwrap the service would run is owned by no installed package and its sha256 is not accepted: "
       "the probe trusts only the packaged bwrap (a look-alike first on the service's PATH, a copy, a "
       "self-built binary nobody vouched for).",
       "dpkg -S / rpm -qf / pacman -Qo of the path the service resolves (and its real path), then its sha256 "
       "against metnos_sandbox_probe_accept_bwrap_sha256.",
       ["Remove the unmanaged file from the service's PATH: rm {bwrap_path}", _REINSTALL,
        "A self-built bwrap you trust: add its sha256 ({sha256}) to metnos_sandbox_probe_accept_bwrap_sha256."],
       messages={"": "{bwrap_path} (sha256 {sha256}) is not owned by any installed package and its sha256 is not "
                     "accepted: the probe trusts only the packaged bwrap."}),
    _c("probe_bwrap_modified", ERROR, "R-SEC-6", PROBE,
       "The probe's bwrap differs from its package",
       "The bwrap the service would run belongs to a package, but the package database says the file "
       "differs from what the package installed (its digest, size, mode or owner), or that it is missing.",
       "dpkg --verify PKG (the md5sums dpkg keeps), rpm -V PKG, pacman -Qkk PKG.",
       [_REINSTALL, "Then verify it: dpkg --verify bubblewrap (rpm -V bubblewrap; pacman -Qkk bubblewrap)"],
       messages={"": "{bwrap_path} belongs to {package} ({manager}) but the package database says it differs: "
                     "{detail} (sha256 {sha256})."}),
    _c("probe_bwrap_unverified", ERROR, "R-DIAG-3", PROBE,
       "The probe's bwrap could not be verified",
       "The bwrap the service would run could not be verified against the package database (no verifier for "
       "its package manager, a verifier that failed or printed what the probe does not know, or a file that "
       "changed while it was verified): it is not trusted.",
       "The exit status and output of dpkg --verify / rpm -V / pacman -Qkk, and the file's device, inode, size "
       "and times before and after.",
       ["Run the verifier by hand: dpkg --verify bubblewrap (rpm -V bubblewrap; pacman -Qkk bubblewrap)",
        _REINSTALL],
       messages={"": "{bwrap_path} could not be verified against the package database: {detail}."}),
    _c("probe_bwrap_accepted", INFO, "R-DIAG-2", PROBE,
       "The probe's bwrap is trusted by its sha256",
       "The bwrap the service would run is not the packaged one; it is trusted because its sha256 is listed "
       "in metnos_sandbox_probe_accept_bwrap_sha256 (a self-built bwrap). Listed so that every report shows it.",
       "The sha256 of the file, against the accepted digests.",
       ["Nothing to do if this is the build you meant; remove the digest from "
        "metnos_sandbox_probe_accept_bwrap_sha256 to trust only the packaged bwrap again."],
       messages={"": "{bwrap_path} is not the packaged bwrap; it is trusted because its sha256 {sha256} is accepted."}),
    _c("probe_tree_not_empty", ERROR, "R-DIAG-3", PROBE,
       "The probe's unit held a process before bwrap ran",
       "Before bwrap ran, the transient unit the probe started held a process the probe did not start: "
       "something else runs in the probe's context.",
       "cgroup.procs of the unit's cgroup, read while its launcher waits to execute bwrap.",
       list(_TREE_FIX),
       messages={"before": "before bwrap ran, the probe's unit held a process the probe did not start: pid {pid} "
                           "({details})"}),
    _c("probe_process_unaccounted", ERROR, "R-DIAG-3", PROBE,
       "bwrap's process tree held a process that is neither bwrap nor the payload",
       "A process in the tree the probe started bwrap in (direct: below the probe's child subreaper; in a unit: "
       "the unit's cgroup) is neither what the probe started, nor bwrap, its sandboxed child and the payload, "
       "nor a process of bwrap's own setup: it ran beside them, was still running after bwrap exited, or left "
       "its parent and exited on its own. A bwrap look-alike that execs the real one can start work beside "
       "the sandbox this way (double fork, setsid, descriptors closed, argv[0] changed) or after it exited.",
       "The tree polled from the host's /proc while the run lasts (every process's parent chain, or the unit's "
       "cgroup.procs), the orphans the subreaper reaps (read while they are zombies), and the tree once bwrap "
       "has exited, before anything is killed. Everything left is killed.",
       list(_TREE_FIX),
       messages={"beside": "pid {pid} ran in bwrap's process tree beside bwrap and the payload: {details}",
                 "left": "pid {pid} was still running in bwrap's process tree after bwrap exited: {details}",
                 "orphaned": "pid {pid} left its parent inside bwrap's process tree and exited on its own (reaped "
                             "by the probe's subreaper): {details}",
                 "reaper": "the probe's subreaper could not account for bwrap's tree ({details}): a process "
                           "could have left it",
                 "unreadable": "bwrap's process tree could not be read or was too large (pid {pid}, {details}): "
                               "what else bwrap started is not proven"}),
    _c("probe_payload_outside", ERROR, "R-DIAG-3", PROBE,
       "The payload's code ran outside the sandbox",
       "A process in bwrap's tree other than the sandboxed payload ran the payload's code: it carries the "
       "run's marker (the payload's first act is to set its comm to it) or the payload's arguments after "
       "argv[0]. A look-alike bwrap ran a copy of the executor beside the sandbox (in the host's network "
       "namespace, say) while the sandboxed one reported.",
       "The tree as for probe_process_unaccounted; the copy is never released by the probe (the one-time token "
       "is written only to the verified payload), so it stays there to be seen.",
       list(_TREE_FIX),
       messages={"seen": "pid {pid} ran the payload's code outside the sandbox (namespaces that differ from the "
                         "sandboxed payload's: {outside}): {details}",
                 "orphaned": "pid {pid} ran the payload's code outside the sandbox and exited on its own (reaped "
                             "as an orphan by the probe's subreaper): {details}",
                 "beacon": "pid {pid} ran the payload's code in the probe's own network namespace (it reached the "
                           "probe's beacon, a name only the payload's spec carries; namespaces that differ from the "
                           "sandboxed payload's: {outside}): {details}"}),
    _c("bwrap_package_modified", ERROR, "R-SEC-6", BWRAP_BINARY,
       "bwrap differs from its package",
       "The resolved bwrap belongs to a package, but the package database says the file differs from what "
       "the package installed (digest, size, mode or owner), or that it is missing.",
       "dpkg --verify PKG / rpm -V PKG / pacman -Qkk PKG.",
       [_REINSTALL],
       messages={"": "{bwrap_path} belongs to {package} but the package database says it differs: {detail}."}),
])

# ---- the audit's transport and the report's input (issue 22): each refusal its own code
_CODES.extend([
    _c("audit_result_unframed", ERROR, "R-DIAG-3", REACHABILITY,
       "The host's answer holds no audit result",
       "The audit ran on the host, but its output holds no single complete result framed with this run's "
       "one-time token: the payload was killed or crashed before it answered, or its output was cut. Text "
       "around the frame (a banner, a MOTD, a wrapper's stray brace) is never taken for the result.",
       "The controller looks for exactly one frame named by the random token it sent with the payload, of the "
       "length the frame states, holding a JSON object.",
       ["Run the audit for this host alone with -vvv and read the payload's stderr: --limit {host} -vvv",
        "Check that the interpreter runs: ansible {host} -m ansible.builtin.raw -a '{python} -V'"],
       messages={"": "{host}: no framed audit result in the host's output (rc={rc}): {detail}"}),
    _c("audit_transport_unsupported", ERROR, "R-DIAG-3", REACHABILITY,
       "The audit cannot travel over this connection",
       "The payload travels on the command's standard input (connections that pipeline: local, ssh) or as "
       "the arguments of one shell-less command (podman, docker). This connection does neither for it (for "
       "instance become on a connection without pipelining, which folds the arguments into one), and the "
       "audit never writes a temporary file on the host instead.",
       "The connection's has_pipelining, the task's become, the size of the message.",
       ["Enable pipelining for the host (ansible.cfg [connection] pipelining = True) or audit without become "
        "(the audit reads as the connection's user; podman and docker connect as root)"],
       messages={"": "{host}: {why}"}),
    _c("host_not_audited", ERROR, "R-DIAG-3", REACHABILITY,
       "The host has no audit result in this run",
       "The report was asked about a host for which metnos_audit kept no result in this ansible-playbook run "
       "(an earlier task failed for it, the play ended first, or the audit was never run for it). Not an "
       "unreachable host: nothing is known about it.",
       "No result kept for the host in the run's controller-side temp dir.",
       ["Run the audit and the report in the same play (playbooks/audit.yml): ansible-playbook "
        "playbooks/audit.yml --limit {host}"],
       messages={"": "{host}: no metnos_audit result for this host in this run"}),
    _c("audit_report_no_results", ERROR, "R-DIAG-3", REACHABILITY,
       "The report has no audit results to read",
       "metnos_audit_report reads the results metnos_audit kept in the same ansible-playbook run; none of the "
       "hosts it was asked about has one (the report ran in another run, or before the audit). It refuses "
       "instead of reporting every host unreachable.",
       "No result kept for any of the hosts in the run's controller-side temp dir.",
       ["Run the audit and the report in one run: ansible-playbook playbooks/audit.yml (or pass the registered "
        "results: metnos_audit_report: results: ...)"],
       messages={"": "metnos_audit_report: none of the {count} host(s) asked about ({hosts}) has a metnos_audit "
                     "result in this run: the report must run in the same ansible-playbook run as the audit"}),
])

REGISTRY: Dict[str, Code] = dict((c.code, c) for c in _CODES)

# The codes a manifest load refuses with (manifest.coerce). A controller-side face hands a refusal to the
# host as a record (code and message, made and bounded by this toolkit); the host relays its message.
LOAD_CODES = ("manifest_parse_error", "manifest_missing", "manifest_not_utf8", "manifest_too_large",
              "manifest_too_many_nodes", "manifest_too_deep", "manifest_duplicate_key", "manifest_yaml_unsupported",
              "manifest_invalid", "manifest_string_too_long")
for _load in LOAD_CODES:
    REGISTRY[_load].messages.setdefault("relayed", "{relayed}")


def spec(code: str) -> Code:
    """The registry entry of ``code``; an unregistered code is a defect and raises UnregisteredCode."""
    try:
        return REGISTRY[code]
    except KeyError:
        raise UnregisteredCode("%r is not a registered diagnostic code (module_utils/metnos_sandbox/"
                               "diagnostics.py)" % (code,)) from None


def section_of(code: str) -> str:
    """The report section of a registered code."""
    return spec(code).section


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _fill(text: str, context: Mapping[str, Any]) -> str:
    """Replace ``{name}`` placeholders of a registry text with context values, one pass.

    Only the registry's own texts are templates: a value is inserted as it is and never
    interpreted again (no format specs, no attribute access), so manifest or unit text in a
    value cannot grow or reshape a message. Unknown placeholders are left as they are."""
    if "{" not in text:
        return text

    def sub(match: "re.Match[str]") -> str:
        key = match.group(1)
        return str(context[key]) if key in context else match.group(0)
    return _PLACEHOLDER.sub(sub, text)


def _steps(templates: Iterable[str], context: Mapping[str, Any]) -> List[str]:
    """Remediation steps from registry templates; an item that is exactly ``{name}`` with a list value
    becomes the list's items (the steps of a classified cause)."""
    out: List[str] = []
    for item in templates:
        match = _PLACEHOLDER.fullmatch(item)
        value = context.get(match.group(1)) if match else None
        if isinstance(value, (list, tuple)):
            out.extend(str(v) for v in value)
        else:
            out.append(_fill(item, context))
    return out


_EXCERPT = reprlib.Repr()
_EXCERPT.maxstring = 72
_EXCERPT.maxother = 72
_EXCERPT.maxlevel = 2
_EXCERPT.maxlist = _EXCERPT.maxtuple = _EXCERPT.maxdict = _EXCERPT.maxset = 4
_EXCERPT.maxlong = 40


def excerpt(value: Any, limit: int = 80) -> str:
    """A short, escaped, bounded quotation of any value for a message (never the whole value).

    Strings are cut before ``repr`` (bounded work whatever their size); containers show at
    most a few items two levels deep; the result is at most ``limit`` characters."""
    if isinstance(value, str):
        text = repr(str.__str__(value[:limit]))
        if len(value) > limit:
            text += "... (%d characters)" % len(value)
    elif isinstance(value, (bytes, bytearray)):
        text = repr(bytes(value[:limit]))
        if len(value) > limit:
            text += "... (%d bytes)" % len(value)
    elif value is None or isinstance(value, (bool, int, float)):
        text = _EXCERPT.repr(value)
    else:
        try:
            text = _EXCERPT.repr(value)
        except Exception:  # a hostile object's own __repr__: never let it through
            text = "<%s>" % type(value).__name__
    if len(text) > limit + 24:
        text = text[:limit] + "..."
    return text


# The codes blame.py reports a culprit with (the directive table's and its own): one message and remediation
# for "found by experiment", the relaxation it tried ({relax_words}: the drop-in's lines, shell-quoted).
EXPERIMENT_CODES = ("unit_blocks_namespaces", "unit_syscall_filter_blocks_bwrap", "unit_address_families_block_netlink",
                    "unit_proc_subset_pid", "unit_restrict_suidsgid", "unit_ambient_capabilities",
                    "unit_resource_limit_blocks_bwrap", "unit_read_only_proc", "unit_noexec_bwrap",
                    "unit_syscall_filter_kills_interpreter", "unit_directive_breaks_bwrap")
_EXPERIMENT_FIX = ("Smallest relaxation, tried for real (the probe passed with it in the service's context), as a "
                   "drop-in:", "mkdir -p /etc/systemd/system/{unit}.d",
                   "printf '%s\\n' '[Service]' {relax_words} >> /etc/systemd/system/{unit}.d/zz-metnos-relax.conf",
                   "systemctl daemon-reload", "systemctl restart {unit}")
for _code in EXPERIMENT_CODES:
    REGISTRY[_code].messages.setdefault(
        "experiment", "{unit}: {shown} breaks bwrap in the service's context{together}: {said} Found by experiment "
                      "({how}); {relaxed}")
    REGISTRY[_code].messages.setdefault(
        "experiment_unit", "{unit}: with {shown}{together}, systemd cannot start the service's processes at all: "
                           "{said} Nothing runs there, bwrap least of all. Found by experiment ({how}); {relaxed}")
    REGISTRY[_code].variants.setdefault("experiment", _EXPERIMENT_FIX)
    REGISTRY[_code].variants.setdefault("experiment_no_dropin", ("{relax_note}",))


MAX_MESSAGE = 1000       # characters of one message (and of one detail): the rest is counted, not shown
MAX_DETAIL_ITEMS = 20


def utf8_safe(value: Any) -> Any:
    """``value`` with every string that is not valid UTF-8 (a lone surrogate: a file name's undecodable
    byte, an input's broken escape) escaped as text (``\\udcff``), in lists and mappings too: a reply
    that carries one is refused by Ansible ("Refusing to deserialize an invalid UTF8 string value"),
    and the refusal code it holds would never reach the play."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, (list, tuple)):
        return [utf8_safe(v) for v in value]
    if isinstance(value, dict):
        return dict((utf8_safe(k), utf8_safe(v)) for k, v in value.items())
    return value


def _bounded(value: Any) -> Any:
    """A message or detail cut to MAX_MESSAGE characters (lists: MAX_DETAIL_ITEMS items), so that a
    diagnostic stays short whatever the paths or values it quotes, and valid UTF-8 (utf8_safe)."""
    if isinstance(value, str):
        value = utf8_safe(value)
    if isinstance(value, str) and len(value) > MAX_MESSAGE:
        return value[:MAX_MESSAGE] + "... (%d characters)" % len(value)
    if isinstance(value, (list, tuple)):
        return [_bounded(v) for v in value[:MAX_DETAIL_ITEMS]]
    return value


def make(code: str, severity: Optional[str] = None, variant: Optional[str] = None,
         fill: Optional[Mapping[str, Any]] = None, wording: Optional[str] = None, **context: Any) -> Diagnostic:
    """Build the dict form of a diagnostic from the registry.

    The message (what was seen on this host) is the registry's template named ``wording`` (default: the
    one of the ``variant``, else the code's default template, else its cause text); the remediation is
    always the registry's: its default steps, or the named ``variant`` of the code. Extra keyword
    arguments fill the ``{placeholders}`` of the registry's texts and are returned under ``details`` so
    that a report keeps them; ``fill`` holds placeholders of the message template that are not kept as
    details (the pieces of a sentence the check composed: already excerpted or bounded values). Values
    are inserted once, never interpreted (``_fill``): input never becomes a template. A call site never
    writes its own message or remediation (both raise TypeError). An unregistered code, variant or
    wording raises (a defect of the toolkit)."""
    for own in ("message", "remediation"):
        if own in context:
            raise TypeError("make(%s): the %s comes from the registry (register a wording and fill its "
                            "placeholders)" % (code, own))
    return _make(code, None, severity, variant, fill, wording, context)


def _make(code: str, message: Optional[str], severity: Optional[str], variant: Optional[str],
          fill: Optional[Mapping[str, Any]], wording: Optional[str], context: Dict[str, Any]) -> Diagnostic:
    """make(), and the registry module's own builders (unit_not_found) that compose a sentence here."""
    entry = spec(code)
    if variant is not None and variant not in entry.variants and variant not in entry.messages:
        raise UnregisteredCode("%s has no variant %r" % (code, variant))
    if wording is not None and wording not in entry.messages:
        raise UnregisteredCode("%s has no message wording %r" % (code, wording))
    out: Diagnostic = {
        "code": code,
        "severity": severity or entry.severity,
        "rule": entry.rule,
        "title": entry.title,
        "message": _bounded(message if message is not None else _fill(
            _message_template(entry, variant if wording is None else wording),
            dict(context, **fill) if fill else context)),
        "remediation": _steps(entry.variants.get(variant or "", entry.remediation), context),
    }
    if context:
        out["details"] = dict((k, _bounded(v)) for k, v in context.items() if _jsonable(v))
    return out


# What a check adds to a finding already made (a count of the ones left out, where it was seen, whom a
# failure blames): "{message}" is the finding's own message, never re-read as a template.
AMENDMENTS = {
    "more_diagnostics": "{message} (and {count} more diagnostics)",
    "more_problems": "{message} (and {count} more problems)",
    "seen_in": "{where}: {message}",
    "blamed_by_probe": "{message} The probe failed in this unit's context.",
    "confirmed_by_experiment": "{message} The probe failed in this unit's context; found by experiment ({how}): "
                               "{relaxed}",
}


class Restated(Dict[str, Any]):
    """A finding that restates another (amend()): the same fields, a fuller message; ``restates`` is the
    finding it stands for, so that union() lists it in that finding's place. Serialised as a plain dict."""
    restates: Mapping[str, Any]


def amend(diag: Mapping[str, Any], amendment: str, **fill: Any) -> Diagnostic:
    """A copy of ``diag`` whose message is the registered ``amendment`` of it (values filled once); the copy
    restates ``diag`` (Restated)."""
    out = Restated(diag, message=_fill(AMENDMENTS[amendment], dict(fill, message=diag["message"])))
    out.restates = diag
    return out


def _message_template(entry: Code, variant: Optional[str]) -> str:
    return entry.messages.get(variant or "", entry.messages.get("", entry.cause))


def _jsonable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, list, dict, tuple)) or value is None


def unit_not_found(unit: str, scope: Optional[str] = None, root: Optional[str] = None,
                   error: Optional[str] = None, then: Optional[str] = None) -> Diagnostic:
    """The one builder of ``unit_not_found``: the unit (and scope, or the root it was looked for below),
    why it counts as missing (``error``: systemctl failed) and what was done instead (``then``)."""
    text = unit + (" (%s scope)" % scope if scope else "")
    text += " was not found" + (" below %s" % root if root not in (None, "", "/") else "")
    if error:
        text += ": systemctl failed: %s" % error
    elif not scope and not root:
        text += " on this host"
    return _make("unit_not_found", text + (": %s." % then if then else "."), None, None, None, None, {"unit": unit})


def subject(diag: Mapping[str, Any]) -> Tuple[str, str]:
    """(code, subject): what a finding is about within one host's report - its code and the details it was
    built with (unit, directive, path, check, ...)."""
    return (str(diag.get("code")), repr(sorted((diag.get("details") or {}).items())))


def union(*groups: Iterable[Mapping[str, Any]]) -> List[Diagnostic]:
    """The findings of several checks of one host, each once, in order: a finding equal to one listed (the
    same record from two checks that read the same thing) is that one; a restatement (amend(): the probe
    blaming, or confirming by experiment, a directive the service check reported) takes the place of the
    finding it restates. Nothing is compared by its wording: two findings that differ in any field stay two."""
    out: List[Diagnostic] = []
    replaced: List[Mapping[str, Any]] = []
    for group in groups:
        for diag in group:
            original = getattr(diag, "restates", None)
            index = next((i for i, kept in enumerate(out) if original is not None and kept == original), None)
            if index is not None:
                replaced.append(out[index])
                out[index] = cast(Diagnostic, diag)
            elif diag not in out and diag not in replaced:
                out.append(cast(Diagnostic, diag))
    return out


def sort(diags: Iterable[Diagnostic]) -> List[Diagnostic]:
    """Errors first, then warnings, then info; stable otherwise."""
    return sorted(diags, key=lambda d: _RANK.get(d.get("severity", ""), 9))


def worst(diags: Iterable[Mapping[str, Any]]) -> Optional[str]:
    """The worst severity present, or None."""
    ranks = [_RANK[d["severity"]] for d in diags if d.get("severity") in _RANK]
    if not ranks:
        return None
    return SEVERITIES[min(ranks)]


def codes(diags: Iterable[Mapping[str, Any]]) -> List[str]:
    return [d["code"] for d in diags]
