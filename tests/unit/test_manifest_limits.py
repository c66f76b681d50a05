"""Input is data: the loader's limits, exact grammar and message hygiene, one by one (the corpus in
tests/corpus covers them through every face; these pin each mechanism where it lives, including the
decoder the controller-side faces use before anything reaches a host)."""
import json
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics, files
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    globs,
    granters,
    host_context,
    manifest,
    model,
    reader,
    renderer,
    store,
)

LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    "%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ", ".join(["*" + chr(97 + i)] * 10)) for i in range(9)) + \
    "name: x\norigin: o\n"


def refusal(call):
    with pytest.raises(model.ManifestError) as err:
        call()
    return err.value.diagnostics[0]


def test_alias_expansion_counted_before_it_happens():
    """The decoder itself refuses (the filters hand its output to Ansible, which would expand it)."""
    assert refusal(lambda: reader.decode(LAUGHS))["code"] == "manifest_too_many_nodes"
    record = manifest.transport(LAUGHS)
    assert record[model.REFUSAL_KEY]["code"] == "manifest_too_many_nodes"
    assert renderer.render_safe(record, host_context.HostContext())["refusal"] == "manifest_too_many_nodes"
    assert refusal(lambda: reader.decode("a: &a [*a]\n"))["code"] == "manifest_too_many_nodes"
    small = reader.decode("a: &a [x, y]\nb: [*a, *a]\nname: n\n")          # aliases within the limit are fine
    assert small["b"] == [["x", "y"], ["x", "y"]]


def test_object_graphs_with_shared_or_cyclic_references():
    shared = ["lol"] * 10
    for _ in range(9):
        shared = [shared] * 10                                          # 10**10 leaves by reference
    assert refusal(lambda: manifest.from_dict({"name": "x", "origin": "o",
                                               "x": shared}))["code"] == "manifest_too_many_nodes"
    loop = []
    loop.append(loop)
    assert refusal(lambda: manifest.from_dict({"name": "x", "origin": "o", "x": loop}))["code"] == "manifest_too_deep"


@pytest.mark.parametrize("text,code", [
    ("name: x\nname: y\norigin: o\n", "manifest_duplicate_key"),
    ('{"name": "x", "origin": "o", "origin": "p"}', "manifest_duplicate_key"),
    ("name: x\norigin: !!str o\n", "manifest_yaml_unsupported"),
    ("name: x\norigin: o\n<<: {a: 1}\n", "manifest_yaml_unsupported"),
    ("name: x\n---\norigin: o\n", "manifest_yaml_unsupported"),
    ("name: x\nrevision: 017\n", "manifest_yaml_unsupported"),
    ("[" * 13 + "]" * 13, "manifest_too_deep"),
    ("[" * 100000, "manifest_too_large"),
    ("[" * 60000, "manifest_too_deep"),
    (b"\xff", "manifest_not_utf8"),
])
def test_decoder_refusals(text, code):
    assert refusal(lambda: reader.decode(text))["code"] == code


def test_depth_limit_is_exact():
    ok = "x: " + "[" * (model.MAX_DEPTH - 1) + "]" * (model.MAX_DEPTH - 1) + "\n"
    reader.decode(ok)
    deep = "x: " + "[" * model.MAX_DEPTH + "]" * model.MAX_DEPTH + "\n"
    assert refusal(lambda: reader.decode(deep))["code"] == "manifest_too_deep"


def test_values_keep_their_text():
    data = reader.decode("name: x\norigin: o\nrevision: 2020-01-01\nother: 1000\n")
    assert data["revision"] == "2020-01-01" and data["other"] == 1000


@pytest.mark.rule("R-SCOPE-1")
@pytest.mark.parametrize("number", ["1_2", "1_000", "+1_0", "0x1f", "017", "1:30"])
def test_numbers_two_yaml_versions_read_differently_are_refused(number):
    """``revision: 1_2`` is 12 for YAML 1.1 (PyYAML) and the string "1_2" for YAML 1.2 and JSON
    readers: the signed manifest would mean two things, so it is refused (quote it)."""
    got = refusal(lambda: reader.decode("name: x\norigin: o\nrevision: %s\n" % number))
    assert got["code"] == "manifest_yaml_unsupported", got
    assert number in got["message"] and "quote it" in got["message"]


@pytest.mark.parametrize("field,value,code", [
    ("revision", True, "manifest_invalid"), ("revision", -1, "manifest_invalid"),
    ("revision", 2 ** 63, "manifest_invalid"), ("name", "ex\n", "manifest_invalid"),
    ("origin", "o\u202e", "manifest_control_character"), ("owner", "root\n", "manifest_control_character"),
])
def test_exact_fields(field, value, code):
    data = {"name": "ex", "origin": "o", field: value}
    assert refusal(lambda: manifest.from_dict(data))["code"] == code


@pytest.mark.parametrize("cap", ["net:http\n", "mail:read:work\n", "provider:access:cal\n", "system:read\n",
                                 "dialog.user_input\n", "fs:read:/srv/x\n", "skill:x\u200b"])
def test_capabilities_matched_whole(cap):
    cap_obj, errors = manifest.parse_capability(cap)
    assert cap_obj is None and errors[0]["code"] in ("capability_unknown", "scope_nul")


@pytest.mark.parametrize("text", ["fs:read:/srv/{0.__class__.__mro__}", "fs:read:/srv/{x:>999999999}",
                                  "fs:read:/srv/%s%s%n", "net:{capability:>99999999}", "{" * 500,
                                  "fs:read:relative/{text:>999999999}"])
def test_manifest_text_is_never_a_template(text, tmp_path):
    prof = renderer.render_safe({"name": "ex", "origin": "o", "capabilities": [text]}, host_context.HostContext(), {})
    assert len(json.dumps(prof)) < 20000
    assert all(len(d["message"]) < 1000 for d in prof["diagnostics"])


def test_make_fills_only_registry_texts():
    d = diagnostics.make("manifest_invalid", wording="refused",
                         fill={"expected": "field {capability:>99999999} {0.__class__}"},
                         field="f", value="v", capability="x")
    assert d["message"] == "f: v is refused: field {capability:>99999999} {0.__class__}"
    with pytest.raises(TypeError):
        diagnostics.make("manifest_invalid", message="a call site's own text")
    d = diagnostics.make("bwrap_missing", path="{path:>999999999}")
    assert "{path:>999999999}" in d["message"] and len(d["message"]) < 500
    d = diagnostics.make("bwrap_setuid", bwrap_path="/x{y}")
    assert d["remediation"][1] == "chmod 0755 /x{y}"


def test_excerpt_is_short_and_escaped():
    assert len(diagnostics.excerpt("a" * 10 ** 7)) < 140
    assert "\n" not in diagnostics.excerpt("a\nb") and "\\n" in diagnostics.excerpt("a\nb")
    nested = [[["x" * 1000] * 1000] * 1000]
    assert len(diagnostics.excerpt(nested)) < 140


def test_mail_accounts_match_whole_names(tmp_path):
    store_dir = tmp_path / "mail"
    store_dir.mkdir()
    for name in ("bob.json", "bob.token", "bob.old.json", "bob", "bobby.json", "bob.json.bak"):
        (store_dir / name).write_text("x")
    host = host_context.HostContext({"mail_credentials_dir": str(store_dir), "python_executable": "/usr/bin/python3"})
    names = sorted(os.path.basename(p) for p in granters.mail_files(host, "bob"))
    assert names == ["bob.json", "bob.token"]
    assert [os.path.basename(p) for p in granters.mail_files(host, "bob.old")] == ["bob.old.json"]
    assert [os.path.basename(p) for p in granters.mail_files(host, "bob.json")] == ["bob.json.bak"]


def test_read_file_is_bounded_and_regular(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert refusal(lambda: reader.read_file(str(fifo)))["code"] == "manifest_fifo"   # never blocks; its own code
    assert refusal(lambda: reader.read_file("/dev/zero"))["code"] == "manifest_parse_error"
    big = tmp_path / "big"
    big.write_bytes(b"#" * (model.MAX_MANIFEST_BYTES + 1))
    assert refusal(lambda: reader.read_file(str(big)))["code"] == "manifest_too_large"
    link = tmp_path / "link"            # below /tmp (anyone can write it): a link is refused, never followed
    link.symlink_to(big)
    assert refusal(lambda: reader.read_file(str(link)))["code"] == "manifest_link_refused"


def test_store_is_the_one_format(tmp_path):
    prof = {"executor": "ex", "decision": "wrapped", "argv": ["bwrap", "--", "x"], "mounts": [], "namespaces": [],
            "network": None, "diagnostics": []}
    written = store.write(str(tmp_path), prof)
    assert written["changed"] and store.read_args(str(tmp_path), "ex") == prof["argv"]
    assert store.write(str(tmp_path), prof)["changed"] is False
    # A temporary file a killed earlier write left is removed by the next render even when the pair is current,
    # and said (issue 52). Mutation run: store.write without clean_folder - this fails.
    debris = tmp_path / ".ex.json.0123456789ab"
    debris.write_text('{"half": ')
    os.utime(str(debris), (files.RUN_STARTED - 60, files.RUN_STARTED - 60))
    again = store.write(str(tmp_path), prof)
    assert again["changed"] is False and not debris.exists()
    assert again["healed"] == ["ex: removed what an interrupted write left: %s" % debris]
    with pytest.raises(store.StoreError):
        store.write(str(tmp_path), dict(prof, argv=["bwrap", "a\nb"]))
    with pytest.raises(store.StoreError):
        store.paths(str(tmp_path), "../x")
    (tmp_path / "evil.args").symlink_to("/etc/hostname")
    assert store.read_args(str(tmp_path), "evil") is None                     # not followed


def test_within_component_match_is_fnmatch_without_regular_expressions():
    """manifest._component_match (bounded, no regex) decides like fnmatch.fnmatchcase on a seeded
    sample of patterns and names built from the glob syntax; a pattern that would backtrack runs
    out of its step budget instead of running long."""
    import fnmatch
    import random
    rng = random.Random(10)
    for _ in range(5000):
        pat = "".join(rng.choice("ab.[]!-*?xc") for _ in range(rng.randint(0, 7)))
        name = "".join(rng.choice("ab.[]!-xc") for _ in range(rng.randint(0, 7)))
        assert globs.component_match(name, pat, [10 ** 9]) is fnmatch.fnmatchcase(name, pat), (pat, name)
    assert globs.component_match("a" * 1000, "*a" * 400 + "b", [1000]) is None
    assert globs.glob_covers(["x"], ["{a,b}" * 7]) is None                    # 128 alternatives > 64
