# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The continuous proof: one local run of the audit's checks on the host, with no Ansible.

The ``metnos-sandbox-monitor`` timer starts the service that runs ``main()`` (through the entry point
the role installs next to the core, roles/metnos_sandbox/files/metnos-sandbox-monitor.py). A run:

1. reads its configuration (the audit's own options, written by the role; bounded, exact, root's alone);
2. checks its own install (the versioned, root-owned folder it runs from is its release, unchanged);
3. runs ``host_audit.audit_host`` - the same read-only checks as playbooks/audit.yml and the real probe in
   the service's context - and judges it: proven when the probe passed and no check failed;
4. writes the node_exporter textfile (monitor_textfile), the stored result the audit can collect
   (monitor_state.RESULT) and journal entries (monitor_journal: one per run, one more when the verdict
   changed), each output atomically and each failure a diagnostic.

Exit status: 0 proven, 1 not proven, 2 an output could not be written. Never a traceback: an unexpected
error of the checks is ``monitor_run_failed``. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..audit import host_audit, monitor_state
from ..base import diagnostics, files, owners, verdicts
from ..base.records import Json
from ..host import bwrap, procfs
from ..options import spec
from ..options.checks import OptionError
from . import core_install, journald, prometheus

CONFIG = "/etc/metnos/sandbox-monitor.json"
CONFIG_SCHEMA = "metnos-sandbox-monitor-config/1"
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"       # Debian's prometheus-node-exporter default
MAX_CONFIG_BYTES = 8 * 1024 * 1024
AUDIT_KEYS = ("unit", "scope", "user", "manifests", "host", "profile_dir", "probe", "timeout", "smoke_user",
              "exec_link")
_TYPES: Dict[str, Tuple[type, ...]] = {"str": (str,), "path": (str,), "bool": (bool,), "list": (list,),
                                       "dict": (dict,), "float": (int, float)}
MAX_TIMEOUT = 3600.0


class ConfigProblem(ValueError):
    """The configuration is refused; ``code`` is monitor_config_invalid or monitor_config_unsafe."""

    def __init__(self, code: str, why: str) -> None:
        super(ConfigProblem, self).__init__(why)
        self.code = code


# --------------------------------------------------------------------------- configuration

def _check_option(name: str, value: Any) -> None:
    option = spec.AUDIT[name]
    kind = _TYPES[option["type"]]
    if value is None and name in ("user", "smoke_user"):
        return
    if not isinstance(value, kind) or (bool not in kind and isinstance(value, bool)):
        raise ConfigProblem("monitor_config_invalid", "audit.%s must be a %s, not %s" % (
            name, option["type"], diagnostics.excerpt(value, 40)))
    if option.get("choices") and value not in option["choices"]:
        raise ConfigProblem("monitor_config_invalid", "audit.%s must be one of %s" % (
            name, ", ".join(option["choices"])))
    if option["type"] == "path" and not str(value).startswith("/"):
        raise ConfigProblem("monitor_config_invalid", "audit.%s must be an absolute path" % name)


def check_config(data: Any) -> Json:
    """``data`` as the monitor's configuration: {schema, audit: {the audit's options}}; the probe always runs
    (a run without it proves nothing)."""
    if not isinstance(data, dict) or data.get("schema") != CONFIG_SCHEMA:
        raise ConfigProblem("monitor_config_invalid", "it is not a %s document" % CONFIG_SCHEMA)
    unknown = sorted(set(data) - {"schema", "audit"})
    audit = data.get("audit")
    if unknown or not isinstance(audit, dict):
        raise ConfigProblem("monitor_config_invalid", "unknown keys %s" % diagnostics.excerpt(unknown) if unknown
                            else "it has no audit options")
    unknown = sorted(set(audit) - set(AUDIT_KEYS))
    if unknown:
        raise ConfigProblem("monitor_config_invalid", "unknown audit options %s" % diagnostics.excerpt(unknown))
    for name, value in audit.items():
        _check_option(name, value)
    if audit.get("probe") is False:
        raise ConfigProblem("monitor_config_invalid", "audit.probe is false: the monitor always runs the probe")
    try:
        spec.unit_name(audit.get("unit") or "metnos.service")
        spec.positive_seconds(float(audit.get("timeout") or 60))
    except OptionError as exc:
        raise ConfigProblem("monitor_config_invalid", str(exc)) from None
    if float(audit.get("timeout") or 60) > MAX_TIMEOUT:
        raise ConfigProblem("monitor_config_invalid", "audit.timeout is more than %d s" % MAX_TIMEOUT)
    return dict(data, audit=dict(audit, probe=True))


def read_config(path: str) -> Json:
    """The configuration at ``path``: root's alone (monitor_config_unsafe), bounded, JSON, exact
    (monitor_config_invalid)."""
    try:
        problems = bwrap.file_facts(path)["ownership_problems"] if os.path.lexists(path) else []
    except OSError as exc:
        raise ConfigProblem("monitor_config_invalid", "it cannot be read: %s" % (exc.strerror or exc)) from None
    if problems:
        raise ConfigProblem("monitor_config_unsafe", "; ".join(problems[:3]))
    try:
        data = monitor_state.read_json(path, MAX_CONFIG_BYTES, trusted_owner=False)
    except monitor_state.Unusable as exc:
        raise ConfigProblem("monitor_config_invalid", str(exc)) from None
    return check_config(data)


# --------------------------------------------------------------------------- the monitor's own install

def install_findings(folder: str, host: str) -> List[diagnostics.Diagnostic]:
    """The versioned folder the monitor runs from (``folder``: <root>/<version>, holding metnos_sandbox/ and the
    entry point): root's alone up to / (monitor_core_writable), and its sources the release its name says
    (monitor_core_modified); the interpreter running it root's alone (monitor_python_not_roots)."""
    core = os.path.join(folder, "metnos_sandbox")
    problems: List[str] = []
    try:
        paths = [folder] + [os.path.join(folder, n) for n
                            in sorted(os.listdir(folder))] + core_install.tree(core)[1:]
        for path in paths:
            problems += [p for p in bwrap.file_facts(path)["ownership_problems"] if p not in problems]
        rel = core_install.release(core)
    except OSError as exc:
        return [diagnostics.make("monitor_core_modified", folder=folder, digest="unreadable (%s)" % (exc.strerror
                                                                                                     or exc),
                                 expected=os.path.basename(folder), host=host)]
    out = owners.findings("monitor_python_not_roots", sys.executable, owners.python_problems(sys.executable))
    if problems:
        out.append(diagnostics.make("monitor_core_writable", folder=folder, problems="; ".join(problems[:5]),
                                    host=host))
    if os.path.basename(folder) != rel["version"]:
        out.append(diagnostics.make("monitor_core_modified", folder=folder, digest=rel["version"],
                                    expected=os.path.basename(folder), host=host))
    return out


def own_context(proc: str = "/proc") -> Json:
    """The monitor process's own confinement as the kernel reports it (evidence that its unit's hardening was
    in effect for the run that made the proof): no_new_privs, seccomp mode, the capability bounding set, whether
    / is mounted read-only, its cgroup."""
    out: Json = {}
    try:
        with open(os.path.join(proc, "self", "status")) as handle:
            status = dict(line.rstrip("\n").split(":\t", 1) for line in handle if ":\t" in line)
        out.update(no_new_privs=int(status.get("NoNewPrivs", "-1")), seccomp=int(status.get("Seccomp", "-1")),
                   cap_bounding=status.get("CapBnd"), uid=int(status.get("Uid", "-1").split()[0]))
        mounts = procfs.read_mounts("self", proc)       # the one mountinfo parser's reading
        if isinstance(mounts, str):
            raise OSError(mounts)
        roots = [mount for mount in mounts if mount["mountpoint"] == "/"]
        out["root_read_only"] = bool(roots) and "ro" in roots[-1]["opts"]
        with open(os.path.join(proc, "self", "cgroup")) as handle:
            out["cgroup"] = handle.read(4096).strip().splitlines()[-1][:200]
    except (OSError, ValueError, IndexError) as exc:
        out["error"] = diagnostics.excerpt(str(exc), 120)
    return out


def os_label(path: str = "/etc/os-release") -> str:
    """"<ID> <VERSION_ID>" of /etc/os-release (e.g. "debian 12"), "unknown" without one."""
    try:
        text = monitor_state.read_bounded(os.path.realpath(path), 65536, trusted_owner=False).decode("utf-8", "replace")
    except monitor_state.Unusable:
        return "unknown"
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    ident, version = (values.get(k, "").strip().strip("\"'") for k in ("ID", "VERSION_ID"))
    return ("%s %s" % (ident, version)).strip() or "unknown"


# --------------------------------------------------------------------------- one run

def audit(config: Optional[Json], runner: bwrap.Runner, hostname: str,
          diags: List[diagnostics.Diagnostic]) -> host_audit.HostResult:
    """The findings of the configured checks, no verdict yet (host_audit.checks; ``output`` attaches it): an empty
    result without a configuration, or when the checks raised (monitor_run_failed)."""
    if config is not None:
        try:
            result = host_audit.checks(spec.with_defaults(spec.AUDIT, config["audit"]),
                                       runner)   # the spec's defaults, once
            result.pop("monitor", None)          # the audit's view of the previous proof; this run replaces it
            result["diagnostics"] = [d for d in result["diagnostics"] if d["code"] != "monitor_result_unusable"]
            return result
        except Exception as exc:  # a defect of the checks: reported, never a traceback
            diags.append(diagnostics.make("monitor_run_failed", why=diagnostics.excerpt("%s: %s" % (type(exc).__name__,
                                                                                                    exc), 300),
                                          host=hostname))
    return {"schema": monitor_state.AUDIT_SCHEMA, "hostname": hostname, "bwrap_facts": {}, "service": None,
            "profiles": [], "probe": None, "diagnostics": []}


def judge(result: host_audit.HostResult, extra: Sequence[diagnostics.Diagnostic]) -> bool:
    """Proven: the monitor's own findings added to the audit's, the probe passed and no finding is an error."""
    result["diagnostics"] = diagnostics.sort(diagnostics.union(result["diagnostics"], extra))
    return verdicts.probe_passed(result.get("probe")) is True and verdicts.no_error(result["diagnostics"])


def previous_proof(path: str, now: float) -> Optional[Json]:
    """{proven, verdict, finished} of the stored result this run replaces (None: none, or unusable)."""
    record, _problem = monitor_state.load_result(path, now)
    if record is None:
        return None
    return {"proven": record["proven"], "verdict": record["verdict"], "finished": record["finished"]}


class Outputs(object):
    """Where a run writes: the textfile collector's directory, the stored result, the journal."""

    def __init__(self, textfile_dir: str = TEXTFILE_DIR, result: str = monitor_state.RESULT,
                 journal: Callable[[Mapping[str, Any]], Optional[str]] = journald.send) -> None:
        self.textfile_dir = textfile_dir
        self.result = result
        self.journal = journal


def run(config_path: str, outputs: Outputs, folder: Optional[str] = None, runner: bwrap.Runner = bwrap.default_runner,
        clock: Callable[[], float] = time.time) -> Tuple[int, Json]:
    """One monitor run; returns (exit status, the record written)."""
    started = clock()
    hostname = os.uname()[1]
    diags: List[diagnostics.Diagnostic] = []
    config = None
    try:
        config = read_config(config_path)
    except ConfigProblem as exc:
        diags.append(diagnostics.make(exc.code, path=config_path, why=str(exc), host=hostname))
    if folder is not None:
        diags += install_findings(folder, hostname)
    result = audit(config, runner, hostname, diags)
    proven = judge(result, diags)
    finished = clock()
    record: Json = {       # findings only: ``output`` attaches the verdict once the outputs' findings are in
        "schema": monitor_state.RESULT_SCHEMA, "toolkit_version": os.path.basename(folder) if folder else None,
        "hostname": hostname, "unit": (config or {}).get("audit", {}).get("unit", "metnos.service") or "none",
        "os": os_label(), "started": round(started, 3), "finished": round(finished, 3),
        "duration": round(finished - started, 3), "proven": proven,
        "previous": previous_proof(outputs.result, finished), "context": own_context(), "audit": result}
    return write_outputs(record, outputs)


def output(record: Json) -> Json:
    """The monitor's record as output: its audit finished once (host_audit.finish: the verdict from every finding,
    the outputs' too), the record's verdict that one, and whether it changed since the previous run."""
    out = dict(record, audit=host_audit.finish(record["audit"]))
    out["verdict"] = out["audit"]["verdict"]
    out["changed"] = journald.changed(out, out["previous"])
    return out


def _failed(record: Json, path: str, exc: Exception) -> Json:
    """``record`` (findings only) with monitor_output_failed for ``path``: not proven."""
    audit_result = dict(record["audit"])
    audit_result["diagnostics"] = diagnostics.sort(list(audit_result["diagnostics"]) + [diagnostics.make(
        "monitor_output_failed", path=path, why=diagnostics.excerpt(getattr(exc, "strerror", None) or str(exc), 200),
        host=record["hostname"])])
    return dict(record, audit=audit_result, proven=False)


def write_outputs(record: Json, outputs: Outputs) -> Tuple[int, Json]:
    """Textfile, stored result, journal entries: (the exit status, 2 when an output could not be written; the
    record as output). ``record`` carries findings only: the textfile needs no verdict, so the stored result is
    output once the textfile's fate is known; a stored result that cannot be written makes a new record (with
    its finding) for the journal, output once too."""
    textfile = os.path.join(outputs.textfile_dir, prometheus.FILE_NAME)
    ok = True
    try:
        prometheus.write(outputs.textfile_dir, record)
    except (OSError, ValueError) as exc:   # the stored result says why the textfile is missing
        record, ok = _failed(record, textfile, exc), False
    done = output(record)
    try:
        files.replace(outputs.result, json.dumps(done, sort_keys=True, separators=(",", ":")) + "\n", 0o600)
    except (OSError, ValueError) as exc:   # not stored: the journal says why
        done, ok = output(_failed(record, outputs.result, exc)), False
    entries = [journald.run_entry(done)] + ([journald.change_entry(done, done["previous"])]
                                            if done["changed"] else [])
    for entry in entries:
        why = outputs.journal(entry)
        if why is not None:      # no journal here (run by hand, a container without journald): say it on stderr
            sys.stderr.write("%s (journal: %s)\n" % (entry["MESSAGE"], why))
    if not ok:
        return 2, done
    return (0 if done["proven"] else 1), done


# --------------------------------------------------------------------------- the entry point

def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="metnos-sandbox-monitor", description=(
        "Re-prove the Metnos executor sandbox on this host and tell monitoring (node_exporter textfile, "
        "journal, a stored result the audit can collect)."))
    parser.add_argument("--config", default=CONFIG, help="the monitor's configuration (default %(default)s)")
    parser.add_argument("--textfile-dir", default=TEXTFILE_DIR,
                        help="node_exporter's textfile collector directory (default %(default)s)")
    parser.add_argument("--result", default=monitor_state.RESULT, help="the stored result (default %(default)s)")
    args = parser.parse_args(list(argv))
    for name in ("config", "textfile_dir", "result"):
        if not getattr(args, name).startswith("/"):
            parser.error("--%s must be an absolute path" % name.replace("_", "-"))
    return args


def main(argv: Sequence[str], folder: Optional[str]) -> int:
    """The entry point's whole work: ``folder`` is the versioned folder it runs from."""
    args = parse_args(argv)
    status, _record = run(args.config, Outputs(args.textfile_dir, args.result), folder)
    return status
