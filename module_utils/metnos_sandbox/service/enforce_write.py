# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Enforce's reads and writes of its managed files (the drop-in, its PATH file), done by whom may (issue 49).

- System scope: root writes in the unit's drop-in folder below /etc, through base/files.py (each folder
  opened without following a link someone else planted; a link, FIFO or other non-regular file in place of a
  managed file refused at once). An ``ExecStart=`` line written there that runs as root (the service's user is
  root, or a ``+``/``!`` prefix) is judged deny-by-default (check_exec_lines): every program, the command of each
  modelled wrapper (env, nice, timeout, setpriv...), the files a known interpreter loads, every absolute path in
  any word, env(1)'s assignments; an unknown option or wrapper is refused (each refusal its own code).
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
# What a root-run ExecStart= line may hold (issue 49, attack2 finding 5: deny by default, unknown is a failure).
# A known program's options, by kind: "flag" (no argument), "data" (an argument judged only as words: an absolute
# path in it is judged), "code" (code given on the line: data, its paths judged; no script follows), "module" (a
# module found on a search path that starts at the working directory, and python's -c: refused unless the
# interpreter is isolated, -I or -P),
# "file" (a file or folder loaded as code: an absolute path root alone can change, or refused), "name" (a module
# name found on root's own paths: no "/" in it, or an absolute path judged as "file"), "refused" (code from the
# line or from a place not judged: refused). An option not in the table is refused (enforce_exec_option_unknown).
INTERPRETER_NAME = re.compile(r"([a-z]+?)[0-9.]*\Z")
PYTHON_OPTIONS = dict([("-" + letter, "flag") for letter in "bBdEhiIOPqsSuvVx"]
                      + [("-c", "module"), ("-m", "module"), ("-W", "data"), ("-X", "data")])
SHELL_OPTIONS = dict([("-" + letter, "flag") for letter in "aefhklmnprtuvxBCEHPTil"]
                     + [("+" + letter, "flag") for letter in "aefhmnuvxBCEHPT"]
                     + [("-c", "code"), ("-o", "data"), ("+o", "data"), ("-O", "data"), ("+O", "data")])
BASH_OPTIONS = dict(SHELL_OPTIONS)
BASH_OPTIONS.update({"--login": "flag", "--noprofile": "flag", "--norc": "flag", "--posix": "flag",
                     "--restricted": "flag", "--noediting": "flag", "--verbose": "flag",
                     "--rcfile": "file", "--init-file": "file"})
INTERPRETERS: Dict[str, Dict[str, str]] = {
    "python": PYTHON_OPTIONS, "pypy": PYTHON_OPTIONS,
    "sh": SHELL_OPTIONS, "dash": SHELL_OPTIONS, "zsh": SHELL_OPTIONS, "ksh": SHELL_OPTIONS, "mksh": SHELL_OPTIONS,
    "bash": BASH_OPTIONS,
    "perl": dict([("-" + letter, "flag") for letter in "acnpstTUwWX"]
                 + [("-e", "code"), ("-E", "code"), ("-I", "file"), ("-M", "name"), ("-m", "name"),
                    ("-x", "refused"), ("-d", "refused"), ("-i", "refused")]),
    "ruby": dict([("-" + letter, "flag") for letter in "acdlnpsvwW"]
                 + [("-e", "code"), ("-I", "file"), ("-r", "name"), ("-C", "refused"), ("-x", "refused")]),
    "node": {"-e": "code", "--eval": "code", "-p": "code", "--print": "code", "-r": "file", "--require": "file",
             "--import": "file", "--loader": "file", "--experimental-loader": "file", "--no-warnings": "flag",
             "--enable-source-maps": "flag", "--trace-warnings": "flag"},
    "php": {"-r": "code", "-c": "file", "-z": "file", "-n": "flag", "-q": "flag", "-H": "flag", "-d": "refused"},
    "lua": {"-e": "code", "-l": "refused", "-i": "flag", "-v": "flag", "-E": "flag", "-W": "flag"},
    "tclsh": {},
}
INTERPRETERS["nodejs"] = INTERPRETERS["node"]
# Programs that run the command that follows them, modelled: their options (as above) and how many words they
# take before the command (timeout's duration, chrt's priority, taskset's mask). env(1) also takes assignments.
WRAPPERS: Dict[str, Tuple[Dict[str, str], int]] = {
    "env": ({"-i": "flag", "--ignore-environment": "flag", "-0": "flag", "--null": "flag", "-v": "flag",
             "--debug": "flag", "-u": "data", "--unset": "data", "-C": "file", "--chdir": "file",
             "-S": "refused", "--split-string": "refused"}, 0),
    "nice": ({"-n": "data", "--adjustment": "data"}, 0),
    "timeout": ({"--preserve-status": "flag", "--foreground": "flag", "-v": "flag", "--verbose": "flag",
                 "-k": "data", "--kill-after": "data", "-s": "data", "--signal": "data"}, 1),
    "setpriv": (dict([(name, "flag") for name in ("--nnp", "--no-new-privs", "--clear-groups", "--init-groups",
                                                  "--keep-groups", "--reset-env")]
                     + [(name, "data") for name in ("--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid",
                                                    "--groups", "--inh-caps", "--ambient-caps", "--bounding-set",
                                                    "--securebits", "--pdeathsig")]), 0),
    "chrt": (dict([("-" + letter, "flag") for letter in "bdfiorRav"]
                  + [("-T", "data"), ("-P", "data"), ("-D", "data")]), 1),
    "ionice": ({"-c": "data", "--class": "data", "-n": "data", "--classdata": "data", "-t": "flag",
                "--ignore": "flag"}, 0),
    "stdbuf": ({"-i": "data", "--input": "data", "-o": "data", "--output": "data", "-e": "data", "--error": "data"},
               0),
    "nohup": ({}, 0),
    "setsid": ({"-c": "flag", "--ctty": "flag", "-f": "flag", "--fork": "flag", "-w": "flag", "--wait": "flag"}, 0),
    "taskset": ({"-a": "flag", "--all-tasks": "flag", "-c": "flag", "--cpu-list": "flag"}, 1),
}
# Programs known to run another command (or code) whose words this check does not model: refused.
UNMODELLED = frozenset(("sudo", "su", "runuser", "doas", "pkexec", "sg", "newgrp", "chroot", "xargs", "flock",
                        "systemd-run", "busybox", "unshare", "nsenter", "capsh", "fakeroot", "strace", "ltrace",
                        "gdb", "valgrind", "watch", "script", "prlimit", "numactl", "firejail", "bwrap", "time",
                        "eatmydata", "torsocks", "proxychains", "parallel", "find", "awk", "gawk", "mawk", "sed",
                        "make", "ssh", "screen", "tmux", "expect", "cgexec", "daemonize", "start-stop-daemon",
                        "setarch", "linux32", "linux64", "run-parts", "ld.so", "systemd-inhibit", "dbus-launch",
                        "dbus-run-session", "catchsegv", "sandbox", "exec", "command", "builtin"))
# Assignments env(1) may not pass to a root-run command: they make a shell, an interpreter or the loader read code
# (or find programs and rc files) in a place the check does not judge. PATH passes when each of its folders is
# absolute (each then judged as a path of the line, root's alone).
UNSAFE_VARIABLE = re.compile(r"(BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|HOME|ZDOTDIR|IFS|CDPATH"
                             r"|GCONV_PATH|LOCPATH|GLIBC_TUNABLES|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|BASH_FUNC_.*"
                             r"|(PYTHON|PERL|RUBY|GEM_|BUNDLE|NODE_|LD_|LUA_|PHP|TCL).*)\Z")
ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
PATH_IN_WORD = re.compile(r"(?:^|[=\s:,;'\"(|&<>`])(/[^\s=:,;'\"()|&<>`$]*)")
MAX_WRAPPERS = 8
SHELL_EXPANDS = re.compile(r"[$`~\\*?\[]|(?:^|[\s;&|(])\.\.?/|(?:^|[\s;&|(])(?:\.|source|eval)\s")   # shell -c code
DATA_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")   # written, never run


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


def exec_words(value: str) -> List[str]:
    """The words of an ExecStart= value without systemd's prefixes. Raises ValueError for a value it cannot
    split or an empty one (unknown is a failure)."""
    words = shlex.split(value.lstrip(EXEC_PREFIXES))
    if not words:
        raise ValueError("an empty command")
    return words


def _family(program: str) -> Optional[str]:
    """The interpreter family of a program's name (python3.11 -> python), None for a program that is not one of
    INTERPRETERS."""
    match = INTERPRETER_NAME.match(os.path.basename(program))
    return match.group(1) if match and match.group(1) in INTERPRETERS else None


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
    prefix) unless every part of it is known to run only what root alone can change, judged below ``root`` (disk
    mode's image): each program (the command, the command a modelled wrapper runs: WRAPPERS), each script or file
    a known interpreter loads (INTERPRETERS), each absolute path in any word (owners), env(1)'s assignments; an
    option, a wrapper or a path the check does not know is refused (deny by default)."""
    for line in lines:
        if not line.startswith("ExecStart=") or line == "ExecStart=":
            continue
        value = line[len("ExecStart="):]
        prefixes = value[:len(value) - len(value.lstrip(EXEC_PREFIXES))]
        if service_uid not in (None, 0) and not set(prefixes) & set(PRIVILEGED_PREFIXES):
            continue
        try:
            words = exec_words(value)
        except ValueError:
            raise EnforceRefused("enforce_exec_not_roots", value, None,
                                 "ExecStart=%s would run as root, and it cannot be split into words" % value,
                                 "systemd-analyze verify <unit>   # write the line with balanced quotes") from None
        _check_command(words, value, root, 0)
        for word in words:
            _check_word(word, value, root)


def _refuse(code: str, value: str, word: str, rule: str, fix: str) -> None:
    raise EnforceRefused(code, word, None, "ExecStart=%s would run as root, and %s" % (value, rule), fix)


def _check_command(words: Sequence[str], value: str, root: str, depth: int) -> None:
    """Judge the command ``words`` (a root-run line, or what a wrapper of it runs): its program, then a
    wrapper's command or an interpreter's options and script."""
    program = words[0]
    _refuse_unless_roots("enforce_exec_not_roots", value, (program, program), _resolve(program, root),
                         ("it is not found", "command -v %s" % shlex.quote(program)))
    name = os.path.basename(program)
    if name in WRAPPERS:
        if depth >= MAX_WRAPPERS:
            _refuse("enforce_exec_wrapper_refused", value, program, "wrappers nest deeper than %d" % MAX_WRAPPERS,
                    "systemctl edit <unit>   # run the program itself")
        options, positional = WRAPPERS[name]
        rest = _options(words, 1, options, value, root, name == "env")
        rest += positional
        if rest < len(words) and "/" not in words[rest] and any(word.startswith("PATH=") for word in words[1:rest]):
            _refuse("enforce_exec_env_refused", value, "PATH",
                    "env(1) sets PATH and runs %s by name: it is found in that PATH, not where this check looks"
                    % words[rest], "systemctl edit <unit>   # name %s by its absolute path" % words[rest])
        if rest < len(words):
            _check_command(words[rest:], value, root, depth + 1)
        return
    if name in UNMODELLED:
        _refuse("enforce_exec_wrapper_refused", value, program,
                "%s runs other code in a way this check does not model (deny by default)" % name,
                "systemctl edit <unit>   # run the program itself, or run the service as its own user (run_as)")
    family = _family(program)
    if family is not None:
        index = _options(words, 1, INTERPRETERS[family], value, root, False)
        if index < len(words) and words[index] != "-":
            _check_script(words[index], value, root)


def _options(words: Sequence[str], index: int, table: Mapping[str, str], value: str, root: str,
             assignments: bool) -> int:
    """Walk the options of ``words`` from ``index`` by ``table`` (kinds: see INTERPRETERS); the index of the first
    word after them (len(words) when an option ends the command: inline code, a module). ``assignments``:
    env(1)'s NAME=value words are judged (UNSAFE_VARIABLE) and skipped."""
    isolated = False
    while index < len(words):
        word = words[index]
        if word == "--":
            return index + 1
        assignment = ASSIGNMENT.match(word) if assignments else None
        if assignment:
            variable = assignment.group(1)
            relative = [entry for entry in word[len(variable) + 1:].split(":") if not entry.startswith("/")]
            if UNSAFE_VARIABLE.match(variable) or variable == "PATH" and relative:
                _refuse("enforce_exec_env_refused", value, variable,
                        "env(1) sets %s, which makes a shell, an interpreter or the loader read code or find "
                        "programs where this check does not judge them" % variable,
                        "systemctl edit <unit>   # remove %s= from the line" % variable)
            index += 1
            continue
        if word == "-" or not word.startswith("-") and not (word.startswith("+") and word in table):
            return index
        for option, argument in _split_option(word, table):
            kind = table.get(option)
            if kind is None:
                _refuse("enforce_exec_option_unknown", value, option,
                        "%s is an option of %s this check does not know (deny by default)" % (option, words[0]),
                        "systemctl edit <unit>   # drop %s, or run the service as its own user (run_as)" % option)
            if kind == "flag":
                isolated = isolated or option in ("-I", "-P")
                continue
            if argument is None:
                index += 1
                if index >= len(words):
                    _refuse("enforce_exec_option_unknown", value, option, "%s has no argument" % option,
                            "systemctl edit <unit>   # give %s its argument" % option)
                argument = words[index]
            if kind == "code" and table.get("-o") == "data" and SHELL_EXPANDS.search(argument):
                _refuse("enforce_exec_option_refused", value, option,
                        "the shell code of %s builds words (expansion, ~, globs, a relative path) that this check "
                        "cannot see before the shell runs them" % option,
                        "systemctl edit <unit>   # put the code in a script root owns and run that script")
            if kind == "code":
                return len(words)
            if kind == "module" and not isolated:
                _refuse("enforce_exec_option_refused", value, option,
                        "%s %s makes %s search the unit's working directory first for its code (not isolated)"
                        % (option, argument, words[0]),
                        "systemctl edit <unit>   # add -I before %s, or run a script root owns" % option)
            if kind == "module":
                return len(words)
            if kind == "refused":
                _refuse("enforce_exec_option_refused", value, option,
                        "%s %s gives %s code or a place to load code from that this check does not judge"
                        % (option, argument, words[0]),
                        "systemctl edit <unit>   # drop %s, or run a script root owns" % option)
            if kind == "file" or kind == "name" and "/" in argument:
                _check_script(argument, value, root)
        index += 1
    return index


def _split_option(word: str, table: Mapping[str, str]) -> List[Tuple[str, Optional[str]]]:
    """The options a word holds, each with its attached argument (None: the next word is it, when it takes
    one): ``--name=value``, ``-Wignore``, a cluster of one-letter flags ``-Iu``/``-ec``."""
    if word.startswith("--") or word in table:
        name, equals, argument = word.partition("=")
        return [(name, argument if equals else None)]
    found: List[Tuple[str, Optional[str]]] = []
    for position in range(1, len(word)):
        option = word[0] + word[position]
        found.append((option, word[position + 1:] or None))
        if table.get(option, "flag") != "flag":
            break
    return found


def _check_word(word: str, value: str, root: str) -> None:
    """Refuse an absolute path anywhere in ``word`` (the word, after ``=``, in inline code, after an option's
    letter) that someone other than root can change, or whose nearest existing folder they can write; and a
    path relative to the unit's working directory (``./x``, ``../x``)."""
    candidates = PATH_IN_WORD.findall(word)
    if word.startswith("-") and "/" in word and "=" not in word:
        candidates.append(word[word.index("/"):])
    for path in candidates:
        if path == "/" or path in DATA_DEVICES:
            continue
        full = os.path.join(root, path.lstrip("/"))
        while not os.path.lexists(full) and full != os.path.dirname(full):
            full = os.path.dirname(full)
        found: List[owners.Problem] = []
        real = owners.resolve(full, found)
        if not found and real is not None and full != os.path.join(root, path.lstrip("/")):
            info = os.lstat(real)          # the nearest folder that is there: who may create the path in it
            found = [owners.Problem(path=real, uid=info.st_uid, gid=info.st_gid, mode=stat.S_IMODE(info.st_mode),
                                    reason="%s (the path is not there: others may create it)" % reason,
                                    owner_name=owners.user_name(info.st_uid),
                                    fix="ls -ld %s   # name a path in a folder only root can write"
                                    % shlex.quote(real))
                     for reason in owners.change_reasons(info, real, sticky_folders=False)]
        if found:
            raise EnforceRefused("enforce_exec_word_not_roots", path, found[0].owner_name,
                                 "ExecStart=%s would run as root with %s, and %s is %s" % (
                                     value, path, found[0].path, found[0].reason), found[0].fix)
    for part in [word] + word.split("=")[1:]:
        if part.startswith(("./", "../")):
            _refuse("enforce_exec_relative_path", value, part,
                    "%s is found from the unit's working directory, which this check does not judge" % part,
                    "realpath -- %s   # name it by its absolute path" % shlex.quote(part))


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


def _check_script(script: str, value: str, root: str) -> None:
    """Refuse (``enforce_script_not_roots``) a script, or a file or folder an interpreter loads as code, named on
    the ExecStart= value ``value`` (run as root), when it is not an absolute path or someone other than root can
    change it (owners: every component, each link, the file)."""
    path = os.path.join(root, script.lstrip("/")) if script.startswith("/") else None
    if path is not None and os.path.isdir(path):
        found: List[owners.Problem] = []
        owners.resolve(path, found)
        if not found:
            return
        raise EnforceRefused("enforce_script_not_roots", script, found[0].owner_name,
                             "ExecStart=%s would load code as root from %s, and %s is %s" % (
                                 value, script, found[0].path, found[0].reason), found[0].fix)
    _refuse_unless_roots("enforce_script_not_roots", value, (script, "the script %s" % script), path,
                         ("it is not an absolute path (found from the unit's working directory, judged nowhere)",
                          "realpath -- %s" % shlex.quote(script)))
