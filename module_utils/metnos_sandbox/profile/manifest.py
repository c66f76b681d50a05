# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Executor manifest model and the one strict loader (bounded input, exact grammar).

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

``coerce()`` is the only way in: file, bytes, text, a decoded mapping or a loaded Manifest all
go through the same limits and grammar (docs/profile-invariants.md lists them). Input is
data: it is bounded before it is interpreted, never used as a format string, and quoted in
messages only as a short escaped excerpt. Every refusal carries a stable code; nothing here
raises anything but ManifestError. Nothing here touches the filesystem except ``read_file``.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
from typing import Any, Dict, List, Optional

from ..base.diagnostics import ERROR, LOAD_CODES, Diagnostic, capped, excerpt, make
from ..base.records import Record
from . import globs, model, reader


class Parsed(Record):
    """parse_capability's answer: the capability, or None and the refusals."""
    capability: Optional[model.Capability]
    errors: List[Diagnostic]


def parse_capability(text: Any, field: str = "capabilities") -> Parsed:
    """Parse one capability string, matched whole. Returns Parsed(Capability or None, [errors])."""
    if not isinstance(text, str):
        return Parsed(None, [model.err("manifest_invalid", field, text,
                                       "a capability is a string (%s)" % model.FORMS_TEXT)])
    if len(text) > model.MAX_CAPABILITY_LENGTH:
        return Parsed(None, [make("capability_too_long", field=field,
                                  value=excerpt(text),
                                  limit=model.MAX_CAPABILITY_LENGTH, wording="length",
                                  fill={"length": len(text)})])
    wording = model.whitespace_wording(text)
    if wording is not None:     # before the grammar: two capabilities run together are never one unknown one
        return Parsed(None, [make("capability_whitespace", wording=wording, field=field,
                                  value=excerpt(text),
                                  fill={"at": ""})])
    if model.has_control(text):
        code = "scope_nul" if text.startswith(model.Kind.FS + ":") else "capability_unknown"
        return Parsed(None, [model.err(code, field, text, "NUL, control or format characters are never part of a "
                                       "capability (R-CAP-FS)")])
    fixed = model.FIXED_CAPS.get(text)
    if fixed is not None:
        return Parsed(model.Capability(text, *fixed), [])
    head, _sep, rest = text.partition(":")
    bare = model.BARE_FORMS.get(head)
    if bare is not None and bare.target.fullmatch(rest):
        return Parsed(model.Capability(text, bare.kind, bare.modes[0], rest), [])
    mode, sep2, target = rest.partition(":")
    if head == model.Kind.FS and mode in model.FS_MODES and sep2 and target:
        return _parse_fs(text, field, mode, target)
    form = model.MODE_FORMS.get(head)
    if form is not None and mode in form.modes and form.target.fullmatch(target):
        return Parsed(model.Capability(text, form.kind, mode, target), [])
    return Parsed(None, [model.err("capability_unknown", field, text, "accepted forms: %s" % model.FORMS_TEXT)])


def _parse_fs(text: str, field: str, mode: str, target: str) -> Parsed:
    """fs:<mode>:<scope>, the scope a fixed path or glob, or arg:<name> (a declared argument)."""
    if target.startswith("arg:"):
        name = target[4:]
        if not model.NAME.fullmatch(name):
            return Parsed(None, [model.err("capability_unknown", field, text,
                                           "arg:<name> needs an argument name [a-z0-9_.-]")])
        return Parsed(model.Capability(text, model.Kind.FS, mode, None, arg=name), [])
    errors: List[Diagnostic] = []
    if not globs.check_scope_text(field, target, errors):
        return Parsed(None, errors)
    return Parsed(model.Capability(text, model.Kind.FS, mode, target), [])


def _relative_file(value: Any) -> bool:
    """A path relative to the executor's folder: grammar-checked components, no '.', '..', '//'."""
    if not isinstance(value, str) or not value or len(value) > model.MAX_STRING:
        return False
    return all(model.FILE_PART.fullmatch(part) for part in value.split("/"))


def _limit(code: str, field: str, count: int, limit: int) -> Diagnostic:
    result: Diagnostic = make(code, field=field, limit=limit, wording="count",
                              fill={"count": count})
    return result


def _precheck(data: Dict[Any, Any]) -> None:
    """Counts that are refused before anything is walked or parsed (each with its own code)."""
    caps = data.get("capabilities")
    if isinstance(caps, (list, tuple)):
        if len(caps) > model.MAX_CAPABILITIES:
            raise model.Refuse(_limit("manifest_too_many_capabilities", "capabilities", len(caps),
                                      model.MAX_CAPABILITIES))
        for index, text in enumerate(caps):
            if isinstance(text, str) and len(text) > model.MAX_CAPABILITY_LENGTH:
                raise model.Refuse(parse_capability(text, "capabilities[%d]" % index).errors[0])
    args = data.get("arguments")
    if isinstance(args, (dict, list, tuple)) and len(args) > model.MAX_ARGUMENTS:
        raise model.Refuse(_limit("manifest_too_many_arguments", "arguments", len(args), model.MAX_ARGUMENTS))
    if isinstance(args, dict):
        for name, spec in args.items():
            within = spec.get("within") if isinstance(spec, dict) else None
            if isinstance(within, (list, tuple)) and len(within) > model.MAX_SCOPES:
                raise model.Refuse(_limit("manifest_too_many_scopes", "arguments.%s.within"
                                          % excerpt(name, 40),
                                          len(within), model.MAX_SCOPES))
    files = data.get("files")
    if isinstance(files, (list, tuple)) and len(files) > model.MAX_FILES:
        raise model.Refuse(_limit("manifest_too_many_files", "files", len(files), model.MAX_FILES))


class _Header(Record):
    """The scalar fields of a manifest, each None where refused or absent."""
    name: Any
    origin: Any
    revision: model.Revision
    digest: Optional[str]
    owner: Optional[str]
    entrypoint: Optional[str]


def from_dict(data: Any, source: str = "<inline>", loaded: Optional[reader.Loaded] = None) -> model.Manifest:
    """Validate decoded manifest data (bounded, exact). Raises ManifestError with the problems found.
    ``loaded``: reader.load's answer for ``data`` when it was walked there (JSON text): not walked again."""
    if not isinstance(data, dict):
        raise model.ManifestError([model.err("manifest_invalid", "(manifest)", type(data).__name__,
                                             "a manifest is a mapping with name, origin, capabilities")])
    try:
        _precheck(data)
        if loaded is None or not loaded.walked:
            data = reader.plain(data)
        elif loaded.long_string is not None:
            raise model.Refuse(loaded.long_string)
    except model.Refuse as exc:
        raise model.ManifestError([exc.diag]) from None
    errors: List[Diagnostic] = []
    for key in sorted(set(data) - set(model.FIELDS)):
        errors.append(model.err("manifest_invalid", reader.sub("(manifest)", key), key,
                                "unknown field; accepted: %s" % ", ".join(model.FIELDS)))
    header = _header(data, errors)
    caps = _capabilities(data.get("capabilities", []), errors)
    arguments = _arguments(data.get("arguments"), errors)
    _check_arg_scopes(caps, arguments, errors)
    inverse = _inverse(data.get("inverse"), errors)
    files = _files(data.get("files"), errors)
    min_containment = _min_containment(data.get("min_containment"), errors)
    if errors:
        raise model.ManifestError(capped(errors, model.MAX_DIAGNOSTICS, "more_problems"))
    return model.Manifest(name=header.name, origin=header.origin, revision=header.revision, digest=header.digest,
                          owner=header.owner, entrypoint=header.entrypoint, capabilities=caps, arguments=arguments,
                          inverse=inverse, files=files, min_containment=min_containment, source=source)


def _min_containment(value: Any, errors: List[Diagnostic]) -> Optional[str]:
    """The minimum containment level the executor needs on a paired device (R-SCOPE-4: at a weaker level the
    client refuses it, no silent downgrade): one of the levels, matched whole; absent: no minimum."""
    if value is None or (isinstance(value, str) and value in model.CONTAINMENT_LEVELS):
        return value
    errors.append(make("manifest_containment_unknown", wording="refused",
                       fill={"expected": "one of " + ", ".join(model.CONTAINMENT_LEVELS)},
                       field="min_containment",
                       value=excerpt(value)))
    return None


def _header(data: Dict[str, Any], errors: List[Diagnostic]) -> _Header:
    """name, origin, revision, digest, owner, entrypoint: each matched whole by its grammar."""
    name = data.get("name")
    if not isinstance(name, str) or not model.NAME.fullmatch(name):
        errors.append(model.err("manifest_invalid", "name", name,
                                "required; lower-case letters, digits, '_', '.', '-' (max 128), matched whole"))
    origin = data.get("origin")
    if isinstance(origin, str) and model.has_control(origin):
        errors.append(model.err("manifest_control_character", "origin", origin, "no control or format characters"))
    elif not isinstance(origin, str) or not origin or origin != origin.strip():
        errors.append(model.err("manifest_invalid", "origin", origin, "required; a publisher string without "
                                "surrounding spaces"))
    revision = data.get("revision")
    if revision is not None and not (
            (isinstance(revision, int) and not isinstance(revision, bool) and 0 <= revision < 2 ** 63)
            or (isinstance(revision, str) and model.REVISION.fullmatch(revision))):
        code = "manifest_control_character" if isinstance(revision, str) and model.has_control(revision) \
            else "manifest_invalid"
        errors.append(model.err(code, "revision", revision, "a non-negative integer (not a boolean) or a version "
                                "string [A-Za-z0-9_.+:~-]"))
    digest = _opt(data, "digest", errors, model.DIGEST, "sha256:<64 lower-case hex digits>")
    owner = _opt(data, "owner", errors, model.OWNER, "a user name [a-z_][a-z0-9_.-]")
    entrypoint = data.get("entrypoint")
    if entrypoint is not None and not _relative_file(entrypoint):
        errors.append(model.err("manifest_invalid", "entrypoint", entrypoint,
                                "a path relative to the executor's folder ([A-Za-z0-9_.@+-] components, no '.', "
                                "'..', '//' or leading '/')"))
        entrypoint = None
    return _Header(name, origin, revision, digest, owner, entrypoint)


def _capabilities(raw_caps: Any, errors: List[Diagnostic]) -> List[model.Capability]:
    """The parsed capabilities, in order, each text once."""
    if not isinstance(raw_caps, list):
        errors.append(model.err("manifest_invalid", "capabilities", raw_caps, "a list of capability strings"))
        return []
    caps, seen = [], set()
    for index, text in enumerate(raw_caps):
        cap, errs = parse_capability(text, "capabilities[%d]" % index)
        errors.extend(errs)
        if cap is not None and cap.text not in seen:
            seen.add(cap.text)
            caps.append(cap)
    return caps


def _check_arg_scopes(caps: List[model.Capability], arguments: Dict[str, model.ArgumentSpec],
                      errors: List[Diagnostic]) -> None:
    """R-ARG-1: an fs:*:arg:<name> capability names a declared argument with 'within' scopes."""
    for cap in caps:
        if cap.kind != model.Kind.FS or cap.arg is None:
            continue
        if cap.arg not in arguments:
            errors.append(model.err("arg_undeclared", "capabilities", cap.text,
                                    "argument %s is not declared under 'arguments' (R-ARG-1)"
                                    % excerpt(cap.arg)))
        elif not arguments[cap.arg]["within"]:
            errors.append(model.err("arg_scope_unbounded", "arguments.%s.within" % cap.arg, [],
                                    "an argument used as a path scope must declare 'within' scopes it "
                                    "may narrow (R-ARG-1: narrow, never widen)"))


def _inverse(inverse: Any, errors: List[Diagnostic]) -> Optional[Dict[str, str]]:
    if inverse is not None and not (isinstance(inverse, dict) and set(inverse) == {"model"}
                                    and isinstance(inverse["model"], str) and model.NAME.fullmatch(inverse["model"])):
        errors.append(model.err("manifest_invalid", "inverse", inverse, "a mapping with only a 'model' name"))
        return None
    return inverse


def _files(files: Any, errors: List[Diagnostic]) -> Optional[List[str]]:
    if files is not None and not (isinstance(files, list) and all(_relative_file(f) for f in files)
                                  and len(set(files)) == len(files)):
        errors.append(model.err("manifest_invalid", "files", files, "a list of distinct relative file names"))
        return None
    return files


def _opt(data: Dict[str, Any], key: str, errors: List[Diagnostic], pattern: re.Pattern[str],
         expected: str) -> Optional[str]:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.fullmatch(value):
        code = "manifest_control_character" if isinstance(value,
                                                          str) and model.has_control(value) else "manifest_invalid"
        errors.append(model.err(code, key, value, expected))
        return None
    return value


def _arguments(raw_args: Any, errors: List[Diagnostic]) -> Dict[str, model.ArgumentSpec]:
    arguments: Dict[str, model.ArgumentSpec] = {}
    if raw_args is None:
        return arguments
    if isinstance(raw_args, list):  # a bare list of names
        if not all(isinstance(a, str) for a in raw_args) or len(set(raw_args)) != len(raw_args):
            errors.append(model.err("manifest_invalid", "arguments", raw_args, "a list of distinct argument names"))
            return arguments
        raw_args = dict((a, None) for a in raw_args)
    if not isinstance(raw_args, dict):
        errors.append(model.err("manifest_invalid", "arguments", raw_args, "a mapping name -> {kind, within}"))
        return arguments
    for arg_name, spec in raw_args.items():
        parsed = _argument(arg_name, spec, errors)
        if parsed is not None:
            arguments[arg_name] = parsed
    return arguments


def _argument(arg_name: str, spec: Any, errors: List[Diagnostic]) -> Optional[model.ArgumentSpec]:
    """One declared argument {kind, within}, or None after recording why it is refused."""
    field = reader.sub("arguments", arg_name)
    if not model.NAME.fullmatch(arg_name):
        errors.append(model.err("manifest_invalid", field, arg_name, "an argument name [a-z0-9_.-], matched whole"))
        return None
    spec = {} if spec is None else spec
    if not isinstance(spec, dict) or set(spec) - set(model.ARG_KEYS):
        errors.append(model.err("manifest_invalid", field, spec, "a mapping with only 'kind' and 'within'"))
        return None
    kind = spec.get("kind", "path")
    if not isinstance(kind, str) or not model.NAME.fullmatch(kind):
        errors.append(model.err("manifest_invalid", field + ".kind", kind, "a kind name such as path"))
        return None
    within = spec.get("within", [])
    if isinstance(within, str):
        within = [within]
    if not isinstance(within, list):
        errors.append(model.err("manifest_invalid", field + ".within", within, "a list of absolute scopes"))
        return None
    clean = []
    for i, scope in enumerate(within):
        sfield = "%s.within[%d]" % (field, i)
        if not isinstance(scope, str):
            errors.append(model.err("manifest_invalid", sfield, scope, "an absolute path or glob"))
        elif globs.check_scope_text(sfield, scope, errors):
            clean.append(scope)
    return {"kind": kind, "within": clean}


# ------------------------------------------------------------------ the one entry

def refusal_record(diagnostics: List[Diagnostic],
                   subject: Optional[Dict[str, Any]] = None) -> Dict[str, Dict[str, Any]]:
    """What a controller-side face hands to the host when loading was refused (see coerce); ``subject``: the
    file's path (``source``) and its readable executor name (``name``, reader.readable_name), the refusal's label."""
    first = [d for d in diagnostics if d.get("severity") == ERROR][0]
    body = {"code": first["code"], "message": first["message"][:400]}
    body.update((key, value) for key, value in (subject or {}).items() if isinstance(value, str))
    return {model.REFUSAL_KEY: body}


def _from_record(record: Dict[str, Any]) -> List[Diagnostic]:
    body = record.get(model.REFUSAL_KEY)
    code = body.get("code") if isinstance(body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    if code not in LOAD_CODES or not isinstance(message, str):
        return [model.err("manifest_invalid", model.REFUSAL_KEY, body, "a refusal record made by this toolkit")]
    return [make(code, wording="relayed",
                 fill={"relayed": excerpt(message, 400)[1:-1]}, field="(file)")]


def coerce(source: Any, name: str = "<inline>") -> model.Manifest:
    """Any manifest source -> a validated Manifest. The only way a manifest enters the toolkit.

    ``source``: a Manifest (returned as is), a FileSource (read here, bounded), bytes or text
    (JSON or YAML), or decoded data (a mapping, e.g. from Ansible). Raises ManifestError."""
    if isinstance(source, model.Manifest):
        return source
    if isinstance(source, model.FileSource):
        name = source.path
        source = reader.read_file(source.path)
    loaded = None
    if isinstance(source, (bytes, bytearray, str)):
        loaded = reader.load(source, name)
        source = loaded.data
    if isinstance(source, dict) and model.REFUSAL_KEY in source and len(source) == 1:
        raise model.ManifestError(_from_record(source))
    return from_dict(source, source=name, loaded=loaded)


def transport(source: Any) -> Any:
    """For a face that loads on one machine and renders on another (a filter on the controller):
    the manifest as decoded data the host's coerce() accepts (so the host needs no YAML library),
    or the refusal record that makes the host refuse with the same code. Loading uses the same
    reader and decoder as coerce(); validation happens on the host. Never raises."""
    subject: Dict[str, Any] = {}
    try:
        if isinstance(source, model.FileSource):
            subject["source"] = source.path
            raw = reader.read_file(source.path)
            subject["name"] = reader.readable_name(raw)
            data = reader.decode(raw, source.path)
        elif isinstance(source, (bytes, bytearray, str)):
            data = reader.decode(source)
        else:
            return source
        if not isinstance(data, dict):
            from_dict(data)          # refuses a document that is not a mapping, with its message
        return data
    except model.ManifestError as exc:
        return refusal_record(exc.diagnostics, subject)


class SourceError(ValueError):
    """A manifest source that is neither a path nor a mapping with file or manifest."""


def from_source(item: Any) -> Any:
    """A metnos_sandbox_manifests entry (controller path, or {file|manifest, invocation}) -> transport() of the
    manifest it names: what the metnos_manifest_source filter and the metnos_audit action (manifest_sources) hand
    to the host. SourceError for an entry of another shape."""
    if isinstance(item, dict) and "manifest" in item:
        return transport(item["manifest"])
    if isinstance(item, str):
        path = item
    elif isinstance(item, dict) and isinstance(item.get("file"), str):
        path = item["file"]
    else:
        raise SourceError("expected a path or a mapping with file/manifest, got %s" % excerpt(item))
    return transport(model.FileSource(path))
