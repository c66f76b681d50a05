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

import errno
import json
import os
import re
import stat
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, TypedDict, Union

from ..base import diagnostics as D

Diag = Dict[str, Any]                 # a diagnostic as diagnostics.make builds it

# ---- documented limits (docs/profile-invariants.md); each has its own refusal code ----
MAX_MANIFEST_BYTES = 64 * 1024      # manifest_too_large
MAX_NODES = 4096                    # manifest_too_many_nodes (aliases counted expanded, before expansion)
MAX_DEPTH = 12                      # manifest_too_deep
MAX_STRING = 1024                   # manifest_string_too_long (every key and string)
MAX_CAPABILITIES = 128              # manifest_too_many_capabilities
MAX_CAPABILITY_LENGTH = 1024        # capability_too_long
MAX_ARGUMENTS = 32                  # manifest_too_many_arguments
MAX_SCOPES = 16                     # manifest_too_many_scopes ('within' entries per argument)
MAX_FILES = 64                      # manifest_too_many_files
MAX_INT_DIGITS = 19                 # a revision is a 64-bit integer at most
MAX_DIAGNOSTICS = 32                # problems reported per manifest (the rest are counted)

GLOB_CHARS = "*?[{"
# Whole-string grammars (re.fullmatch: '$' would accept a trailing newline).
_NAME = re.compile(r"[a-z0-9_][a-z0-9_.-]{0,127}")
_INDEX = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_NET = re.compile(r"\*|[A-Za-z0-9_][A-Za-z0-9_.@+*-]{0,127}")
_ACCOUNT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_OWNER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+:~-]{0,63}")
_FILE_PART = re.compile(r"[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]{0,127}")
# C0/C1 controls, DEL, line/paragraph separators, Unicode format characters (bidi overrides,
# zero-width, BOM, tags) and lone surrogates: never valid in any string field.
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\ud800-\udfff\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]")

ACCEPTED_FORMS = (
    "fs:read:<scope>", "fs:write:<scope>  (scope: absolute path, glob, or arg:<name>)",
    "metnos:read|write|create:<resource>", "index:read:<name>", "systemd:read",
    "system:read", "system:read:network_interfaces", "provider:access:<provider>",
    "skill:<name> (legacy)", "mail:read:<account>", "dialog.user_input", "network:<what>",
    "net:<what>", "system:undo (undo_last_turn only)",
)
_FORMS_TEXT = "; ".join(ACCEPTED_FORMS)


class Kind(object):
    """The capability kinds: the one spelling, shared by the grammar below and the renderer's table
    of granters (profile._GRANTERS)."""
    FS = "fs"
    METNOS = "metnos"
    INDEX = "index"
    SYSTEMD = "systemd"
    SYSTEM = "system"
    PROVIDER = "provider"
    SKILL = "skill"
    MAIL = "mail"
    DIALOG = "dialog"
    NETWORK = "network"
    UNDO = "undo"


KINDS = (Kind.FS, Kind.METNOS, Kind.INDEX, Kind.SYSTEMD, Kind.SYSTEM, Kind.PROVIDER, Kind.SKILL, Kind.MAIL,
         Kind.DIALOG, Kind.NETWORK, Kind.UNDO)
# Kinds whose grant reaches the network (and system:read:network_interfaces, see needs_network).
NETWORK_KINDS = frozenset((Kind.NETWORK, Kind.PROVIDER, Kind.SKILL, Kind.MAIL))
NETWORK_INTERFACES = "network_interfaces"
# Modes that grant writing (fs:write, metnos:write|create, provider:access).
WRITE_MODES = ("write", "create", "access")


class _Form(NamedTuple):
    """One capability form of the grammar: its kind, the modes it accepts and its target's grammar."""
    kind: str
    modes: Tuple[Optional[str], ...]
    target: re.Pattern[str]


# '<head>:<target>' forms (the mode is implied) and '<head>:<mode>:<target>' forms; fs has its own.
_BARE_FORMS = {"network": _Form(Kind.NETWORK, (None,), _NET), "net": _Form(Kind.NETWORK, (None,), _NET),
               "skill": _Form(Kind.SKILL, ("access",), _NAME)}
_MODE_FORMS = {"metnos": _Form(Kind.METNOS, ("read", "write", "create"), _NAME),
               "index": _Form(Kind.INDEX, ("read",), _INDEX),
               "provider": _Form(Kind.PROVIDER, ("access",), _NAME),
               "mail": _Form(Kind.MAIL, ("read",), _ACCOUNT)}
_FS_MODES = ("read", "write")
_FIXED_CAPS = {     # text -> (kind, mode, target)
    "dialog.user_input": (Kind.DIALOG, None, None),
    "systemd:read": (Kind.SYSTEMD, "read", None),
    "system:read": (Kind.SYSTEM, "read", None),
    "system:read:network_interfaces": (Kind.SYSTEM, "read", NETWORK_INTERFACES),
    "system:undo": (Kind.UNDO, "undo", None),
}
_FIELDS = ("name", "origin", "revision", "digest", "owner", "entrypoint", "capabilities", "arguments",
           "inverse", "files")
_ARG_KEYS = ("kind", "within")
# The one refusal record a controller-side face hands over when it could not load a manifest
# (see transport()); coerce() turns it back into the same refusal on the host.
REFUSAL_KEY = "metnos_manifest_refused"
_LOAD_CODES = D.LOAD_CODES


class ManifestError(ValueError):
    """A manifest is refused. ``diagnostics`` holds one entry per problem."""

    def __init__(self, diagnostics: List[Diag]) -> None:
        self.diagnostics = diagnostics
        ValueError.__init__(self, "; ".join(d["message"] for d in diagnostics))


class FileSource(object):
    """A manifest file on the host that renders (read by ``read_file``, bounded)."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path


class Capability(object):
    """One parsed capability: kind (a Kind), mode, target, and the original text."""

    __slots__ = ("text", "kind", "mode", "target", "arg")

    def __init__(self, text: str, kind: str, mode: Optional[str] = None, target: Optional[str] = None,
                 arg: Optional[str] = None) -> None:
        self.text = text
        self.kind = kind
        self.mode = mode
        self.target = target
        self.arg = arg          # argument name for fs:*:arg:<name>

    def needs_network(self) -> bool:
        return self.kind in NETWORK_KINDS or (self.kind == Kind.SYSTEM and self.target == NETWORK_INTERFACES)

    def writes(self) -> bool:
        """The grant is writable: a writing mode, or the sender's dialog folder."""
        return self.mode in WRITE_MODES or self.kind == Kind.DIALOG

    def __repr__(self) -> str:
        return "Capability(%s)" % D.excerpt(self.text)


class ArgumentSpec(TypedDict):
    """A declared argument: its kind and the 'within' scopes a path value must stay in."""
    kind: str
    within: List[str]


Revision = Union[int, str, None]


class Manifest(object):
    __slots__ = ("name", "origin", "revision", "digest", "owner", "entrypoint",
                 "capabilities", "arguments", "inverse", "files", "source")

    name: str
    origin: str
    revision: Revision
    digest: Optional[str]
    owner: Optional[str]
    entrypoint: Optional[str]
    capabilities: List[Capability]
    arguments: Dict[str, ArgumentSpec]
    inverse: Optional[Dict[str, str]]
    files: Optional[List[str]]
    source: str

    def __init__(self, **fields: Any) -> None:
        """Built by from_dict only, from validated fields (an absent one is None)."""
        for key in self.__slots__:
            setattr(self, key, fields.get(key))

    def to_dict(self) -> Dict[str, Any]:
        out = {
            "name": self.name, "origin": self.origin, "revision": self.revision,
            "digest": self.digest, "owner": self.owner, "entrypoint": self.entrypoint,
            "capabilities": [c.text for c in self.capabilities],
            "arguments": dict((k, {"kind": v["kind"], "within": list(v["within"])})
                              for k, v in self.arguments.items()),
            "inverse": dict(self.inverse) if self.inverse is not None else None,
            "files": list(self.files) if self.files is not None else None,
        }
        return dict((k, v) for k, v in out.items() if v is not None)


class _Refuse(Exception):
    """Internal: stop loading at the first structural refusal (bounded work)."""

    def __init__(self, diag: Diag) -> None:
        Exception.__init__(self, diag["code"])
        self.diag = diag


def _refuse(code: str, field: str, wording: str, fill: Optional[Mapping[str, Any]] = None, **extra: Any) -> _Refuse:
    """A structural refusal: the code's registered ``wording``, its placeholders from ``fill`` (excerpts)."""
    return _Refuse(D.make(code, wording=wording, fill=fill, field=field, **extra))


def _err(code: str, field: str, value: Any, expected: str, **extra: Any) -> Diag:
    """A refusal naming the field, a short escaped excerpt of the value and the accepted forms."""
    result: Diag = D.make(code, wording="refused", fill={"expected": expected}, field=field, value=D.excerpt(value),
                          **extra)
    return result


def has_control(text: str) -> bool:
    """A control, format, separator or surrogate character anywhere in ``text`` (fast path: a
    printable string has none of them)."""
    return not text.isprintable() and _CONTROL.search(text) is not None


# ------------------------------------------------------------------ reading and decoding

def read_file(path: Any) -> bytes:
    """The one reader of manifest files: a regular file, at most MAX_MANIFEST_BYTES (bounded read).

    Returns bytes; raises ManifestError (manifest_parse_error / manifest_too_large)."""
    field = "(file)"
    where = D.excerpt(path)
    if not isinstance(path, str) or not path or "\0" in path:
        raise ManifestError([D.make("manifest_parse_error", wording="not_path", fill={"where": where},
                                    field=field)])
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ManifestError([D.make("manifest_missing" if exc.errno == errno.ENOENT else "manifest_parse_error",
                                    wording="unreadable", fill={"where": where, "error": exc.strerror},
                                    field=field, value=where)]) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ManifestError([D.make("manifest_parse_error", field=field, value=where,
                                        wording="not_regular", fill={"where": where})])
        if info.st_size > MAX_MANIFEST_BYTES:
            raise ManifestError([_too_large(where, info.st_size)])
        chunks, total = [], 0
        while total <= MAX_MANIFEST_BYTES:
            chunk = os.read(fd, MAX_MANIFEST_BYTES + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise ManifestError([D.make("manifest_parse_error", wording="unreadable",
                                    fill={"where": where, "error": exc.strerror}, field=field, value=where)]) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestError([_too_large(where, len(data))])
    return data


def _too_large(where: str, size: int) -> Diag:
    diag: Diag = D.make("manifest_too_large", field="(file)", value=where, limit=MAX_MANIFEST_BYTES,
                        wording="size", fill={"where": where, "size": size})
    return diag


def decode(data: Any, source: Any = "<inline>") -> Any:
    """Manifest bytes/str (JSON or YAML) -> plain decoded data, bounded. Raises ManifestError."""
    where = D.excerpt(source)
    if isinstance(data, (bytes, bytearray)):
        if len(data) > MAX_MANIFEST_BYTES:
            raise ManifestError([_too_large(where, len(data))])
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ManifestError([D.make(
                "manifest_not_utf8", field="(file)", value=where,
                wording="byte", fill={"where": where, "byte": exc.start, "reason": exc.reason})]) from None
    elif isinstance(data, str):
        if len(data) > MAX_MANIFEST_BYTES:   # characters >= bytes/4: refuse before encoding anything
            raise ManifestError([_too_large(where, len(data))])
        text = str.__str__(data)
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise ManifestError([D.make("manifest_not_utf8", field="(file)", value=where,
                                        wording="surrogates", fill={"where": where})]) from None
        if size > MAX_MANIFEST_BYTES:
            raise ManifestError([_too_large(where, size)])
    else:
        raise ManifestError([D.make("manifest_parse_error", field="(file)", value=where,
                                    wording="not_text", fill={"where": where, "type": type(data).__name__})])
    if "\0" in text:
        raise ManifestError([D.make("manifest_not_utf8", wording="nul", fill={"where": where},
                                    field="(file)", value=where)])
    try:
        if text.lstrip()[:1] in ("{", "["):
            try:
                return _json_load(text)
            except _NotJson:
                pass                       # YAML flow style ({'a': 1}): the YAML reader decides
        return _yaml_load(text)
    except _Refuse as exc:
        raise ManifestError([D.amend(exc.diag, "seen_in", where=where)]) from None


class _NotJson(Exception):
    pass


def _json_pairs(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out = {}
    for key, value in pairs:
        if key in out:
            raise _refuse("manifest_duplicate_key", key, "json_key", {"key": D.excerpt(key)})
        out[key] = value
    return out


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _refuse("manifest_invalid", "(number)", "number_range", {"number": D.excerpt(text)})
    return int(text)


def _json_constant(text: str) -> Any:
    raise _NotJson()


def _json_load(text: str) -> Any:
    """JSON with duplicate keys refused and the same structural limits as YAML (nodes, depth)."""
    try:
        return _plain(json.loads(text, object_pairs_hook=_json_pairs, parse_int=_json_int,
                                 parse_constant=_json_constant), strings=False)   # lengths: in from_dict
    except RecursionError:
        raise _refuse("manifest_too_deep", "(document)", "interpreter", limit=MAX_DEPTH) from None
    except ValueError:
        raise _NotJson() from None


_YAML_STR = "tag:yaml.org,2002:str"
_YAML_PLAIN_TAGS = ("tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:bool",
                    "tag:yaml.org,2002:null", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp")
_YAML_COLLECTION_TAGS = {"seq": (None, "!"), "map": (None, "!")}
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_BOOL = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}


class _Frame(object):
    """One open collection of the YAML composer: the value being built, whether it is a mapping,
    the key waiting for its value, its expanded size in nodes and its anchor."""

    __slots__ = ("container", "is_map", "key", "size", "anchor")

    def __init__(self, container: Union[Dict[str, Any], List[Any]], anchor: Optional[str]) -> None:
        self.container = container
        self.is_map = isinstance(container, dict)
        self.key: Optional[str] = None
        self.size = 1
        self.anchor = anchor


def _yaml_load(text: str) -> Any:
    """Compose YAML from parser events with every bound checked before a node is built.

    The parser (libyaml when present, else PyYAML's) only tokenises; _Composer builds plain
    Python values itself so that: aliases are counted as the nodes they expand to before
    anything is expanded; nesting depth is capped; duplicate keys, non-string keys, explicit
    tags, merge keys and several documents are refused; YAML 1.1 number forms that silently
    change a value (octal, hex, sexagesimal) are refused; timestamps stay text."""
    try:
        import yaml
    except ImportError:
        raise _refuse("manifest_parse_error", "(file)", "no_yaml") from None
    loader = (getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader)(text)
    try:
        return _Composer(yaml).compose(loader)
    except _Refuse:
        raise
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).split("\n", maxsplit=1)[0]
        mark = getattr(exc, "problem_mark", None)
        at = " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark is not None else ""
        raise _refuse("manifest_parse_error", "(file)", "syntax",
                      {"problem": D.excerpt(str(problem), 120)[1:-1], "at": at}) from None
    except RecursionError:
        raise _refuse("manifest_too_deep", "(document)", "yaml", limit=MAX_DEPTH) from None
    finally:
        try:
            loader.dispose()
        except Exception:
            pass


class _Composer(object):
    """Plain values from a YAML event stream, bounded (see _yaml_load)."""

    def __init__(self, yaml: Any) -> None:
        self.yaml = yaml
        self.events = yaml.events
        self.resolver = yaml.resolver.Resolver()
        self.anchors: Dict[str, Tuple[Any, int]] = {}      # anchor -> (value, expanded size)
        self.stack: List[_Frame] = []
        self.nodes = 0
        self.docs = 0
        self.root: Any = None

    def compose(self, loader: Any) -> Any:
        E = self.events
        handlers = {E.DocumentStartEvent: self.document, E.AliasEvent: self.alias, E.ScalarEvent: self.scalar,
                    E.SequenceStartEvent: self.start, E.MappingStartEvent: self.start,
                    E.SequenceEndEvent: self.end, E.MappingEndEvent: self.end}
        while True:       # stream start and document end events carry nothing
            ev = loader.get_event()
            if isinstance(ev, E.StreamEndEvent):
                return self.root
            handler = handlers.get(type(ev))
            if handler is not None:
                handler(ev)

    def count(self, n: int, field: str) -> None:
        self.nodes += n
        if self.nodes > MAX_NODES:
            raise _refuse("manifest_too_many_nodes", field, "yaml", limit=MAX_NODES)

    def where(self) -> str:
        if not self.stack:
            return "(document)"
        top = self.stack[-1]
        return "mapping value %s" % D.excerpt(top.key) if top.is_map and top.key is not None else "(in a collection)"

    def wants_key(self) -> bool:
        """The next node is a mapping key."""
        stack = self.stack
        return bool(stack) and stack[-1].is_map and stack[-1].key is None

    def attach(self, value: Any, size: int) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.size += size
        if isinstance(top.container, list):
            top.container.append(value)
        elif top.key is None:
            raise AssertionError("unreachable")     # keys are handled by scalar events
        else:
            top.container[top.key] = value
            top.key = None

    def document(self, ev: Any) -> None:
        self.docs += 1
        if self.docs > 1:
            raise _refuse("manifest_yaml_unsupported", "(document)", "documents")

    def alias(self, ev: Any) -> None:
        if self.wants_key():
            raise _refuse("manifest_yaml_unsupported", self.where(), "alias_key")
        if ev.anchor not in self.anchors:
            if any(f.anchor == ev.anchor for f in self.stack):
                raise _refuse("manifest_too_many_nodes", self.where(), "self_alias",
                              {"anchor": D.excerpt(ev.anchor)[1:-1]}, limit=MAX_NODES)
            raise _refuse("manifest_parse_error", self.where(), "alias", {"anchor": D.excerpt(ev.anchor)[1:-1]})
        value, size = self.anchors[ev.anchor]
        self.count(size, self.where())
        self.attach(value, size)

    def scalar(self, ev: Any) -> None:
        self.count(1, self.where())      # string lengths are checked on the result, as for mappings
        value = self.scalar_value(ev)
        if self.wants_key():
            self.key(ev, value)
            return
        if ev.anchor:
            self.anchors[ev.anchor] = (value, 1)
        self.attach(value, 1)

    def key(self, ev: Any, value: Any) -> None:
        top = self.stack[-1]
        if not isinstance(value, str):
            raise _refuse("manifest_yaml_unsupported", "(key)", "key_type", {"key": D.excerpt(ev.value)})
        if value == "<<" and ev.implicit[0]:
            raise _refuse("manifest_yaml_unsupported", "(key)", "merge")
        if value in top.container:
            raise _refuse("manifest_duplicate_key", value, "yaml_key", {"key": D.excerpt(value)})
        if ev.anchor:
            raise _refuse("manifest_yaml_unsupported", "(key)", "key_anchor")
        top.key = value
        top.size += 1

    def scalar_value(self, ev: Any) -> Any:
        tag = ev.tag
        if tag not in (None, "!"):
            raise _refuse("manifest_yaml_unsupported", self.where(), "explicit_tag", {"tag": D.excerpt(tag)})
        tag = self.resolver.resolve(self.yaml.ScalarNode, ev.value, ev.implicit) if tag is None else _YAML_STR
        if tag not in _YAML_PLAIN_TAGS:
            raise _refuse("manifest_yaml_unsupported", self.where(), "tag", {"tag": D.excerpt(tag)})
        value: str = ev.value
        if tag == _YAML_STR or tag.endswith(":timestamp"):
            return value
        if tag.endswith(":null"):
            return None
        if tag.endswith(":bool"):
            return _BOOL.get(value.lower(), False)
        if tag.endswith(":int"):
            return self.integer(value)
        try:   # float
            return self.yaml.constructor.SafeConstructor().construct_yaml_float(self.yaml.ScalarNode(tag, value))
        except Exception:
            raise _refuse("manifest_yaml_unsupported", self.where(), "not_number",
                          {"number": D.excerpt(value)}) from None

    def integer(self, value: str) -> int:
        plain = value    # digit separators (1_000) are YAML 1.1 only: a string in YAML 1.2 and JSON
        if not _DECIMAL.fullmatch(plain):
            raise _refuse("manifest_yaml_unsupported", self.where(), "yaml11_number", {"number": D.excerpt(value)})
        if len(plain.lstrip("+-")) > MAX_INT_DIGITS:
            raise _refuse("manifest_invalid", "(number)", "number_range", {"number": D.excerpt(value)})
        return int(plain)

    def start(self, ev: Any) -> None:
        is_map = isinstance(ev, self.events.MappingStartEvent)
        if ev.tag not in _YAML_COLLECTION_TAGS["map" if is_map else "seq"]:
            raise _refuse("manifest_yaml_unsupported", self.where(), "collection_tag", {"tag": D.excerpt(ev.tag)})
        if self.wants_key():
            raise _refuse("manifest_yaml_unsupported", "(key)", "collection_key")
        self.count(1, self.where())
        if len(self.stack) >= MAX_DEPTH:
            raise _refuse("manifest_too_deep", self.where(), "levels", limit=MAX_DEPTH)
        container: Union[Dict[str, Any], List[Any]] = {} if is_map else []
        self.stack.append(_Frame(container, ev.anchor))

    def end(self, ev: Any) -> None:
        frame = self.stack.pop()
        if frame.anchor:
            self.anchors[frame.anchor] = (frame.container, frame.size)
        self.attach(frame.container, frame.size)


# ------------------------------------------------------------------ bounded plain copy

def _plain(data: Any, strings: bool = True) -> Any:
    """A plain copy (dict/list/str/int/float/bool/None) of decoded data, with every structural
    limit checked while walking (nodes counted on every visit, so shared references count as
    often as they appear; depth capped, so self-references stop). Field names for messages are
    only built when something is refused."""
    budget = [MAX_NODES]

    def name(path: Tuple[Union[str, int], ...]) -> str:
        field = "(manifest)"
        for part in path:
            field = "%s[%d]" % (field, part) if isinstance(part, int) else _sub(field, part)
        return field

    def walk(value: Any, depth: int, path: Tuple[Union[str, int], ...]) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise _refuse("manifest_too_many_nodes", name(path), "nodes", limit=MAX_NODES)
        kind = type(value)
        if kind is str or isinstance(value, str):
            if strings and len(value) > MAX_STRING:
                raise _refuse("manifest_string_too_long", name(path), "length", {"length": len(value)},
                              limit=MAX_STRING)
            return value if kind is str else str.__str__(value)
        if value is None or kind is bool or kind is float:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) >= 2 ** 63:
                raise _refuse("manifest_invalid", name(path), "path_number_range")
            return int(value)
        if isinstance(value, float):
            return float(value)
        if depth >= MAX_DEPTH:
            raise _refuse("manifest_too_deep", name(path), "path_levels", limit=MAX_DEPTH)
        if isinstance(value, dict):
            if len(value) > budget[0]:
                raise _refuse("manifest_too_many_nodes", name(path), "nodes", limit=MAX_NODES)
            out = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise _refuse("manifest_invalid", name(path), "path_key", {"key": D.excerpt(key)})
                key = walk(key, depth + 1, path)
                out[key] = walk(item, depth + 1, path + (key,))
            return out
        if isinstance(value, (list, tuple)):
            if len(value) > budget[0]:
                raise _refuse("manifest_too_many_nodes", name(path), "nodes", limit=MAX_NODES)
            return [walk(item, depth + 1, path + (i,)) for i, item in enumerate(value)]
        raise _refuse("manifest_invalid", name(path), "not_data", {"type": type(value).__name__})
    return walk(data, 0, ())


def _sub(field: str, key: str) -> str:
    key = key if _NAME.fullmatch(key) else D.excerpt(key, 40)
    return key if field == "(manifest)" else "%s.%s" % (field, key)


# ------------------------------------------------------------------ grammar

def _check_scope_text(field: str, scope: str, errors: List[Diag]) -> bool:
    """Lexical checks of a fixed scope (absolute, normalised, no control characters)."""
    if has_control(scope):
        errors.append(_err("scope_nul", field, scope, "NUL, control or format characters in a path (R-CAP-FS)"))
        return False
    if not scope.startswith("/"):
        errors.append(_err("scope_relative", field, scope,
                           "a fixed scope must be an absolute path or glob, or arg:<name>; no '~' or "
                           "variable expansion (R-CAP-FS)"))
        return False
    parts = scope.split("/")[1:]
    if scope != "/" and (any(p in (".", "..", "") for p in parts)):
        errors.append(_err("scope_not_normalized", field, scope,
                           "'.', '..', '//' and a trailing '/' are not allowed in a scope; write the normalised "
                           "path (R-ARG-1)"))
        return False
    return True


def glob_root(scope: str) -> str:
    """The longest glob-free leading path of a scope: '/srv/a*/b' -> '/srv' (R-CAP-FS)."""
    parts = scope.split("/")
    keep = []
    for part in parts[1:]:
        if any(ch in part for ch in GLOB_CHARS):
            break
        keep.append(part)
    root = "/" + "/".join(keep)
    return root.rstrip("/") or "/"


MAX_GLOB_ALTERNATIVES = 64         # brace expansion of one 'within' scope
MAX_GLOB_STEPS = 1 << 16           # component and character steps matching 'within' patterns, per render


def _expand_braces(text: str, budget: List[int]) -> Optional[List[str]]:
    """Brace alternatives of ``text`` ('{a,b}c' -> ['ac', 'bc']), nested braces included; None
    when there are more than the budget allows. An unbalanced '{' stays literal."""
    start = text.find("{")
    while start != -1:
        depth, parts, last = 0, [], start + 1
        for i in range(start, len(text)):
            ch = text[i]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    parts.append(text[last:i])
                    break
            elif ch == "," and depth == 1:
                parts.append(text[last:i])
                last = i + 1
        else:
            return [text]                  # unbalanced: literal
        if len(parts) < 2:
            start = text.find("{", start + 1)
            continue
        out = []
        for part in parts:
            alternatives = _expand_braces(text[:start] + part + text[i + 1:], budget)
            if alternatives is None:
                return None
            for alt in alternatives:
                out.append(alt)
                budget[0] -= 1
                if budget[0] < 0:
                    return None
        return out
    return [text]


class _Token(NamedTuple):
    """One token of a pattern component: '*', '?', '=' (a literal ``char``) or '[' (a set of
    ``ranges``, ``negate``d)."""
    kind: str
    char: str = ""
    negate: bool = False
    ranges: Tuple[Tuple[str, str], ...] = ()


_STAR, _ANY = _Token("*"), _Token("?")       # the only '*' and '?' tokens: compared by identity


def _tokens(pat: str) -> List[_Token]:
    """One pattern component as tokens: '*', '?', a set (chars, ranges, negated) or a literal char
    (fnmatch's syntax: '[!...]' negates, ']' first in a set is literal, an unclosed '[' is literal)."""
    out: List[_Token] = []
    i = 0
    while i < len(pat):
        ch = pat[i]
        if ch == "*":
            if not out or out[-1] is not _STAR:
                out.append(_STAR)
        elif ch == "?":
            out.append(_ANY)
        elif ch == "[":
            end, token = _set_token(pat, i)
            out.append(token)
            i = end
        else:
            out.append(_Token("=", ch))
        i += 1
    return out


def _set_token(pat: str, i: int) -> Tuple[int, _Token]:
    """The set that opens at pat[i] == '[': (index of its ']', token); an unclosed '[' is literal."""
    j = i + 1
    negate = j < len(pat) and pat[j] == "!"
    j += negate
    if j < len(pat) and pat[j] == "]":
        j += 1
    end = pat.find("]", j)
    if end == -1:
        return i, _Token("=", "[")
    body, items, k = pat[i + 1 + negate:end], [], 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            items.append((body[k], body[k + 2]))
            k += 3
        else:
            items.append((body[k], body[k]))
            k += 1
    return end, _Token("[", negate=negate, ranges=tuple(items))


def _char_ok(token: _Token, ch: str) -> bool:
    if token is _ANY:
        return True
    if token.kind == "=":
        return token.char == ch
    inside = any(lo <= ch <= hi for lo, hi in token.ranges)
    return inside != token.negate


def _component_match(text: str, pat: str, steps: List[int]) -> Optional[bool]:
    """fnmatch.fnmatchcase(text, pat) without regular expressions: the two-pointer wildcard match,
    O(len(text) * len(pat)) at worst, every step counted in ``steps`` (None when it runs out), so
    that no pattern costs more than the budget on any Python (3.8's fnmatch can backtrack
    exponentially)."""
    tokens = _tokens(pat)
    ti = pi = 0
    star, mark = -1, 0
    while ti < len(text):
        steps[0] -= 1
        if steps[0] < 0:
            return None
        if pi < len(tokens) and tokens[pi] is not _STAR and _char_ok(tokens[pi], text[ti]):
            ti += 1
            pi += 1
        elif pi < len(tokens) and tokens[pi] is _STAR:
            star, mark = pi, ti
            pi += 1
        elif star != -1:
            pi, mark = star + 1, mark + 1
            ti = mark
        else:
            return False
    while pi < len(tokens) and tokens[pi] is _STAR:
        pi += 1
    return pi == len(tokens)


def _closure(states: List[bool], pat: List[str]) -> List[bool]:
    """'**' may match no component: reaching it reaches what follows it."""
    for k in range(len(pat)):
        if states[k] and pat[k] == "**":
            states[k + 1] = True
    return states


def glob_covers(parts: Sequence[str], pattern: Sequence[str], steps: Optional[List[int]] = None) -> Optional[bool]:
    """True if the path components ``parts`` (below a scope's glob root) are at or below a path that
    ``pattern`` (the scope's components below that root) matches: '**' is any number of components
    (none included), '*' '?' '[...]' match within one component, '{a,b}' alternatives. None when the
    pattern is too complex to decide within the documented bounds (the caller fails closed)."""
    alternatives = _expand_braces("/".join(pattern), [MAX_GLOB_ALTERNATIVES])
    if alternatives is None:
        return None
    steps = [MAX_GLOB_STEPS] if steps is None else steps       # a caller's budget spans several calls
    for alt in alternatives:
        pat = alt.split("/")
        width = len(pat)
        reach = _closure([True] + [False] * width, pat)
        for part in [None] + list(parts):
            if part is not None:
                steps[0] -= width
                if steps[0] < 0:
                    return None
                new = [False] * (width + 1)
                for k in range(width):
                    if not reach[k]:
                        continue
                    if pat[k] == "**":
                        new[k] = True               # '**' takes this component and may take more
                    else:
                        matched = _component_match(part, pat[k], steps)
                        if matched is None:
                            return None
                        new[k + 1] = matched
                reach = _closure(new, pat)
            if reach[width]:
                return True                         # a matched path; what follows is below it
            if not any(reach):
                break
    return False


class Parsed(NamedTuple):
    """parse_capability's answer: the capability, or None and the refusals."""
    capability: Optional[Capability]
    errors: List[Diag]


def parse_capability(text: Any, field: str = "capabilities") -> Parsed:
    """Parse one capability string, matched whole. Returns Parsed(Capability or None, [errors])."""
    if not isinstance(text, str):
        return Parsed(None, [_err("manifest_invalid", field, text, "a capability is a string (%s)" % _FORMS_TEXT)])
    if len(text) > MAX_CAPABILITY_LENGTH:
        return Parsed(None, [D.make("capability_too_long", field=field, value=D.excerpt(text),
                                    limit=MAX_CAPABILITY_LENGTH, wording="length", fill={"length": len(text)})])
    if has_control(text):
        code = "scope_nul" if text.startswith(Kind.FS + ":") else "capability_unknown"
        return Parsed(None, [_err(code, field, text, "NUL, control or format characters are never part of a "
                                                     "capability (R-CAP-FS)")])
    fixed = _FIXED_CAPS.get(text)
    if fixed is not None:
        return Parsed(Capability(text, *fixed), [])
    head, _sep, rest = text.partition(":")
    bare = _BARE_FORMS.get(head)
    if bare is not None and bare.target.fullmatch(rest):
        return Parsed(Capability(text, bare.kind, bare.modes[0], rest), [])
    mode, sep2, target = rest.partition(":")
    if head == Kind.FS and mode in _FS_MODES and sep2 and target:
        return _parse_fs(text, field, mode, target)
    form = _MODE_FORMS.get(head)
    if form is not None and mode in form.modes and form.target.fullmatch(target):
        return Parsed(Capability(text, form.kind, mode, target), [])
    return Parsed(None, [_err("capability_unknown", field, text, "accepted forms: %s" % _FORMS_TEXT)])


def _parse_fs(text: str, field: str, mode: str, target: str) -> Parsed:
    """fs:<mode>:<scope>, the scope a fixed path or glob, or arg:<name> (a declared argument)."""
    if target.startswith("arg:"):
        name = target[4:]
        if not _NAME.fullmatch(name):
            return Parsed(None, [_err("capability_unknown", field, text,
                                      "arg:<name> needs an argument name [a-z0-9_.-]")])
        return Parsed(Capability(text, Kind.FS, mode, None, arg=name), [])
    errors: List[Diag] = []
    if not _check_scope_text(field, target, errors):
        return Parsed(None, errors)
    return Parsed(Capability(text, Kind.FS, mode, target), [])


def _relative_file(value: Any) -> bool:
    """A path relative to the executor's folder: grammar-checked components, no '.', '..', '//'."""
    if not isinstance(value, str) or not value or len(value) > MAX_STRING:
        return False
    return all(_FILE_PART.fullmatch(part) for part in value.split("/"))


def _limit(code: str, field: str, count: int, limit: int) -> Diag:
    result: Diag = D.make(code, field=field, limit=limit, wording="count", fill={"count": count})
    return result


def _precheck(data: Dict[Any, Any]) -> None:
    """Counts that are refused before anything is walked or parsed (each with its own code)."""
    caps = data.get("capabilities")
    if isinstance(caps, (list, tuple)):
        if len(caps) > MAX_CAPABILITIES:
            raise _Refuse(_limit("manifest_too_many_capabilities", "capabilities", len(caps), MAX_CAPABILITIES))
        for index, text in enumerate(caps):
            if isinstance(text, str) and len(text) > MAX_CAPABILITY_LENGTH:
                raise _Refuse(parse_capability(text, "capabilities[%d]" % index).errors[0])
    args = data.get("arguments")
    if isinstance(args, (dict, list, tuple)) and len(args) > MAX_ARGUMENTS:
        raise _Refuse(_limit("manifest_too_many_arguments", "arguments", len(args), MAX_ARGUMENTS))
    if isinstance(args, dict):
        for name, spec in args.items():
            within = spec.get("within") if isinstance(spec, dict) else None
            if isinstance(within, (list, tuple)) and len(within) > MAX_SCOPES:
                raise _Refuse(_limit("manifest_too_many_scopes", "arguments.%s.within" % D.excerpt(name, 40),
                                     len(within), MAX_SCOPES))
    files = data.get("files")
    if isinstance(files, (list, tuple)) and len(files) > MAX_FILES:
        raise _Refuse(_limit("manifest_too_many_files", "files", len(files), MAX_FILES))


class _Header(NamedTuple):
    """The scalar fields of a manifest, each None where refused or absent."""
    name: Any
    origin: Any
    revision: Revision
    digest: Optional[str]
    owner: Optional[str]
    entrypoint: Optional[str]


def from_dict(data: Any, source: str = "<inline>") -> Manifest:
    """Validate decoded manifest data (bounded, exact). Raises ManifestError with the problems found."""
    if not isinstance(data, dict):
        raise ManifestError([_err("manifest_invalid", "(manifest)", type(data).__name__,
                                  "a manifest is a mapping with name, origin, capabilities")])
    try:
        _precheck(data)
        data = _plain(data)
    except _Refuse as exc:
        raise ManifestError([exc.diag]) from None
    errors: List[Diag] = []
    for key in sorted(set(data) - set(_FIELDS)):
        errors.append(_err("manifest_invalid", _sub("(manifest)", key), key,
                           "unknown field; accepted: %s" % ", ".join(_FIELDS)))
    header = _header(data, errors)
    caps = _capabilities(data.get("capabilities", []), errors)
    arguments = _arguments(data.get("arguments"), errors)
    _check_arg_scopes(caps, arguments, errors)
    inverse = _inverse(data.get("inverse"), errors)
    files = _files(data.get("files"), errors)
    if errors:
        raise ManifestError(_capped(errors))
    return Manifest(name=header.name, origin=header.origin, revision=header.revision, digest=header.digest,
                    owner=header.owner, entrypoint=header.entrypoint, capabilities=caps, arguments=arguments,
                    inverse=inverse, files=files, source=source)


def _capped(errors: List[Diag]) -> List[Diag]:
    """At most MAX_DIAGNOSTICS problems; the rest are counted in the last one's message."""
    if len(errors) <= MAX_DIAGNOSTICS:
        return errors
    more = len(errors) - MAX_DIAGNOSTICS
    errors = errors[:MAX_DIAGNOSTICS]
    errors[-1] = D.amend(errors[-1], "more_problems", count=more)
    return errors


def _header(data: Dict[str, Any], errors: List[Diag]) -> _Header:
    """name, origin, revision, digest, owner, entrypoint: each matched whole by its grammar."""
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        errors.append(_err("manifest_invalid", "name", name,
                           "required; lower-case letters, digits, '_', '.', '-' (max 128), matched whole"))
    origin = data.get("origin")
    if isinstance(origin, str) and has_control(origin):
        errors.append(_err("manifest_control_character", "origin", origin, "no control or format characters"))
    elif not isinstance(origin, str) or not origin or origin != origin.strip():
        errors.append(_err("manifest_invalid", "origin", origin, "required; a publisher string without "
                                                                 "surrounding spaces"))
    revision = data.get("revision")
    if revision is not None and not (
            (isinstance(revision, int) and not isinstance(revision, bool) and 0 <= revision < 2 ** 63)
            or (isinstance(revision, str) and _REVISION.fullmatch(revision))):
        code = "manifest_control_character" if isinstance(revision, str) and has_control(revision) \
            else "manifest_invalid"
        errors.append(_err(code, "revision", revision, "a non-negative integer (not a boolean) or a version "
                                                       "string [A-Za-z0-9_.+:~-]"))
    digest = _opt(data, "digest", errors, _DIGEST, "sha256:<64 lower-case hex digits>")
    owner = _opt(data, "owner", errors, _OWNER, "a user name [a-z_][a-z0-9_.-]")
    entrypoint = data.get("entrypoint")
    if entrypoint is not None and not _relative_file(entrypoint):
        errors.append(_err("manifest_invalid", "entrypoint", entrypoint,
                           "a path relative to the executor's folder ([A-Za-z0-9_.@+-] components, no '.', "
                           "'..', '//' or leading '/')"))
        entrypoint = None
    return _Header(name, origin, revision, digest, owner, entrypoint)


def _capabilities(raw_caps: Any, errors: List[Diag]) -> List[Capability]:
    """The parsed capabilities, in order, each text once."""
    if not isinstance(raw_caps, list):
        errors.append(_err("manifest_invalid", "capabilities", raw_caps, "a list of capability strings"))
        return []
    caps, seen = [], set()
    for index, text in enumerate(raw_caps):
        cap, errs = parse_capability(text, "capabilities[%d]" % index)
        errors.extend(errs)
        if cap is not None and cap.text not in seen:
            seen.add(cap.text)
            caps.append(cap)
    return caps


def _check_arg_scopes(caps: List[Capability], arguments: Dict[str, ArgumentSpec], errors: List[Diag]) -> None:
    """R-ARG-1: an fs:*:arg:<name> capability names a declared argument with 'within' scopes."""
    for cap in caps:
        if cap.kind != Kind.FS or cap.arg is None:
            continue
        if cap.arg not in arguments:
            errors.append(_err("arg_undeclared", "capabilities", cap.text,
                               "argument %s is not declared under 'arguments' (R-ARG-1)" % D.excerpt(cap.arg)))
        elif not arguments[cap.arg]["within"]:
            errors.append(_err("arg_scope_unbounded", "arguments.%s.within" % cap.arg, [],
                               "an argument used as a path scope must declare 'within' scopes it "
                               "may narrow (R-ARG-1: narrow, never widen)"))


def _inverse(inverse: Any, errors: List[Diag]) -> Optional[Dict[str, str]]:
    if inverse is not None and not (isinstance(inverse, dict) and set(inverse) == {"model"}
                                    and isinstance(inverse["model"], str) and _NAME.fullmatch(inverse["model"])):
        errors.append(_err("manifest_invalid", "inverse", inverse, "a mapping with only a 'model' name"))
        return None
    return inverse


def _files(files: Any, errors: List[Diag]) -> Optional[List[str]]:
    if files is not None and not (isinstance(files, list) and all(_relative_file(f) for f in files)
                                  and len(set(files)) == len(files)):
        errors.append(_err("manifest_invalid", "files", files, "a list of distinct relative file names"))
        return None
    return files


def _opt(data: Dict[str, Any], key: str, errors: List[Diag], pattern: re.Pattern[str], expected: str) -> Optional[str]:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.fullmatch(value):
        code = "manifest_control_character" if isinstance(value, str) and has_control(value) else "manifest_invalid"
        errors.append(_err(code, key, value, expected))
        return None
    return value


def _arguments(raw_args: Any, errors: List[Diag]) -> Dict[str, ArgumentSpec]:
    arguments: Dict[str, ArgumentSpec] = {}
    if raw_args is None:
        return arguments
    if isinstance(raw_args, list):  # a bare list of names
        if not all(isinstance(a, str) for a in raw_args) or len(set(raw_args)) != len(raw_args):
            errors.append(_err("manifest_invalid", "arguments", raw_args, "a list of distinct argument names"))
            return arguments
        raw_args = dict((a, None) for a in raw_args)
    if not isinstance(raw_args, dict):
        errors.append(_err("manifest_invalid", "arguments", raw_args, "a mapping name -> {kind, within}"))
        return arguments
    for arg_name, spec in raw_args.items():
        parsed = _argument(arg_name, spec, errors)
        if parsed is not None:
            arguments[arg_name] = parsed
    return arguments


def _argument(arg_name: str, spec: Any, errors: List[Diag]) -> Optional[ArgumentSpec]:
    """One declared argument {kind, within}, or None after recording why it is refused."""
    field = _sub("arguments", arg_name)
    if not _NAME.fullmatch(arg_name):
        errors.append(_err("manifest_invalid", field, arg_name, "an argument name [a-z0-9_.-], matched whole"))
        return None
    spec = {} if spec is None else spec
    if not isinstance(spec, dict) or set(spec) - set(_ARG_KEYS):
        errors.append(_err("manifest_invalid", field, spec, "a mapping with only 'kind' and 'within'"))
        return None
    kind = spec.get("kind", "path")
    if not isinstance(kind, str) or not _NAME.fullmatch(kind):
        errors.append(_err("manifest_invalid", field + ".kind", kind, "a kind name such as path"))
        return None
    within = spec.get("within", [])
    if isinstance(within, str):
        within = [within]
    if not isinstance(within, list):
        errors.append(_err("manifest_invalid", field + ".within", within, "a list of absolute scopes"))
        return None
    clean = []
    for i, scope in enumerate(within):
        sfield = "%s.within[%d]" % (field, i)
        if not isinstance(scope, str):
            errors.append(_err("manifest_invalid", sfield, scope, "an absolute path or glob"))
        elif _check_scope_text(sfield, scope, errors):
            clean.append(scope)
    return {"kind": kind, "within": clean}


# ------------------------------------------------------------------ the one entry

def refusal_record(diagnostics: List[Diag]) -> Dict[str, Dict[str, Any]]:
    """What a controller-side face hands to the host when loading was refused (see coerce)."""
    first = [d for d in diagnostics if d.get("severity") == D.ERROR][0]
    return {REFUSAL_KEY: {"code": first["code"], "message": first["message"][:400]}}


def _from_record(record: Dict[str, Any]) -> List[Diag]:
    body = record.get(REFUSAL_KEY)
    code = body.get("code") if isinstance(body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    if code not in _LOAD_CODES or not isinstance(message, str):
        return [_err("manifest_invalid", REFUSAL_KEY, body, "a refusal record made by this toolkit")]
    return [D.make(code, wording="relayed", fill={"relayed": D.excerpt(message, 400)[1:-1]}, field="(file)")]


def coerce(source: Any, name: str = "<inline>") -> Manifest:
    """Any manifest source -> a validated Manifest. The only way a manifest enters the toolkit.

    ``source``: a Manifest (returned as is), a FileSource (read here, bounded), bytes or text
    (JSON or YAML), or decoded data (a mapping, e.g. from Ansible). Raises ManifestError."""
    if isinstance(source, Manifest):
        return source
    if isinstance(source, FileSource):
        name = source.path
        source = read_file(source.path)
    if isinstance(source, (bytes, bytearray, str)):
        source = decode(source, name)
    if isinstance(source, dict) and REFUSAL_KEY in source and len(source) == 1:
        raise ManifestError(_from_record(source))
    return from_dict(source, source=name)


def transport(source: Any) -> Any:
    """For a face that loads on one machine and renders on another (a filter on the controller):
    the manifest as decoded data the host's coerce() accepts (so the host needs no YAML library),
    or the refusal record that makes the host refuse with the same code. Loading uses the same
    reader and decoder as coerce(); validation happens on the host. Never raises."""
    try:
        if isinstance(source, FileSource):
            data = decode(read_file(source.path), source.path)
        elif isinstance(source, (bytes, bytearray, str)):
            data = decode(source)
        else:
            return source
        if not isinstance(data, dict):
            from_dict(data)          # refuses a document that is not a mapping, with its message
        return data
    except ManifestError as exc:
        return refusal_record(exc.diagnostics)


def load(path: str) -> Manifest:
    return coerce(FileSource(path))


def loads(data: Any, source: str = "<inline>") -> Manifest:
    """Parse manifest bytes/str (JSON or YAML). Raises ManifestError."""
    return coerce(data if isinstance(data, (bytes, bytearray, str)) else data, source)
