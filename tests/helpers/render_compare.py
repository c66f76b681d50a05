#!/usr/bin/env python3
"""Every profile a tree's renderer makes of the benchmark's inputs, as sorted JSON: the proof that a change
made for speed changed no behaviour (run it with the tree before and the tree after, compare the outputs byte
for byte; scripts/dump-diagnostics.py is the same proof for every diagnostic and the hostile corpora).

    python tests/helpers/render_compare.py TREE OUT.json

TREE is a checkout (its benchmarks/bench-render.py and its core are used). Rendered, each as the whole result
(decision, refusal, argv, command line, mounts, descriptors, diagnostics): the bench's 13 manifests with four
invocations, three times on one host context, on a fresh one each time, and with an explicit bwrap; every
entry of both hostile corpora, the bench's generated worst cases and its link chains, on a fresh context, on
one shared per host, and without the invocation. Paths are fixed (/tmp/render-compare/...), so two runs
compare byte for byte; inode numbers and this process's pid are masked.
"""
import glob
import json
import os
import re
import runpy
import shutil
import sys
import tempfile

WORK = "/tmp/render-compare"
ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}


def main(tree, out_path):
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    counter = [0]

    def fixed_mkdtemp(prefix="tmp", **_kw):
        counter[0] += 1
        path = os.path.join(WORK, "%s%d" % (prefix, counter[0]))
        os.makedirs(path)
        return path
    tempfile.mkdtemp = fixed_mkdtemp
    bench_file = os.path.join(tree, "benchmarks", "bench-render.py")
    if not os.path.exists(bench_file):     # a tree from before benchmarks/ kept it in scripts/
        bench_file = os.path.join(tree, "scripts", "bench-render.py")
    bench = runpy.run_path(bench_file, run_name="bench")
    sys.path.insert(0, os.path.join(tree, "tests"))
    sys.path.insert(0, os.path.join(tree, "scripts"))
    import core_path
    core_path.use_core()
    import yaml

    from corpus import hostile_bwrap, hostile_tree
    if "P" in bench:               # a tree from before its modules were imported by their own names (issue 44)
        profile, host_context, model = bench["P"], bench["HC"], bench["MD"]
        host_layout = bench.get("HL", host_context)   # before host_layout.py, the layout was in host_context.py
    else:
        profile, host_context = bench["profile"], bench["host_context"]
        model, host_layout = bench["model"], bench["host_layout"]
    results = []
    root = bench["build_tree"]()
    host = {"runtime_dir": root + "/runtime", "executors_dir": root + "/executors", "python_prefix": root + "/venv",
            "python_executable": "/usr/bin/python3",
            "resources": dict((k, root + "/sheets") for k in host_layout.DEFAULT_HOST["resources"]),
            "indexes": {"docs": root + "/index/docs"}, "integrations_dir": root + "/integrations",
            "mail_credentials_dir": root + "/mail", "dialog_dir": root + "/dialog", "undo_root": root + "/undo",
            "writable_roots": [root, "/var/lib/metnos"]}
    docs = []
    for path in sorted(glob.glob(os.path.join(tree, "examples", "manifests", "*.yml"))):
        with open(path) as handle:
            docs.append(yaml.safe_load(handle))
    docs += [
        {"name": "ex", "origin": "bench", "capabilities": ["fs:read:%s/data/notes/**" % root,
                                                           "fs:write:%s/reports" % root, "metnos:read:sheets"]},
        {"name": "ex", "origin": "bench", "capabilities": ["fs:read:arg:p", "net:http"],
         "arguments": {"p": {"within": [root + "/data/notes/**"]}}},
        {"name": "ex", "origin": "bench", "capabilities": ["provider:access:cal", "mail:read:work",
                                                           "dialog.user_input", "index:read:docs"],
         "inverse": {"model": "restore"}},
    ]
    invocations = [{"arguments": {"p": "sub"}, "sender": "alice", "turn_id": "t1"}, {}, None,
                   {"arguments": {"p": "../x"}}]
    shared = host_context.HostContext(host)
    for round_ in range(3):
        for i, doc in enumerate(docs):
            for j, inv in enumerate(invocations):
                results.append(["bench", round_, i, j, "shared", profile.render_safe(doc, shared, inv)])
                fresh = host_context.HostContext(host)
                results.append(["bench", round_, i, j, "fresh", profile.render_safe(doc, fresh, inv)])
                results.append(["bench", round_, i, j, "bwrap", profile.render_safe(doc, shared, inv, ACTIVE)])
    base = fixed_mkdtemp("hostile-")
    _root, first_host, entries = hostile_tree.materialize(base)
    cases = [(e.id, (lambda path=path: model.FileSource(path)), inv, h) for e, path, h, inv in entries]
    second = os.path.join(base, "second")
    os.makedirs(second)
    _root2, _host2, entries2 = hostile_bwrap.materialize(second)
    cases += [(e.id, (lambda path=path: model.FileSource(path)), inv, h) for e, path, h, inv, _bw in entries2]
    cases += [(name, factory, inv, first_host) for name, factory, inv in bench["worst_cases"](base)]
    cases += bench["chain_cases"](base)
    contexts = {}
    for name, factory, inv, h in cases:
        results.append(["case", name, "fresh", profile.render_safe(factory(), host_context.HostContext(h), inv)])
        ctx = contexts.setdefault(json.dumps(h, sort_keys=True), host_context.HostContext(h))
        results.append(["case", name, "shared", profile.render_safe(factory(), ctx, inv)])
        results.append(["case", name, "shared_without_invocation", profile.render_safe(factory(), ctx, {})])
    text = json.dumps(results, sort_keys=True, indent=1, default=repr)
    text = re.sub(r'"(dev|ino)": \d+', r'"\1": 0', text)
    text = re.sub(r"/proc/\d+", "/proc/PID", text)
    with open(out_path, "w") as handle:
        handle.write(text)
    print("%s: %d renders, %d bytes" % (out_path, len(results), len(text)))
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]), sys.argv[2])
