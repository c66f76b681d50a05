# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each host's containment level in the fleet report (R-SCOPE-4): the Markdown section, the JUnit line, the HTML
fact and the metric samples, all from the host record's ``containment`` (audit/containment.py decides it; a host
without one - not audited, or a record from before the levels - says so and is never counted as isolated).

Pure Python, no Ansible imports; controller only.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..audit import containment
from ..monitor.prometheus import Sample

METRIC = "metnos_sandbox_containment_level"
METRIC_HELP = ("Each host's containment level in the last fleet audit (1 for its level; not_reported when the "
               "host has none); proven=true only where the probe proved bubblewrap.")
ISOLATED_METRIC = "metnos_sandbox_audit_isolated_hosts"
ISOLATED_HELP = "Hosts of the last fleet audit counted as isolated (a proven bubblewrap level), and not."


def of(h: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    found = h.get("containment")
    return found if isinstance(found, Mapping) else None


def isolated_count(hosts: Sequence[Mapping[str, Any]]) -> int:
    """How many hosts count as isolated (containment.isolated: a proven bubblewrap, nothing less)."""
    return sum(1 for h in hosts if containment.isolated(of(h)))


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def executors_text(found: Optional[Mapping[str, Any]]) -> str:
    listed = (found or {}).get("executors") or []
    return ", ".join("%s: %s%s" % (e.get("executor"), e.get("outcome"),
                                   " (needs %s)" % e["minimum"] if e.get("minimum") else "") for e in listed)


def line(h: Mapping[str, Any]) -> str:
    """One host's containment as a sentence (JUnit's system-out, the HTML fact)."""
    found = of(h)
    if found is None:
        return "not reported (a host not audited, or a record without a level): not counted as isolated"
    verdict = "isolated" if containment.isolated(found) else "not counted as isolated"
    out = "%s on a %s %s; %s" % (containment.text(found), found.get("platform"), found.get("placement"), verdict)
    if found.get("reason"):
        out += ": %s" % found["reason"]
    more = executors_text(found)
    return out + ("; executors %s" % more if more else "")


def junit_text(doc: Mapping[str, Any]) -> str:
    """The testsuite's system-out: every host's containment, one line each (a level is no test case of its own:
    a host not isolated fails through its finding's check)."""
    return "\n".join("%s: containment: %s" % (h["host"], line(h)) for h in doc["hosts"])


def iter_markdown(doc: Mapping[str, Any]) -> Iterator[str]:
    """The section: every host's placement, platform, level, proof and reason, and the executors refused or
    downgraded there."""
    hosts = doc["hosts"]
    yield ("## Containment: where executors run, and at what level\n\nA host counts as isolated only at a "
           "`bubblewrap` level the probe proved on it: **%d of %d host(s)**. `appcontainer` and `job_object` (Windows) "
           "are declared from the facts, not proven; `none` is not isolated.\n\n"
           "| host | placement | platform | level | proven | reason | executors refused / downgraded |\n"
           "|---|---|---|---|---|---|---|\n" % (isolated_count(hosts), len(hosts)))
    for h in hosts:
        found = of(h) or {}
        yield "| %s | %s | %s | %s | %s | %s | %s |\n" % (
            _md(h["host"]), _md(found.get("placement", "-")), _md(found.get("platform", "-")),
            _md(found.get("level", "not reported")), "yes" if found.get("proven") is True else "no",
            _md(found.get("reason") or "-"), _md(executors_text(found) or "-"))
    yield "\n"


def samples(doc: Mapping[str, Any]) -> Tuple[List[Sample], List[Sample]]:
    """(the level samples, one per host; the isolated-hosts samples)."""
    levels: List[Sample] = []
    for h in doc["hosts"]:
        found = of(h) or {}
        labels = (("host", str(h["host"])), ("level", str(found.get("level") or "not_reported")),
                  ("platform", str(found.get("platform") or "unknown")),
                  ("placement", str(found.get("placement") or "unknown")),
                  ("proven", "true" if found.get("proven") is True else "false"))
        levels.append((METRIC, labels, 1.0))
    count = isolated_count(doc["hosts"])
    isolated: List[Sample] = [(ISOLATED_METRIC, (("isolated", "true"),), float(count)),
                              (ISOLATED_METRIC, (("isolated", "false"),), float(len(doc["hosts"]) - count))]
    return levels, isolated


def unmet(doc: Mapping[str, Any], host: str, level: str) -> List[str]:
    """What a report says against the expectation that ``host`` is at ``level`` (scripts/check-containment.py,
    the users' CI on a macOS runner): the host is there, at that level, with a reason when it is weaker than a
    proven bubblewrap, counted as isolated only when proven, and failing the gate when not isolated at level
    none. Empty when all hold."""
    hosts = dict((h.get("host"), h) for h in doc.get("hosts") or [] if isinstance(h, Mapping))
    if host not in hosts:
        return ["%s is not in the report (hosts: %s)" % (host, ", ".join(sorted(map(str, hosts))) or "none")]
    found = of(hosts[host])
    if found is None:
        return ["%s has no containment level (not audited?): %s" % (host, line(hosts[host]))]
    problems = []
    if found.get("level") != level:
        problems.append("%s is at level %s, not %s" % (host, found.get("level"), level))
    if not containment.isolated(found) and not found.get("reason"):
        problems.append("%s is not proven isolated but its record gives no reason" % host)
    if level == containment.NONE and (hosts[host].get("verdict") != "fail" or not (doc.get("gate") or {}).get(
            "failed")):
        problems.append("%s is at level none but its verdict is %s and the gate %s" % (
            host, hosts[host].get("verdict"), "failed" if (doc.get("gate") or {}).get("failed") else "passed"))
    isolated = (doc.get("totals") or {}).get("isolated")
    if isolated != isolated_count(list(hosts.values())):
        problems.append("the report counts %s isolated host(s), its hosts say %d" % (
            isolated, isolated_count(list(hosts.values()))))
    return problems
