#!/usr/bin/env python3
"""Fake pacman, rpm, dpkg-query, apt-get and dnf for the bwrap_host role tests.

Installed as those names (symlinks) in a directory put first on PATH. Every call is appended
to $FAKE_PKG_LOG as one JSON line (argv and the locale it ran in); the package state is the JSON
file $FAKE_PKG_STATE:
  {"installed": {"bubblewrap": "0.11.0-1"}, "repo": {"bubblewrap": "0.12.0-1"},
   "conflicts": {"bubblewrap": ["bubblewrap-suid"]}, "provides": {"bubblewrap-suid": ["bubblewrap"]},
   "system_outdated": true}
Outside the C locale the fake answers in German, as the real tools do with a German locale,
so a parser that forgot LC_ALL=C sees text it does not expect.

Output formats follow the tools' sources: pacman src/pacman/query.c (`-Q`: "%s %s\\n" -- for a
name no installed package has, the installed package that provides it, as alpm_find_satisfier()
finds it: `pacman -Q bubblewrap` with only bubblewrap-suid installed prints "bubblewrap-suid
0.11.0-1", measured with pacman 7.0 in tests/system/test_pkghosts.py; `-Qq`: the name),
src/pacman/callback.c (the conflict question "%s-%s and %s-%s are in conflict. Remove %s?"
answered by its default "no" under --noconfirm, inverted by --ask with bit
ALPM_QUESTION_CONFLICT_PKG = 4 from lib/libalpm/alpm.h); rpm lib/query.cc ("package %s is not
installed"); dpkg-query's -W with a format; apt-get -s "Inst" lines; dnf check-upgrade (rc 100).
"""
import json
import os
import re
import sys

C = os.environ.get("LC_ALL") == "C"


def say(c_text, de_text, stream=sys.stdout):
    stream.write((c_text if C else de_text) + "\n")


def load():
    with open(os.environ["FAKE_PKG_STATE"]) as f:
        return json.load(f)


def save(state):
    with open(os.environ["FAKE_PKG_STATE"], "w") as f:
        json.dump(state, f)


def log(tool, argv):
    with open(os.environ["FAKE_PKG_LOG"], "a") as f:
        f.write(json.dumps({"tool": tool, "argv": argv, "lc_all": os.environ.get("LC_ALL")}) + "\n")


def vtuple(v):
    return [int(x) if x.isdigit() else x for x in re.split(r"[.:+~-]", v)]


def pacman(args, state):
    inst, repo = state["installed"], state.get("repo", {})
    opts = [a for a in args if a.startswith("-")]
    targets = [a for a in args if not a.startswith("-")]
    op = opts[0] if opts else ""
    if op == "-Q":
        rc = 0
        for t in targets:
            provider = [p for p in sorted(inst) if t in state.get("provides", {}).get(p, [])]
            if t in inst:
                print("%s %s" % (t, inst[t]))
            elif provider:
                print("%s %s" % (provider[0], inst[provider[0]]))
            else:
                say("error: package '%s' was not found" % t, "Fehler: Paket '%s' wurde nicht gefunden" % t, sys.stderr)
                rc = 1
        return rc
    if op == "-Qq":
        return 0 if all(t in inst and print(t) is None for t in targets) else 1
    if op == "-Qu":
        rc = 1
        for t in targets:
            if t in inst and t in repo and vtuple(repo[t]) > vtuple(inst[t]):
                print("%s %s -> %s" % (t, inst[t], repo[t]))
                rc = 0
        return rc
    if op == "-Syu" and not targets:
        say(":: Synchronizing package databases...", ":: Synchronisiere Paketdatenbanken...")
        say(":: Starting full system upgrade...", ":: Starte vollständige Systemaktualisierung...")
        changed = [t for t in inst if t in repo and vtuple(repo[t]) > vtuple(inst[t])]
        if not changed and not state.get("system_outdated"):
            say(" there is nothing to do", " Es gibt nichts zu tun")
            return 0
        for t in changed:
            inst[t] = repo[t]
        state["system_outdated"] = False
        save(state)
        print("upgrading %s..." % ", ".join(changed or ["glibc"]))
        return 0
    if op in ("-S", "-U") and "--noconfirm" in opts:
        ask = 0
        for o in opts:
            if o.startswith("--ask="):
                ask = int(o.split("=", 1)[1])
        if op == "-S":
            wanted = []
            for t in targets:
                if t not in repo:
                    say("error: target not found: %s" % t, "Fehler: Ziel nicht gefunden: %s" % t, sys.stderr)
                    return 1
                wanted.append((t, repo[t]))
        else:
            wanted = []
            for t in targets:
                m = re.match(r"^.*/([a-z0-9-]+?)-([^-/]+-[^-/]+)-(x86_64|aarch64|any)\.pkg\.tar\.zst$", t)
                if not m:
                    say("error: '%s': could not find or read package" % t,
                        "Fehler: '%s': Paket nicht gefunden" % t, sys.stderr)
                    return 1
                wanted.append((m.group(1), m.group(2)))
        todo = [(n, v) for n, v in wanted if not ("--needed" in opts and inst.get(n) == v)]
        for n, v in wanted:
            if (n, v) not in todo:
                say("warning: %s-%s is up to date -- skipping" % (n, v),
                    "Warnung: %s-%s ist aktuell -- übersprungen" % (n, v), sys.stderr)
        if not todo:
            say(" there is nothing to do", " Es gibt nichts zu tun")
            return 0
        for n, v in todo:
            for other in state.get("conflicts", {}).get(n, []):
                if other in inst:
                    words = (n, v, other, inst[other], other)
                    say(":: %s-%s and %s-%s are in conflict. Remove %s? [y/N] " % words,
                        ":: %s-%s und %s-%s stehen miteinander in Konflikt. %s entfernen? [j/N] " % words)
                    if not ask & 4:   # --noconfirm keeps the default answer of noyes(): no
                        say("error: unresolvable package conflicts detected",
                            "Fehler: Unlösbare Paketkonflikte gefunden", sys.stderr)
                        say("error: failed to prepare transaction (conflicting dependencies)",
                            "Fehler: Konnte den Vorgang nicht vorbereiten", sys.stderr)
                        return 1
                    del inst[other]
            inst[n] = v
        save(state)
        print("installing %s..." % ", ".join("%s-%s" % nv for nv in todo))
        return 0
    sys.stderr.write("fake pacman: unsupported call %r\n" % (args,))
    return 2


def rpm(args, state):
    if args[:2] == ["-q", "--qf"] and len(args) == 4:
        fmt, name = args[2], args[3]
        if name not in state["installed"]:
            say("package %s is not installed" % name, "Paket %s ist nicht installiert" % name)
            return 1
        ver = state["installed"][name]
        epoch, _, vr = ver.rpartition(":")
        version, _, release = vr.partition("-")
        print(fmt.replace("%{EPOCHNUM}", epoch or "0").replace("%{VERSION}", version)
              .replace("%{RELEASE}", release).replace("%{NAME}", name), end="")
        return 0
    sys.stderr.write("fake rpm: unsupported call %r\n" % (args,))
    return 2


def dpkg_query(args, state):
    if args[0] == "-W" and args[1].startswith("-f=") and len(args) == 3:
        name = args[2]
        if name not in state["installed"] and name not in state.get("removed", {}):
            say("dpkg-query: no packages found matching %s" % name,
                "dpkg-query: Kein Paket gefunden, das auf %s passt" % name, sys.stderr)
            return 1
        if name in state["installed"]:
            status, ver = "installed", state["installed"][name]
        else:
            status, ver = "config-files", state["removed"][name]
        print(args[1][3:].replace("${db:Status-Status}", status).replace("${Version}", ver), end="")
        return 0
    if args == ["-W", "-f=${db:Status-Status}\t${binary:Package}\n"]:      # every package (bwrap_package_heal)
        for name in sorted(state["installed"]):
            print("installed\t%s" % name)
        for name in sorted(state.get("removed", {})):
            print("config-files\t%s" % name)
        return 0
    sys.stderr.write("fake dpkg-query: unsupported call %r\n" % (args,))
    return 2


def apt_get(args, state):
    if args == ["-s", "install", "--only-upgrade", "bubblewrap"]:
        inst, repo = state["installed"].get("bubblewrap"), state.get("repo", {}).get("bubblewrap")
        say("Reading package lists...", "Paketlisten werden gelesen...")
        if inst and repo and repo != inst:
            print("Inst bubblewrap [%s] (%s Debian:12/stable [amd64])" % (inst, repo))
            print("Conf bubblewrap (%s Debian:12/stable [amd64])" % repo)
        return 0
    sys.stderr.write("fake apt-get: unsupported call %r\n" % (args,))
    return 2


def dnf(args, state):
    if args == ["-q", "--cacheonly", "check-upgrade", "bubblewrap"]:
        inst, repo = state["installed"].get("bubblewrap"), state.get("repo", {}).get("bubblewrap")
        if inst and repo and repo != inst:
            print("bubblewrap.x86_64    %s    updates" % repo)
            return 100
        return 0
    sys.stderr.write("fake dnf: unsupported call %r\n" % (args,))
    return 2


TOOLS = {"pacman": pacman, "rpm": rpm, "dpkg-query": dpkg_query, "apt-get": apt_get, "dnf": dnf}

if __name__ == "__main__":
    tool = os.path.basename(sys.argv[0])
    log(tool, sys.argv[1:])
    sys.exit(TOOLS[tool](sys.argv[1:], load()))
