#!/usr/bin/env python3
"""Benchmark: in-process rendering throughput (manifest dict -> validated Manifest -> Profile -> argv),
and the time and peak memory of the worst hostile inputs.

    python benchmarks/bench-render.py [--seconds 3] [--no-hostile]

Renders the bundled example manifests plus synthetic ones in a loop on one host context
(as the runtime does per invocation) and prints manifests per second. Then renders every entry
of the hostile corpus (tests/corpus) and a set of generated worst cases (alias bombs, maximal
files, deep nesting, a 10 MB file, object graphs with shared references, the largest accepted
manifest with the longest paths), each from its file or object, and prints the slowest and the
most memory-hungry (tracemalloc peak, in a separate pass so that tracing does not inflate the
times; each time also as CPU time, which a loaded machine does not inflate). Not a test: the figures go in
docs/benchmarks.md; CI never times anything.
"""
import argparse
import glob
import json
import os
import resource
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "module_utils"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import yaml  # noqa: E402

from corpus.hostile_tree import BROKER  # noqa: E402  # the reviewed undo broker's files, one definition
from helpers.hostile import bwrap_status  # noqa: E402  # as the second set's unit test renders it
from metnos_sandbox.profile import host_context, host_layout, model, reader, renderer, undo

RENDERED = ("wrapped", "direct")
UNDO = "undo_last_turn"


def build_tree():
    root = tempfile.mkdtemp(prefix="metnos-bench-")
    for d in ["runtime", "venv", "executors/ex", "data/notes/sub", "reports", "integrations/cal", "mail",
              "dialog/alice", "undo/t1", "sheets", "index/docs"] + ["res/" + k for k
                                                                    in host_layout.DEFAULT_HOST["resources"]]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for f in ["mail/work.json", "data/notes/a.md"]:
        open(os.path.join(root, f), "w").close()
    return root


def undo_exception(root, manifest):
    """The example undo broker's files planted in the tree, and the exception an admin pins for it after review
    (R-FAIL-2): its fields and the digest of those files (without it the example is refused,
    undo_exception_mismatch, and until issue 55 the bench timed that refusal as a render)."""
    broker = os.path.join(root, "executors", UNDO)
    os.makedirs(broker)
    for name, text in BROKER.items():
        with open(os.path.join(broker, name), "w") as handle:
            handle.write(text)
    digest, problem = undo.executor_digest(os.path.join(root, "executors", UNDO), sorted(BROKER))
    if problem:
        raise SystemExit("the undo broker's digest: %s" % problem)
    return {"name": UNDO, "origin": manifest["origin"], "revision": manifest["revision"], "owner": manifest["owner"],
            "capability": "system:undo", "files": sorted(BROKER), "digest": digest}


def worst_cases(base):
    """Generated inputs at and beyond every limit: (name, source factory)."""
    laughs = "a: &a [" + ", ".join(["lol"] * 10) + "]\n" + "".join(
        "%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ", ".join(["*" + chr(97 + i)] * 10)) for i in range(20)) + \
        "name: x\norigin: o\n"
    files = {
        "billion_laughs_20_levels.yml": laughs,
        "max_size_flat_list.yml": "name: x\norigin: o\nx: [" + ",".join("a" for _ in range(4000)) + "]\n",
        "max_size_one_scalar.yml": "name: x\norigin: o\nx: '" + "y" * (model.MAX_MANIFEST_BYTES - 40) + "'\n",
        "max_size_comment.yml": "name: x\norigin: o\n#" + "y" * (model.MAX_MANIFEST_BYTES - 30) + "\n",
        "max_size_flow_mapping.yml": "{" + ",".join("k%d: v" % i for i in range(2000)) + "}\n",
        "max_size_json_keys.json": json.dumps(dict(("k%05d" % i, i) for i in range(4000))),
        "deep_brackets_64k.yml": "[" * model.MAX_MANIFEST_BYTES,
        "deep_json_64k.json": "[" * 30000 + "]" * 30000,
        "ten_megabytes.yml": "name: x\norigin: o\n" + "#" * 10 * 1024 * 1024 + "\n",
        "max_caps_long_paths.yml": "name: x\norigin: o\ncapabilities:\n" + "".join(
            "  - fs:read:/srv/%s%d\n" % ("a/" * 500, i) for i in range(model.MAX_CAPABILITIES)),
        "max_args_and_scopes.yml": "name: x\norigin: o\ncapabilities: [%s]\narguments:\n%s" % (
            ", ".join("'fs:write:arg:a%d'" % i for i in range(model.MAX_ARGUMENTS)),
            "".join("  a%d: {within: [%s]}\n" % (i, ", ".join("/srv/w%d/**" % j for j in range(model.MAX_SCOPES)))
                    for i in range(model.MAX_ARGUMENTS))),
    }
    out = []
    for name, text in files.items():
        path = os.path.join(base, name)
        with open(path, "w") as handle:
            handle.write(text)
        out.append((name, lambda path=path: model.FileSource(path), {}))
    shared = ["lol"] * 10
    for _ in range(9):
        shared = [shared] * 10
    out.append(("object_graph_shared_refs_1e9", lambda: {"name": "x", "origin": "o", "capabilities": shared}, {}))
    loop = []
    loop.append(loop)
    out.append(("object_graph_self_reference", lambda: {"name": "x", "origin": "o", "capabilities": loop}, {}))
    # 'within' globs built to make wildcard matching backtrack, every argument used twice, long values
    pattern = "/srv/notes/" + "*a" * 40 + "b/**/" + "*a" * 40 + "c"
    out.append(("max_within_patterns", lambda: {
        "name": "x", "origin": "o",
        "capabilities": ["fs:%s:arg:a%d" % (m, i) for m in ("read", "write") for i in range(model.MAX_ARGUMENTS)],
        "arguments": dict(("a%d" % i, {"within": [pattern + str(j) for j in range(model.MAX_SCOPES)]})
                          for i in range(model.MAX_ARGUMENTS))},
        {"arguments": dict(("a%d" % i, "/srv/notes/" + "a" * 500 + "/" + "a" * 400)
                           for i in range(model.MAX_ARGUMENTS))}))
    out.append(("max_invocation_values", lambda: {"name": "x", "origin": "o", "capabilities": ["fs:read:arg:p"],
                                                  "arguments": {"p": {"within": ["/srv/notes/**"]}}},
                {"arguments": dict(("a%d" % i, "v" * 1024) for i in range(host_layout.MAX_INVOCATION_ARGUMENTS))}))
    return out


def chain_cases(base):
    """Link chains planted in a data folder (the second hostile set's worst work): 128 scopes, each into
    its own chain of 39 links (the most the kernel resolves, all distinct), and 128 scopes into one
    1,000-link chain; (name, factory, invocation, host)."""
    root = os.path.join(base, "chains")
    os.makedirs(os.path.join(root, "data", "w"))
    for c in range(128):
        folder = os.path.join(root, "data", "c%d" % c)
        os.makedirs(folder)
        for i in range(39):
            os.symlink("l%d" % (i + 1) if i < 38 else "../w", os.path.join(folder, "l%d" % i))
    os.makedirs(os.path.join(root, "data", "long"))
    for i in range(1000):
        os.symlink("l%d" % (i + 1) if i < 999 else "../w", os.path.join(root, "data", "long", "l%d" % i))
    host = {"runtime_dir": root + "/rt", "executors_dir": root + "/ex", "python_executable": "/usr/bin/python3",
            "python_prefix": root + "/venv", "writable_roots": [root + "/data"]}
    distinct = ["fs:read:%s/data/c%d/l0" % (root, c) for c in range(128)]
    one_chain = ["fs:write:%s/data/long/l%d" % (root, i * 7) for i in range(128)]
    return [("128_scopes_into_39_link_chains", lambda: {"name": "x", "origin": "o", "capabilities": distinct}, {},
             host),
            ("128_scopes_into_one_1000_link_chain", lambda: {"name": "x", "origin": "o", "capabilities": one_chain},
             {}, host)]


# What each generated worst case answers (its refusal code, or its decision): checked on every render.
GENERATED = {
    "billion_laughs_20_levels.yml": "manifest_too_many_nodes",
    "max_size_flat_list.yml": "manifest_invalid",
    "max_size_one_scalar.yml": "manifest_string_too_long",
    "max_size_comment.yml": "wrapped",
    "max_size_flow_mapping.yml": "manifest_invalid",
    "max_size_json_keys.json": "manifest_too_many_nodes",
    "deep_brackets_64k.yml": "manifest_too_deep",
    "deep_json_64k.json": "manifest_too_deep",
    "ten_megabytes.yml": "manifest_too_large",
    "max_caps_long_paths.yml": "manifest_too_large",
    "max_args_and_scopes.yml": "scope_outside_writable_roots",
    "object_graph_shared_refs_1e9": "manifest_too_many_nodes",
    "object_graph_self_reference": "manifest_too_deep",
    "max_within_patterns": "arg_escapes_scope",
    "max_invocation_values": "wrapped",
    "128_scopes_into_39_link_chains": "wrapped",
    "128_scopes_into_one_1000_link_chain": "scope_too_many_links",
}


def hostile(seconds_note):
    """Time and tracemalloc peak of every hostile input; prints the worst ones."""
    import tracemalloc
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import core_path
    core_path.use_core()            # the corpus trees compute the undo broker's digest with the core
    from corpus import hostile_bwrap, hostile_tree
    base = tempfile.mkdtemp(prefix="metnos-bench-hostile-")
    _root, _host, entries = hostile_tree.materialize(base)
    expected = dict(GENERATED)
    expected.update((e.id, e.expect) for e, _path, _host, _inv in entries)
    cases = [(e.id, (lambda path=path: model.FileSource(path)), inv, host) for e, path, host, inv in entries]
    second = os.path.join(base, "second")
    os.makedirs(second)
    _root2, _host2, entries2 = hostile_bwrap.materialize(second)
    cases += [(e.id, (lambda path=path: model.FileSource(path)), inv, host) for e, path, host, inv, _bw in entries2]
    expected.update((e.id, e.expect) for e, _path, _host, _inv, _bw in entries2)
    # the second set's entries judge the bwrap each names (its folder is read-only whatever the roots say): rendered
    # without it, as until issue 55, some were wrapped instead of refused and timed as such
    statuses = dict((e.id, bwrap_status(bwrap)) for e, _path, _host, _inv, bwrap in entries2)
    count = len(cases)
    cases += [(name, factory, inv, _host) for name, factory, inv in worst_cases(base)]
    cases += chain_cases(base)
    renderer.render_safe({"name": "x", "origin": "o"},
                         host_context.HostContext(_host))          # imports and caches warm
    reader.decode("a: 1\n")
    timed = []
    for name, factory, inv, host in cases:
        ctx = host_context.HostContext(host)
        start, cpu = time.perf_counter(), time.process_time()
        prof = renderer.render_safe(factory(), ctx, inv, statuses.get(name))
        timed.append((time.perf_counter() - start, name, prof["refusal"] or prof["decision"],
                      time.process_time() - cpu))
        if timed[-1][2] != expected[name]:      # each answer checked: a wrong one is not the timing of that input
            raise SystemExit("hostile input %s: %s, not %s" % (name, timed[-1][2], expected[name]))
    peaks = []
    for name, factory, inv, host in cases:
        ctx = host_context.HostContext(host)
        source = factory()
        tracemalloc.start()
        renderer.render_safe(source, ctx, inv, statuses.get(name))
        peaks.append((tracemalloc.get_traced_memory()[1], name))
        tracemalloc.stop()
    timed.sort(reverse=True)
    peaks.sort(reverse=True)
    print("hostile inputs: %d (%d entries of the two corpora + %d generated worst cases)" % (
        len(cases), count, len(cases) - count))
    print("slowest: " + "; ".join("%s %.1f ms, %.1f ms CPU (%s)" % (n, t * 1000, c * 1000, d)
                                  for t, n, d, c in timed[:6]))
    print("largest tracemalloc peak: " + "; ".join("%s %.2f MiB" % (n, m / 1048576.0) for m, n in peaks[:6]))
    by_cpu = max(timed, key=lambda t: t[3])
    print("worst: %.1f ms wall, %.1f ms CPU (%s), %.2f MiB peak (limits: 1000 ms, 100 MiB); process max RSS %.1f MiB"
          % (timed[0][0] * 1000, by_cpu[3] * 1000, by_cpu[1], peaks[0][0] / 1048576.0,
             resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
    shutil.rmtree(base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--no-hostile", action="store_true")
    args = ap.parse_args()
    root = build_tree()
    docs = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "manifests", "*.yml"))):
        with open(path) as handle:
            docs.append(yaml.safe_load(handle))
    pinned = [undo_exception(root, doc) for doc in docs if doc["name"] == UNDO]
    for doc in docs:
        if doc["name"] == UNDO:
            doc["digest"] = pinned[0]["digest"]
    host = host_context.HostContext({
        "runtime_dir": root + "/runtime", "executors_dir": root + "/executors", "python_prefix": root + "/venv",
        "python_executable": "/usr/bin/python3",
        # each resource its own folder (one folder under several names is a layout that crosses: refused)
        "resources": dict((k, root + "/res/" + k) for k in host_layout.DEFAULT_HOST["resources"]),
        "indexes": {"docs": root + "/index/docs"}, "integrations_dir": root + "/integrations",
        "mail_credentials_dir": root + "/mail", "dialog_dir": root + "/dialog", "undo_root": root + "/undo",
        "writable_roots": [root, "/var/lib/metnos"], "undo_exception": pinned[0]})
    docs += [
        {"name": "ex", "origin": "bench", "capabilities": ["fs:read:%s/data/notes/**" % root,
                                                           "fs:write:%s/reports" % root, "metnos:read:sheets"]},
        {"name": "ex", "origin": "bench", "capabilities": ["fs:read:arg:p", "net:http"],
         "arguments": {"p": {"within": [root + "/data/notes/**"]}}},
        {"name": "ex", "origin": "bench", "capabilities": ["provider:access:cal", "mail:read:work",
                                                           "dialog.user_input", "index:read:docs"],
         "inverse": {"model": "restore"}},
    ]
    invocation = {"arguments": {"p": "sub"}, "sender": "alice", "turn_id": "t1"}
    for doc in docs:         # each answer checked once: a refusal costs less than a render, never timed as one
        prof = renderer.render_safe(doc, host, invocation)
        if prof["decision"] not in RENDERED:
            raise SystemExit("%s (%s) is not rendered: %s %s" % (
                doc.get("name"), doc.get("origin"), prof["decision"], prof.get("refusal")))
    count = 0
    decisions = {}
    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline = start + args.seconds
    while time.perf_counter() < deadline:
        for doc in docs:
            prof = renderer.render_safe(doc, host, invocation)
            decisions[prof["decision"]] = decisions.get(prof["decision"], 0) + 1
            count += 1
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    print("rendered %d manifests in %.2f s wall / %.2f s CPU: %.0f manifests/s wall, %.0f per CPU-second "
          "(%d distinct manifests; decisions %s; python %s)"
          % (count, elapsed, cpu, count / elapsed, count / cpu, len(docs), decisions, sys.version.split()[0]))
    shutil.rmtree(root, ignore_errors=True)
    if not args.no_hostile:
        hostile(args.seconds)


if __name__ == "__main__":
    main()
