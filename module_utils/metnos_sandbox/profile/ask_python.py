# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Asked of the runtime's interpreter (``python -c TEXT``, python_roots.discover_python): its sys.path, and the
installation it really runs from (the prefixes, the stdlib and site folders, the folder of libpython and the
libpython it has mapped, the folder of the resolved executable): read-only base trees whatever the writable
roots say. The answer is one line of JSON.

The text it runs is assembled from real files: base/json_lite.py (``dumps``: importing json there would cost
more than the rest), then this file; ``dumps`` is imported below only for the type checker. Importing this
module runs nothing: the work is under ``if __name__ == "__main__"``, which is what ``-c`` gives. No
``from __future__`` import (it would not compile after the other file).
"""
import os
import sys
import sysconfig

MYPY = False
if MYPY:    # what the type checker reads; at run time the file before this one defines dumps
    from ..base.json_lite import dumps

if __name__ == "__main__":
    inst = [sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.exec_prefix),
            os.path.dirname(os.path.realpath(sys.executable))]
    inst += [sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
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
    answer = {"path": [p for p in sys.path if isinstance(p, str)], "install": [p for p in inst if isinstance(p, str)]}
    print(dumps(answer))  # pylint: disable=used-before-assignment,ansible-bad-function
