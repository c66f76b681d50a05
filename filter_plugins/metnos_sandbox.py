# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Thin controller-side filters over the toolkit's core (module_utils/metnos_sandbox).

One implementation, two faces: the modules and these filters call the same code.
"""
from __future__ import absolute_import, annotations, division, print_function

import hashlib
import os

from ansible.errors import AnsibleFilterError

# The core, the collection's module_utils: Ansible's collection loader finds it (installed, or the
# checkout through collections/ansible_collections/metnos/sandbox/).
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import profile_states
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics, sources
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import install_plan
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import core_install
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    descriptors,
    host_context,
    host_layout,
    model,
    renderer,
    result,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.manifest import (
    SourceError,
    from_source,
    parse_capability,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import site_summary


def sandbox_summary(facts, sections=None):
    """bwrap_facts result (+ later sections) -> list of readable lines."""
    if facts is not None and not isinstance(facts, dict):
        raise AnsibleFilterError("sandbox_summary: expected the dict registered from bwrap_facts, got %s"
                                 % type(facts).__name__)
    if sections is not None and not isinstance(sections, list):
        raise AnsibleFilterError("sandbox_summary: sections must be a list, got %s" % type(sections).__name__)
    return site_summary.host_summary(facts, sections)


def sandbox_profiles_section(registered, plan=None):
    """The registered result of a sandbox_profile loop (and the role's metnos_manifest_names) -> a summary
    section."""
    if isinstance(registered, dict):
        registered = registered.get("results", [])
    if not isinstance(registered, list):
        raise AnsibleFilterError("sandbox_profiles_section: expected a registered loop result, got %s"
                                 % type(registered).__name__)
    if plan is not None and not isinstance(plan, dict):
        raise AnsibleFilterError("sandbox_profiles_section: plan must be metnos_manifest_names' mapping, got %s"
                                 % type(plan).__name__)
    return site_summary.profiles_section(registered, plan)


def sandbox_service_section(registered):
    """A metnos_service_env result -> a summary section."""
    return site_summary.service_section(registered if isinstance(registered, dict) else None)


def sandbox_probe_section(registered):
    """A sandbox_probe result -> a summary section."""
    return site_summary.probe_section(registered if isinstance(registered, dict) else None)


def sandbox_monitor_section(state):
    """The role's monitor state ({enabled, systemd_running, timer}) -> a summary section."""
    return site_summary.monitor_section(state if isinstance(state, dict) else None)


def sandbox_enforce_lines(registered):
    """A metnos_service_env result (state=enforce) -> one line per healed/relaxed/not-healed item."""
    return site_summary.enforce_lines(registered if isinstance(registered, dict) else None)


def metnos_monitor_release(directory=""):
    """The core's directory on the controller -> {version, digest, files, bundle}: the release the role installs
    for the monitor (metnos_monitor_install unpacks the bundle into a folder named after version; the monitor
    checks its sources against that name on the host). An empty string: the core this filter itself runs on,
    wherever the collection is installed."""
    if directory == "":
        directory = sources.CORE
    if not isinstance(directory, str) or not os.path.isdir(directory):
        raise AnsibleFilterError("metnos_monitor_release: expected the core's directory, got %s"
                                 % diagnostics.excerpt(directory))
    return core_install.release(directory, bundle=True)


def metnos_exec_release(directory=""):
    """The core's directory on the controller -> {version, sha256, source}: the one file of the core that
    metnos-sandbox-exec runs (profile/descriptors.py, stdlib only), as the role installs it next to the
    launcher. An empty string: the core this filter itself runs on, wherever the collection is installed."""
    if directory == "":
        directory = os.path.dirname(os.path.dirname(os.path.abspath(descriptors.__file__)))
    path = os.path.join(directory, "profile", "descriptors.py") if isinstance(directory, str) else ""
    if not os.path.isfile(path):
        raise AnsibleFilterError("metnos_exec_release: expected the core's directory, got %s"
                                 % diagnostics.excerpt(directory))
    with open(path, "rb") as handle:
        data = handle.read()
    return {"version": core_install.version_of({"profile/descriptors.py": data}),
            "sha256": hashlib.sha256(data).hexdigest(), "source": data.decode("utf-8")}


def metnos_manifest_source(item):
    """A metnos_sandbox_manifests entry (controller path, or {file|manifest, invocation}) -> what the
    module gets: the manifest loaded on the controller by the core's one reader and decoder (so
    managed hosts need no YAML library), or the core's refusal record when loading is refused (the
    module then refuses with the same code). Validation and rendering happen on the host."""
    try:
        return from_source(item)
    except SourceError as exc:
        raise AnsibleFilterError("metnos_manifest_source: %s" % exc) from None


def metnos_manifest_names(manifests, profile_dir):
    """metnos_sandbox_manifests -> each manifest's executor name as loaded here, and the names two manifests share
    (profile_states.shared_names): the role writes neither profile of such a name."""
    if not isinstance(manifests, list) or not isinstance(profile_dir, str):
        raise AnsibleFilterError("metnos_manifest_names: expected a list of manifests and a profile directory")
    return profile_states.shared_names(manifests, [metnos_manifest_source(item) for item in manifests], profile_dir)


def metnos_capabilities(capabilities):
    """A list of capability strings -> parsed dicts (kind, mode, target, arg, network)."""
    if not isinstance(capabilities, list):
        raise AnsibleFilterError("metnos_capabilities: expected a list of capability strings, got %s"
                                 % type(capabilities).__name__)
    if len(capabilities) > model.MAX_CAPABILITIES:
        raise AnsibleFilterError("metnos_capabilities: %d capabilities; the limit is %d "
                                 "(manifest_too_many_capabilities)" % (len(capabilities), model.MAX_CAPABILITIES))
    out = []
    for index, text in enumerate(capabilities):
        cap, errors = parse_capability(text, "capabilities[%d]" % index)
        if errors:
            raise AnsibleFilterError("metnos_capabilities: %s (%s)" % (errors[0]["message"], errors[0]["code"]))
        out.append({"text": cap.text, "kind": cap.kind, "mode": cap.mode, "target": cap.target,
                    "arg": cap.arg, "network": cap.needs_network()})
    return out


def metnos_profile(manifest, host=None, invocation=None, status=None, command=None):
    """A manifest (mapping or YAML/JSON text) -> a PREVIEW of the rendered profile.

    The filter runs on the controller: paths are resolved against the controller's filesystem,
    not the managed host's, so the result carries ``preview: true`` and a profile_preview
    diagnostic; the final profile is the sandbox_profile module's, rendered on the host.
    Refusals are returned (decision=refused, diagnostics); only bad arguments raise.
    """
    if not isinstance(manifest, (dict, str)):
        raise AnsibleFilterError("metnos_profile: expected a manifest mapping or YAML/JSON text, got %s"
                                 % type(manifest).__name__)
    try:
        ctx = host_context.HostContext(host or {})
    except host_layout.ContextError as exc:
        raise AnsibleFilterError("metnos_profile: %s" % exc) from None
    if invocation is not None and not isinstance(invocation, dict):
        raise AnsibleFilterError("metnos_profile: invocation must be a mapping, got %s" % type(invocation).__name__)
    return renderer.render_safe(manifest, ctx, invocation or {}, status, command, preview=True)


def metnos_argv(manifest, host=None, invocation=None, status=None, command=None):
    """A manifest -> the argv of its PREVIEW profile (controller paths, see metnos_profile);
    raises with the refusal code when refused. Never use it as the host's final profile."""
    prof = metnos_profile(manifest, host, invocation, status, command)
    if prof["decision"] == "refused":
        first = [d for d in prof["diagnostics"] if d["severity"] == "error"][0]
        raise AnsibleFilterError("metnos_argv: refused (%s): %s" % (prof["refusal"], first["message"]))
    return prof["argv"]


def shell_join(argv):
    """A list of arguments -> one shell-quoted command line."""
    if not isinstance(argv, (list, tuple)) or not all(isinstance(a, str) for a in argv):
        raise AnsibleFilterError("shell_join: expected a list of strings, got %s" % diagnostics.excerpt(argv))
    return result.shell_join(argv)     # the core's one shell_join (the profiles' command lines)


def bwrap_install_plan(query, platform, version="", state="present", architecture="x86_64"):
    """The bwrap_host role's registered package query and its platform variables -> the install plan
    (host/install_plan.py: installed, conflicts, others, spec, action)."""
    if query is None:
        query = {}
    if not isinstance(query, dict):
        raise AnsibleFilterError("bwrap_install_plan: expected the registered result of the package query, got %s"
                                 % type(query).__name__)
    if not isinstance(platform, dict) or sorted(platform) != sorted(install_plan.PLATFORM_KEYS):
        raise AnsibleFilterError("bwrap_install_plan: platform must be a dict of exactly %s, got %s"
                                 % (", ".join(install_plan.PLATFORM_KEYS), diagnostics.excerpt(platform)))
    for key in ("package", "query_regex", "provider_regex", "pin_template"):
        if not isinstance(platform[key], str):
            raise AnsibleFilterError("bwrap_install_plan: platform.%s must be a string" % key)
    for key in ("conflicting_packages", "query_argv"):
        if not isinstance(platform[key], list):
            raise AnsibleFilterError("bwrap_install_plan: platform.%s must be a list" % key)
    for name, value in (("version", version), ("state", state), ("architecture", architecture)):
        if not isinstance(value, str):
            raise AnsibleFilterError("bwrap_install_plan: %s must be a string" % name)
    stdout = query.get("stdout") or ""
    lines = query.get("stdout_lines") or []
    return install_plan.plan(str(stdout), [str(line) for line in lines], platform, version, state, architecture)


class FilterModule(object):
    def filters(self):
        return {
            "sandbox_summary": sandbox_summary,
            "sandbox_profiles_section": sandbox_profiles_section,
            "sandbox_service_section": sandbox_service_section,
            "sandbox_probe_section": sandbox_probe_section,
            "sandbox_monitor_section": sandbox_monitor_section,
            "sandbox_enforce_lines": sandbox_enforce_lines,
            "metnos_capabilities": metnos_capabilities,
            "metnos_manifest_source": metnos_manifest_source,
            "metnos_manifest_names": metnos_manifest_names,
            "metnos_monitor_release": metnos_monitor_release,
            "metnos_exec_release": metnos_exec_release,
            "metnos_profile": metnos_profile,
            "bwrap_install_plan": bwrap_install_plan,
            "metnos_argv": metnos_argv,
            "shell_join": shell_join,
        }
