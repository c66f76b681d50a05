"""The metnos_audit transport (module_utils/metnos_sandbox/audit/transport.py, action_plugins/metnos_audit.py):
one message, carried on stdin (pipelining connections) or as the arguments of one shell-less command
(podman, docker: nothing written on the host, tests/system/test_audit_fleet.py checks the hosts stay
byte-identical); the payload self-contained (every module a shipped module imports is shipped); the
answer framed by a one-time token, so that nothing else on stdout is taken for it; no work when the
action plugin is imported.

The framing tests run the real bootstrap with this machine's python3 and a two-line stand-in core
(``metnos_sandbox.audit.host_audit.audit_host`` echoing its options): the real audit would probe this machine,
which the system tests do on real hosts (tests/system/test_audit_transport.py)."""
import ast
import base64
import builtins
import fcntl
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time
import zlib

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import transport
from helpers import faces
from helpers.paths import CORE, ROOT

PACKAGES = ["metnos_sandbox", "metnos_sandbox.audit"]  # a flat stand-in core


def _core(audit_source):
    """A stand-in core: the two packages and ``metnos_sandbox.audit.host_audit`` of ``audit_source``."""
    return zlib.compress(json.dumps({"metnos_sandbox": "", "metnos_sandbox.audit": "",  # a flat stand-in core
                                     "metnos_sandbox.audit.host_audit": audit_source, transport.PACKAGES: PACKAGES})
                         .encode("utf-8"))


STAND_IN = _core("def audit_host(params, trust_store=None):\n    return {'schema': 'x', 'echo': params}\n")


def _bootstrap(data, wrapper="", argv=False):
    """Run the real bootstrap under ``sh -c``, ``wrapper`` first (a banner, a stray brace)."""
    if argv:
        command = transport.argv_command("python3", data)
        return subprocess.run(["sh", "-c", wrapper + command], capture_output=True, text=True, timeout=60)
    command = wrapper + transport.stdin_command("python3")
    return subprocess.run(["sh", "-c", command], input=data, capture_output=True, timeout=60)


def test_payload_travels_as_arguments_of_one_command():
    """Over podman/docker the message goes as arguments of one shell-less command: every argument stays under
    Linux's MAX_ARG_STRLEN (128 KiB) and the whole far under ARG_MAX, so nothing is written on the host."""
    data = transport.message(transport.new_frame(), {"unit": "metnos.service"}, transport.build_payload(CORE))
    argv = shlex.split(transport.argv_command("/usr/bin/python3", data))
    assert argv[:5] == ["/usr/bin/python3", "-I", "-S", "-c", transport.BOOTSTRAP]
    assert base64.b64decode("".join(argv[5:])) == data
    assert max(len(a.encode("utf-8")) for a in argv) < 128 * 1024
    assert sum(len(a) for a in argv) < 2 * 1024 * 1024


def test_the_arguments_carrier_runs_under_the_hosts_timeout_with_a_deadline():
    """podman/docker (issue 52): with a deadline the arguments start /bin/sh with a fixed script, and the
    interpreter and the message are its positional arguments, run as the connection runs them (argv, no shell
    of the caller): the message arrives whole, the answer is framed as without a deadline."""
    frame = transport.new_frame()
    data = transport.message(frame, {"unit": "metnos.service"}, STAND_IN)
    argv = shlex.split(transport.argv_command("python3", data, deadline=30))
    assert argv[:2] == ["/bin/sh", "-c"] and "timeout -s KILL 30" in argv[2]
    assert argv[3:8] == ["python3", "-I", "-S", "-c", transport.BOOTSTRAP]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert transport.unframe(proc.stdout, frame)["echo"] == {"unit": "metnos.service"}, proc.stderr


def test_a_hung_interpreter_over_the_arguments_carrier_is_killed_with_its_group(tmp_path):
    """The interpreter (a script that records its pid, starts a child and waits) hangs: at the deadline
    timeout(1) kills it and its child (exit status 137), as the stdin carrier's."""
    pids = tmp_path / "pids"
    hang = tmp_path / "hang-python"
    hang.write_text("#!/bin/sh\necho $$ > %s\nsleep 600 &\necho $! >> %s\nwait\n" % (pids, pids))
    hang.chmod(0o755)
    argv = shlex.split(transport.argv_command(str(hang), transport.message(transport.new_frame(), {}, b"x"),
                                              deadline=1))
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9 and time.monotonic() - start < 30, proc     # timeout(1) killed with its group
    recorded = [int(word) for word in pids.read_text().split()]
    assert len(recorded) == 2                                   # canary: it did hang, with a child
    time.sleep(0.2)
    assert not [pid for pid in recorded if alive(pid)], recorded


def alive(pid):
    """A process that exists and is not a zombie (its parent has not reaped it yet)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_connection_that_cannot_carry_it_is_refused():
    """become without pipelining folds the arguments into one (sudo ... sh -c '...'): refused, no temp file."""
    data = transport.message(transport.new_frame(), {}, b"x")
    for kwargs, data_ in (({"become": True}, data), ({}, b"x" * (transport.MAX_ARGV + 1))):
        try:
            transport.argv_command("python3", data_, **kwargs)
        except transport.TransportError:
            continue
        raise AssertionError("not refused: %r" % kwargs)


def test_payload_is_what_the_host_entry_point_imports_and_self_contained(tmp_path):
    """The payload is the import closure of the host's entry point (transport.ENTRY, what the bootstrap imports):
    exactly the modules the interpreter itself imports when it imports ENTRY from the shipped files alone (-I -S,
    nothing else on sys.path), plus the ones imported inside a function (test_core_layout's INNER_IMPORTS); the
    controller's report/ and monitor/ packages and the transport never travel. No list kept by hand."""
    assert "from metnos_sandbox.audit import host_audit\n" in transport.BOOTSTRAP
    assert transport.ENTRY == "metnos_sandbox.audit.host_audit"
    shipped = json.loads(zlib.decompress(transport.build_payload(CORE)).decode("utf-8"))
    packages = shipped.pop(transport.PACKAGES)
    on_disk = []
    for base, dirs, names in os.walk(CORE):       # every source on disk, not the core's own listing
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(base, CORE)
        on_disk += [os.path.normpath(os.path.join(rel, n)) for n in names if n.endswith(".py")]
    want = sorted(".".join(["metnos_sandbox"] + [p for p in n[:-3].split("/") if p != "__init__"]) for n in on_disk)
    assert set(shipped) < set(want)
    controller = [n for n in want if n.split(".")[1:2] in (["report"], ["monitor"])] + [transport.ENTRY[:-5]
                                                                                        + "transport"]
    assert not set(shipped) & set(controller)
    assert sorted(packages) == sorted(n for n in shipped if n == "metnos_sandbox" or
                                      os.path.isdir(os.path.join(CORE, *n.split(".")[1:])))
    for name, source in shipped.items():
        path = tmp_path.joinpath(*name.split(".")).joinpath("__init__.py") if name in packages else \
            tmp_path.joinpath(*name.split(".")[:-1]).joinpath(name.split(".")[-1] + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import %s; "
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'metnos_sandbox')))" % transport.ENTRY)
    proc = subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    inner = {"metnos_sandbox.probe.blame_trials"}     # probe/blame.py imports it inside a function
    assert set(shipped) == set(proc.stdout.split()) | inner
    for name, source in shipped.items():
        package = name if name in packages else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                if node.module:
                    needed = [base + "." + node.module]
                else:
                    needed = [base + "." + a.name for a in node.names]
                for mod in needed:
                    assert mod in shipped, (name, mod)


def test_the_bootstrap_imports_every_shipped_module_by_its_package(tmp_path):
    """The bootstrap's own loader, run by the host's interpreter without Ansible (python3 -I, nothing on
    sys.path but the standard library), imports every module it is given: the core's packages are packages
    (their modules import relatively from one another), and nothing is read from disk."""
    loader = transport.BOOTSTRAP.split("    try:\n        from metnos_sandbox.audit import host_audit")[0]
    assert "sys.meta_path.insert" in loader
    script = loader
    script += ("    import importlib\n    for name in sorted(src):\n        importlib.import_module(name)\n"
               "    print(len(src))\n")
    payload = transport.build_payload(CORE)
    stdin = transport.message(transport.new_frame(), {}, payload, cache=None)
    proc = subprocess.run(["/usr/bin/python3", "-I", "-c", script], input=stdin, capture_output=True,
                          cwd=str(tmp_path), timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    shipped = json.loads(zlib.decompress(payload).decode("utf-8"))
    assert int(proc.stdout) == len(shipped) - 1      # every module but the list of packages


def test_the_answer_is_the_frame_not_a_stray_brace_or_a_forged_result():
    """A wrapper that prints a brace, a JSON object and a frame of another token before the bootstrap (a
    login banner, a MOTD, a shell rc file): the result is the one frame of this call's token."""
    frame = transport.new_frame()
    forged = '{"schema": "forged"}'
    wrapper = "echo '{'; echo '%s'; printf '\\n%s 20\\n%s\\n%s end\\n'; " % (forged, transport.new_frame(), forged,
                                                                           transport.new_frame())
    for argv in (False, True):
        proc = _bootstrap(transport.message(frame, {"unit": "u"}, STAND_IN, cache=None), wrapper, argv=argv)
        stdout = proc.stdout if isinstance(proc.stdout, str) else proc.stdout.decode()
        assert proc.returncode == 0, proc.stderr
        assert stdout.startswith("{\n")
        assert transport.unframe(stdout, frame) == {"schema": "x", "echo": {"unit": "u"},
                                                    "payload_cache": {"state": "off", "compiled": 3}}, stdout


def test_a_payload_that_dies_leaves_no_frame():
    """Killed before it answers (here: the core raises SystemExit on import): no frame, never a guess."""
    frame = transport.new_frame()
    dying = _core("raise SystemExit(3)\n")
    proc = _bootstrap(transport.message(frame, {}, dying, cache=None), "echo '{\"schema\": 1}'; ")
    assert proc.returncode == 3 and transport.unframe(proc.stdout.decode(), frame) is None


def test_unframe_takes_exactly_one_complete_frame():
    frame = transport.new_frame()
    body = json.dumps({"schema": "x"})
    good = "\n%s %d\n%s\n%s end\n" % (frame, len(body), body, frame)
    assert transport.unframe("banner {" + good + "bye\n", frame) == {"schema": "x"}
    assert transport.unframe(good + good, frame) is None                                  # two: ambiguous
    assert transport.unframe(good.replace(" end\n", ""), frame) is None                   # cut
    assert transport.unframe(good.replace(str(len(body)), str(len(body) - 1)), frame) is None   # wrong length
    assert transport.unframe(good, transport.new_frame()) is None                                 # another run's token
    assert transport.unframe(good.replace(body, '["schema"]'.ljust(len(body))), frame) is None  # not an object
    assert transport.unframe(("\n%s x\n" % frame) + good, frame) == {"schema": "x"}      # a header without a size
    assert transport.unframe(("\n%s 1234567890123\n" % frame) + good, frame) == {"schema": "x"}   # over 12 digits


def test_framed_gives_the_body_as_it_came():
    """The action keeps the body's own text in the spool: the very JSON the host wrote, which decodes to the
    record unframe returns (a mutation that hands back a re-encoded or shifted slice fails here)."""
    frame = transport.new_frame()
    body = json.dumps({"schema": "x", "s": "caf\u00e9 \ud800", "f": 0.1, "n": [1, None]}, separators=(",", ":"))
    stdout = "motd\n\n%s %d\n%s\n%s end\n" % (frame, len(body), body, frame)
    value, text = transport.framed(stdout, frame)
    assert text == body and json.loads(text) == value == transport.unframe(stdout, frame)
    assert transport.framed(stdout, transport.new_frame()) is None


def test_no_work_when_the_action_is_imported(monkeypatch):
    """Importing the action plugin reads, compresses and loads nothing (Ansible imports it in every worker)."""
    def refuse(*_a, **_k):
        raise AssertionError("work at import time")
    monkeypatch.setattr(transport, "build_payload", refuse)
    monkeypatch.setattr(zlib, "compress", refuse)
    real_open = builtins.open

    def guarded(path, *a, **k):
        if str(path).startswith(CORE) or str(path).endswith(".z"):
            refuse()
        return real_open(path, *a, **k)
    monkeypatch.setattr(builtins, "open", guarded)
    action = faces.load("action_plugins/metnos_audit.py", "metnos_audit_action_import")
    assert not [n for n in vars(action) if n.startswith("_PAYLOAD")]


def test_the_action_imports_no_filter_module():
    """Ansible's main process imports the action once per run, compiling what it imports where no bytecode is
    kept: the action imports the core functions it calls (profile/manifest.py from_source), never the filter
    plugin's module, whose other imports cost the run 20-30 ms of CPU (a mutation importing it fails here)."""
    code = ("import sys; import ansible_collections.metnos.sandbox.plugins.action.metnos_audit; "
            "print(sorted(m for m in sys.modules if 'sandbox.plugins.filter' in m))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "collections")))
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("python", sorted({"/usr/bin/python3", os.path.realpath(sys.executable)}))
def test_the_audit_on_a_host_imports_ctypes_but_no_socket(python):
    """What every audited host imports: the probe's beacon uses the C module (_socket; socket.py imports enum and
    selectors and builds four enums, docs/benchmarks.md), prctl/statfs go through ctypes (probe/reaper.py; since
    issue 44: base/libc_lite.py did not pay for itself on a whole audit, nor base/digests.py, docs/benchmarks.md).
    Importing the audit's host side as the bootstrap runs it (-I -S) loads ctypes, not socket.py (a mutation
    importing socket.py in probe/proctree.py fails here)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import metnos_sandbox.audit.host_audit; "
            "print(' '.join(sorted(m for m in ('socket', 'ctypes') if m in sys.modules)))")
    proc = subprocess.run([python, "-I", "-S", "-c", code, os.path.dirname(CORE)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ctypes"], proc.stdout


def test_the_payload_is_built_once_per_run(tmp_path):
    """The first host's worker builds it into the run's temp dir, in a file named by its sha256; the others read
    the same bytes and take the digest from the name (mutation: a kept file under another name is read with
    that name as its digest, so the name is what the workers send)."""
    cache = str(tmp_path)
    first, name = transport.cached_payload(CORE, cache)
    assert name == hashlib.sha256(first).hexdigest()
    assert sorted(os.listdir(cache)) == sorted([transport.PAYLOAD_NAME % name, transport.PAYLOAD_LOCK])
    assert transport.cached_payload(CORE, cache) == (first, name)
    os.unlink(os.path.join(cache, transport.PAYLOAD_NAME % name))
    with open(os.path.join(cache, transport.PAYLOAD_NAME % ("a" * 64)), "wb") as handle:
        handle.write(b"kept")
    assert transport.cached_payload(CORE, cache) == (b"kept", "a" * 64)


def test_a_file_that_is_not_a_finished_payload_is_not_read(tmp_path):
    """A half-written file (its builder's pid after the name) or a name without a full sha256 is not a payload:
    the worker builds it instead."""
    cache = str(tmp_path)
    for name in (transport.PAYLOAD_NAME % ("a" * 64) + ".123", transport.PAYLOAD_NAME % "abc", transport.PAYLOAD_NAME
                 % ("G" * 64)):
        with open(os.path.join(cache, name), "wb") as handle:
            handle.write(b"not this")
    blob, name = transport.cached_payload(CORE, cache)
    assert blob != b"not this" and name == hashlib.sha256(blob).hexdigest()


def test_without_a_temp_dir_the_payload_is_built_and_hashed():
    blob, name = transport.cached_payload(CORE, None)
    assert blob == transport.build_payload(CORE) and name == hashlib.sha256(blob).hexdigest()


def test_the_message_names_the_bundle_by_the_digest_it_is_given():
    """The envelope's digest is the caller's when given (cached_payload's), else computed from the payload."""
    head = lambda data: json.loads(data.partition(b"\n")[0])     # noqa: E731
    assert head(transport.message("f", {}, b"x", payload_digest="b" * 64))["digest"] == "b" * 64
    assert head(transport.message("f", {}, b"x"))["digest"] == hashlib.sha256(b"x").hexdigest()


def test_workers_that_start_together_build_the_payload_once(tmp_path):
    """A worker that finds no payload waits for the one building it (the lock) and reads what it wrote, instead
    of building it again: here the test holds the lock, a forked worker asks, the test writes the payload and
    releases; the worker returns the test's bytes, not a payload of its own."""
    cache = str(tmp_path)
    lock = os.open(os.path.join(cache, transport.PAYLOAD_LOCK), os.O_WRONLY | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    got, put = os.pipe()
    pid = os.fork()
    if pid == 0:    # the worker (without the test's descriptor of the lock: the lock would be its own too)
        os.close(got)
        os.close(lock)
        try:
            blob, name = transport.cached_payload(CORE, cache)
            os.write(put, name.encode() + b" " + blob)
        finally:
            os._exit(0)
    os.close(put)
    for _ in range(1000):   # until the worker waits for the lock (a blocked request is listed with "->")
        with open("/proc/locks") as locks:
            if any("->" in line and " %d " % pid in line for line in locks):
                break
        time.sleep(0.01)
    else:
        raise AssertionError("the worker never waited for the lock")
    with open(os.path.join(cache, transport.PAYLOAD_NAME % ("c" * 64)), "wb") as handle:
        handle.write(b"built by the first worker")
    os.close(lock)
    with os.fdopen(got, "rb") as handle:
        answer = handle.read()
    os.waitpid(pid, 0)
    assert answer == b"c" * 64 + b" built by the first worker"


def _audit_with_cache(cache, core=STAND_IN):
    frame = transport.new_frame()
    proc = _bootstrap(transport.message(frame, {}, core, cache=cache))
    return transport.unframe(proc.stdout.decode(), frame)["payload_cache"]


def test_the_compiled_core_is_reused_from_a_root_owned_cache(tmp_path):
    """The first audit compiles the core and keeps it (root-owned, 0700/0600); the next one compiles nothing.
    A bundle of another core is removed; a different core is compiled again, not taken from the old one."""
    cache = str(tmp_path / "cache")
    assert os.geteuid() == 0, "the cache is root's: run the unit tests as root (make test does)"
    assert _audit_with_cache(cache) == {"state": "miss", "compiled": 3}
    [bundle] = os.listdir(cache)
    st = os.stat(os.path.join(cache, bundle))
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o600 and os.stat(cache).st_mode & 0o777 == 0o700
    assert _audit_with_cache(cache) == {"state": "hit", "compiled": 0}
    other = _core("def audit_host(params, trust_store=None):\n    return {'other': 1}\n")
    assert _audit_with_cache(cache, other) == {"state": "miss", "compiled": 3}
    assert len(os.listdir(cache)) == 2 and bundle in os.listdir(cache)
    assert _audit_with_cache(cache) == {"state": "hit", "compiled": 0}          # the first core's bundle stays


def test_the_cache_keeps_the_four_newest_bundles_and_nothing_else(tmp_path):
    """Controllers with different versions of the toolkit audit the same hosts: each one's bundle stays
    while it is among the newest 4; older bundles, bundles of another format and stray files are removed
    by the next write."""
    cache = str(tmp_path / "cache")
    cores = [_core("def audit_host(params, trust_store=None):\n    return {'core': %d}\n" % i) for i in range(6)]
    assert _audit_with_cache(cache, cores[0])["state"] == "miss"
    for stray in ("x-1.code", "x-2.code", "partial.code.123", "notes"):
        with open(os.path.join(cache, stray), "w") as handle:
            handle.write("stray")
    for core in cores[1:]:
        time.sleep(0.02)        # distinct mtimes: the newest are kept
        assert _audit_with_cache(cache, core)["state"] == "miss"
    kept = os.listdir(cache)
    assert len(kept) == 4 and all(n.endswith("-3.code") for n in kept), kept
    for core in cores[2:]:
        assert _audit_with_cache(cache, core) == {"state": "hit", "compiled": 0}
    assert _audit_with_cache(cache, cores[0])["state"] == "miss"                # the oldest was removed


def _read_by_the_host(tmp_path, message, cache):
    """(answer, bytes of ``message`` the host read): stdin is a file whose open description the host shares with
    this test, so the offset the host leaves behind is what it read."""
    path = tmp_path / "message"
    path.write_bytes(message)
    with open(path, "rb") as stdin:
        proc = subprocess.run(["sh", "-c", transport.stdin_command("python3")], stdin=stdin, capture_output=True,
                              timeout=60)
        return proc, os.lseek(stdin.fileno(), 0, os.SEEK_CUR)


def test_a_kept_bundle_reads_the_envelope_and_not_the_sources(tmp_path):
    """With the compiled core kept on the host, the shipped sources are never read: the host reads the envelope
    line and at most one buffer after it, so the controller stops writing at the pipe's capacity (mutation:
    reading the whole message first, as before, reads every byte). Without a bundle it reads all of it."""
    cache = str(tmp_path / "cache")
    filler = os.urandom(300000).hex()       # a module the audit never imports: the sources, made big
    core = _core("def audit_host(params, trust_store=None):\n    return {'schema': 'x'}\n%s = %r\n" % (
        "UNUSED", filler))
    frame = transport.new_frame()
    message = transport.message(frame, {}, core, cache=cache)
    head = len(message.partition(b"\n")[0]) + 1
    first, read = _read_by_the_host(tmp_path, message, cache)
    assert transport.unframe(first.stdout.decode(), frame)["payload_cache"]["state"] == "miss" and read == len(message)
    again, read = _read_by_the_host(tmp_path, message, cache)
    assert transport.unframe(again.stdout.decode(), frame)["payload_cache"] == {"state": "hit", "compiled": 0}
    assert head <= read <= head + 64 * 1024 < len(message), (head, read, len(message))


def test_a_kept_bundle_gives_the_scripts_text_without_reading_the_sources(tmp_path):
    """The text of a script the audit runs in another process (the probe's payload: base/sources.py script(),
    through the module's loader) is kept in the bundle with the compiled code: a hit gives the same text and
    still reads only the envelope line and at most one buffer after it (mutation: get_source reading the shipped
    sources every time reads every byte)."""
    cache = str(tmp_path / "cache")
    script = "import sys\nif __name__ == '__main__':\n    print(sys.argv)\n"
    audit = ("import metnos_sandbox.audit.script as script\n"
             "def audit_host(params, trust_store=None):\n"
             "    return {'schema': 'x', 'text': script.__spec__.loader.get_source(script.__spec__.name)}\n"
             "UNUSED = %r\n" % os.urandom(300000).hex())
    core = zlib.compress(json.dumps({"metnos_sandbox": "", "metnos_sandbox.audit": "",
                                     "metnos_sandbox.audit.host_audit": audit, "metnos_sandbox.audit.script": script,
                                     transport.PACKAGES: PACKAGES}).encode("utf-8"))
    frame = transport.new_frame()
    message = transport.message(frame, {}, core, cache=cache)
    head = len(message.partition(b"\n")[0]) + 1
    first, read = _read_by_the_host(tmp_path, message, cache)
    out = transport.unframe(first.stdout.decode(), frame)
    assert out["payload_cache"]["state"] == "miss" and out["text"] == script and read == len(message)
    again, read = _read_by_the_host(tmp_path, message, cache)
    out = transport.unframe(again.stdout.decode(), frame)
    assert out["payload_cache"] == {"state": "hit", "compiled": 0} and out["text"] == script
    assert head <= read <= head + 64 * 1024 < len(message), (head, read, len(message))


def test_what_the_audit_starts_reads_end_of_file_not_the_rest_of_the_message(tmp_path):
    """The audit's own commands inherit stdin: on a kept bundle the message's rest is still unread, and they must
    not get it (a command that reads stdin would take the core's compressed sources as its input). Planted: an
    audit that runs cat on its inherited stdin, from a real pipe fed by this test; cat reads nothing and ends
    (mutation: leaving the pipe on fd 0 gives cat the sources)."""
    cache = str(tmp_path / "cache")
    core = _core("import subprocess\n"
                 "def audit_host(params, trust_store=None):\n"
                 "    return {'schema': 'x', 'cat': len(subprocess.run(['cat'], stdout=subprocess.PIPE).stdout)}\n"
                 "PAD = %r\n" % os.urandom(100000).hex())
    for state in ("miss", "hit"):
        frame = transport.new_frame()
        proc = _bootstrap(transport.message(frame, {}, core, cache=cache))
        out = transport.unframe(proc.stdout.decode(), frame)
        assert out["payload_cache"]["state"] == state and out["cat"] == 0, out


def test_a_file_the_cache_cannot_remove_stops_no_other_removal_and_not_the_new_bundle(tmp_path):
    """Planted: a directory where a stray file would be, and one named like an old bundle (unlink refuses both,
    EISDIR). The pruning goes on past them: the stray file after them is removed, the old bundles beyond the 4
    newest are removed, and the new bundle is written (mutation: one try around the whole pruning, as before,
    writes no bundle at all, and the next audit compiles again)."""
    cache = str(tmp_path / "cache")
    cores = [_core("def audit_host(params, trust_store=None):\n    return {'core': %d}\n" % i) for i in range(5)]
    for core in cores[:4]:
        assert _audit_with_cache(cache, core)["state"] == "miss"
        time.sleep(0.02)
    os.mkdir(os.path.join(cache, "a-stray-dir"))
    os.mkdir(os.path.join(cache, "0" * 64 + "-old-3.code"))
    os.utime(os.path.join(cache, "0" * 64 + "-old-3.code"), (1, 1))      # the oldest: the first to go
    with open(os.path.join(cache, "z-stray"), "w") as handle:
        handle.write("stray")
    assert _audit_with_cache(cache, cores[4]) == {"state": "miss", "compiled": 3}
    left = sorted(os.listdir(cache))
    assert "z-stray" not in left and "a-stray-dir" in left and "0" * 64 + "-old-3.code" in left
    assert _audit_with_cache(cache, cores[4]) == {"state": "hit", "compiled": 0}
    assert len([n for n in left if n.endswith("-3.code") and not n.startswith("0" * 64)]) == 4, left


def test_a_cache_anyone_else_could_write_is_never_used(tmp_path):
    """Planted faults, each refused (the core is compiled from the shipped sources instead): the bundle owned
    by a service user, group-writable, hard-linked, the cache directory writable by others or owned by a
    service user, a bundle whose content does not match its digest."""
    cache = str(tmp_path / "cache")
    _audit_with_cache(cache)
    [name] = os.listdir(cache)
    path = os.path.join(cache, name)
    plants = [
        (lambda: os.chown(path, 65534, 65534), lambda: os.chown(path, 0, 0)),
        (lambda: os.chmod(path, 0o620), lambda: os.chmod(path, 0o600)),
        (lambda: os.link(path, str(tmp_path / "link")), lambda: os.unlink(str(tmp_path / "link"))),
        (lambda: os.chmod(cache, 0o777), lambda: os.chmod(cache, 0o700)),
        (lambda: os.chown(cache, 65534, 65534), lambda: os.chown(cache, 0, 0)),
    ]
    for plant, undo in plants:
        plant()
        try:
            assert _audit_with_cache(cache)["state"] == "refused"
        finally:
            undo()
        assert _audit_with_cache(cache) == {"state": "hit", "compiled": 0}
    with open(path, "r+b") as handle:
        handle.seek(40)
        byte = handle.read(1)
        handle.seek(40)
        handle.write(bytes([byte[0] ^ 1]))
    assert _audit_with_cache(cache) == {"state": "refused", "compiled": 3}
    assert _audit_with_cache(cache) == {"state": "hit", "compiled": 0}          # rewritten by root


def _audit_result(cache, core):
    frame = transport.new_frame()
    proc = _bootstrap(transport.message(frame, {}, core, cache=cache))
    return transport.unframe(proc.stdout.decode(), frame)


def test_each_bundle_keeps_its_bwrap_verifications_beside_it_and_loses_them_with_it(tmp_path):
    """The core is handed ``<bundle>.trust`` (host/trust_store.py keeps the bwrap verifications there, named
    after the compiled core: another toolkit version never reads them). The next write keeps the file of
    every kept bundle, removes the files of the bundles it evicts and any file whose bundle is gone."""
    cache = str(tmp_path / "cache")
    writer = ("def audit_host(params, trust_store=None):\n    with open(trust_store, 'w') as h:\n"
              "        h.write('kept')\n    return {'trust': trust_store, 'core': %d}\n")
    cores = [_core(writer % i) for i in range(6)]
    first = _audit_result(cache, cores[0])
    assert first["payload_cache"]["state"] == "miss"
    [bundle] = [n for n in os.listdir(cache) if n.endswith(".code")]
    assert first["trust"] == os.path.join(cache, bundle[:-len(".code")] + ".trust")
    assert sorted(os.listdir(cache)) == sorted([bundle, os.path.basename(first["trust"])])
    orphan = os.path.join(cache, "0" * 64 + "-cpython-311-3.trust")
    with open(orphan, "w") as handle:
        handle.write("its bundle is gone")
    trusts = [first["trust"]]
    for core in cores[1:]:
        time.sleep(0.02)        # distinct mtimes: the newest are kept
        trusts.append(_audit_result(cache, core)["trust"])
    names = os.listdir(cache)
    assert sorted(n for n in names if n.endswith(".trust")) == sorted(os.path.basename(t) for t in trusts[2:])
    assert sorted(n[:-len(".code")] for n in names if n.endswith(".code")) == \
        sorted(os.path.basename(t)[:-len(".trust")] for t in trusts[2:])
    assert _audit_with_cache(cache, cores[0])["state"] == "miss"
    assert os.path.exists(first["trust"]) and not os.path.exists(trusts[2])   # evicted with its bundle


def test_a_bundle_is_named_only_by_a_digest_the_controller_computed(tmp_path):
    """The bundle's name is the envelope's sha256 of the compressed core (the controller's, once per payload):
    one that is missing or not 64 hex digits (a path, say) means no cache at all, never a file named by it."""
    cache = str(tmp_path / "cache")
    data = transport.message(transport.new_frame(), {}, STAND_IN, cache=cache)
    head, _sep, blob = data.partition(b"\n")
    envelope = json.loads(head)
    assert envelope["digest"] == __import__("hashlib").sha256(STAND_IN).hexdigest()
    for bad in (None, "", "../../etc/x", "A" * 64, "0" * 63, 7):
        frame = transport.new_frame()
        forged = dict(envelope, frame=frame, digest=bad)
        proc = _bootstrap(json.dumps(forged).encode() + b"\n" + blob)
        assert transport.unframe(proc.stdout.decode(), frame)["payload_cache"] == {"state": "off", "compiled": 3}, bad
    assert not os.path.exists(cache) or os.listdir(cache) == []
