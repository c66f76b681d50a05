"""A corpus of unit files for the systemd parser, shared by two tests:

- tests/unit/test_systemd_unit.py parses each case offline (tmp root) and compares with ``expected``;
- tests/system/test_service_env_systemd.py starts each unit under a real systemd (Debian 12
  container) and compares the process's real environment (/proc/MainPID/environ) with the offline
  parse, so ``expected`` is what systemd itself does, not our reading of the docs.

Each case: the unit text (installed as /etc/systemd/system/metnos-<name>.service), companion files,
and the expected variables (PATH only when the unit sets it). Exercised: quoting, C escapes,
continuation with a comment inside, an invalid assignment systemd ignores, EnvironmentFile grammar
(spaces, quotes, escapes, continuation, CR) overriding Environment=, UnsetEnvironment (by name and
by exact value) applied last, drop-ins in /etc masking /run by name, a dashed-prefix drop-in
directory, an empty assignment resetting the list, an optional missing EnvironmentFile.
"""

CORPUS = {'p1': {'expected': {'A': '1 2',
                     'B': 'from-file',
                     'C': 'x y',
                     'D': 'tab\there',
                     'E': 'AA',
                     'F': '1',
                     'G': '2',
                     'H': 'spaced',
                     'I': 'q "x" \\y',
                     'J': 'lit\\n',
                     'L': 'onetwo',
                     'M': 'dropin',
                     'METNOS_SANDBOX': '',
                     'N': 'prefix'},
        'files': {'/etc/metnos/p1.env': '# c\n'
                                        'H = spaced  \n'
                                        'I="q \\"x\\" \\\\y"\n'
                                        "J='lit\\n'\n"
                                        'K=gone\n'
                                        'L=one\\\n'
                                        'two\n'
                                        'B=from-file\n',
                  '/etc/systemd/system/metnos-.service.d/20-prefix.conf': '[Service]\nEnvironment=N=prefix\n',
                  '/etc/systemd/system/metnos-p1.service.d/10-a.conf': '[Service]\nEnvironment=M=dropin\n',
                  '/run/systemd/system/metnos-p1.service.d/10-a.conf': '[Service]\n'
                                                                       'Environment=M=masked-by-etc\n'},
        'unit': '[Service]\n'
                'Environment="A=1 2" B=3 \'C=x y\'\n'
                'Environment=D=tab\\there E=\\x41\\101\n'
                'Environment=F=1 \\\n'
                '# inside a continuation\n'
                '  G=2\n'
                'Environment=METNOS_SANDBOX= 0\n'
                'EnvironmentFile=/etc/metnos/p1.env\n'
                'UnsetEnvironment=K\n'
                'ExecStart=/bin/sleep infinity\n'},
 'p2': {'expected': {'C': '3'},
        'files': {'/etc/systemd/system/metnos-p2.service.d/50-reset.conf': '[Service]\n'
                                                                           'Environment=\n'
                                                                           'Environment=C=3\n'},
        'unit': '[Service]\nEnvironment=A=1 B=2\nExecStart=/bin/sleep infinity\n'},
 'p3': {'expected': {'PATH': '/usr/sbin:/usr/bin'},
        'files': {'/etc/metnos/p3.env': 'METNOS_SANDBOX=off\nPATH=/usr/sbin:/usr/bin\r\n'},
        'unit': '[Service]\n'
                'Environment=PATH=/usr/bin:/bin METNOS_SANDBOX=1\n'
                'EnvironmentFile=-/etc/metnos/none\n'
                'EnvironmentFile=/etc/metnos/p3.env\n'
                'UnsetEnvironment=METNOS_SANDBOX=off\n'
                'ExecStart=/bin/sleep infinity\n'}}
