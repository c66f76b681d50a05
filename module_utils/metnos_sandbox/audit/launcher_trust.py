# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The installed launcher judged again at every audit and monitor run (issue 49): root starts
metnos-sandbox-exec (the role's metnos_sandbox_exec_link) with the interpreter its ``#!`` line names, so whoever
can change the link, the launcher, a folder on their way, that interpreter, its loader, the pyvenv.cfg beside it
or one folder up, the ``home`` that names or the standard library there runs their code as root at its next
start. The role judged the interpreter once, at install (library/metnos_root_python.py,
launcher_python_not_roots); a venv chown'ed, chmod'ed, given an ACL entry or swapped for a link afterwards is
found here, with the same functions (base/owners.py problems and python_problems), from the filesystem alone:
nothing is run, nothing written.

One ``launcher_installed_not_roots`` finding per component (its path, its owner, the fix). No launcher at the
link (metnos_sandbox_exec false): nothing to judge. Pure Python, no Ansible imports, Python 3.8+.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
from typing import List, Optional

from ..base import owners
from ..base.diagnostics import Diagnostic

CODE = "launcher_installed_not_roots"


def interpreter(link: str) -> Optional[str]:
    """The interpreter named by the ``#!`` line of the launcher ``link`` leads to (links walked and judged by
    owners.resolve; the file read without following a link): None when the walk fails or there is no ``#!``."""
    real = owners.resolve(link, [])
    return owners.interpreter(real) if real is not None else None


def findings(link: str) -> List[Diagnostic]:
    """Every component of the launcher at ``link`` and of the interpreter it names that someone other than root
    can change: one finding each; [] when root alone can change both, or when nothing is at ``link``."""
    if not link or not os.path.lexists(link):
        return []
    found = owners.problems(link)           # the link, its folders, the launcher, its #! interpreter and loader
    python = interpreter(link)
    if python is not None:
        found += owners.python_problems(python)       # the pyvenv.cfg, its home, the standard library there
    return owners.findings(CODE, python or link, owners.unique(found), launcher=link)
