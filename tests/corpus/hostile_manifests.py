"""A corpus of hostile manifests, written against each rule of the spec as an attacker who can
write (or get signed) a manifest, or choose an invocation, would try it.

Every entry must be REFUSED with its ``expect`` code by every face (core, module, filters,
audit payload, probe), without a traceback and in bounded time. ``@ROOT@`` is the location of
the host tree of tests/corpus/hostile_tree.py. Entries:

    id      stable name            rule    spec rule attacked
    expect  stable refusal code    host    host-context overrides for this entry (optional)
    text    raw manifest text/bytes, or ``data`` (a mapping written as YAML, or JSON with fmt="json")
    invocation                      the concrete invocation (optional)
"""
import json

import yaml

BASE = {"name": "ex", "origin": "metnos/core", "revision": 1}


class Entry(object):
    __slots__ = ("id", "rule", "expect", "text", "data", "fmt", "invocation", "host")

    def __init__(self, id, rule, expect, text=None, data=None, fmt="yaml", invocation=None, host=None):  # noqa: A002
        self.id, self.rule, self.expect = id, rule, expect
        self.text, self.data, self.fmt = text, data, fmt
        self.invocation, self.host = invocation, host

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


def M(caps=(), **kw):
    data = dict(BASE, capabilities=list(caps))
    data.update(kw)
    return data


CORPUS = []


def params():
    """The entry ids for pytest.mark.parametrize, each marked with the rule it attacks."""
    import pytest
    return [pytest.param(e.id, marks=pytest.mark.rule(e.rule), id=e.id) for e in CORPUS]


def add(id, rule, expect, **kw):
    CORPUS.append(Entry(id, rule, expect, **kw))


def caps(id, rule, expect, capabilities, **kw):
    fmt = kw.pop("fmt", "yaml")
    add(id, rule, expect, data=M(capabilities, **kw.pop("fields", {})), fmt=fmt, **kw)


# ---------------------------------------------------------------- A. input limits (R-SCOPE-1)
LAUGHS = "lol: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    "l%d: &l%d [%s]\n" % (i, i, ", ".join(["*l%d" % (i - 1)] * 9)) for i in range(1, 10)) + \
    "name: ex\norigin: o\ncapabilities: *l9\n"
add("billion_laughs", "R-SCOPE-1", "manifest_too_many_nodes", text=LAUGHS)
add("billion_laughs_mappings", "R-SCOPE-1", "manifest_too_many_nodes",
    text="a: &a {x: 1, y: 2, z: 3, w: 4}\n" + "".join(
        "%s: &%s {p: *%s, q: *%s, r: *%s, s: *%s}\n" % (c, c, p, p, p, p)
        for p, c in zip("abcdefgh", "bcdefghi")) + "name: ex\norigin: o\n")
add("laughs_in_capabilities", "R-SCOPE-1", "manifest_too_many_nodes",
    text="x: &x [net:a, net:b, net:c, net:d, net:e, net:f, net:g, net:h]\n"
         "y: &y [*x, *x, *x, *x, *x, *x, *x, *x]\nz: &z [*y, *y, *y, *y, *y, *y, *y, *y]\n"
         "w: &w [*z, *z, *z, *z, *z, *z, *z, *z]\nname: ex\norigin: o\ncapabilities: *w\n")
add("laughs_in_within", "R-SCOPE-1", "manifest_too_many_nodes",
    text="s: &s [/srv/a, /srv/b, /srv/c, /srv/d, /srv/e, /srv/f, /srv/g, /srv/h]\n"
         "t: &t [*s, *s, *s, *s, *s, *s, *s, *s]\nu: &u [*t, *t, *t, *t, *t, *t, *t, *t]\n"
         "v: &v [*u, *u, *u, *u, *u, *u, *u, *u]\n"
         "name: ex\norigin: o\ncapabilities: ['fs:read:arg:p']\narguments: {p: {within: *v}}\n")
add("recursive_alias_list", "R-SCOPE-1", "manifest_too_many_nodes", text="name: ex\norigin: o\ncapabilities: &c [*c]\n")
add("recursive_alias_map", "R-SCOPE-1", "manifest_too_many_nodes", text="&m {name: ex, origin: o, self: *m}\n")
add("undefined_alias", "R-SCOPE-1", "manifest_parse_error", text="name: ex\norigin: *nowhere\n")
add("alias_as_key", "R-SCOPE-1", "manifest_yaml_unsupported", text="k: &k name\n*k : ex\norigin: o\n")
add("file_too_large_padding", "R-SCOPE-1", "manifest_too_large", text="name: ex\norigin: o\n#" + "x" * 70000 + "\n")
add("file_ten_megabytes", "R-SCOPE-1", "manifest_too_large", text="name: ex\norigin: o\n" + "# padding\n" * 1000000)
add("json_too_large_string", "R-SCOPE-1", "manifest_too_large",
    text=json.dumps({"name": "ex", "origin": "o" * 70000}))
add("multibyte_over_limit", "R-SCOPE-1", "manifest_too_large", text="name: ex\norigin: o\n# " + "\u20ac" * 22000 + "\n")
add("origin_too_long", "R-SCOPE-1", "manifest_string_too_long", data=M(origin="o" * 1100))
add("key_too_long", "R-SCOPE-1", "manifest_string_too_long", data=dict(M(), **{"k" * 1100: 1}))
add("within_scope_too_long", "R-SCOPE-1", "manifest_string_too_long",
    data=M(["fs:read:arg:p"], arguments={"p": {"within": ["/srv/" + "a" * 1100]}}))
add("deep_flow_lists", "R-SCOPE-1", "manifest_too_deep",
    text="name: ex\norigin: o\ncapabilities: " + "[" * 20 + "]" * 20 + "\n")
add("deep_json", "R-SCOPE-1", "manifest_too_deep",
    text='{"name": "ex", "origin": "o", "x": ' + "[" * 5000 + "]" * 5000 + "}")
add("deep_json_interpreter", "R-SCOPE-1", "manifest_too_deep", text="[" * 60000)
add("deep_yaml_unclosed", "R-SCOPE-1", "manifest_too_deep", text="[" * 60000)
add("deep_block_mappings", "R-SCOPE-1", "manifest_too_deep",
    text="name: ex\norigin: o\nx:\n" + "".join("  " * (i + 1) + "k%d:\n" % i for i in range(20)) + "  " * 21 + "v\n")
add("too_many_nodes_flat", "R-SCOPE-1", "manifest_too_many_nodes",
    text="name: ex\norigin: o\nx: [" + ", ".join("a" for _ in range(5000)) + "]\n")
add("too_many_keys", "R-SCOPE-1", "manifest_too_many_nodes",
    text="name: ex\norigin: o\nx: {" + ", ".join("k%d: 1" % i for i in range(3000)) + "}\n")
add("too_many_capabilities", "R-SCOPE-1", "manifest_too_many_capabilities",
    data=M(["net:n%d" % i for i in range(129)]))
add("too_many_capabilities_json", "R-SCOPE-1", "manifest_too_many_capabilities", fmt="json",
    data=M(["net:http"] * 500))
add("capability_too_long", "R-SCOPE-1", "capability_too_long", data=M(["fs:read:/srv/" + "a" * 1100]))
add("capability_too_long_net", "R-SCOPE-1", "capability_too_long", data=M(["net:" + "a" * 1100]))
add("too_many_arguments", "R-ARG-1", "manifest_too_many_arguments",
    data=M(arguments=dict(("a%d" % i, {"within": ["/srv/x"]}) for i in range(33))))
add("too_many_arguments_list", "R-ARG-1", "manifest_too_many_arguments",
    data=M(arguments=["a%d" % i for i in range(40)]))
add("too_many_scopes", "R-ARG-1", "manifest_too_many_scopes",
    data=M(["fs:read:arg:p"], arguments={"p": {"within": ["/srv/s%d" % i for i in range(17)]}}))
add("too_many_files", "R-FAIL-2", "manifest_too_many_files", data=M(files=["f%d.py" % i for i in range(65)]))
add("revision_huge_int", "R-SCOPE-1", "manifest_invalid", text="name: ex\norigin: o\nrevision: %s\n" % ("9" * 40))
add("revision_huge_int_json", "R-SCOPE-1", "manifest_invalid",
    text='{"name": "ex", "origin": "o", "revision": %s}' % ("9" * 5000))

# ---------------------------------------------------------------- B. YAML/JSON: exact data, no surprises
add("duplicate_key_name", "R-SCOPE-1", "manifest_duplicate_key", text="name: ex\norigin: o\nname: undo_last_turn\n")
add("duplicate_capabilities_key", "R-SCOPE-1", "manifest_duplicate_key",
    text="name: ex\norigin: o\ncapabilities: []\ncapabilities: ['fs:write:/etc']\n")
add("duplicate_key_quoted", "R-SCOPE-1", "manifest_duplicate_key", text="name: ex\n\"name\": other\norigin: o\n")
add("duplicate_key_nested", "R-SCOPE-1", "manifest_duplicate_key",
    text="name: ex\norigin: o\ncapabilities: ['fs:read:arg:p']\narguments:\n  p:\n"
         "    within: [/srv/a]\n    within: [/]\n")
add("duplicate_key_json", "R-SCOPE-1", "manifest_duplicate_key",
    text='{"name": "ex", "origin": "o", "capabilities": [], "capabilities": ["net:http"]}')
add("duplicate_key_json_nested", "R-SCOPE-1", "manifest_duplicate_key",
    text='{"name": "ex", "origin": "o", "inverse": {"model": "a", "model": "b"}}')
add("duplicate_key_flow", "R-SCOPE-1", "manifest_duplicate_key", text="{name: ex, origin: o, origin: evil}\n")
add("tag_python_object", "R-SCOPE-1", "manifest_yaml_unsupported",
    text="name: ex\norigin: !!python/object/apply:os.system ['id']\n")
add("tag_binary", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: !!binary aGVsbG8=\n")
add("tag_set", "R-SCOPE-1", "manifest_yaml_unsupported",
    text="name: ex\norigin: o\ncapabilities: !!set {net:a: null}\n")
add("tag_omap", "R-SCOPE-1", "manifest_yaml_unsupported", text="!!omap [name: ex, origin: o]\n")
add("tag_custom", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: !vault o\n")
add("tag_explicit_timestamp", "R-SCOPE-1", "manifest_yaml_unsupported",
    text="name: ex\norigin: !!timestamp 2020-01-01\n")
add("merge_key", "R-SCOPE-1", "manifest_yaml_unsupported",
    text="base: &b {capabilities: ['fs:write:/etc']}\nname: ex\norigin: o\n<<: *b\n")
add("two_documents", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: o\n---\nname: undo_last_turn\n")
add("octal_revision", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: o\nrevision: 0777\n")
add("hex_revision", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: o\nrevision: 0x1F\n")
add("sexagesimal_revision", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: o\nrevision: 1:30\n")
add("int_key", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: o\n1: x\n")
add("bool_key", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: o\non: x\n")
add("null_key", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: o\n~: x\n")
add("complex_key", "R-SCOPE-1", "manifest_yaml_unsupported", text="name: ex\norigin: o\n? [a, b]\n: x\n")
add("not_utf8_latin1", "R-SCOPE-1", "manifest_not_utf8", text=b"name: ex\norigin: caf\xe9\n")
add("not_utf8_utf16", "R-SCOPE-1", "manifest_not_utf8", text="name: ex\norigin: o\n".encode("utf-16"))
add("nul_byte", "R-SCOPE-1", "manifest_not_utf8", text=b"name: ex\x00\norigin: o\n")
add("overlong_utf8_slash", "R-SCOPE-1", "manifest_not_utf8",
    text=b"name: ex\norigin: o\ncapabilities: ['fs:read:\xc0\xafetc']\n")
add("lone_surrogate_json", "R-SCOPE-1", "manifest_control_character", text='{"name": "ex", "origin": "o\\ud800"}')
add("yaml_syntax", "R-SCOPE-1", "manifest_parse_error", text="name: [unclosed\norigin: o\n")
add("yaml_tabs", "R-SCOPE-1", "manifest_parse_error", text="name: ex\n\torigin: o\n")
add("raw_control_in_stream", "R-SCOPE-1", "manifest_parse_error", text="name: ex\norigin: o\x07\n")
add("empty_document", "R-SCOPE-1", "manifest_invalid", text="")
add("manifest_is_list", "R-SCOPE-1", "manifest_invalid", text="- name: ex\n- origin: o\n")
add("manifest_is_string", "R-SCOPE-1", "manifest_invalid", text="'name: ex'\n")
add("manifest_is_number", "R-SCOPE-1", "manifest_invalid", text="42\n")
add("json_array", "R-SCOPE-1", "manifest_invalid", text='[{"name": "ex", "origin": "o"}]')

# ---------------------------------------------------------------- C. exact grammar (whole matches)
for i, cap in enumerate(["net:http\n", "network:*\n", "provider:access:cal\n", "skill:cal\n", "mail:read:work\n",
                         "metnos:read:sheets\n", "index:read:docs\n", "system:read:network_interfaces\n",
                         "dialog.user_input\n", "systemd:read\n", "system:undo\n", "net:http\r",
                         "net:ht\u200btp", "net:http\u202e", "net:\x1b[31mhttp", "net:http\x00"]):
    caps("control_in_capability_%d" % i, "R-NET-1", "capability_unknown", [cap])
for i, cap in enumerate(["fs:read:/srv/notes\n", "fs:write:@ROOT@/data/w\n", "fs:read:/srv/\x00etc",
                         "fs:write:@ROOT@/data/w\u202e", "fs:read:@ROOT@/data\u2028", "fs:read:arg:p\n"]):
    caps("control_in_scope_%d" % i, "R-CAP-FS", "scope_nul", [cap],
         fields={"arguments": {"p": {"within": ["@ROOT@/data/**"]}}})
for i, cap in enumerate(["fs:readx:/srv/x", "fs:read", "fs:read:", "fs:write:arg:", "fs:write:arg:../x",
                         "fs:write:arg:P", "network:", "net:", "netx:http", "net:--share-net",
                         "provider:access:", "provider:access:cal/../other", "provider:access:..",
                         "provider:access:Cal",
                         "skill:../cal", "skill:", "skill:a/b", "mail:read:*", "mail:read:../work", "mail:read:work/x",
                         "mail:read:", "mail:write:work", "metnos:read:", "metnos:delete:sheets", "metnos:read:../x",
                         "index:read:../x", "index:write:docs", "index:read:", "system:read:everything",
                         "system:write", "systemd:write", "dialog.user_input:bob", "Dialog.user_input", "NET:http",
                         " net:http", "net:http ", "fs:exec:/srv/x", "root", "", "*"]):
    caps("grammar_%02d" % i, "R-CAP-FS", "capability_unknown", [cap])
# Whitespace between two words: two capabilities run together, or a space in a path (issue 42, item 8); before
# issue 42 "network:a b" was one unknown capability (capability_unknown), now it has its own code.
for i, cap in enumerate(["network:a b", "fs:read:/srv/notes/** - net:http", "fs:read:/srv/a\nb",
                         "fs:read:/srv/My Notes/**", "net:http\tnet:https"]):
    caps("whitespace_in_capability_%d" % i, "R-CAP-FS", "capability_whitespace", [cap])
caps("whitespace_in_capability_json", "R-CAP-FS", "capability_whitespace", ["fs:read:/srv/a - net:http"], fmt="json")
add("capability_list_misindented", "R-CAP-FS", "capability_whitespace",
    text="name: ex\norigin: o\ncapabilities:\n  - fs:read:/srv/notes/**\n   - net:http\n")
caps("capability_not_string", "R-CAP-FS", "manifest_invalid", [5])
caps("capability_mapping", "R-CAP-FS", "manifest_invalid", [{"fs": "read"}])
caps("capability_null", "R-CAP-FS", "manifest_invalid", [None])
add("capabilities_string", "R-CAP-FS", "manifest_invalid", data=dict(M(), capabilities="net:http"))
add("capabilities_mapping", "R-CAP-FS", "manifest_invalid", data=dict(M(), capabilities={"net:http": True}))
caps("system_undo_ordinary", "R-SEC-5", "capability_reserved", ["system:undo"])
caps("system_undo_with_net", "R-SEC-5", "capability_reserved", ["net:http", "system:undo"])
for i, name in enumerate(["Ex", "ex/../other", "../ex", ".hidden", "", "e" * 129, "ex\n", "ex x", "ex\x00",
                          "undo_last_turn\n", "UNDO_LAST_TURN", "ex\u200b", "-ex"]):
    add("bad_name_%02d" % i, "R-SCOPE-1", "manifest_invalid", data=M(name=name))
add("name_missing", "R-SCOPE-1", "manifest_invalid", data={"origin": "o", "capabilities": []})
add("name_int", "R-SCOPE-1", "manifest_invalid", data=M(name=12))
add("origin_missing", "R-SCOPE-1", "manifest_invalid", data={"name": "ex"})
add("origin_empty", "R-SCOPE-1", "manifest_invalid", data=M(origin=""))
add("origin_spaces", "R-SCOPE-1", "manifest_invalid", data=M(origin=" metnos/core"))
add("origin_newline", "R-SCOPE-1", "manifest_control_character", data=M(origin="metnos/core\n"))
add("origin_bidi", "R-SCOPE-1", "manifest_control_character", data=M(origin="metnos/\u202eeroc"))
add("origin_list", "R-SCOPE-1", "manifest_invalid", data=M(origin=["metnos"]))
add("revision_bool", "R-SCOPE-1", "manifest_invalid", data=M(revision=True))
add("revision_negative", "R-SCOPE-1", "manifest_invalid", data=M(revision=-1))
add("revision_float", "R-SCOPE-1", "manifest_invalid", data=M(revision=1.5))
add("revision_list", "R-SCOPE-1", "manifest_invalid", data=M(revision=[1]))
add("revision_newline", "R-SCOPE-1", "manifest_control_character", data=M(revision="12\n"))
add("revision_spaces", "R-SCOPE-1", "manifest_invalid", data=M(revision="12 beta"))
add("digest_upper", "R-FAIL-2", "manifest_invalid", data=M(digest="sha256:" + "AB" * 32))
add("digest_md5", "R-FAIL-2", "manifest_invalid", data=M(digest="md5:" + "ab" * 16))
add("digest_newline", "R-FAIL-2", "manifest_control_character", data=M(digest="sha256:" + "ab" * 32 + "\n"))
add("digest_short", "R-FAIL-2", "manifest_invalid", data=M(digest="sha256:abc"))
add("owner_newline", "R-FAIL-2", "manifest_control_character", data=M(owner="metnos\n"))
add("owner_upper", "R-FAIL-2", "manifest_invalid", data=M(owner="Metnos"))
for i, ep in enumerate(["/etc/passwd", "../other/main.py", "a//b.py", "./main.py", "main.py/", "..", 5, "ma\nin.py"]):
    add("entrypoint_%d" % i, "R-BASE-4", "manifest_invalid", data=M(entrypoint=ep))
for i, files in enumerate([["../x.py"], ["/etc/passwd"], ["main.py", "main.py"], "main.py", [5], ["a\nb"]]):
    add("files_%d" % i, "R-FAIL-2", "manifest_invalid", data=M(files=files))
for i, field in enumerate(["capabilites", "Name", "name ", "grants", "network", "bwrap_args", "mounts"]):
    add("unknown_field_%d" % i, "R-SCOPE-1", "manifest_invalid", data=dict(M(), **{field: ["--bind", "/", "/"]}))
add("inverse_extra_key", "R-CAP-UNDO", "manifest_invalid", data=M(inverse={"model": "m", "root": "/"}))
add("inverse_string", "R-CAP-UNDO", "manifest_invalid", data=M(inverse="restore_content"))
add("inverse_model_path", "R-CAP-UNDO", "manifest_invalid", data=M(inverse={"model": "../../etc"}))
add("argument_extra_key", "R-ARG-1", "manifest_invalid",
    data=M(["fs:read:arg:p"], arguments={"p": {"within": ["/srv/x"], "widen": True}}))
add("argument_bad_name", "R-ARG-1", "manifest_invalid", data=M(arguments={"P": {"within": ["/srv/x"]}}))
add("argument_name_newline", "R-ARG-1", "manifest_invalid", data=M(arguments={"p\n": {"within": ["/srv/x"]}}))
add("argument_within_int", "R-ARG-1", "manifest_invalid",
    data=M(["fs:read:arg:p"], arguments={"p": {"within": [5]}}))
add("argument_within_mapping", "R-ARG-1", "manifest_invalid",
    data=M(["fs:read:arg:p"], arguments={"p": {"within": {"/": 1}}}))
add("arguments_string", "R-ARG-1", "manifest_invalid", data=M(arguments="p"))
add("arguments_list_duplicate", "R-ARG-1", "manifest_invalid", data=M(arguments=["p", "p"]))
caps("arg_undeclared", "R-ARG-1", "arg_undeclared", ["fs:read:arg:p"])
caps("arg_undeclared_case", "R-ARG-1", "arg_undeclared", ["fs:read:arg:path"], fields={"arguments": {"path2": {}}})
caps("arg_unbounded", "R-ARG-1", "arg_scope_unbounded", ["fs:write:arg:p"], fields={"arguments": {"p": {}}})
caps("arg_unbounded_list", "R-ARG-1", "arg_scope_unbounded", ["fs:write:arg:p"], fields={"arguments": ["p"]})

# ---------------------------------------------------------------- D. scopes as written (R-CAP-FS, R-SEC-2, R-BASE-2)
WRITE_SYSTEM = ["/", "/**", "/*", "/etc", "/etc/ssh/sshd_config", "/etc/metnos", "/usr/local/bin", "/usr/lib/python3",
                "/lib/x", "/lib64", "/bin", "/sbin/x", "/boot", "/sys/kernel", "/var/lib/python3/x", "/usr/**",
                "/etc/cron.d/**", "/usr/bin/python3"]
for i, scope in enumerate(WRITE_SYSTEM):
    caps("write_system_%02d" % i, "R-BASE-1", "scope_too_broad", ["fs:write:" + scope])
READ_BROAD = ["/", "/**", "/proc/1/environ", "/proc/self/root", "/dev/mem", "/dev/shm/x", "/home", "/root", "/opt",
              "/var", "/var/lib", "/run", "/srv", "/mnt", "/media", "/tmp", "/usr/local", "/lost+found", "/*/shadow",
              "/h*me/x", "/o[p]t/x", "/{etc,root}/x", "/var/lib/*/x", "/var/*", "/run/**", "/proc"]
for i, scope in enumerate(READ_BROAD):
    caps("read_broad_%02d" % i, "R-SEC-2", "scope_too_broad", ["fs:read:" + scope])
for i, scope in enumerate(["/srv/../etc", "/srv/./x", "//etc", "/srv//x", "/srv/x/", "/srv/x/..", "/."]):
    caps("not_normalized_%d" % i, "R-ARG-1", "scope_not_normalized", ["fs:read:" + scope])
for i, scope in enumerate(["srv/x", "~/x", "~root/.ssh", "$HOME/x", "./x", "${METNOS}/x", "*"]):
    caps("relative_%d" % i, "R-CAP-FS", "scope_relative", ["fs:write:" + scope])

# ---------------------------------------------------------------- E. scopes resolved on the host (symlinks)
SYMLINK_WRITE = ["scope_etc", "scope_run", "scope_root", "scope_proc", "scope_dev", "scope_home", "scope_lib",
                 "scope_usr", "scope_sys", "scope_boot", "scope_opt", "scope_tmp", "scope_etc_ssh", "scope_python3",
                 "scope_usr_local", "scope_exec", "scope_own", "scope_sibling", "scope_runtime", "scope_rt",
                 "scope_venv", "scope_i18n", "scope_lexicon", "scope_creds", "scope_integrations", "scope_cal",
                 "scope_dialog", "scope_alice", "scope_undo", "scope_up", "scope_chain1", "scope_rel_etc",
                 "scope_dangling_etc", "scope_dangling_proc", "scope_rootdir", "data/w/etc", "data/w/runtime",
                 "data/w/venv", "data/w/sibling", "data/w/i18n", "scope_etc/cron.d", "scope_self/rt"]
for link in SYMLINK_WRITE:
    caps("symlink_write_" + link.replace("/", "_"), "R-CAP-FS", "scope_symlink_refused", ["fs:write:@ROOT@/%s" % link])
for link in ["scope_root", "scope_proc", "scope_dev", "scope_home", "scope_run", "scope_opt", "scope_exec",
             "scope_sibling", "scope_creds", "scope_integrations", "scope_dialog", "scope_up", "scope_rootdir"]:
    caps("symlink_read_" + link, "R-CAP-FS", "scope_symlink_refused", ["fs:read:@ROOT@/%s/**" % link])
caps("alias_var_run_write", "R-CAP-FS", "scope_symlink_refused", ["fs:write:/var/run"])
caps("alias_var_run_read", "R-CAP-FS", "scope_symlink_refused", ["fs:read:/var/run/**"])
caps("alias_lib_write_glob", "R-BASE-1", "scope_too_broad", ["fs:write:/lib/**"])

# ---------------------------------------------------------------- F. reserved trees (R-BASE-4, R-CAP-*)
for i, rel in enumerate(["executors", "executors/other", "executors/**", "executors/other/main.py", "integrations",
                         "integrations/cal", "creds/mail", "creds/mail/work.json", "creds/**", "dialog", "dialog/alice",
                         "undo", "undo/t1", "undo/*", ""]):
    caps("reserved_read_%02d" % i, "R-BASE-4", "scope_reserved_tree",
         ["fs:read:@ROOT@/%s" % rel if rel else "fs:read:@ROOT@"])
for i, rel in enumerate(["executors/ex", "executors/ex/data", "integrations/cal", "dialog/bob", "undo/t2"]):
    caps("reserved_write_%d" % i, "R-BASE-4", "scope_reserved_tree", ["fs:write:@ROOT@/%s" % rel])

# ---------------------------------------------------------------- G. read-only base trees never writable (R-BASE-4/5)
for i, rel in enumerate(["rt/runtime", "rt/runtime/x", "rt", "venv", "venv/lib/site-packages", "venv/**",
                         "lib18/i18n", "lib18", "lexicon.db", "rt/runtime/**"]):
    caps("readonly_write_%d" % i, "R-BASE-4", "scope_too_broad", ["fs:write:@ROOT@/%s" % rel])
caps("readonly_write_dist_packages", "R-BASE-4", "scope_too_broad", ["fs:write:/usr/lib/python3/dist-packages"])

# ---------------------------------------------------------------- H. arg: scopes narrow, never widen (R-ARG-1)
def arg(id, expect, within, value, mode="write", rule="R-ARG-1", **kw):
    caps(id, rule, expect, ["fs:%s:arg:p" % mode], fields={"arguments": {"p": {"within": within}}},
         invocation={"arguments": {"p": value}}, **kw)


arg("arg_within_root_write", "scope_too_broad", ["/**"], "/")
arg("arg_within_usr_write", "scope_too_broad", ["/usr/**"], "/usr/bin")
arg("arg_within_etc_file_write", "scope_too_broad", ["/etc/passwd"], "/etc/passwd")
arg("arg_within_etc_glob_write", "scope_too_broad", ["/etc/**"], "/etc/shadow")
arg("arg_within_root_read", "scope_too_broad", ["/"], "/etc", mode="read")
arg("arg_within_proc_read", "scope_too_broad", ["/proc/**"], "/proc/1/environ", mode="read")
arg("arg_within_home_read", "scope_too_broad", ["/home/**"], "/home", mode="read")
arg("arg_within_second_broad", "scope_too_broad", ["@ROOT@/data/w/**", "/**"], "sub")
arg("arg_within_runtime_write", "scope_too_broad", ["@ROOT@/rt/runtime/**"], "x")
arg("arg_within_reserved", "scope_reserved_tree", ["@ROOT@/executors/**"], "other", mode="read")
arg("arg_within_reserved_creds", "scope_reserved_tree", ["@ROOT@/creds/**"], "mail/work.json", mode="read")
arg("arg_within_symlink_etc", "scope_symlink_refused", ["@ROOT@/scope_etc/**"], "cron.d")
arg("arg_within_symlink_root", "scope_symlink_refused", ["@ROOT@/scope_root/**"], "etc", mode="read")
arg("arg_within_var_run", "scope_symlink_refused", ["/var/run/**"], "user", mode="read")
arg("arg_within_not_normalized", "scope_not_normalized", ["/srv/../etc/**"], "x")
arg("arg_within_relative", "scope_relative", ["srv/**"], "x")
arg("arg_within_control", "scope_nul", ["@ROOT@/data/\x1b/**"], "x")
for i, value in enumerate(["../../../etc", "/etc/passwd", "sub/../../../outside", "//etc", "/", "..",
                           "@ROOT@/data/notes/../../outside/secret", "@ROOT@/data/notesX"]):
    arg("arg_escapes_%d" % i, "arg_escapes_scope", ["@ROOT@/data/notes/**"], value, mode="read")
for i, value in enumerate(["etc", "run", "usr", "root", "up", "exec", "own", "runtime", "creds", "dangling_etc",
                           "proc", "lib", "etc/passwd", "up/outside"]):
    arg("arg_symlink_%02d" % i, "arg_symlink_escapes", ["@ROOT@/data/notes/**"], value, mode="read")
arg("arg_symlink_write_etc", "arg_symlink_escapes", ["@ROOT@/data/w/**"], "etc")
arg("arg_symlink_write_runtime", "arg_symlink_escapes", ["@ROOT@/data/w/**"], "runtime/x")
for i, value in enumerate(["", 5, ["x"], {"a": 1}, "~/x", "~root", True, "x" * 1100]):
    arg("arg_value_invalid_%d" % i, "arg_value_invalid", ["@ROOT@/data/notes/**"], value, mode="read")
for i, value in enumerate(["a\nb", "a\x00b", "sub\u202e", "\x1b[2J"]):
    arg("arg_value_control_%d" % i, "scope_nul", ["@ROOT@/data/notes/**"], value, mode="read")
caps("invocation_unknown_key", "R-ARG-1", "invocation_invalid", [], invocation={"arguments": {}, "extra_binds": ["/"]})
caps("invocation_arguments_list", "R-ARG-1", "invocation_invalid", [], invocation={"arguments": ["/"]})
caps("invocation_too_many_arguments", "R-ARG-1", "invocation_invalid", [],
     invocation={"arguments": dict(("a%d" % i, "x") for i in range(65))})

# ---------------------------------------------------------------- I. host-context paths reached by a capability
for res, mode in [("etcres", "write"), ("procres", "read"), ("runtimeres", "write"), ("credsres", "read"),
                  ("rootres", "read"), ("runres", "read"), ("venvres", "write"), ("parentres", "read"),
                  ("i18nres", "write")]:
    caps("host_resource_%s_%s" % (res, mode), "R-CAP-METNOS", "host_path_refused", ["metnos:%s:%s" % (mode, res)])
caps("metnos_unknown_resource", "R-CAP-METNOS", "metnos_resource_unknown", ["metnos:write:payroll"])
for idx in ("procidx", "rootidx", "homeidx", "devidx", "execidx"):
    caps("host_index_" + idx, "R-CAP-INDEX", "host_path_refused", ["index:read:" + idx])
for i, cap in enumerate(["provider:access:etclink", "provider:access:sib", "skill:up", "skill:rootlink"]):
    caps("host_integration_%d" % i, "R-CAP-PROVIDER", "host_path_refused", [cap])
for i, cap in enumerate(["mail:read:evil", "mail:read:evil2", "mail:read:sib", "mail:read:mapped",
                         "mail:read:mappedroot", "mail:read:mappedexec"]):
    caps("host_mail_%d" % i, "R-CAP-MAIL", "host_path_refused", [cap])
for sender in ("mallory", "sib", "up"):
    caps("host_dialog_" + sender, "R-CAP-DIALOG", "host_path_refused", ["dialog.user_input"],
         invocation={"sender": sender})
for turn in ("t_etc", "t_up", "t_sib"):
    add("host_undo_" + turn, "R-CAP-UNDO", "host_path_refused", data=M(inverse={"model": "restore_content"}),
        invocation={"turn_id": turn})
for name in ("evil", "sib", "up"):
    add("host_executor_folder_" + name, "R-BASE-4", "host_path_refused", data=M(name=name))
for i, (key, value) in enumerate([("runtime_dir", "/"), ("runtime_dir", "@ROOT@"),
                                  ("python_prefix", "@ROOT@/executors"), ("python_prefix", "/home"),
                                  ("python_package_roots", ["/proc/self"]),
                                  ("python_package_roots", ["@ROOT@/creds"]), ("i18n_dbs", ["/dev/shm"]),
                                  ("lexicon_dbs", ["@ROOT@/integrations"]), ("i18n_dbs", ["@ROOT@/scope_root"]),
                                  ("runtime_dir", "@ROOT@/scope_proc")]):
    add("host_base_%d" % i, "R-BASE-4", "host_path_refused", data=M(), host={key: value})
for i, paths in enumerate([["@ROOT@/scope_proc"], ["/"], ["@ROOT@/executors"]]):
    caps("host_systemd_read_%d" % i, "R-CAP-SYS", "host_path_refused", ["systemd:read"],
         host={"systemd_read_paths": paths})

# ---------------------------------------------------------------- J. the undo exception (R-FAIL-2, R-SEC-5)
UNDO = {"name": "undo_last_turn", "origin": "metnos/core", "owner": "metnos", "revision": 12,
        "capabilities": ["system:undo"], "files": ["main.py", "restore.py"], "digest": "@DIGEST@"}
CLEAN = {"executors_dir": "@ROOT@/undo_clean"}
for field, value in [("revision", 13), ("revision", "12.1"), ("origin", "evil/fork"), ("owner", "mallory"),
                     ("files", ["main.py"]), ("files", ["main.py", "restore.py", "json.py"]),
                     ("capabilities", ["system:undo", "net:http"]), ("capabilities", ["system:undo", "fs:write:/etc"]),
                     ("digest", "sha256:" + "00" * 32), ("entrypoint", "restore.py")]:
    add("undo_%s_%s" % (field, "_".join(value) if isinstance(value, list) else value), "R-FAIL-2",
        "undo_exception_mismatch", data=dict(UNDO, **{field: value}), host=CLEAN)
for field in ("revision", "owner", "digest", "files"):
    data = dict(UNDO)
    del data[field]
    add("undo_without_" + field, "R-FAIL-2", "undo_exception_mismatch", data=data, host=CLEAN)
add("undo_pin_lacks_revision", "R-FAIL-2", "undo_exception_mismatch", data=UNDO,
    host=dict(CLEAN, undo_exception={"name": "undo_last_turn", "origin": "metnos/core", "owner": "metnos",
                                     "capability": "system:undo", "files": ["main.py", "restore.py"],
                                     "digest": "@DIGEST@"}))
add("undo_no_pin", "R-FAIL-2", "undo_exception_mismatch", data=UNDO, host=dict(CLEAN, undo_exception=None))
add("undo_planted_module", "R-FAIL-2", "undo_files_invalid", data=UNDO, host={"executors_dir": "@ROOT@/undo_planted"})
add("undo_symlinked_file", "R-FAIL-2", "undo_files_invalid", data=UNDO, host={"executors_dir": "@ROOT@/undo_linked"})
add("undo_bytecode_cache", "R-FAIL-2", "undo_files_invalid", data=UNDO, host={"executors_dir": "@ROOT@/undo_cache"})
add("undo_missing_folder", "R-FAIL-2", "undo_files_invalid", data=UNDO)
add("undo_self_declared_digest", "R-FAIL-2", "undo_exception_mismatch",
    data=dict(UNDO, digest="sha256:" + "ab" * 32),
    host=dict(CLEAN, undo_exception=dict(UNDO, capabilities=None, capability="system:undo",
                                         digest="sha256:" + "ab" * 32)))


# ---------------------------------------------------------------- K. what a path names, not only where it leads
# A socket or FIFO is a channel to a host process: a read-only bind still lets the sandbox connect
# to it and send commands (R-CAP-FS: fs:read is read access, R-NET-1/R-BASE-6: no host IPC).
for i, rel in enumerate(["special/ctl.sock", "special/fifo", "scope_sock", "scope_fifo", "special/ctl.sock/**"]):
    caps("special_file_read_%d" % i, "R-CAP-FS", "scope_special_file", ["fs:read:@ROOT@/%s" % rel])
caps("special_file_write", "R-CAP-FS", "scope_special_file", ["fs:write:@ROOT@/special/fifo"])
arg("special_file_arg", "scope_special_file", ["@ROOT@/special/**"], "ctl.sock", mode="read", rule="R-CAP-FS")
arg("special_file_arg_link", "scope_special_file", ["@ROOT@/special/**"], "sock_link", mode="read", rule="R-CAP-FS")
# /run is where host daemons keep their sockets (systemd, D-Bus, container engines, user sessions):
# no fs: scope below it; host state is reached through systemd:read / system:read (R-CAP-SYS).
for i, scope in enumerate(["/run/systemd", "/run/dbus/system_bus_socket", "/run/user/0", "/run/docker.sock",
                           "/run/lock/**", "/run/systemd/private"]):
    caps("runtime_tree_read_%d" % i, "R-CAP-SYS", "scope_runtime_tree", ["fs:read:" + scope])
for i, scope in enumerate(["/var/run/docker.sock", "/var/run/dbus/**"]):     # the /var/run -> /run alias
    caps("runtime_tree_alias_%d" % i, "R-CAP-FS", "scope_symlink_refused", ["fs:read:" + scope])
caps("runtime_tree_write", "R-CAP-SYS", "scope_runtime_tree", ["fs:write:/run/metnos"])
caps("runtime_tree_symlink", "R-CAP-FS", "scope_symlink_refused", ["fs:read:@ROOT@/scope_run_sub"])
arg("runtime_tree_within", "scope_runtime_tree", ["/run/user/**"], "0/bus", mode="read", rule="R-CAP-SYS")
# A file with several names (hard links): realpath cannot tell where its other names live, so
# writing it may write a read-only base tree (here the runtime) and reading it may read a
# reserved tree (here a mail credential file).
caps("hard_link_write", "R-BASE-4", "scope_hard_link", ["fs:write:@ROOT@/data/w/hardlink"])
caps("hard_link_read_credentials", "R-BASE-4", "scope_hard_link", ["fs:read:@ROOT@/data/notes/creds_hl"])
arg("hard_link_arg", "scope_hard_link", ["@ROOT@/data/w/**"], "hardlink", rule="R-BASE-4")
arg("hard_link_arg_read", "scope_hard_link", ["@ROOT@/special/**"], "shadow_hl", mode="read", rule="R-BASE-4")

# ---------------------------------------------------------------- L. 'within' patterns narrow (R-ARG-1)
# A 'within' scope written as a glob is the set of paths it matches: the value must be at or below
# one of them, as written and resolved (a fixed scope's glob is reduced to its root, R-CAP-FS; an
# argument only narrows). Its root alone would let the value widen to the whole folder.
for i, (within, value) in enumerate([("*.md", "sub"), ("*.md", "@ROOT@/data/notes"), ("*/b.md", "a.md"),
                                     ("{a,b}.md", "sub/b.md"), ("[ab].md", "sub"), ("?.md", "secret.key"),
                                     ("sub/*", "@ROOT@/data/notes/a.md"), ("**/b.md", "a.md"),
                                     ("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}.md", "aaaaaaa.md"),
                                     ("**/a/**/a/**/a/**/a/**/a/**/b", "a/" * 400 + "c")]):
    arg("within_pattern_%d" % i, "arg_escapes_scope", ["@ROOT@/data/notes/" + within], value, mode="read")
arg("within_pattern_symlink", "arg_symlink_escapes", ["@ROOT@/data/notes/*.md"], "key.md", mode="read")
arg("within_pattern_write", "arg_escapes_scope", ["@ROOT@/data/w/*.txt"], "sub")

# ---------------------------------------------------------------- M. output stays short (R-SCOPE-1: input is data)
# Every refused path is quoted in its message: long paths, many of them, or through symlinks (the
# message names both forms) must not make the answer larger than the question.
LONG = "/".join(["a" * 200] * 4)
caps("many_long_symlinked_scopes", "R-CAP-FS", "scope_symlink_refused",
     ["fs:write:@ROOT@/scope_etc/%02d%s" % (i, LONG) for i in range(70)])
caps("many_long_refused_scopes", "R-BASE-1", "scope_too_broad",
     ["fs:write:/etc/%02d%s" % (i, LONG) for i in range(75)])
arg("long_within_and_value", "arg_escapes_scope", ["@ROOT@/data/notes/" + LONG + "/*.md"],
    "/etc/" + LONG, mode="read")

# ------------------------------------------------------------ N. reserved trees inside a base tree (R-BASE-1, R-BASE-4)
# Every sandbox mounts the system trees read-only: a credential store, the integrations, the
# dialog or undo folders, or the executors folder configured inside one would be readable whole by
# every executor, whatever its capabilities (R-CAP-MAIL: never the whole credential store).
for i, (key, value) in enumerate([("mail_credentials_dir", "/etc/metnos/credentials/mail"),
                                  ("integrations_dir", "/usr/share/metnos/integrations"),
                                  ("executors_dir", "/usr/lib/metnos/executors"), ("dialog_dir", "/etc/metnos/dialog"),
                                  ("undo_root", "/sbin/metnos-undo"), ("mail_credentials_dir", "/etc"),
                                  ("mail_credentials_dir", "@ROOT@/scope_etc/metnos-mail"),
                                  ("integrations_dir", "/lib/metnos/integrations")]):
    add("reserved_in_base_%d" % i, "R-BASE-4", "host_path_refused", data=M(), host={key: value})

# ---------------------------------------------------------------- O. shared folders found on the host (R-SEC-2)
# A folder every user may write into (mode 1777: /tmp, /var/tmp, /dev/shm, /run/lock, or any such
# folder) is a shared tree like /tmp, whatever its name: other users' and services' files are in it.
for i, cap in enumerate(["fs:write:/var/tmp", "fs:read:/var/tmp/**", "fs:write:@ROOT@/shared_tmp",
                         "fs:read:@ROOT@/shared_tmp/**"]):
    caps("shared_folder_%d" % i, "R-SEC-2", "scope_too_broad", [cap])
caps("shared_folder_symlink", "R-CAP-FS", "scope_symlink_refused", ["fs:write:@ROOT@/scope_shared"])
arg("shared_folder_within", "scope_too_broad", ["@ROOT@/shared_tmp/**"], "x", rule="R-SEC-2")
add("shared_folder_resource", "R-CAP-METNOS", "host_path_refused", data=M(["metnos:write:tmpres"]),
    host={"resources": {"tmpres": "/var/tmp"}})


def _check():
    ids = [e.id for e in CORPUS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    names = [e.file_name for e in CORPUS]
    assert len(names) == len(set(names))


_check()
