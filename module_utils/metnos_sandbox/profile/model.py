# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a manifest is once read: its documented limits (each with its own refusal code), the capability
kinds and forms, Capability, Manifest, FileSource, and the refusals (ManifestError).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ..base.diagnostics import Diagnostic, excerpt, make
from ..base.records import Record, Shape

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
NAME = re.compile(r"[a-z0-9_][a-z0-9_.-]{0,127}")
_INDEX = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_NET = re.compile(r"\*|[A-Za-z0-9_][A-Za-z0-9_.@+*-]{0,127}")
_ACCOUNT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
OWNER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")
REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+:~-]{0,63}")
FILE_PART = re.compile(r"[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]{0,127}")
# C0/C1 controls, DEL, line/paragraph separators, Unicode format characters (bidi overrides,
# zero-width, BOM, tags) and lone surrogates: never valid in any string field.
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\ud800-\udfff\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]")

# Whitespace between two words of one capability: two capabilities run together (a line indented deeper than the
# list item before it continues that item's plain scalar: '- fs:read:/a' then '   - net:http' is one string,
# 'fs:read:/a - net:http'), or a path with a space. Leading or trailing whitespace is the grammar's (unknown).
_INNER_SPACE = re.compile(r"\S(\s+)\S")
_LIST_ITEM = re.compile(r"\s-\s")


def whitespace_wording(text: str) -> Optional[str]:
    """The capability_whitespace wording of a capability with whitespace between two of its words: ``list_item``
    (a ' - ' inside: two list items run together), ``line_break`` (a line break inside), ``space``; None when
    there is none."""
    found = _INNER_SPACE.search(text)
    if found is None:
        return None
    if _LIST_ITEM.search(text):
        return "list_item"
    return "line_break" if any(c in text.strip() for c in "\n\r\x0b\x0c\x85\u2028\u2029") else "space"


ACCEPTED_FORMS = (
    "fs:read:<scope>", "fs:write:<scope>  (scope: absolute path, glob, or arg:<name>)",
    "metnos:read|write|create:<resource>", "index:read:<name>", "systemd:read",
    "system:read", "system:read:network_interfaces", "provider:access:<provider>",
    "skill:<name> (legacy)", "mail:read:<account>", "dialog.user_input", "network:<what>",
    "net:<what>", "system:undo (undo_last_turn only)",
)
FORMS_TEXT = "; ".join(ACCEPTED_FORMS)


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
# The words of net:<what> / network:<what> the toolkit knows. The spec (R-NET-1) writes net:* and network:*: it
# lists no words, and network is binary (every word grants the host network), so a word outside this list is
# not refused; one a typo away from a known word (net:htpp) is a warning with the word it likely meant
# (network_word_unknown), never silent.
NETWORK_WORDS = ("*", "http", "https", "dns", "smtp", "imap", "ssh")
NETWORK_WORD_CUTOFF = 0.6      # difflib's ratio from which a word reads as a typo of a known one
# Modes that grant writing (fs:write, metnos:write|create, provider:access).
WRITE_MODES = ("write", "create", "access")


class _Form(Record):
    """One capability form of the grammar: its kind, the modes it accepts and its target's grammar."""
    kind: str
    modes: Tuple[Optional[str], ...]
    target: re.Pattern[str]


# '<head>:<target>' forms (the mode is implied) and '<head>:<mode>:<target>' forms; fs has its own.
BARE_FORMS = {"network": _Form(Kind.NETWORK, (None,), _NET), "net": _Form(Kind.NETWORK, (None,), _NET),
              "skill": _Form(Kind.SKILL, ("access",), NAME)}
MODE_FORMS = {"metnos": _Form(Kind.METNOS, ("read", "write", "create"), NAME),
              "index": _Form(Kind.INDEX, ("read",), _INDEX),
              "provider": _Form(Kind.PROVIDER, ("access",), NAME),
              "mail": _Form(Kind.MAIL, ("read",), _ACCOUNT)}
FS_MODES = ("read", "write")
FIXED_CAPS = {     # text -> (kind, mode, target)
    "dialog.user_input": (Kind.DIALOG, None, None),
    "systemd:read": (Kind.SYSTEMD, "read", None),
    "system:read": (Kind.SYSTEM, "read", None),
    "system:read:network_interfaces": (Kind.SYSTEM, "read", NETWORK_INTERFACES),
    "system:undo": (Kind.UNDO, "undo", None),
}
FIELDS = ("name", "origin", "revision", "digest", "owner", "entrypoint", "capabilities", "arguments",
          "inverse", "files", "min_containment")
# The containment levels a paired device's client reports (R-SCOPE-4), strongest first; a manifest's
# min_containment names one of them exactly (audit/containment.py ranks them).
CONTAINMENT_LEVELS = ("bubblewrap", "appcontainer", "job_object", "none")
ARG_KEYS = ("kind", "within")
# The one refusal record a controller-side face hands over when it could not load a manifest
# (see transport()); coerce() turns it back into the same refusal on the host.
REFUSAL_KEY = "metnos_manifest_refused"


class ManifestError(ValueError):
    """A manifest is refused. ``diagnostics`` holds one entry per problem."""

    def __init__(self, diagnostics: List[Diagnostic]) -> None:
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

    def network_word_meant(self) -> Optional[str]:
        """The known network word this net:/network: word is likely a typo of (see NETWORK_WORDS); None when the
        word is known, or near none (a word of the manifest's own, which the spec's net:* allows)."""
        if self.kind != Kind.NETWORK or self.target is None or self.target in NETWORK_WORDS:
            return None
        # imported only for a word that is not known: ~0.3 ms of every audit's imports otherwise
        import difflib
        near = difflib.get_close_matches(self.target.lower(), NETWORK_WORDS, n=1, cutoff=NETWORK_WORD_CUTOFF)
        return near[0] if near and near[0] != self.target else None

    def writes(self) -> bool:
        """The grant is writable: a writing mode, or the sender's dialog folder."""
        return self.mode in WRITE_MODES or self.kind == Kind.DIALOG

    def __repr__(self) -> str:
        return "Capability(%s)" % excerpt(self.text)


class ArgumentSpec(Shape):
    """A declared argument: its kind and the 'within' scopes a path value must stay in."""
    kind: str
    within: List[str]


Revision = Union[int, str, None]


class Manifest(object):
    __slots__ = ("name", "origin", "revision", "digest", "owner", "entrypoint",
                 "capabilities", "arguments", "inverse", "files", "min_containment", "source")

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
    min_containment: Optional[str]
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
            "min_containment": self.min_containment,
        }
        return dict((k, v) for k, v in out.items() if v is not None)


class Refuse(Exception):
    """Internal: stop loading at the first structural refusal (bounded work)."""

    def __init__(self, diag: Diagnostic) -> None:
        Exception.__init__(self, diag["code"])
        self.diag = diag


def refuse(code: str, field: str, wording: str, fill: Optional[Mapping[str, Any]] = None, **extra: Any) -> Refuse:
    """A structural refusal: the code's registered ``wording``, its placeholders from ``fill`` (excerpts)."""
    return Refuse(make(code, wording=wording, fill=fill, field=field, **extra))


def err(code: str, field: str, value: Any, expected: str, **extra: Any) -> Diagnostic:
    """A refusal naming the field, a short escaped excerpt of the value and the accepted forms."""
    result: Diagnostic = make(code, wording="refused", fill={"expected": expected}, field=field,
                              value=excerpt(value), **extra)
    return result


def has_control(text: str) -> bool:
    """A control, format, separator or surrogate character anywhere in ``text`` (fast path: a
    printable string has none of them)."""
    return not text.isprintable() and _CONTROL.search(text) is not None
