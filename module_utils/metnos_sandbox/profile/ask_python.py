# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Asked of the runtime's interpreter (``python -I -S -c TEXT``, python_roots.discover_python): its sys.path and the
folders site.py would add (site is not run: venv_sites reads them as data), and the
installation it really runs from (the prefixes, the stdlib and site folders, the folder of libpython and the
libpython it has mapped, the folder of the resolved executable): read-only base trees whatever the writable
roots say. The answer is one line of JSON.

The text it runs is assembled from real files: base/json_lite.py (``dumps``: importing json there would cost
more than the rest), then this file; ``dumps`` is imported below only for the type checker. Importing this
module runs nothing: the work is under ``if __name__ == "__main__"``, which is what ``-c`` gives. No
``from __future__`` import (it would not compile after the other file).
"""
import os
import site
import sys
import sysconfig

MYPY = False
if MYPY:    # what the type checker reads; at run time the file before this one defines dumps
    from typing import Dict, List, Optional, Tuple

    from ..base.json_lite import dumps


def venv_layout(venv: str) -> "Dict[str, str]":
    """The install folders of the venv at ``venv`` (sysconfig's venv scheme where it has one: under -S
    sys.prefix is the base's, and a distribution's default scheme is not the venv's)."""
    scheme = "venv" if "venv" in sysconfig.get_scheme_names() else "posix_prefix"
    return sysconfig.get_paths(scheme, vars={"base": venv, "platbase": venv})


def venv_sites() -> "Tuple[Optional[str], List[str]]":
    """What site.py would have added (it is not run: ``-I -S``): the venv's folder (pyvenv.cfg beside the
    executable or one up, as site.venv() finds it), its purelib and platlib, the system's own when the venv
    includes them, and the folders the .pth files there name (read as data: an ``import`` line is never run)."""
    venv, system_too = None, True
    exe_dir = os.path.dirname(sys.executable)
    for folder in (exe_dir, os.path.dirname(exe_dir)):
        cfg = os.path.join(folder, "pyvenv.cfg")
        if os.path.isfile(cfg):
            venv, system_too = folder, False
            with open(cfg, encoding="utf-8", errors="replace") as handle:
                for line in handle.read(65536).splitlines():
                    key, _sep, value = line.partition("=")
                    if key.strip().lower() == "include-system-site-packages":
                        system_too = value.strip().lower() == "true"
            break
    # site.main() is not run under -S, even when site is imported: the venv's folders are its install scheme's,
    # the system's are what site.getsitepackages() gives (the distribution's own included: Debian's dist-packages)
    sites = []
    if venv:
        layout = venv_layout(venv)
        sites += [layout.get("purelib"), layout.get("platlib")]
    if system_too:
        sites += site.getsitepackages(list(dict.fromkeys([sys.base_prefix, sys.base_exec_prefix])))
    found = []
    for folder in [s for s in sites if s and os.path.isdir(s)]:
        found.append(folder)
        for name in sorted(os.listdir(folder))[:1000]:
            if name.endswith(".pth"):
                try:
                    with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                        lines = handle.read(65536).splitlines()
                except OSError:
                    continue
                for line in lines[:1000]:
                    line = line.rstrip()
                    if line and not line.startswith(("#", "import ", "import\t")):
                        named = os.path.join(folder, line)
                        if os.path.isdir(named) and named not in found:
                            found.append(named)
    return venv, found


if __name__ == "__main__":
    venv_dir, site_paths = venv_sites()
    inst = [venv_dir, sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.exec_prefix),
            os.path.dirname(os.path.realpath(sys.executable))]
    layout = venv_layout(venv_dir) if venv_dir else sysconfig.get_paths()
    inst += [layout.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    inst.append(sysconfig.get_config_var("LIBDIR"))
    try:
        with open("/proc/self/maps") as handle:
            for line in handle:
                fields = line.split(None, 5)
                if len(fields) > 5 and "libpython" in fields[5]:
                    inst.append(os.path.dirname(fields[5].strip()))
    except OSError:
        pass
    # loads/dumps: json_lite.py's text runs before this file's (sources.script); print is this script's answer
    answer = {"path": [p for p in sys.path + site_paths if isinstance(p, str)],
              "install": [p for p in inst if isinstance(p, str)]}
    print(dumps(answer))  # pylint: disable=used-before-assignment,ansible-bad-function
