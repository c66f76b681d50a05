# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metnos_audit: the whole read-only host audit in one round trip.

Instead of packaging a module per task (AnsiballZ), this action ships one self-contained
payload: the toolkit's core (module_utils/metnos_sandbox) compressed once per worker process,
plus a 20-line bootstrap that imports it from memory. Over pipelining-capable connections
(local, ssh) the payload goes over stdin with a single command; otherwise it is copied to the
remote temp dir first. Documentation: library/metnos_audit.py.
"""
from __future__ import absolute_import, annotations, division, print_function

import base64
import glob
import json
import os
import shlex
import zlib

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

_CORE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "module_utils",
                                      "metnos_sandbox"))
_PAYLOAD = None
MAX_ARG = 120000   # Linux MAX_ARG_STRLEN is 128 KiB per argument

BOOTSTRAP = r'''
import sys, json, zlib, base64, importlib.abc, importlib.util
if len(sys.argv) > 2:
    head, blob = sys.argv[1].encode("utf-8"), sys.argv[2].encode("ascii")
else:
    data = open(sys.argv[1], "rb").read() if len(sys.argv) > 1 else sys.stdin.buffer.read()
    head, _sep, blob = data.partition(b"\n")
src = json.loads(zlib.decompress(base64.b64decode(blob)).decode("utf-8"))
class Loader(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name in src:
            return importlib.util.spec_from_loader(name, self, is_package=(name == "metnos_sandbox"))
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        module.__file__ = "<metnos_audit:%s>" % module.__name__
        exec(compile(src[module.__name__], module.__file__, "exec"), module.__dict__)
sys.meta_path.insert(0, Loader())
from metnos_sandbox import audit
try:
    result = audit.audit_host(json.loads(head.decode("utf-8")))
except Exception as exc:
    import traceback
    result = {"failed": True, "msg": "metnos_audit payload failed: %s" % exc, "exception": traceback.format_exc()}
sys.stdout.write(json.dumps(result))
'''

ARGS = {"unit": str, "scope": str, "user": str, "manifests": list, "host": dict, "profile_dir": str,
        "probe": bool, "probe_timeout": (int, float), "smoke_user": str, "python": str}


def payload():
    """The core's sources, compressed once per worker process."""
    global _PAYLOAD
    if _PAYLOAD is None:
        src = {}
        for path in sorted(glob.glob(os.path.join(_CORE, "*.py"))):
            name = os.path.splitext(os.path.basename(path))[0]
            with open(path, "r") as handle:
                src["metnos_sandbox" if name == "__init__" else "metnos_sandbox." + name] = handle.read()
        _PAYLOAD = base64.b64encode(zlib.compress(json.dumps(src).encode("utf-8"), 9))
    return _PAYLOAD


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

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
        args = dict(self._task.args)
        for key, value in args.items():
            if key not in ARGS:
                raise AnsibleActionFail("metnos_audit: unknown option %r; accepted: %s"
                                        % (key, ", ".join(sorted(ARGS))))
            if value is not None and not isinstance(value, ARGS[key]):
                raise AnsibleActionFail("metnos_audit: option %s must be %s, got %r" % (
                    key, getattr(ARGS[key], "__name__", "a number"), value))
        if args.get("scope", "system") not in ("system", "user"):
            raise AnsibleActionFail("metnos_audit: scope must be system or user, got %r" % args["scope"])
        args.setdefault("unit", "metnos.service")
        args.setdefault("probe", True)
        manifests = []
        for index, item in enumerate(args.get("manifests") or []):
            if isinstance(item, str):
                try:
                    import yaml
                    item = yaml.safe_load(item)
                except Exception as exc:
                    raise AnsibleActionFail("metnos_audit: manifests[%d] is not YAML/JSON: %s" % (index, exc)) from None
            manifests.append(item)
        args["manifests"] = manifests

        python = args.pop("python", None) or (task_vars or {}).get("ansible_python_interpreter") or "/usr/bin/python3"
        python = self._templar.template(python)
        data = json.dumps(args).encode("utf-8") + b"\n" + payload()
        boot = "%s -c %s" % (shlex.quote(python), shlex.quote(BOOTSTRAP))
        remote_tmp = None
        params = json.dumps(args)
        if getattr(self._connection, "has_pipelining", False):
            # one command, the payload on stdin (local, ssh)
            res = self._low_level_execute_command(boot, in_data=data, sudoable=True)
        elif len(payload()) + len(params) < MAX_ARG:
            # no pipelining (podman, docker): the payload travels as arguments, nothing is written remotely
            res = self._low_level_execute_command("%s %s %s" % (boot, shlex.quote(params), payload().decode("ascii")),
                                                  sudoable=True)
        else:
            remote_tmp = self._make_tmp_path()
            remote_file = self._connection._shell.join_path(remote_tmp, "metnos_audit.payload")
            self._transfer_data(remote_file, data)
            res = self._low_level_execute_command("%s %s" % (boot, shlex.quote(remote_file)), sudoable=True)
        try:
            if remote_tmp:
                self._remove_tmp_path(remote_tmp)
        except Exception:
            pass
        stdout = res.get("stdout", "")
        try:
            out = json.loads(stdout[stdout.index("{"):]) if "{" in stdout else None
        except ValueError:
            out = None
        if res.get("rc", 1) != 0 or out is None:
            missing = self._python_missing(python)
            if missing:
                result.update(failed=True, code="host_no_python", msg=missing)
                return result
            result.update(failed=True, rc=res.get("rc"), msg="metnos_audit: the payload failed on this host "
                          "(rc=%s): %s" % (res.get("rc"), (res.get("stderr") or stdout)[-1500:]))
            return result
        result.update(out)
        result["changed"] = False
        return result
