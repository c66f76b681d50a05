# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metnos_audit: the whole read-only host audit in one round trip.

Instead of packaging a module per task (AnsiballZ), this action ships one self-contained
payload: the toolkit's core (module_utils/metnos_sandbox) compressed once per run in the
controller's main process, plus a 25-line bootstrap that imports it from memory. Over
pipelining-capable connections (local, ssh) the payload goes over stdin with a single command;
otherwise as arguments (or, when too long, through the remote temp dir). Each host's result is
also kept in the run's controller-side temp dir for metnos_audit_report (see spool()).
Documentation: library/metnos_audit.py.
"""
from __future__ import absolute_import, annotations, division, print_function

import base64
import json
import os
import shlex
import zlib

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import (
    report as R,  # controller side only: the spool's layout
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import (
    sources as SRC,  # the core's files, found on disk
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import (
    spec as O,  # the one spec of the options
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    manifest as M,  # controller side: the one manifest loader
)

_CORE = SRC.CORE   # shipped from wherever the collection is

MAX_ARG = 120000   # Linux MAX_ARG_STRLEN is 128 KiB per argument
# The core minus the modules only the controller runs (reports, summaries): the host never imports
# them, and every byte counts against MAX_ARG. Past MAX_ARG a non-pipelining connection (podman,
# docker) ships through the remote temp dir, which leaves ~/.ansible/tmp on a host the audit must
# leave byte-identical. tests/unit/test_audit_payload.py keeps the payload under the bound and
# self-contained.
CONTROLLER_ONLY = ("metnos_sandbox.audit.report", "metnos_sandbox.audit.summary")
PACKAGES = " packages"   # the payload's key listing the package names (no module name has a space)

# Runs on the host: stdlib only, Python 3.8+. It imports nothing it does not need (importlib.abc alone
# costs more than json and zlib together) and compiles a module only when the audit imports it.
BOOTSTRAP = r"""
import sys, json, zlib
if len(sys.argv) > 2:
    import base64
    head, blob = sys.argv[1].encode("utf-8"), base64.b64decode("".join(sys.argv[2:]))
else:
    data = open(sys.argv[1], "rb").read() if len(sys.argv) > 1 else sys.stdin.buffer.read()
    head, _sep, blob = data.partition(b"\n")
src = json.loads(zlib.decompress(blob).decode("utf-8"))
packages = set(src.pop(" packages"))
from importlib.machinery import ModuleSpec
class Loader(object):
    def find_spec(self, name, path=None, target=None):
        if name in src:
            return ModuleSpec(name, self, is_package=(name in packages))
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        module.__file__ = "<metnos_audit:%s>" % module.__name__
        exec(compile(src[module.__name__], module.__file__, "exec", dont_inherit=True), module.__dict__)
    def get_source(self, name):
        return src[name]
sys.meta_path.insert(0, Loader())
from metnos_sandbox.audit import audit
try:
    result = audit.audit_host(json.loads(head.decode("utf-8")))
except Exception as exc:
    import traceback
    result = {"failed": True, "msg": "metnos_audit payload failed: %s" % exc, "exception": traceback.format_exc()}
sys.stdout.write(json.dumps(result))
"""


def _core_sources():
    """{module name: source} of the core's files (found on disk: sources.files), the controller-only ones left
    out; the packages' names under PACKAGES (the bootstrap's loader marks them as packages)."""
    src = {}
    for rel in SRC.files(_CORE):
        name = SRC.module_name(rel)
        if name in CONTROLLER_ONLY:
            continue
        with open(os.path.join(_CORE, rel), "r") as handle:
            src[name] = handle.read()
    src[PACKAGES] = sorted(SRC.module_name(rel) for rel in SRC.files(_CORE) if SRC.is_package(rel))
    return src


def _build_payload():
    return zlib.compress(json.dumps(_core_sources()).encode("utf-8"), 9)


# Built when the module is imported. Ansible's strategy imports action plugins in the controller's main
# process before it forks a worker per host, so every worker inherits these bytes instead of reading and
# compressing the core again (that alone was ~10 ms of controller CPU per host).
_PAYLOAD = _build_payload()
_PAYLOAD_B64 = None


def payload(encoding="raw"):
    """The core's sources as one zlib-compressed JSON object ({module name: source}); base64 for argv."""
    global _PAYLOAD_B64
    if encoding == "raw":
        return _PAYLOAD
    if _PAYLOAD_B64 is None:
        _PAYLOAD_B64 = base64.b64encode(_PAYLOAD)
    return _PAYLOAD_B64


def _warm_filters():
    """Load the Jinja filter plugins once in the controller's main process (see _PAYLOAD): the audit task's
    arguments use filters (bool, default, metnos_manifest_source), and a worker that has to discover and
    import every filter plugin itself spends ~30 ms per host doing it."""
    try:
        from ansible.plugins.loader import filter_loader
        filter_loader.get("bool")
    except Exception:   # only an optimisation: the worker loads them itself otherwise
        pass


_warm_filters()


def spool_dir():
    """Where this run keeps each host's result for metnos_audit_report: a directory inside Ansible's own
    per-run temp dir on the controller (private, created by the main process before it forks the workers,
    removed when it exits)."""
    from ansible import constants as C
    return os.path.join(C.DEFAULT_LOCAL_TMP, R.SPOOL)


def spool(host, text):
    """Keep one host's result (the payload's JSON as received, or a failure record) for the report, so
    that the report reads files instead of templating every host's registered result through Jinja
    (at 1,000 hosts that templating alone took ~4 s of CPU in one worker)."""
    R.write_spooled(spool_dir(), host, text)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _argv_chunks(self, python, params):
        """The payload as several arguments of one command run without a shell (each argument stays under
        Linux's 128 KiB per-argument limit; the whole under ARG_MAX), so that a core larger than one
        argument still leaves nothing on the host. None where a wrapper would fold it back into one
        argument (become) or it is too large: then the remote temp file is used."""
        blob = payload("base64").decode("ascii")
        if getattr(self._play_context, "become", False) or len(params) >= MAX_ARG or len(blob) > 16 * MAX_ARG:
            return None
        chunks = [blob[i:i + MAX_ARG] for i in range(0, len(blob), MAX_ARG)]
        return " ".join(shlex.quote(a) for a in [python, "-c", BOOTSTRAP, params] + chunks)

    def _python_missing(self, python):
        """After a failed payload: is there no Python at all? Asked over the raw connection (sh only).
        Returns the message for host_no_python, or None."""
        probe = "for p in %s python3 python; do command -v \"$p\" >/dev/null 2>&1 && exit 0; done; exit 3" % (
            shlex.quote(python))
        try:
            res = self._low_level_execute_command(probe, sudoable=True)
        except Exception:   # the connection itself failed: unreachable, not this
            return None
        if res.get("rc") != 3:
            return None
        return ("metnos_audit: the host answers, but has no Python to run the audit (%s, python3 and python are "
                "not on its PATH); install one with the raw module, e.g. ansible HOST -m ansible.builtin.raw -a "
                "'apt-get install -y python3'" % python)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        # Types, choices, unknown options and defaults: Ansible's own validator, with the module's spec.
        _validation, validated = self.validate_argument_spec(argument_spec=O.spec(O.AUDIT))
        args = O.with_defaults(O.AUDIT, validated)
        # Manifest text is loaded by the core's one reader/decoder (the host then needs no YAML
        # library); a refused load travels as the core's refusal record, refused on the host.
        args["manifests"] = [M.transport(item) for item in args.get("manifests") or []]
        try:
            O.sha256_list(args.get("accept_bwrap_sha256"))
        except O.OptionError as exc:
            result.update(failed=True, code="invalid_option", msg="metnos_audit: %s" % exc)
            return result

        python = args.pop("python", None) or (task_vars or {}).get("ansible_python_interpreter") or "/usr/bin/python3"
        python = self._templar.template(python)
        host = (task_vars or {}).get("inventory_hostname") or "localhost"
        try:
            res = self._ship(python, args)
        except AnsibleConnectionFailure as exc:
            spool(host, json.dumps({"unreachable": True, "msg": str(exc)}))
            raise
        stdout = res.get("stdout", "")
        try:
            out = json.loads(stdout[stdout.index("{"):]) if "{" in stdout else None
        except ValueError:
            out = None
        if res.get("rc", 1) != 0 or out is None:
            missing = self._python_missing(python)
            if missing:
                result.update(failed=True, code="host_no_python", msg=missing)
                spool(host, json.dumps({"failed": True, "code": "host_no_python", "msg": missing}))
                return result
            result.update(failed=True, rc=res.get("rc"), msg="metnos_audit: the payload failed on this host "
                          "(rc=%s): %s" % (res.get("rc"), (res.get("stderr") or stdout)[-1500:]))
            spool(host, json.dumps({"failed": True, "msg": result["msg"]}))
            return result
        spool(host, stdout[stdout.index("{"):])
        result.update(out)
        result["changed"] = False
        return result

    def _ship(self, python, args):
        """Run the payload on the host in one command: over stdin where the connection pipelines (local,
        ssh), as arguments otherwise (podman, docker), through a remote temp file when too long for that."""
        data = json.dumps(args).encode("utf-8") + b"\n" + payload()
        boot = "exec %s -c %s" % (shlex.quote(python), shlex.quote(BOOTSTRAP))
        params = json.dumps(args)
        if getattr(self._connection, "has_pipelining", False):
            return self._low_level_execute_command(boot, in_data=data, sudoable=True)
        if len(payload("base64")) + len(params) < MAX_ARG:
            return self._low_level_execute_command("%s %s %s" % (boot, shlex.quote(params),
                                                                 payload("base64").decode("ascii")), sudoable=True)
        argv = self._argv_chunks(python, params)
        if argv:
            return self._low_level_execute_command(argv, sudoable=True, executable=False)
        remote_tmp = self._make_tmp_path()
        try:
            remote_file = self._connection._shell.join_path(remote_tmp, "metnos_audit.payload")
            self._transfer_data(remote_file, data)
            return self._low_level_execute_command("%s %s" % (boot, shlex.quote(remote_file)), sudoable=True)
        finally:
            try:
                self._remove_tmp_path(remote_tmp)
            except Exception:
                pass
