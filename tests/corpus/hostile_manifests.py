"""The hostile manifests, written against each rule of the spec as an attacker who can write (or get
signed) a manifest, or choose an invocation, would try it: the cases are data, in
tests/unit/cases/hostile_manifests.yaml (read by tests/helpers/case_table.py, which says the table's form).

Every entry must be REFUSED with its ``expect`` code by every face (core, module, filters, audit payload, probe),
without a traceback and in bounded time. ``@ROOT@`` is the location of the host tree of
tests/corpus/hostile_tree.py. An entry:

    id      stable name            rule    spec rule attacked
    expect  stable refusal code    host    host-context overrides for this entry (optional)
    text    raw manifest text/bytes, or ``data`` (a mapping written as YAML, or JSON with fmt="json")
    invocation                      the concrete invocation (optional)
    case    the table's case (its file and id name a failure: ``check``)
"""
import json

import yaml

from helpers import case_table

BASE = {"name": "ex", "origin": "metnos/core", "revision": 1}
# A case's input: the rule, then the manifest (text, data, or manifest: data over BASE and no capabilities).
INPUT = {"rule", "text", "data", "manifest", "fmt", "invocation", "host"}


class Entry(object):
    __slots__ = ("id", "rule", "expect", "text", "data", "fmt", "invocation", "host", "case")

    def __init__(self, id, rule, expect, text=None, data=None, fmt="yaml", invocation=None, host=None,  # noqa: A002
                 case=None):
        self.id, self.rule, self.expect = id, rule, expect
        self.text, self.data, self.fmt = text, data, fmt
        self.invocation, self.host = invocation, host
        self.case = case

    @staticmethod
    def fields(case, known=INPUT):
        """The keywords of an entry from a table's case (ValueError on an input key the table does not know)."""
        given = case["input"]
        unknown = set(given) - set(known)
        if unknown or sum(key in given for key in ("text", "data", "manifest")) != 1:
            raise ValueError("%s, case %r: input keys %s (one of text, data, manifest; unknown: %s)" % (
                case["file"], case["id"], sorted(given), sorted(unknown)))
        data = given.get("data")
        if "manifest" in given:
            data = dict(BASE, capabilities=[])
            data.update(given["manifest"])
        return dict(id=case["id"], rule=given["rule"], expect=case["output"], text=given.get("text"), data=data,
                    fmt=given.get("fmt", "yaml"), invocation=given.get("invocation"), host=given.get("host"),
                    case=case)

    def check(self, got, context=""):
        """``got`` is this entry's expected answer; else a failure naming the table's file and the case's id."""
        assert got == self.expect, case_table.failure(self.case, got, self.expect) + (
            " (%s)" % (context,) if context else "")

    def _sub(self, raw, subs):
        for key, value in subs.items():
            raw = raw.replace(key, value)
        return raw

    def content(self, subs):
        """The manifest file's bytes, with @ROOT@ (and @DIGEST@) replaced from ``subs``."""
        if self.text is not None:
            raw = self.text if isinstance(self.text, bytes) else self.text.encode("utf-8", "surrogatepass")
        elif self.fmt == "json":
            raw = json.dumps(self.data).encode("utf-8")
        else:
            raw = yaml.safe_dump(self.data, default_flow_style=False, allow_unicode=False).encode("utf-8")
        for key, value in subs.items():
            raw = raw.replace(key.encode("ascii"), value.encode("utf-8"))
        return raw

    def invocation_for(self, subs):
        if self.invocation is None:
            return {}
        return json.loads(self._sub(json.dumps(self.invocation), subs))

    def host_for(self, subs, base):
        out = dict(base)
        for key, value in (self.host or {}).items():
            out[key] = json.loads(self._sub(json.dumps(value), subs))
        return out

    @property
    def file_name(self):
        return "".join(c if c.isalnum() or c == "_" else "_" for c in self.id) + ".manifest"


def params():
    """The entry ids for pytest.mark.parametrize, each marked with the rule it attacks."""
    import pytest
    return [pytest.param(e.id, marks=pytest.mark.rule(e.rule), id=e.id) for e in CORPUS]


CORPUS = [Entry(**Entry.fields(case)) for case in case_table.load("hostile_manifests")]


def _check():
    ids = [e.id for e in CORPUS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    names = [e.file_name for e in CORPUS]
    assert len(names) == len(set(names))


_check()
