# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Executor manifest model and strict loader (closed capability grammar).

A manifest (YAML or JSON)::

    name: read_notes                 # executor name: [a-z0-9_][a-z0-9_.-]*
    origin: metnos/core              # publisher
    revision: 3                      # int or str
    digest: sha256:<64 hex>          # signed digest (optional except for the undo exception)
    owner: metnos                    # optional
    entrypoint: main.py              # optional, relative to the executor's folder
    capabilities:
      - fs:read:/srv/notes/**
      - fs:read:arg:path
      - net:http
    arguments:                       # declared arguments
      path: {kind: path, within: [/srv/notes/**]}
    inverse: {model: restore_content}   # optional: the undo (inverse) model
    files: [main.py]                 # optional file list (pinned for the undo exception)

Every error names the field, the value and the accepted forms, and carries a
stable code. Nothing here touches the filesystem.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import re

from . import diagnostics as D

GLOB_CHARS = "*?[{"
_NAME = re.compile(r"^[a-z0-9_][a-z0-9_.-]{0,127}$")
_TOKEN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@+*-]{0,127}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")

ACCEPTED_FORMS = (
    "fs:read:<scope>", "fs:write:<scope>  (scope: absolute path, glob, or arg:<name>)",
    "metnos:read|write|create:<resource>", "index:read:<name>", "systemd:read",
    "system:read", "system:read:network_interfaces", "provider:access:<provider>",
    "skill:<name> (legacy)", "mail:read:<account>", "dialog.user_input", "network:<what>",
    "net:<what>", "system:undo (undo_last_turn only)",
)
_FORMS_TEXT = "; ".join(ACCEPTED_FORMS)


class ManifestError(ValueError):
    """A manifest is refused. ``diagnostics`` holds one entry per problem."""

    def __init__(self, diagnostics):
        self.diagnostics = diagnostics
        ValueError.__init__(self, "; ".join(d["message"] for d in diagnostics))


class Capability(object):
    """One parsed capability: kind, mode, target, and the original text."""

    __slots__ = ("text", "kind", "mode", "target", "arg")

    def __init__(self, text, kind, mode=None, target=None, arg=None):
        self.text = text
        self.kind = kind        # fs, metnos, index, systemd, system, provider, skill, mail,
        self.mode = mode        # dialog, network, undo
        self.target = target
        self.arg = arg          # argument name for fs:*:arg:<name>

    def needs_network(self):
        return self.kind in ("network", "provider", "skill", "mail") or (
            self.kind == "system" and self.target == "network_interfaces")

    def __repr__(self):
        return "Capability(%r)" % self.text


class Manifest(object):
    __slots__ = ("name", "origin", "revision", "digest", "owner", "entrypoint",
                 "capabilities", "arguments", "inverse", "files", "source")

    def __init__(self, **kw):
        for key in self.__slots__:
            setattr(self, key, kw.get(key))

    def to_dict(self):
        return {
            "name": self.name, "origin": self.origin, "revision": self.revision,
            "digest": self.digest, "owner": self.owner, "entrypoint": self.entrypoint,
            "capabilities": [c.text for c in self.capabilities],
            "arguments": self.arguments, "inverse": self.inverse, "files": self.files,
        }


def _err(code, field, value, expected, **extra):
    return D.make(code, message="%s: %r is refused: %s" % (field, value, expected),
                  field=field, value=value if isinstance(value, (str, int, float, bool)) else repr(value),
                  **extra)


def _check_scope_text(field, scope, errors):
    """Lexical checks of a fixed scope (absolute, clean, no control characters)."""
    if any(ord(ch) < 32 for ch in scope):
        errors.append(_err("scope_nul", field, scope, "NUL or control characters in a path (R-CAP-FS)"))
        return False
    if not scope.startswith("/"):
        errors.append(_err("scope_relative", field, scope,
                           "a fixed scope must be an absolute path or glob, or arg:<name> (R-CAP-FS)"))
        return False
    parts = scope.split("/")[1:]
    if any(p in (".", "..") for p in parts) or "//" in scope:
        errors.append(_err("scope_not_normalized", field, scope,
                           "'.', '..' and '//' are not allowed in a scope; write the normalised path (R-ARG-1)"))
        return False
    return True


def glob_root(scope):
    """The longest glob-free leading path of a scope: '/srv/a*/b' -> '/srv' (R-CAP-FS)."""
    parts = scope.split("/")
    keep = []
    for part in parts[1:]:
        if any(ch in part for ch in GLOB_CHARS):
            break
        keep.append(part)
    root = "/" + "/".join(keep)
    return root.rstrip("/") or "/"


def parse_capability(text, field="capabilities"):
    """Parse one capability string. Returns (Capability or None, [errors])."""
    errors = []
    if not isinstance(text, str):
        return None, [_err("manifest_invalid", field, text, "a capability is a string (%s)" % _FORMS_TEXT)]
    if text == "dialog.user_input":
        return Capability(text, "dialog"), errors
    if text in ("systemd:read", "system:read"):
        return Capability(text, text.split(":")[0], "read"), errors
    if text == "system:read:network_interfaces":
        return Capability(text, "system", "read", "network_interfaces"), errors
    if text == "system:undo":
        return Capability(text, "undo", "undo"), errors
    head, sep, rest = text.partition(":")
    if head in ("network", "net") and sep and rest and (rest == "*" or _TOKEN.match(rest)):
        return Capability(text, "network", None, rest), errors
    if head == "skill" and rest and _NAME.match(rest):
        return Capability(text, "skill", "access", rest), errors
    mode, sep2, target = rest.partition(":")
    if head == "fs" and mode in ("read", "write") and sep2 and target:
        if target.startswith("arg:"):
            name = target[4:]
            if not _NAME.match(name):
                return None, [_err("capability_unknown", field, text,
                                   "arg:<name> needs an argument name [a-z0-9_.-]")]
            return Capability(text, "fs", mode, None, arg=name), errors
        if not _check_scope_text(field, target, errors):
            return None, errors
        return Capability(text, "fs", mode, target), errors
    if head == "metnos" and mode in ("read", "write", "create") and target and _NAME.match(target):
        return Capability(text, "metnos", mode, target), errors
    if head == "index" and mode == "read" and target and _TOKEN.match(target):
        return Capability(text, "index", mode, target), errors
    if head == "provider" and mode == "access" and target and _NAME.match(target):
        return Capability(text, "provider", mode, target), errors
    if head == "mail" and mode == "read" and target and _TOKEN.match(target) and "*" not in target:
        return Capability(text, "mail", mode, target), errors
    return None, [_err("capability_unknown", field, text, "accepted forms: %s" % _FORMS_TEXT)]


def _opt_str(data, key, errors, pattern=None, expected="a string"):
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or (pattern is not None and not pattern.match(value)):
        errors.append(_err("manifest_invalid", key, value, expected))
        return None
    return value


def from_dict(data, source="<inline>"):
    """Validate a decoded manifest. Raises ManifestError with every problem found."""
    errors = []
    if not isinstance(data, dict):
        raise ManifestError([_err("manifest_invalid", "(manifest)", type(data).__name__,
                                  "a manifest is a mapping with name, origin, capabilities")])
    known = set(Manifest.__slots__) - {"source"}
    for key in sorted(set(data) - known, key=str):
        errors.append(_err("manifest_invalid", str(key), key,
                           "unknown field; accepted: %s" % ", ".join(sorted(known))))
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        errors.append(_err("manifest_invalid", "name", name,
                           "required; lower-case letters, digits, '_', '.', '-' (max 128)"))
    origin = data.get("origin")
    if not isinstance(origin, str) or not origin or any(ord(c) < 32 for c in origin):
        errors.append(_err("manifest_invalid", "origin", origin, "required; a publisher string"))
    revision = data.get("revision")
    if revision is not None and (isinstance(revision, bool) or not isinstance(revision, (int, str))):
        errors.append(_err("manifest_invalid", "revision", revision, "an integer or a string"))
    digest = _opt_str(data, "digest", errors, _DIGEST, "sha256:<64 lower-case hex digits>")
    owner = _opt_str(data, "owner", errors)
    entrypoint = data.get("entrypoint")
    if entrypoint is not None and (not isinstance(entrypoint, str) or entrypoint.startswith("/")
                                   or ".." in entrypoint.split("/") or "\0" in entrypoint):
        errors.append(_err("manifest_invalid", "entrypoint", entrypoint,
                           "a path relative to the executor's folder, without '..'"))
        entrypoint = None

    caps = []
    raw_caps = data.get("capabilities", [])
    if not isinstance(raw_caps, list):
        errors.append(_err("manifest_invalid", "capabilities", raw_caps, "a list of capability strings"))
        raw_caps = []
    seen = set()
    for index, text in enumerate(raw_caps):
        cap, errs = parse_capability(text, "capabilities[%d]" % index)
        errors.extend(errs)
        if cap is not None and cap.text not in seen:
            seen.add(cap.text)
            caps.append(cap)

    arguments = {}
    raw_args = data.get("arguments", {}) or {}
    if isinstance(raw_args, list):  # a bare list of names
        raw_args = dict((a, {}) for a in raw_args if isinstance(a, str))
    if not isinstance(raw_args, dict):
        errors.append(_err("manifest_invalid", "arguments", raw_args, "a mapping name -> {kind, within}"))
        raw_args = {}
    for arg_name, spec in raw_args.items():
        field = "arguments.%s" % arg_name
        if not isinstance(arg_name, str) or not _NAME.match(arg_name):
            errors.append(_err("manifest_invalid", field, arg_name, "an argument name [a-z0-9_.-]"))
            continue
        spec = spec or {}
        if not isinstance(spec, dict):
            errors.append(_err("manifest_invalid", field, spec, "a mapping {kind, within}"))
            continue
        within = spec.get("within", [])
        if isinstance(within, str):
            within = [within]
        if not isinstance(within, list):
            errors.append(_err("manifest_invalid", field + ".within", within, "a list of absolute scopes"))
            continue
        clean = []
        for i, scope in enumerate(within):
            sfield = "%s.within[%d]" % (field, i)
            if not isinstance(scope, str):
                errors.append(_err("manifest_invalid", sfield, scope, "an absolute path or glob"))
            elif _check_scope_text(sfield, scope, errors):
                clean.append(scope)
        arguments[arg_name] = {"kind": spec.get("kind", "path"), "within": clean}

    for cap in caps:
        if cap.kind == "fs" and cap.arg is not None:
            if cap.arg not in arguments:
                errors.append(_err("arg_undeclared", "capabilities", cap.text,
                                   "argument %r is not declared under 'arguments' (R-ARG-1)" % cap.arg))
            elif not arguments[cap.arg]["within"]:
                errors.append(_err("arg_scope_unbounded", "arguments.%s.within" % cap.arg, [],
                                   "an argument used as a path scope must declare 'within' scopes it "
                                   "may narrow (R-ARG-1: narrow, never widen)"))

    inverse = data.get("inverse")
    if inverse is not None and not (isinstance(inverse, dict) and isinstance(inverse.get("model"), str)):
        errors.append(_err("manifest_invalid", "inverse", inverse, "a mapping with a 'model' string"))
        inverse = None
    files = data.get("files")
    if files is not None and not (isinstance(files, list) and all(isinstance(f, str) for f in files)):
        errors.append(_err("manifest_invalid", "files", files, "a list of relative file names"))
        files = None

    if errors:
        raise ManifestError(errors)
    return Manifest(name=name, origin=origin, revision=revision, digest=digest, owner=owner,
                    entrypoint=entrypoint, capabilities=caps, arguments=arguments,
                    inverse=inverse, files=files, source=source)


def loads(data, source="<inline>"):
    """Parse manifest bytes/str (JSON or YAML). Raises ManifestError."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ManifestError([D.make(
                "manifest_not_utf8",
                message="%s: byte %d is not valid UTF-8 (%s); manifests are UTF-8 text"
                        % (source, exc.start, exc.reason), field="(file)", value=source)]) from None
    else:
        text = data
    if "\0" in text:
        raise ManifestError([D.make("manifest_not_utf8", message="%s: contains a NUL byte" % source,
                                    field="(file)", value=source)])
    try:
        try:
            decoded = json.loads(text)
        except ValueError:
            import yaml  # PyYAML: present with Ansible on the controller and most hosts
            decoded = yaml.safe_load(text)
    except ImportError:
        raise ManifestError([D.make("manifest_parse_error",
                                    message="%s: YAML needs PyYAML on this host; give the manifest as JSON"
                                    % source, field="(file)", value=source)]) from None
    except Exception as exc:  # yaml.YAMLError / ValueError: report, never a traceback
        raise ManifestError([D.make("manifest_parse_error", message="%s: not valid YAML/JSON: %s"
                                    % (source, str(exc).replace("\n", " ")), field="(file)",
                                    value=source)]) from None
    return from_dict(decoded, source=source)


def load(path):
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        raise ManifestError([D.make("manifest_parse_error", message="%s: cannot read: %s"
                                    % (path, exc.strerror), field="(file)", value=path)]) from None
    return loads(data, source=path)
