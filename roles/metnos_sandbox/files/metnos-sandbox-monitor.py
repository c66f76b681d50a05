# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The continuous proof's entry point, started by metnos-sandbox-monitor.service (no Ansible here).

The role installs it in a versioned, root-owned folder next to the toolkit's core:
    /usr/local/lib/metnos-sandbox-monitor/<version>/metnos-sandbox-monitor.py
    /usr/local/lib/metnos-sandbox-monitor/<version>/metnos_sandbox/ (the core: its packages base/, host/, ...)
and the unit runs it with `python3 -I -B` (no environment, no user site, no bytecode written). The core is
imported by its bare name from that folder only; all the work is proof.main (see its docstring).
"""
import os
import sys

FOLDER = os.path.dirname(os.path.realpath(__file__))
sys.path[:0] = [FOLDER]

from metnos_sandbox.monitor import proof  # noqa: E402

if __name__ == "__main__":
    sys.exit(proof.main(sys.argv[1:], FOLDER))
