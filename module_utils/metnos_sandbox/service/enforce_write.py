# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Enforce's reads and writes of its managed files (the drop-in, its PATH file), done by whom may (issue 49).

- System scope: root writes in the unit's drop-in folder below /etc, through base/files.py (each folder
  opened without following a link someone else planted; a link, FIFO or other non-regular file in place of a
  managed file refused at once). An ``ExecStart=`` line written there that runs as root (the service's user is
  root, or a ``+``/``!`` prefix) runs only a program that root alone can change (base/owners.py), or the write is
  refused (``enforce_exec_not_roots``).
- User scope (``~/.config/systemd/user/<unit>.d``): root never reads or writes through the user's folders. The
  reads and writes run in a child forked as that user (procfs.call_as: its uid, gid and groups, no
  capability), so a link the user made into a root-only folder gets nothing (the kernel refuses the user);
  and content of a unit file the user cannot read (a link to a root 0600 unit) never goes into the drop-in the
  user can read (``enforce_content_not_users``).
- A system unit's drop-in that copies text of a unit file others cannot read is 0600 (dropin_mode).
- A backup is made only of a file the writer's uid owns (files.replace_keeping_backup).

Every refusal is an ``EnforceRefused`` with its own code, the path, its owner and the fix. Pure Python, no
Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import errno
import os
import re
import shlex
import stat
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..base import files, owners
from ..host import procfs
from . import systemd_unit

# systemd's ExecStart= prefixes; "+" and "!" run the command with full privileges whatever User= says.
EXEC_PREFIXES = "@-:+!"
PRIVILEGED_PREFIXES = "+!"
SEARCH_PATH = systemd_unit.DEFAULT_SYSTEM_PATH
# Interpreters whose first argument is a script file they run (issue 49: root runs only what root owns): the
# family of a name (python3.11 -> python), then the options that give the code itself or a module (no script
# file follows) and the options that take an argument (the next word is not the script).
INTERPRETER_NAME = re.compile(r"([a-z]+?)[0-9.]*\Z")
INTERPRETERS = {
    "python": (("-c", "-m"), ("-W", "-X", "-Q")),
    "pypy": (("-c", "-m"), ("-W", "-X")),
    "sh": (("-c",), ("-o", "+o")),
    "dash": (("-c",), ("-o", "+o")),
    "bash": (("-c",), ("-o", "+o", "-O", "+O", "--rcfile", "--init-file")),
    "zsh": (("-c",), ("-o", "+o")),
    "ksh": (("-c",), ("-o", "+o")),
    "mksh": (("-c",), ("-o", "+o")),
    "perl": (("-e", "-E"), ()),
    "ruby": (("-e",), ("-r", "-I", "-C")),
    "node": (("-e", "--eval", "-p", "--print"), ("-r", "--require")),
    "nodejs": (("-e", "--eval", "-p", "--print"), ("-r", "--require")),
    "php": (("-r",), ("-c", "-d", "-z")),
    "lua": (("-e",), ("-l",)),
    "tclsh": ((), ()),
}
SHELLS = ("sh", "dash", "bash", "zsh", "ksh", "mksh")    # whose one-letter options combine: -ec is -e -c


class EnforceRefused(Exception):
    """A refusal: ``code`` (registered in base/codes_service.py), ``path``, ``owner``, ``reason``, ``fix``."""

    def __init__(self, code: str, path: str, owner: Optional[str], reason: str, fix: str) -> None:
        Exception.__init__(self, "%s: %s (owner %s); fix: %s" % (path, reason, owner or "unknown", fix))
        self.code, self.path, self.owner, self.reason, self.fix = code, path, owner, reason, fix

    def details(self) -> Dict[str, Any]:
        return {"code": self.code, "path": self.path, "owner": self.owner, "reason": self.reason, "fix": self.fix}


REFUSAL_CODES = ((files.NotAFolder, "enforce_path_not_a_folder", "rm {path}   # then run enforce again"),
                 (files.LinkRefused, "enforce_link_refused", "rm {path}   # a link root does not follow"),
                 (files.NotRegular, "enforce_file_not_regular", "rm {path}   # enforce writes a regular file there"),
                 (files.PathRefused, "enforce_path_refused", "ls -ld {path}"))


def _refusal(exc: files.PathRefused) -> Dict[str, Any]:
    for kind, code, fix in REFUSAL_CODES:
        if isinstance(exc, kind):
            return {"code": code, "path": exc.path, "owner": exc.owner, "reason": exc.reason,
                    "fix": fix.format(path=shlex.quote(exc.path))}
    raise exc        # pragma: no cover - PathRefused is the last entry


def _error(exc: OSError, path: str) -> Dict[str, Any]:
    return {"code": "enforce_write_failed", "path": getattr(exc, "filename", None) or path, "owner": None,
            "reason": exc.strerror or str(exc), "fix": "ls -ld %s" % shlex.quote(os.path.dirname(path))}


def job(arg: Mapping[str, Any]) -> Dict[str, Any]:
    """What the writer does, in this process or a child forked as the user: {"before": {path: text or None},
    "modes": {path: its mode or None}, "readable": {path: None or why not}, "written": {path:
    replace_keeping_backup's answer}, "refused": one refusal's details or None}. ``arg``: {"read": [paths],
    "readable": [paths], "write": [[path, text, mode]]}."""
    out: Dict[str, Any] = {"before": {}, "modes": {}, "readable": {}, "written": {}, "refused": None}
    for path in arg.get("readable") or []:
        out["readable"][path] = _readable(path)
    current = ""
    try:
        for current in arg.get("read") or []:
            found = files.read_regular(current)
            out["before"][current] = found[0] if found is not None else None
            out["modes"][current] = stat.S_IMODE(found[1].st_mode) if found is not None else None
        for current, text, mode in arg.get("write") or []:
            out["written"][current] = files.replace_keeping_backup(current, text, mode)
    except files.PathRefused as exc:
        out["refused"] = _refusal(exc)
    except OSError as exc:
        out["refused"] = _error(exc, current)
    return out


def _readable(path: str) -> Optional[str]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | files.CLOEXEC)
    except OSError as exc:
        return exc.strerror or errno.errorcode.get(exc.errno or 0, "error")
    os.close(fd)
    return None


def run_job(arg: Mapping[str, Any], user: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """job(arg) here (``user`` None: root's own folders) or in a child forked as ``user`` ({uid, gid, groups});
    raises EnforceRefused for its refusal."""
    if user is None:
        out = job(arg)
    else:
        out = procfs.call_as(int(user["uid"]), int(user["gid"]), job, dict(arg), list(user.get("groups") or []))
        if not out:
            raise EnforceRefused("enforce_write_failed", str(user.get("home")), str(user.get("name")),
                                 "the writer running as %s did not report" % user.get("name"),
                                 "id %s" % shlex.quote(str(user.get("name"))))
    refused = out.get("refused")
    if refused:
        raise EnforceRefused(refused["code"], refused["path"], refused["owner"], refused["reason"], refused["fix"])
    return out


def user_groups(name: str, gid: int) -> List[int]:
    """The user's groups as login gives them (initgroups)."""
    return sorted(set(os.getgrouplist(name, gid)))


# --------------------------------------------------------------------------- what the drop-in may carry

def content_sources(state: Mapping[str, Any]) -> List[str]:
    """The unit files whose text the drop-in copies (its ExecStart= lines' files)."""
    return sorted({item["where"].rsplit(":", 1)[0] for item in state.get("exec_start") or []})


def check_readable(readable: Mapping[str, Optional[str]], user_name: str) -> None:
    """Refuse when the user cannot read a unit file whose text would go into the drop-in the user can read."""
    for path, why in sorted(readable.items()):
        if why is not None:
            owner = owners.user_name(os.stat(path).st_uid) if os.path.exists(path) else None
            raise EnforceRefused("enforce_content_not_users", path, owner,
                                 "%s cannot read it (%s): its ExecStart= would be copied into a drop-in %s can read"
                                 % (user_name, why, user_name),
                                 "ls -lL %s   # give the user a unit file of its own" % shlex.quote(path))


def dropin_mode(state: Mapping[str, Any]) -> int:
    """0600 when a unit file whose text the drop-in copies is not readable by everyone (the file, or a folder on
    the way, closed to others), else 0644: root-only text stays root-only in a system unit's drop-in."""
    for path in content_sources(state):
        current = path
        try:
            if not os.stat(current).st_mode & stat.S_IROTH:
                return 0o600
            while current != "/":
                current = os.path.dirname(current)
                if not os.stat(current).st_mode & stat.S_IXOTH:
                    return 0o600
        except OSError:
            return 0o600
    return 0o644


def _env_program(words: Sequence[str]) -> Optional[int]:
    """The index of the program env(1) runs in ``words`` (words[0] is env): the first word after its options and
    assignments; None when there is none."""
    for index in range(1, len(words)):
        if not words[index].startswith("-") and "=" not in words[index]:
            return index
    return None


def exec_programs(line: str) -> List[str]:
    """The programs an ExecStart= value runs: its first word, and the program after env(1)'s options and
    assignments. Raises ValueError for a line it cannot split (unknown is a failure)."""
    words = shlex.split(line.lstrip(EXEC_PREFIXES))
    if not words:
        raise ValueError("an empty command")
    programs = [words[0]]
    if os.path.basename(words[0]) == "env":
        index = _env_program(words)
        if index is not None:
            programs.append(words[index])
    return programs


def _family(program: str) -> Optional[str]:
    """The interpreter family of a program's name (python3.11 -> python), None for a program that is not one of
    INTERPRETERS."""
    match = INTERPRETER_NAME.match(os.path.basename(program))
    return match.group(1) if match and match.group(1) in INTERPRETERS else None


def _cluster_has(word: str, options: Sequence[str]) -> bool:
    """Whether a cluster of one-letter options (``-ec``) holds one of ``options`` (``-c``)."""
    return word.startswith("-") and not word.startswith("--") and any("-" + letter in options for letter in word[1:])


def exec_scripts(line: str) -> List[str]:
    """The script files an ExecStart= value gives a known interpreter (python, sh, bash, perl...: INTERPRETERS),
    directly or through env(1): the first word after the interpreter's options, or after ``--``. None after an
    option that gives the code itself (``-c``: data, judged nowhere) or a module to find (``-m``), nor ``-``
    (standard input). An argument of an option that takes one is skipped; an option not known to take one is
    not, so its argument is judged as the script (unknown is a failure). Raises ValueError as exec_programs."""
    words = shlex.split(line.lstrip(EXEC_PREFIXES))
    if not words:
        raise ValueError("an empty command")
    start: Optional[int] = 0
    if os.path.basename(words[0]) == "env":
        start = _env_program(words)
    family = _family(words[start]) if start is not None else None
    if start is None or family is None:
        return []
    code_options, argument_options = INTERPRETERS[family]
    index = start + 1
    while index < len(words):
        word = words[index]
        if word == "--":
            return words[index + 1:index + 2]
        if word in code_options or (family in SHELLS and _cluster_has(word, code_options)):
            return []
        if word == "-" or not word.startswith(("-", "+")):
            return [] if word == "-" else [word]
        index += 2 if word in argument_options else 1
    return []


def _resolve(program: str, root: str) -> Optional[str]:
    """The program's path on this host (below ``root``, the image's root in disk mode), None when not found."""
    if program.startswith("/"):
        return os.path.join(root, program.lstrip("/"))
    for folder in SEARCH_PATH.split(":"):
        candidate = os.path.join(root, folder.lstrip("/"), program)
        if os.path.isfile(candidate):
            return candidate
    return None


def check_exec_lines(lines: Sequence[str], service_uid: Optional[int], root: str = "/") -> None:
    """Refuse an ExecStart= line of the drop-in that runs as root (``service_uid`` 0 or unknown, or a ``+``/``!``
    prefix) a program that someone other than root can change (its file, a folder on the way, a link, its
    interpreter: owners.problems), judged below ``root`` (disk mode's image)."""
    for line in lines:
        if not line.startswith("ExecStart=") or line == "ExecStart=":
            continue
        value = line[len("ExecStart="):]
        prefixes = value[:len(value) - len(value.lstrip(EXEC_PREFIXES))]
        if service_uid not in (None, 0) and not set(prefixes) & set(PRIVILEGED_PREFIXES):
            continue
        for program, path in _programs_of(value, root):
            _refuse_unless_roots("enforce_exec_not_roots", value, (program, program), path,
                                 ("it is not found", "command -v %s" % shlex.quote(program)))
        _check_scripts(value, root)


def _refuse_unless_roots(code: str, value: str, named: Tuple[str, str], path: Optional[str],
                         missing: Tuple[str, str]) -> None:
    """Raise EnforceRefused(``code``) when ``path`` (what ExecStart=``value`` would run as root; None: not found)
    can be changed by someone other than root (owners.problems). ``named``: (the word of the line, how the message
    names it); ``missing``: (the message's words, the fix) for a path that is None."""
    found = owners.problems(path) if path else []
    if path is not None and not found:
        return
    first = found[0] if found else None
    raise EnforceRefused(code, path or named[0], first.owner_name if first else None,
                         "ExecStart=%s would run %s as root, and %s" % (
                             value, named[1], "%s is %s" % (first.path, first.reason) if first else missing[0]),
                         first.fix if first else missing[1])


def _check_scripts(value: str, root: str) -> None:
    """Refuse (``enforce_script_not_roots``) a script file that the ExecStart= value ``value`` (run as root) gives
    an interpreter, when it is not an absolute path or someone other than root can change it (owners.problems:
    every component, each link, the file)."""
    for script in exec_scripts(value):
        path = os.path.join(root, script.lstrip("/")) if script.startswith("/") else None
        _refuse_unless_roots("enforce_script_not_roots", value, (script, "the script %s" % script), path,
                             ("it is not an absolute path (found from the unit's working directory, judged nowhere)",
                              "realpath -- %s" % shlex.quote(script)))


def _programs_of(value: str, root: str) -> List[Tuple[str, Optional[str]]]:
    try:
        return [(program, _resolve(program, root)) for program in exec_programs(value)]
    except ValueError:
        return [(value, None)]
