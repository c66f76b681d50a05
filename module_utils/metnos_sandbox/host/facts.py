# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's answer to ``sandbox.status()`` plus what explains a failure.

``gather()`` is what ``library/bwrap_facts.py`` returns. Read-only: it runs
bwrap (--version, --help, one smoke test) and package queries, nothing else.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import pwd
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from ..base import diagnostics, envflags, owners, verdicts
from ..base.records import Record
from . import bwrap, bwrap_errors, bwrap_run, bwrap_trust, kernel, package_owner

DEFAULT_SMOKE_USERS = ("nobody",)


class UserError(ValueError):
    """An option names a user that does not exist."""


def resolve_user(name: Union[str, int]) -> Dict[str, Any]:
    """A user name or numeric uid -> {name, uid, gid, home}. Raises UserError."""
    try:
        entry = pwd.getpwuid(int(name)) if str(name).isdigit() else pwd.getpwnam(str(name))
    except (KeyError, ValueError):
        raise UserError("user %r does not exist on this host (getent passwd %s finds nothing)"
                        % (name, name)) from None
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir}


def default_smoke_user() -> Optional[Dict[str, Any]]:
    """An unprivileged account for the smoke test: never only root."""
    for name in DEFAULT_SMOKE_USERS:
        try:
            return resolve_user(name)
        except UserError:
            continue
    for entry in pwd.getpwall():
        if 1000 <= entry.pw_uid < 60000:
            return resolve_user(entry.pw_name)
    return None


# bwrap_trust's states of a file in a package, as package_state() names them
_PACKAGE_STATE = {"packaged": "ok"}


def bwrap_info(bwrap_path: str, runner: bwrap.Runner = bwrap.default_runner,
               verifications: Optional[bwrap_trust.Verifications] = None) -> Dict[str, Any]:
    """Version, package, owner, mode, setuid and --help features of one bwrap; ``not_run``: what makes it not
    root's (base/owners.py, as dicts), when it was not run at all (no version, no features asked).
    ``verifications``: the audit's (bwrap_trust.Verifications), so that the probe does not ask the package manager
    again, and, when a verification was kept from an earlier audit, the file's answers to --version and --help
    with it."""
    # what the package database says of the file (dpkg --verify, rpm -V, pacman -Qkk): bwrap_trust
    trust = bwrap_trust.verify(bwrap_path, runner, verifications=verifications)
    ident = bwrap_trust.identity(trust["realpath"]) if verifications is not None and trust["ident"] else None
    kept = verifications.answers(bwrap_path, trust["realpath"], ident) if verifications is not None and ident else None
    # root runs only what root owns (issue 49): judged from the filesystem before --version and --help
    not_roots = [problem._asdict() for problem in owners.as_root(bwrap_path)]
    if not_roots:
        version, features = None, []  # type: Optional[str], List[str]
    elif kept is not None:
        version, features = kept
    else:
        rc, out, err = runner([bwrap_path, "--version"])
        version = bwrap.parse_version(out or err)
        rc_h, help_out, help_err = runner([bwrap_path, "--help"])
        features = bwrap.parse_features(help_out or help_err)
        if (verifications is not None and ident and rc == 0 and rc_h == 0
                and bwrap_trust.identity(trust["realpath"]) == ident):
            verifications.keep_answers(bwrap_path, trust["realpath"], ident, (version, features))
    files = bwrap.file_facts(bwrap_path)
    if trust["ident"]:
        pkg = trust["package"]
        state, detail = _PACKAGE_STATE.get(trust["state"], trust["state"]), trust["detail"]
    else:           # the file vanished meanwhile: asked as it is now
        pkg = package_owner.package_facts(bwrap_path, runner=runner)
        state, detail = bwrap_trust.package_state(pkg["manager"], pkg["name"], str(files["realpath"]), runner) if pkg \
            else ("", "")
    info: Dict[str, Any] = {"version": version, "features": features,
                            "missing_features": [] if not_roots else bwrap.missing_features(features), "package": pkg,
                            "not_run": not_roots}
    info.update(files)
    if pkg:
        info["package"] = dict(pkg, verified=state, verify_detail=detail)
    return info


def binary_diagnostics(info: Mapping[str, Any]) -> List[diagnostics.Diagnostic]:
    out: List[diagnostics.Diagnostic] = []
    path = info["path"]
    if info.get("setuid"):
        refused = bwrap.version_tuple(info.get("version")) >= (0, 12)
        out.append(diagnostics.make("bwrap_setuid", bwrap_path=path, mode=info["mode"], version=info.get("version"),
                                    variant="refused" if refused else None))
    if info.get("ownership_problems"):
        out.append(diagnostics.make("bwrap_not_root_owned", bwrap_path=path,
                                    problems="; ".join(info["ownership_problems"])))
    if info.get("not_run"):
        out.extend(owners.findings("bwrap_not_run_not_roots", path, [owners.Problem(**problem)
                                                                     for problem in info["not_run"]]))
    package = info.get("package") or {}
    if not package:
        out.append(diagnostics.make("bwrap_not_packaged", bwrap_path=path))
    elif package.get("verified") in ("modified", "missing"):
        out.append(diagnostics.make("bwrap_package_modified", bwrap_path=path, package=package.get("name"),
                                    detail=package.get("verify_detail") or package["verified"]))
    if info.get("missing_features"):
        out.append(diagnostics.make("bwrap_feature_missing", missing=", ".join(info["missing_features"]),
                                    bwrap_path=path,
                                    version=info.get("version") or "?"))
    return out


def smoke(bwrap_path: str, user: Optional[Mapping[str, Any]], timeout: float = 20.0,
          path_text: Optional[str] = None) -> Dict[str, Any]:
    """Run the smoke test for real as ``user`` (None: the current user)."""
    true_path = bwrap.which("true", "/usr/bin:/bin") or "/bin/true"
    env = {"PATH": path_text or "/usr/bin:/bin", "LANG": "C", "LC_ALL": "C"}
    argv = bwrap.smoke_argv(bwrap_path, true_path)
    result = bwrap_run.run_bwrap(argv, user=user, env=env, timeout=timeout)
    uid = user["uid"] if user else os.geteuid()
    out: Dict[str, Any] = {
        "ran": True,
        "user": user["name"] if user else pwd.getpwuid(uid).pw_name,
        "uid": uid,
        "argv": [a if a != "{status_fd}" else "3" for a in argv],
        "rc": result["rc"],
        "stderr": result["stderr"].strip(),
        "json_status": result["json_status"],
        "setup_failed": result["setup_failed"],
        "timed_out": result["timed_out"],
        "passed": result["rc"] == 0 and not result["setup_failed"] and not result["timed_out"],
    }
    if not out["passed"]:
        out["classification"] = bwrap_errors.classify(result["stderr"], result["rc"],
                                                      setup_failed=result["setup_failed"])
    return out


def smoke_diagnostics(result: Mapping[str, Any]) -> List[diagnostics.Diagnostic]:
    out: List[diagnostics.Diagnostic] = []
    if result.get("uid") == 0:
        out.append(diagnostics.make("smoke_ran_as_root"))
    if result.get("passed"):
        return out
    cls = result.get("classification") or {}
    if result.get("timed_out"):
        cls = {"cause": "timeout", "cause_text": "the smoke test did not finish in time",
               "remediation": ["findmnt -t nfs,nfs4,cifs,fuse"],
               "hint": "Check for a hung mount (NFS, the command lists them) or a stuck namespace setup."}
    text = cls.get("cause_text", "")
    if cls.get("stderr_line"):
        text += " (bwrap said: %s)" % cls["stderr_line"]
    out.append(diagnostics.make("bwrap_smoke_failed", user=result.get("user"), cause=cls.get("cause"),
                                cause_text=text, cause_remediation=cls.get("remediation"),
                                variant="classified" if cls.get("remediation") or cls.get("hint") else None,
                                fill={"cause_hint": cls.get("hint") or ""},
                                points_at=cls.get("points_at")))
    return out


class SmokeTest(Record):
    """The smoke test gather() runs: whether it runs at all (``run``), as which ``user`` (a resolved user dict;
    None: this process's) and for how long (``timeout``, seconds)."""
    run: bool = True
    user: Optional[Dict[str, Any]] = None
    timeout: float = 20.0


class HostRoots(Record):
    """Where gather() reads the kernel's knobs: ``proc`` and ``sys_root`` (/proc and /sys) and the ``root`` the
    files of the host are read under (tests point them at a planted tree)."""
    proc: str = "/proc"
    sys_root: str = "/sys"
    root: str = "/"


SMOKE_TEST = SmokeTest()       # gather()'s default: as this process's user, 20 s
THIS_HOST = HostRoots()        # gather()'s default: this host's own /proc, /sys and /


def gather(path_text: str, environment: Mapping[str, str], smoke_test: SmokeTest = SMOKE_TEST,
           runner: bwrap.Runner = bwrap.default_runner, cwd: str = "/",
           verifications: Optional[bwrap_trust.Verifications] = None, roots: HostRoots = THIS_HOST) -> Dict[str, Any]:
    """Everything bwrap_facts returns, for bwrap as ``path_text`` finds it (relative entries from ``cwd``) in
    ``environment``; ``verifications``: see bwrap_info()."""
    smoke_user = smoke_test.user
    diags: List[diagnostics.Diagnostic] = []
    found = bwrap.which("bwrap", path_text, cwd=cwd)
    status = envflags.status(found, environment)
    result: Dict[str, Any] = {"status": status, "path": path_text,
                              "path_unsafe_entries": bwrap.unsafe_entries(path_text)}
    diags.extend(envflags.diagnose(status, environment, path_text, where="environment given"))

    knobs = kernel.facts(proc=roots.proc, sys_root=roots.sys_root, root=roots.root)
    diags.extend(kernel.diagnose(knobs))

    if found:
        info = bwrap_info(found, runner=runner, verifications=verifications)
        result["bwrap"] = info
        diags.extend(binary_diagnostics(info))
    else:
        result["bwrap"] = {}

    if not smoke_test.run:
        knobs["smoke_test"] = {"ran": False, "reason": "smoke_test=false"}
    elif not found:
        knobs["smoke_test"] = {"ran": False, "reason": "bwrap not found on PATH"}
        diags.append(diagnostics.make("bwrap_smoke_skipped", reason="bwrap was not found on the PATH checked.",
                                      variant="no_bwrap"))
    elif result["bwrap"].get("not_run"):
        # root runs only what root owns, and no user runs another's bwrap: bwrap_not_run_not_roots says why
        knobs["smoke_test"] = {"ran": False, "reason": "not root's"}
    else:
        if smoke_user is not None and smoke_user["uid"] != os.geteuid() and os.geteuid() != 0:
            # Cannot switch users without root: run as ourselves and say so.
            diags.append(diagnostics.make("bwrap_smoke_skipped", severity=diagnostics.WARNING,
                                          reason="Not root: the smoke test ran as the current user instead "
                                                 "of %s." % smoke_user["name"]))
            smoke_user = None
        if smoke_user is not None and smoke_user["uid"] == os.geteuid():
            smoke_user = None
        knobs["smoke_test"] = smoke(found, smoke_user, timeout=smoke_test.timeout)
        diags.extend(smoke_diagnostics(knobs["smoke_test"]))
    result["userns"] = knobs
    result["diagnostics"] = diagnostics.sort(diagnostics.union(diags))   # a finding made twice (the same record) once
    return verdicts.decide(result)       # the facts as output: their verdict from their findings, once


def verdict(diags: Iterable[Mapping[str, Any]]) -> str:
    """'pass' / 'warn' / 'fail' from the worst severity (base/verdicts.decide: the one verdict function)."""
    return verdicts.of(diags)
