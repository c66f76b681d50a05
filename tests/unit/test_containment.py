"""Containment levels (issue 45 items 2 and 3; R-SCOPE-4): one table of every platform and case, the findings that
keep a host that is not proven isolated from being counted so, manifests' min_containment (strict) and the executors
refused or downgraded per level, and each host's level in every report format.

The Windows and macOS rows are facts as Ansible gathers them (ansible_system, ansible_os_family,
ansible_distribution_version): no such host can exist on this Linux build machine, so the facts are the stand-in,
and the decision only ever reads those facts."""
import datetime
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import containment
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics, verdicts
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import manifest, model
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import metrics
from helpers import report_text

pytestmark = pytest.mark.rule("R-SCOPE-4")
WHEN = datetime.datetime(2026, 12, 6, 9, 0, tzinfo=datetime.timezone.utc)
SCHEMA = "metnos-sandbox-audit/1"

PLATFORMS = [
    # (ansible_system, ansible_os_family) -> platform
    (("Linux", "Debian"), "linux"),
    (("Linux", "RedHat"), "linux"),
    (("Darwin", "Darwin"), "macos"),
    ((None, "Darwin"), "macos"),
    (("Win32NT", "Windows"), "windows"),
    ((None, "Windows"), "windows"),
    (("FreeBSD", "FreeBSD"), "unknown"),
    (("Linux", "Windows"), "unknown"),        # facts that name two platforms
    ((None, None), "unknown"),
    ((["Linux"], 7), "unknown"),               # not text: never matched
]


@pytest.mark.parametrize("facts,platform", PLATFORMS)
def test_platform_from_the_facts(facts, platform):
    assert containment.platform_of(*facts) == platform


# (placement, platform, bwrap usable, probe passed, windows version) -> (level, proven, evidence, finding code)
LEVELS = [
    ("server", "linux", True, True, None, ("bubblewrap", True, "probe", None)),
    ("device", "linux", True, True, None, ("bubblewrap", True, "probe", None)),
    ("server", "linux", True, None, None, ("bubblewrap", False, "declared", "containment_not_proven")),
    ("device", "linux", True, False, None, ("bubblewrap", False, "declared", None)),     # the probe's findings say it
    ("server", "linux", False, None, None, ("none", False, "none", "containment_none")),
    ("device", "linux", False, False, None, ("none", False, "none", "containment_none")),
    ("device", "windows", False, None, "10.0.19045.0", ("appcontainer", False, "declared", "containment_declared")),
    ("device", "windows", False, None, "6.2.9200.0", ("appcontainer", False, "declared", "containment_declared")),
    ("device", "windows", False, None, "6.1.7601.65536", ("job_object", False, "declared", "containment_declared")),
    ("device", "windows", False, None, None, ("job_object", False, "declared", "containment_declared")),
    ("device", "windows", False, None, "ten", ("job_object", False, "declared", "containment_declared")),
    ("device", "macos", False, None, None, ("none", False, "none", "containment_none")),
    ("device", "macos", True, True, None, ("none", False, "none", "containment_none")),       # Linux evidence ignored
    ("server", "unknown", True, True, None, ("none", False, "none", "containment_none")),
]


@pytest.mark.parametrize("placement,platform,usable,passed,version,want", LEVELS)
def test_the_level_of_each_case(placement, platform, usable, passed, version, want):
    found = containment.decide(placement, platform, usable, passed, version, "ansible_system=X")
    level, proven, evidence, code = want
    assert (found["level"], found["proven"], found["evidence"]) == (level, proven, evidence)
    assert (found["placement"], found["platform"]) == (placement, platform)
    assert (found["reason"] is None) == (level == "bubblewrap" and proven)      # a reason whenever weaker
    assert containment.isolated(found) is (level == "bubblewrap" and proven)
    diag = containment.finding("h1", found, probe_ran=passed is not None)
    assert (diag["code"] if diag else None) == code
    if diag is not None:       # the one verdict function sees it: none fails, declared warns, unproven is noted
        assert verdicts.verdict([diag]) == {"containment_none": "fail", "containment_declared": "warn",
                                            "containment_not_proven": "pass"}[code]
        assert diag["rule"] == "R-SCOPE-4" and diag["remediation"] and found["reason"] in diag["message"]


def test_reasons_say_why():
    assert "no native containment module" in containment.decide("device", "macos")["reason"]
    assert "process group" in containment.decide("device", "macos")["reason"]
    old = containment.decide("device", "windows", windows_version="6.1.7601")["reason"]
    assert "NT 6.2" in old and "6.1.7601" in old and "declared, not proven" in old
    assert "declared from the facts" in containment.decide("device", "windows", windows_version="10.0")["reason"]
    odd = containment.decide("device", "unknown", facts_text="ansible_system=Plan9")["reason"]
    assert "ansible_system=Plan9" in odd and "not isolated" in odd
    with pytest.raises(ValueError):
        containment.decide("laptop", "linux")


def test_a_hostile_fact_is_bounded_and_escaped():
    found = containment.record("h", "device", "Win32NT", "Windows", "\x1b[31m" + "9" * 500, [], "s")["containment"]
    assert "\x1b" not in found["reason"] and len(found["reason"]) < 400


MANIFEST = {"name": "needs_container", "origin": "metnos", "capabilities": [], "min_containment": "appcontainer"}
PLAIN = {"name": "plain", "origin": "metnos", "capabilities": []}
ANY = {"name": "any_level", "origin": "metnos", "capabilities": [], "min_containment": "none"}
LIMITS = {"name": "needs_limits", "origin": "metnos", "capabilities": [], "min_containment": "job_object"}


def test_min_containment_is_an_exact_level():
    for level in model.CONTAINMENT_LEVELS:
        assert manifest.from_dict(dict(PLAIN, min_containment=level)).min_containment == level
    assert manifest.from_dict(PLAIN).min_containment is None
    assert manifest.from_dict(MANIFEST).to_dict()["min_containment"] == "appcontainer"
    for bad in ("AppContainer", "appcontainer ", "sandbox", "", 2, True, ["appcontainer"], {"level": "none"}):
        with pytest.raises(model.ManifestError) as err:
            manifest.from_dict(dict(PLAIN, min_containment=bad))
        codes = [d["code"] for d in err.value.diagnostics]
        assert codes == ["manifest_containment_unknown"], (bad, codes)
        assert "bubblewrap, appcontainer, job_object, none" in err.value.diagnostics[0]["message"]


EXECUTORS = [
    # level -> [(executor, outcome)] for the four manifests (a refused manifest is never listed)
    ("bubblewrap", []),
    ("appcontainer", []),
    ("job_object", [("needs_container", "refused"), ("any_level", "downgraded"), ("needs_limits", "downgraded"),
                    ("plain", "downgraded")]),
    ("none", [("needs_container", "refused"), ("needs_limits", "refused"), ("any_level", "downgraded"),
              ("plain", "downgraded")]),
]


@pytest.mark.parametrize("level,want", EXECUTORS)
def test_executors_refused_or_downgraded_per_level(level, want):
    base = dict(containment.decide("device", "macos"), level=level)
    bad = {"name": "broken", "origin": "metnos", "capabilities": [], "min_containment": "strong"}
    listed = containment.executors(base, [MANIFEST, PLAIN, ANY, LIMITS, bad])["executors"]
    assert [(e["executor"], e["outcome"]) for e in listed] == want


def test_a_macos_record_lists_its_executors_in_the_finding():
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit

    rec = containment.record("mac-1", "device", "Darwin", "Darwin", None, [MANIFEST, PLAIN], "metnos-sandbox-audit/1")
    assert "verdict" not in rec and host_audit.finish(rec)["verdict"] == "fail"    # decided where it is output
    assert [d["code"] for d in rec["diagnostics"]] == ["containment_none"]
    message = rec["diagnostics"][0]["message"]
    assert "refused there: needs_container (needs appcontainer)" in message
    assert "run downgraded there: plain" in message


def fleet():
    """A server proven by its probe, a Linux device without a probe, a Windows and a macOS device (facts)."""
    server = {"schema": "metnos-sandbox-audit/1", "hostname": "srv", "bwrap_facts": {"status": {"active": True}},
              "probe": {"passed": True, "checks": []}, "diagnostics": [], "verdict": "pass",
              "containment": containment.decide("server", "linux", True, True)}
    dev = containment.decide("device", "linux", True, None)
    device = {"schema": "metnos-sandbox-audit/1", "hostname": "dev", "bwrap_facts": {"status": {"active": True}},
              "probe": None, "diagnostics": [containment.finding("dev", dev, probe_ran=False)], "verdict": "pass",
              "containment": dev}
    return {"srv": server, "dev": device,
            "win": containment.record("win", "device", "Win32NT", "Windows", "10.0.19045.0", [MANIFEST], SCHEMA),
            "mac": containment.record("mac", "device", "Darwin", "Darwin", None, [MANIFEST, PLAIN], SCHEMA),
            "gone": {"unreachable": True, "msg": "no route"}}


def test_every_report_shows_each_hosts_level_and_counts_only_the_proven():
    doc = report_text.build(fleet(), WHEN)
    assert doc["totals"]["isolated"] == 1
    by_host = dict((h["host"], h) for h in doc["hosts"])
    assert [h for h in by_host if containment.isolated(by_host[h]["containment"])] == ["srv"]
    assert by_host["gone"]["containment"] is None
    md = report_text.to_markdown(doc)
    assert "**1 of 5 host(s)**" in md
    for row in ("| srv | server | linux | bubblewrap | yes | - | - |",
                "| dev | device | linux | bubblewrap | no |", "| win | device | windows | appcontainer | no |",
                "| mac | device | macos | none | no | macOS has no native", "| gone | - | - | not reported | no |"):
        assert row in md, row
    assert "needs_container: refused (needs appcontainer), plain: downgraded" in md
    junit = report_text.to_junit(doc)
    out = ET.fromstring(junit).find("testsuite/system-out").text
    assert "srv: containment: bubblewrap (proven) on a linux server; isolated" in out
    assert "mac: containment: none on a macos device; not counted as isolated" in out
    assert "win: containment: appcontainer (declared, not proven) on a windows device" in out
    page = report_text.to_html(doc)
    assert "bubblewrap (proven)</td>" in page and "none</td>" in page
    assert "containment (R-SCOPE-4): appcontainer (declared, not proven) on a windows device" in page
    prom = "".join(metrics.iter_text(doc))
    assert ('metnos_sandbox_containment_level{host="mac",level="none",platform="macos",placement="device",'
            'proven="false"} 1\n') in prom
    assert 'metnos_sandbox_containment_level{host="srv",level="bubblewrap",platform="linux",placement="server",' \
           'proven="true"} 1\n' in prom
    assert 'metnos_sandbox_audit_isolated_hosts{isolated="true"} 1\n' in prom
    assert 'metnos_sandbox_audit_isolated_hosts{isolated="false"} 4\n' in prom
    verdict = dict((h["host"], h["verdict"]) for h in doc["hosts"])
    assert verdict == {"srv": "pass", "dev": "pass", "win": "warn", "mac": "fail", "gone": "unreachable"}
    assert doc["gate"]["failed"] and doc["gate"]["failing_hosts"] == 2


def test_the_codes_are_registered_with_their_rule():
    for code in ("containment_none", "containment_declared", "containment_not_proven", "manifest_containment_unknown"):
        assert diagnostics.REGISTRY[code].rule == "R-SCOPE-4"


class _Uname(tuple):
    """os.uname()'s shape (a tuple with named fields) for a kernel this Linux machine cannot run."""
    sysname = property(lambda self: self[0])


def test_the_payload_on_another_kernel_runs_no_linux_check(monkeypatch):
    """Without facts, the payload itself reads the kernel's name: on macOS (faked here - os.uname is the only thing
    the guard reads, and no macOS kernel can run on this machine) it answers the level and runs nothing else (a
    gather that ran would fail the test)."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit

    monkeypatch.setattr(host_audit.os, "uname", lambda: _Uname(("Darwin", "mac-runner", "23.6.0", "", "arm64")))
    monkeypatch.setattr(host_audit, "gather", lambda *a, **k: pytest.fail("a Linux check ran on macOS"))
    monkeypatch.setattr(host_audit.monitor_state, "describe",
                        lambda *a, **k: pytest.fail("the monitor was asked on macOS"))
    rec = host_audit.audit_host(spec.with_defaults(spec.AUDIT, {"placement": "device", "manifests": [PLAIN]}))
    assert rec["hostname"] == "mac-runner" and rec["schema"] == host_audit.SCHEMA and rec["verdict"] == "fail"
    assert (rec["containment"]["platform"], rec["containment"]["level"]) == ("macos", "none")
    assert [e["executor"] for e in rec["containment"]["executors"]] == ["plain"]
    assert [d["code"] for d in rec["diagnostics"]] == ["containment_none"]


def test_a_real_audit_without_the_probe_is_not_proven():
    """This machine audited for real (bwrap, the runtime's status(), the smoke test), the probe off: bubblewrap is
    its level, not proven, a note that changes no verdict, and the host is not counted as isolated."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit

    rec = host_audit.audit_host(spec.with_defaults(spec.AUDIT, {"unit": "", "probe": False, "placement": "device",
                                                                "manifests": [MANIFEST]}))
    found = rec["containment"]
    assert (found["platform"], found["placement"], found["level"], found["proven"]) == (
        "linux", "device", "bubblewrap", False), found
    assert "did not run" in found["reason"] and not containment.isolated(found) and found["executors"] == []
    (note,) = [d for d in rec["diagnostics"] if d["code"].startswith("containment")]
    assert note["code"] == "containment_not_proven" and note["severity"] == "info"


def test_the_ci_check_of_a_report():
    """scripts/check-containment.py's checks (containment_text.unmet) on the fleet above."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import containment_text

    doc = report_text.build(fleet(), WHEN)
    assert containment_text.unmet(doc, "mac", "none") == []
    assert containment_text.unmet(doc, "srv", "bubblewrap") == []
    assert containment_text.unmet(doc, "srv", "none") == ["srv is at level bubblewrap, not none",
                                                          "srv is at level none but its verdict is pass and the "
                                                          "gate failed"]
    assert containment_text.unmet(doc, "nowhere", "none")[0].startswith("nowhere is not in the report")
    assert "gone has no containment level" in containment_text.unmet(doc, "gone", "none")[0]
    passed = dict(doc, gate=dict(doc["gate"], failed=False))       # a gate that passed with a host at none
    assert containment_text.unmet(passed, "mac", "none") == [
        "mac is at level none but its verdict is fail and the gate passed"]
    silent = dict(doc, hosts=[dict(h, containment=dict(h["containment"], reason=None)) if h["host"] == "mac" else h
                              for h in doc["hosts"]])
    assert containment_text.unmet(silent, "mac", "none") == ["mac is not proven isolated but its record gives no "
                                                             "reason"]
    assert containment_text.unmet(dict(doc, totals=dict(doc["totals"], isolated=3)), "mac", "none") == [
        "the report counts 3 isolated host(s), its hosts say 1"]
