"""The monitor's node_exporter textfile: the metric families the issue names, the checks, and label values
that no host text can break - judged by Prometheus' own parser (`promtool check metrics`, the expfmt
text parser node_exporter's textfile collector uses) and by an exact parser of the format here.
tests/system/test_monitor.py reads the same file through a real node_exporter."""
import os
import re
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.diagnostics import make
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import prometheus

FAMILIES = ("metnos_sandbox_proven", "metnos_sandbox_check_ok", "metnos_sandbox_diagnostic",
            "metnos_sandbox_last_run_timestamp_seconds", "metnos_sandbox_run_duration_seconds", "metnos_sandbox_info")
# One sample line of the text format: name, optional {label="value",...} with only the format's escapes, a value
# and no timestamp (node_exporter's textfile collector refuses samples with one).
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(%s(?:,%s)*)\})? (\S+)\n' % (LABEL, LABEL))
HOSTILE = ['x"} 1\nmetnos_sandbox_proven 1\n# ', "back\\slash\\", 'quote"', "new\nline", "nul\0byte", "tab\tand\r",
           "ünïcødé ✓", "\udcff lone surrogate", "{a=\"b\"}", "x" * 100000, "", " "]


def promtool():
    path = shutil.which("promtool")
    if not path:
        pytest.fail("promtool is missing: apt-get install --no-install-recommends prometheus (make test does)")
    return path


def record(proven=True, diagnostics=(), probe_passed=True, **top):
    """A monitor record; its probe's passed is what its findings say (a failed probe: probe_timeout in them; None:
    no probe ran)."""
    probe = None if probe_passed is None else {"passed": probe_passed, "diagnostics": [] if probe_passed else [
        make("probe_timeout", wording="killed", timeout=5)]}
    out = {"schema": "metnos-sandbox-monitor/1", "toolkit_version": "0.1.0+0123456789ab", "unit": "metnos.service",
           "os": "debian 12", "finished": 1796129500.744, "duration": 0.733, "proven": proven,
           "verdict": "pass" if proven else "fail",
           "audit": {"bwrap_facts": {"bwrap": {"version": "0.8.0", "package": {
               "name": "bubblewrap", "revision": "0.8.0-2+deb12u1"}}},
                     "probe": probe, "diagnostics": list(diagnostics)}}
    out.update(top)
    return out


def parse(text):
    """{name: [(labels dict, value)]} of a textfile, refusing anything that is not a comment or one sample."""
    out = {}
    for line in text.splitlines(True):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        match = SAMPLE.fullmatch(line)
        assert match, "not one sample line: %r" % line
        labels = dict((k, v.replace('\\"', '"').replace("\\\\", "\\")) for k, v in
                      re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        out.setdefault(match.group(1), []).append((labels, float(match.group(3))))
    return out


def check_metrics(text):
    proc = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout + proc.stderr


def test_a_proven_run_has_every_family_and_check():
    text = prometheus.render(record(diagnostics=[make("bwrap_not_packaged",
                                                      bwrap_path="/opt/bwrap")]))
    assert check_metrics(text) == (0, "")
    series = parse(text)
    assert tuple(series) == FAMILIES
    assert series["metnos_sandbox_proven"] == [({}, 1.0)]
    assert dict((s[0]["check"], s[1]) for s in series["metnos_sandbox_check_ok"]) == dict(
        (c, 1.0) for c in ("sandbox_active", "bwrap_binary", "kernel_userns", "smoke_test", "service_environment",
                           "profiles", "probe", "monitor"))
    assert series["metnos_sandbox_diagnostic"] == [({"code": "bwrap_not_packaged", "severity": "warning"}, 1.0)]
    assert series["metnos_sandbox_last_run_timestamp_seconds"] == [({}, 1796129500.744)]
    assert series["metnos_sandbox_info"] == [({"bwrap_version": "0.8.0", "package": "bubblewrap",
                                              "package_revision": "0.8.0-2+deb12u1",
                                              "toolkit_version": "0.1.0+0123456789ab", "os": "debian 12",
                                              "unit": "metnos.service"}, 1.0)]


def test_failed_checks_are_the_sections_of_their_errors():
    diags = [make("unit_blocks_namespaces", unit="metnos.service", directive="RestrictNamespaces",
                  relax="RestrictNamespaces=user mnt", relax_note="", value="yes", variant="dropin"),
             make("monitor_core_writable", folder="/f", problems="p", host="h"),
             make("bwrap_not_packaged", bwrap_path="/opt/bwrap")]
    series = parse(prometheus.render(record(proven=False, diagnostics=diags, probe_passed=False)))
    failed = sorted(s[0]["check"] for s in series["metnos_sandbox_check_ok"] if s[1] == 0)
    assert failed == ["monitor", "probe", "service_environment"]          # a warning fails nothing
    assert series["metnos_sandbox_proven"] == [({}, 0.0)]


def test_a_probe_that_did_not_run_fails_the_probe_check():
    series = parse(prometheus.render(record(probe_passed=None)))
    assert ({"check": "probe"}, 0.0) in series["metnos_sandbox_check_ok"]


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: repr(v[:12]))
def test_hostile_label_values_stay_one_label(value):
    """Every text a host gives (unit name, package revision, os-release, version) is one bounded label value:
    Prometheus' parser accepts the file and there is still exactly one proven series, with its own value."""
    rec = record(proven=False, unit=value, os=value, toolkit_version=value)
    rec["audit"]["bwrap_facts"]["bwrap"]["package"]["revision"] = value
    text = prometheus.render(rec)
    assert check_metrics(text) == (0, "")
    series = parse(text)
    assert series["metnos_sandbox_proven"] == [({}, 0.0)]
    (labels, _one), = series["metnos_sandbox_info"]
    assert len(labels["unit"]) <= prometheus.MAX_LABEL and all(" " <= ch <= "~" for ch in labels["unit"])
    if value and all(" " <= ch <= "~" for ch in value) and len(value) <= prometheus.MAX_LABEL:
        assert labels["unit"] == value                                    # printable text round-trips exactly


def test_hostile_codes_and_severities_are_not_labels():
    rec = record(diagnostics=[{"code": 'x"} 1\nmetnos_sandbox_proven 1', "severity": "error\n"},
                              {"code": "probe_timeout", "severity": "nonsense"}])
    series = parse(prometheus.render(rec))
    assert sorted((s[0]["code"], s[0]["severity"]) for s in series["metnos_sandbox_diagnostic"]) == [
        ("probe_timeout", "unknown"), ("unregistered", "unknown")]
    assert ({"check": "monitor"}, 1.0) in series["metnos_sandbox_check_ok"]   # the error severity was not an error


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=50), st.integers(), st.none(),
                 st.lists(st.text(max_size=5), max_size=3)))
def test_label_value_is_bounded_printable_and_unescapes_to_its_text(value):
    out = prometheus.label_value(value)
    assert "\n" not in out and all(" " <= ch <= "~" for ch in out)
    assert not re.search(r'(?<!\\)(?:\\\\)*"', out), "an unescaped quote would end the value"
    plain = out.replace('\\"', '"').replace("\\\\", "\\")
    assert len(plain) <= prometheus.MAX_LABEL
    if isinstance(value, str) and len(value) <= prometheus.MAX_LABEL:
        assert plain == "".join(ch if " " <= ch <= "~" else "?" for ch in value)


def test_written_atomically_in_the_collector_directory(tmp_path):
    path = prometheus.write(str(tmp_path), record())
    assert path == os.path.join(str(tmp_path), "metnos_sandbox.prom")
    assert sorted(os.listdir(str(tmp_path))) == ["metnos_sandbox.prom"]      # no temporary file left behind
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"                    # node_exporter runs as another user
    assert check_metrics(open(path).read()) == (0, "")
