# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading and decoding a manifest, bounded and exact: the file (size first), UTF-8, JSON or a YAML
subset composed node by node within the limits (no tags, aliases counted expanded), then a bounded plain
copy of the data.

Pure Python, no Ansible imports (PyYAML is optional: JSON manifests need nothing).
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import re
import shlex
from typing import Any, Dict, List, Optional, Tuple, Union

from ..base import diagnostics, safe_read
from . import model


# ------------------------------------------------------------------ reading and decoding
def read_file(path: Any) -> bytes:
    """The one reader of manifest files (and waiver files): base/safe_read.read_once, at most MAX_MANIFEST_BYTES: no
    link followed below a folder someone other than root can write, a FIFO refused at once, a file that folder's
    owner could not read refused, read once and refused when it changed while read.

    Returns bytes; raises ManifestError (manifest_missing / manifest_parse_error / manifest_too_large /
    manifest_link_refused / manifest_fifo / manifest_unreadable_by_owner / manifest_changed_while_read)."""
    field = "(file)"
    where = diagnostics.excerpt(path)
    if not isinstance(path, str) or not path or "\0" in path:
        raise model.ManifestError([diagnostics.make("manifest_parse_error", wording="not_path", fill={"where": where},
                                                    field=field)])
    try:
        return safe_read.read_once(path, model.MAX_MANIFEST_BYTES)
    except safe_read.Refused as refused:
        raise model.ManifestError([refusal(refused, where)]) from None


_REFUSAL_CODES = {safe_read.LINK: "manifest_link_refused", safe_read.FIFO: "manifest_fifo",
                  safe_read.OWNER_CANNOT_READ: "manifest_unreadable_by_owner",
                  safe_read.CHANGED: "manifest_changed_while_read"}


def refusal(refused: safe_read.Refused, where: str) -> diagnostics.Diagnostic:
    """The diagnostic of a manifest file safe_read refused: its own code, the path (quoted for the shell, so the
    remediation runs as pasted), its owner and the link target's owner."""
    diag: diagnostics.Diagnostic
    if refused.reason == safe_read.TOO_LARGE:
        return _too_large(where, refused.size)
    code = _REFUSAL_CODES.get(refused.reason)
    if code is not None:
        diag = diagnostics.make(code, field="(file)", file=shlex.quote(refused.path), owner=refused.owner,
                                target_owner=refused.target_owner or "an owner it does not say",
                                fill={"where": where, "kind": "a FIFO (named pipe)"})
        return diag
    if refused.reason == safe_read.NOT_REGULAR:
        diag = diagnostics.make("manifest_parse_error", field="(file)", value=where, wording="not_regular",
                                fill={"where": where})
        return diag
    diag = diagnostics.make("manifest_missing" if refused.reason == safe_read.MISSING else "manifest_parse_error",
                            wording="unreadable", fill={"where": where, "error": refused.error}, field="(file)",
                            value=where)
    return diag


def _too_large(where: str, size: int) -> diagnostics.Diagnostic:
    diag: diagnostics.Diagnostic = diagnostics.make("manifest_too_large", field="(file)", value=where,
                                                    limit=model.MAX_MANIFEST_BYTES,
                                                    wording="size", fill={"where": where, "size": size})
    return diag


class Loaded(object):
    """load(): the decoded data, and whether it was walked already: JSON is copied plain as it is decoded
    (``walked``), with the first string longer than model.MAX_STRING in walk order noted (``long_string``: the
    refusal manifest.from_dict raises after its count checks, where its own walk would have found it), so
    the validation does not walk it again. YAML's composer builds the data; from_dict walks it."""

    __slots__ = ("data", "walked", "long_string")

    def __init__(self, data: Any, walked: bool, long_string: Optional[diagnostics.Diagnostic] = None) -> None:
        self.data = data
        self.walked = walked
        self.long_string = long_string


_NAME_LINE = re.compile(rb"name:[ \t]*['\"]?([a-z0-9_][a-z0-9_.-]{0,127})['\"]?[ \t]*(?:#[^\n]*)?\r?\n?\Z")


def readable_name(data: Any) -> Optional[str]:
    """The executor name of a manifest that may not load (a label for its refusal, never a decision): the value
    of a top-level ``name:`` line, plain or quoted, matching model.NAME whole; None when there is none or two."""
    if not isinstance(data, (bytes, bytearray)):
        return None
    found = [m.group(1) for m in (_NAME_LINE.match(line) for line in bytes(data[:model.MAX_MANIFEST_BYTES])
                                  .splitlines(True)) if m is not None]
    return found[0].decode("ascii") if len(found) == 1 else None


def decode(data: Any, source: Any = "<inline>") -> Any:
    """Manifest bytes/str (JSON or YAML) -> plain decoded data, bounded. Raises ManifestError."""
    return load(data, source).data


def load(data: Any, source: Any = "<inline>") -> Loaded:
    """decode(), saying whether the data was walked (Loaded). Raises ManifestError."""
    where = diagnostics.excerpt(source)
    if isinstance(data, (bytes, bytearray)):
        if len(data) > model.MAX_MANIFEST_BYTES:
            raise model.ManifestError([_too_large(where, len(data))])
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise model.ManifestError([diagnostics.make(
                "manifest_not_utf8", field="(file)", value=where,
                wording="byte", fill={"where": where, "byte": exc.start, "reason": exc.reason})]) from None
    elif isinstance(data, str):
        if len(data) > model.MAX_MANIFEST_BYTES:   # characters >= bytes/4: refuse before encoding anything
            raise model.ManifestError([_too_large(where, len(data))])
        text = str.__str__(data)
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise model.ManifestError([diagnostics.make("manifest_not_utf8", field="(file)", value=where,
                                                        wording="surrogates", fill={"where": where})]) from None
        if size > model.MAX_MANIFEST_BYTES:
            raise model.ManifestError([_too_large(where, size)])
    else:
        raise model.ManifestError([diagnostics.make("manifest_parse_error", field="(file)", value=where,
                                                    wording="not_text", fill={"where": where,
                                                                              "type": type(data).__name__})])
    if "\0" in text:
        raise model.ManifestError([diagnostics.make("manifest_not_utf8", wording="nul", fill={"where": where},
                                                    field="(file)", value=where)])
    try:
        if text.lstrip()[:1] in ("{", "["):
            try:
                return _json_load(text)
            except _NotJson:
                pass                       # YAML flow style ({'a': 1}): the YAML reader decides
        return Loaded(_yaml_load(text), False)
    except model.Refuse as exc:
        raise model.ManifestError([diagnostics.amend(exc.diag, "seen_in", where=where)]) from None


class _NotJson(Exception):
    pass


def _json_pairs(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out = {}
    for key, value in pairs:
        if key in out:
            raise model.refuse("manifest_duplicate_key", key, "json_key", {"key": diagnostics.excerpt(key)})
        out[key] = value
    return out


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > model.MAX_INT_DIGITS:
        raise model.refuse("manifest_invalid", "(number)", "number_range", {"number": diagnostics.excerpt(text)})
    return int(text)


def _json_constant(text: str) -> Any:
    raise _NotJson()


def _json_load(text: str) -> Loaded:
    """JSON with duplicate keys refused and the same structural limits as YAML (nodes, depth)."""
    long_string: List[diagnostics.Diagnostic] = []          # lengths: refused in from_dict, after its count checks
    try:
        data = plain(json.loads(text, object_pairs_hook=_json_pairs, parse_int=_json_int,
                                parse_constant=_json_constant), strings=False, long_string=long_string)
        return Loaded(data, True, long_string[0] if long_string else None)
    except RecursionError:
        raise model.refuse("manifest_too_deep", "(document)", "interpreter", limit=model.MAX_DEPTH) from None
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
        import yaml  # here, not at the top: an optional dependency, only for manifests given as YAML text
    except ImportError:
        raise model.refuse("manifest_parse_error", "(file)", "no_yaml") from None
    loader = (getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader)(text)
    try:
        return _Composer(yaml).compose(loader)
    except model.Refuse:
        _syntax_first(yaml, loader)
        raise
    except yaml.YAMLError as exc:
        raise _syntax_error(exc) from None
    except RecursionError:
        raise model.refuse("manifest_too_deep", "(document)", "yaml", limit=model.MAX_DEPTH) from None
    finally:
        try:
            loader.dispose()
        except Exception:
            pass


def _syntax_error(exc: Any) -> model.Refuse:
    problem = getattr(exc, "problem", None) or str(exc).split("\n", maxsplit=1)[0]
    mark = getattr(exc, "problem_mark", None)
    at = " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark is not None else ""
    return model.refuse("manifest_parse_error", "(file)", "syntax",
                        {"problem": diagnostics.excerpt(str(problem), 120)[1:-1], "at": at})


def _syntax_first(yaml: Any, loader: Any) -> None:
    """A document that is not valid YAML is refused as such (manifest_parse_error with its line and column), not
    by what composing it saw before the parser reached the error (an unclosed [ list reads the next line into
    its last item: capability_whitespace). The rest of the events are only parsed (the text is bounded), never
    composed."""
    try:
        while loader.check_event():
            loader.get_event()
    except yaml.YAMLError as exc:
        raise _syntax_error(exc) from None


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
        if self.nodes > model.MAX_NODES:
            raise model.refuse("manifest_too_many_nodes", field, "yaml", limit=model.MAX_NODES)

    def where(self) -> str:
        if not self.stack:
            return "(document)"
        top = self.stack[-1]
        if top.is_map and top.key is not None:
            return "mapping value %s" % diagnostics.excerpt(top.key)
        return "(in a collection)"

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
            raise model.refuse("manifest_yaml_unsupported", "(document)", "documents")

    def alias(self, ev: Any) -> None:
        if self.wants_key():
            raise model.refuse("manifest_yaml_unsupported", self.where(), "alias_key")
        if ev.anchor not in self.anchors:
            if any(f.anchor == ev.anchor for f in self.stack):
                raise model.refuse("manifest_too_many_nodes", self.where(), "self_alias",
                                   {"anchor": diagnostics.excerpt(ev.anchor)[1:-1]}, limit=model.MAX_NODES)
            raise model.refuse("manifest_parse_error", self.where(), "alias",
                               {"anchor": diagnostics.excerpt(ev.anchor)[1:-1]})
        value, size = self.anchors[ev.anchor]
        self.count(size, self.where())
        self.attach(value, size)

    def scalar(self, ev: Any) -> None:
        self.count(1, self.where())      # string lengths are checked on the result, as for mappings
        value = self.scalar_value(ev)
        if self.wants_key():
            self.key(ev, value)
            return
        if isinstance(value, str) and self.in_capabilities():
            self.whole_capability(ev, value)
        if ev.anchor:
            self.anchors[ev.anchor] = (value, 1)
        self.attach(value, 1)

    def in_capabilities(self) -> bool:
        """The next node is an item of the manifest's capabilities list."""
        stack = self.stack
        return len(stack) == 2 and stack[0].is_map and stack[0].key == "capabilities" and not stack[1].is_map

    def whole_capability(self, ev: Any, value: str) -> None:
        """A capability with whitespace inside is refused here, where its lines are known (capability_whitespace:
        the lines it spans; the grammar refuses the same text without them, manifest.parse_capability)."""
        wording = model.whitespace_wording(value)
        if wording is None:
            return
        first, last = ev.start_mark.line + 1, ev.end_mark.line + 1
        at = " (line %d)" % first if last <= first else " (lines %d-%d)" % (first, last)
        raise model.refuse("capability_whitespace", "capabilities[%d]" % len(self.stack[1].container), wording,
                           {"at": at}, value=diagnostics.excerpt(value), line=first)

    def key(self, ev: Any, value: Any) -> None:
        top = self.stack[-1]
        if not isinstance(value, str):
            raise model.refuse("manifest_yaml_unsupported", "(key)", "key_type", {"key": diagnostics.excerpt(ev.value)})
        if value == "<<" and ev.implicit[0]:
            raise model.refuse("manifest_yaml_unsupported", "(key)", "merge")
        if value in top.container:
            raise model.refuse("manifest_duplicate_key", value, "yaml_key", {"key": diagnostics.excerpt(value)})
        if ev.anchor:
            raise model.refuse("manifest_yaml_unsupported", "(key)", "key_anchor")
        top.key = value
        top.size += 1

    def scalar_value(self, ev: Any) -> Any:
        tag = ev.tag
        if tag not in (None, "!"):
            raise model.refuse("manifest_yaml_unsupported", self.where(), "explicit_tag",
                               {"tag": diagnostics.excerpt(tag)})
        tag = self.resolver.resolve(self.yaml.ScalarNode, ev.value, ev.implicit) if tag is None else _YAML_STR
        if tag not in _YAML_PLAIN_TAGS:
            raise model.refuse("manifest_yaml_unsupported", self.where(), "tag", {"tag": diagnostics.excerpt(tag)})
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
            raise model.refuse("manifest_yaml_unsupported", self.where(), "not_number",
                               {"number": diagnostics.excerpt(value)}) from None

    def integer(self, value: str) -> int:
        plain = value    # digit separators (1_000) are YAML 1.1 only: a string in YAML 1.2 and JSON
        if not _DECIMAL.fullmatch(plain):
            raise model.refuse("manifest_yaml_unsupported", self.where(), "yaml11_number",
                               {"number": diagnostics.excerpt(value)})
        if len(plain.lstrip("+-")) > model.MAX_INT_DIGITS:
            raise model.refuse("manifest_invalid", "(number)", "number_range", {"number": diagnostics.excerpt(value)})
        return int(plain)

    def start(self, ev: Any) -> None:
        is_map = isinstance(ev, self.events.MappingStartEvent)
        if ev.tag not in _YAML_COLLECTION_TAGS["map" if is_map else "seq"]:
            raise model.refuse("manifest_yaml_unsupported", self.where(), "collection_tag",
                               {"tag": diagnostics.excerpt(ev.tag)})
        if self.wants_key():
            raise model.refuse("manifest_yaml_unsupported", "(key)", "collection_key")
        self.count(1, self.where())
        if len(self.stack) >= model.MAX_DEPTH:
            raise model.refuse("manifest_too_deep", self.where(), "levels", limit=model.MAX_DEPTH)
        container: Union[Dict[str, Any], List[Any]] = {} if is_map else []
        self.stack.append(_Frame(container, ev.anchor))

    def end(self, ev: Any) -> None:
        frame = self.stack.pop()
        if frame.anchor:
            self.anchors[frame.anchor] = (frame.container, frame.size)
        self.attach(frame.container, frame.size)


# ------------------------------------------------------------------ bounded plain copy

def plain(data: Any, strings: bool = True, long_string: Optional[List[diagnostics.Diagnostic]] = None) -> Any:
    """A plain copy (dict/list/str/int/float/bool/None) of decoded data, with every structural
    limit checked while walking (nodes counted on every visit, so shared references count as
    often as they appear; depth capped, so self-references stop). Field names for messages are
    only built when something is refused. Without ``strings``, the first string over model.MAX_STRING
    is only noted in ``long_string`` (when given)."""
    budget = [model.MAX_NODES]

    def name(path: Tuple[Union[str, int], ...]) -> str:
        field = "(manifest)"
        for part in path:
            field = "%s[%d]" % (field, part) if isinstance(part, int) else sub(field, part)
        return field

    def walk(value: Any, depth: int, path: Tuple[Union[str, int], ...]) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise model.refuse("manifest_too_many_nodes", name(path), "nodes", limit=model.MAX_NODES)
        kind = type(value)
        if kind is str or isinstance(value, str):
            if len(value) > model.MAX_STRING and (strings or (long_string is not None and not long_string)):
                refusal = model.refuse("manifest_string_too_long", name(path), "length", {"length": len(value)},
                                       limit=model.MAX_STRING)
                if strings or long_string is None:
                    raise refusal
                long_string.append(refusal.diag)
            return value if kind is str else str.__str__(value)
        if value is None or kind is bool or kind is float:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) >= 2 ** 63:
                raise model.refuse("manifest_invalid", name(path), "path_number_range")
            return int(value)
        if isinstance(value, float):
            return float(value)
        if depth >= model.MAX_DEPTH:
            raise model.refuse("manifest_too_deep", name(path), "path_levels", limit=model.MAX_DEPTH)
        if isinstance(value, dict):
            if len(value) > budget[0]:
                raise model.refuse("manifest_too_many_nodes", name(path), "nodes", limit=model.MAX_NODES)
            out = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise model.refuse("manifest_invalid", name(path), "path_key", {"key": diagnostics.excerpt(key)})
                key = walk(key, depth + 1, path)
                out[key] = walk(item, depth + 1, path + (key,))
            return out
        if isinstance(value, (list, tuple)):
            if len(value) > budget[0]:
                raise model.refuse("manifest_too_many_nodes", name(path), "nodes", limit=model.MAX_NODES)
            return [walk(item, depth + 1, path + (i,)) for i, item in enumerate(value)]
        raise model.refuse("manifest_invalid", name(path), "not_data", {"type": type(value).__name__})
    return walk(data, 0, ())


def sub(field: str, key: str) -> str:
    key = key if model.NAME.fullmatch(key) else diagnostics.excerpt(key, 40)
    return key if field == "(manifest)" else "%s.%s" % (field, key)
