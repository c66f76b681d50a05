# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of profiles as bwrap sees them when it acts: the mount model, sources that cannot move,
writable roots, bounded resolution, pseudo-filesystems (docs/profile-invariants.md; issue 19).

Data only, importing base/registry.py alone (as every codes_*.py); base/diagnostics.py gathers CODES into the one
registry, right after codes_profile.py's. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from .registry import (
    ERROR,
    JUDGED,
    NOT_ROOTS_FIXES,
    NOT_ROOTS_HINT,
    PROFILES,
    SANDBOX_ACTIVE,
    Code,
    not_roots_messages,
)

CODES: List[Code] = []
CODES.extend([
    Code(code="scope_outside_writable_roots", severity=ERROR, rule="R-CAP-FS", section=SANDBOX_ACTIVE,
         title="A writable scope is outside the writable roots the admin allows",
         cause="fs:write (or a writable 'within' scope, or an argument value of one) reaches a path outside every "
               "writable root of the host context (host.writable_roots; the role's metnos_sandbox_writable_roots, "
               "by default Metnos's own data folder /var/lib/metnos). Writes are denied by default: no list of "
               "dangerous places (/root/.ssh, a home folder, /var/lib/dpkg, /var/lib/systemd, crontab spools, "
               "container storage, ...) can be complete, so only the admin's roots are writable.",
         detection="The scope as written and resolved, each at or below a writable root as written or resolved; the "
                   "final check allows a writable bind only inside fs:write roots that are inside a writable root.",
         remediation=["\"${EDITOR:-vi}\" <host_vars_file>"],
         messages={"outside": "{field}: writable {path} (resolved {real}) is outside the writable roots the admin "
                              "allows: {roots} (host.writable_roots)",
                   "none": "{field}: writable {path} (resolved {real}): no writable roots are configured "
                           "(host.writable_roots is empty), so nothing is writable"},
         hint=("Write below one of the writable roots named in the message, or let the admin add a root "
               "(metnos_sandbox_writable_roots: [/var/lib/metnos, /srv/metnos/data]).")),
    Code(code="scope_too_many_links", severity=ERROR, rule="R-CAP-FS", section=SANDBOX_ACTIVE,
         title="A path cannot be resolved within the kernel's bounds",
         cause="Resolving the path follows more than 40 symbolic links (the kernel answers ELOOP), or its resolved "
               "form is longer than PATH_MAX, or this render has already looked up 100,000 path components (a "
               "manifest whose scopes lead into long chains of links planted in a data folder). Unbounded "
               "resolution would crash or stall the renderer; the kernel would refuse the path anyway.",
         detection="An iterative resolver with the kernel's limits and one cache shared by every path of a render "
                   "(module_utils/metnos_sandbox/base/paths.py, Resolver).",
         remediation=["readlink -f <path>"],
         messages={"links": "{field}: {path}: resolving it follows more than {links} symbolic links (ELOOP)",
                   "long": "{field}: {path}: its resolved form is longer than {length} characters (PATH_MAX)",
                   "budget": "{field}: {path}: resolving it exceeds this render's budget of {steps} path "
                             "lookups"},
         hint="Replace the chain of symbolic links by the real path (the command shows where it leads)."),
    Code(code="scope_pseudo_filesystem", severity=ERROR, rule="R-BASE-2", section=SANDBOX_ACTIVE,
         title="A writable scope reaches a mount of a pseudo-filesystem",
         cause="The writable path is at, below or above a mount of one of the kernel's pseudo-filesystems (proc, "
               "sysfs, cgroup, cgroup2, debugfs, tracefs, bpf, securityfs, configfs, devpts, mqueue, efivarfs, ...). "
               "bwrap binds recursively, so such a mount below a granted folder comes along, writable: writing "
               "there changes the kernel's state (cgroup limits and membership, EFI variables, BPF pins).",
         detection="The host's mount table (/proc/self/mountinfo): the filesystem type of every mount at, below or "
                   "above the scope as written and resolved; the final check does the same on each writable bind.",
         remediation=["findmnt -R -T <path>"],
         messages=JUDGED,
         hint="Grant a folder without such mounts below it (the command lists them), or unmount it."),
    Code(code="mount_dest_differs", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="Inside the sandbox a destination would not be the path judged",
         cause="bwrap creates and mounts each destination inside the new root as the earlier mounts left it: "
               "below an earlier bind a component is the host's entry of that folder (a symbolic link planted "
               "there is followed inside the sandbox, a relative one elsewhere than on the host), a --symlink or "
               "/proc may stand on the way. Every grant is mounted at its resolved host path only; this mount "
               "would not be, or something mounted before it changes what its path means inside.",
         detection="The mount model (module_utils/metnos_sandbox/profile/mountmodel.py): bwrap's mount table built in "
                   "argv order, every destination walked through it component by component; the final check runs it "
                   "again on the argv.",
         remediation=["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"],
         messages={"model": "{dest}: {problem}"},
         hint="Render again; if it persists, replace the symbolic link named in the message by a real folder."),
    Code(code="mount_dest_unstable", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="A destination could be moved between rendering and running",
         cause="A descriptor-bound grant is mounted below an earlier bind, through a folder that someone other "
               "than root (the service user, another sandbox of the same executor) can write: that component "
               "can be replaced by a symbolic link after rendering, and bwrap would mount the grant wherever it "
               "then leads inside the sandbox (bwrap only checks the last component of a descriptor bind).",
         detection="The mount model: owner and mode of every folder between the earlier mount point and the "
                   "destination (a sticky folder of root's protects root's own entries).",
         remediation=["ls -ld <folder>"],
         messages={"model": "{dest}: {problem}"},
         hint=("Grant the nested folder on its own (not below another grant), or make the folders on its way root's"
               " and not group- or world-writable.")),
    Code(code="bind_source_unstable", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="A source could be moved and this bwrap cannot bind it by descriptor",
         cause="The source's path from / passes through a folder that someone other than root can write: it can "
               "be swapped for a symbolic link or another folder between rendering and running, and bwrap "
               "follows symbolic links in a source path when it mounts it. Such a source is bound by descriptor "
               "(--bind-fd / --ro-bind-fd, opened race-free when the profile runs), which this bwrap does not "
               "offer (upstream 0.10.0; backported by Debian to 0.8.0 and 0.4.1 and to 0.6.3 for CVE-2024-42472), "
               "or its --help could not be read.",
         detection="Owner and mode of every folder on the source's way from / (lstat); 'bwrap --help' of the bwrap "
                   "the service uses lists --bind-fd and --ro-bind-fd.",
         remediation=["bwrap --help"],
         messages={"no_fd": "{path} can be moved (someone other than root can write {folder}) and {bwrap} cannot "
                            "bind it by descriptor (no --bind-fd/--ro-bind-fd in its --help)",
                   "unknown": "{path} can be moved (someone other than root can write {folder}) and whether {bwrap} "
                              "binds descriptors is unknown (its --help could not be read)",
                   "gone": "{path} disappeared while the profile was rendered"},
         hint=("Install a bubblewrap that offers --bind-fd (the command lists its options; Debian: apt-get install "
               "--only-upgrade bubblewrap), or make the folders on the source's way root's and not group- or "
               "world-writable.")),
    Code(code="bind_descriptors_exhausted", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The profile would need too many descriptors",
         cause="More sources that can move than a profile may bind by descriptor (each is one open descriptor "
               "of the launcher and of bwrap).",
         detection="The count of descriptor binds of one profile.",
         remediation=[],
         messages={"many": "more than {limit} sources would be bound by descriptor"},
         hint="Grant fewer, larger folders, or make the folders on their way root's."),
    Code(code="bind_source_moved", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="A descriptor bind's source is no longer the object judged",
         cause="When the profile was executed, the launcher (metnos-sandbox-exec, which the metnos_sandbox role "
               "installs, or the probe's) opened "
               "the source of a descriptor bind one component at a time from / without following symbolic "
               "links and found another object than the one the profile was rendered for (device and inode), "
               "a symbolic link, or nothing: it was moved or swapped. Nothing was run.",
         detection="open(O_PATH|O_NOFOLLOW) of each component, fstat of the result against the device and inode the "
                   "profile records (its descriptors); bwrap then compares the mount with the descriptor again.",
         remediation=["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"],
         messages={"launcher": "{problem}"},
         hint="Find who changed the folder (the message names it), then render the profile again."),
    # ---- root runs only what root owns (issue 49; base/owners.py) ----
    Code(code="profile_python_not_run", severity=ERROR, rule="R-DIAG-3", section=PROFILES,
         title="The service's interpreter is not root's and has no one owner: its package roots were not asked",
         cause="host.python_executable (or a folder on the way, a link, its interpreter) can be changed by someone "
               "other than root and not by one user alone (a writable folder of root's, several owners, a component "
               "that cannot be judged), so it was run neither as root nor as its owner: the profile has none of its "
               "package roots.",
         detection="lstat() of every component from /, each link judged in its folder, the file's #! or ELF "
                   "interpreter walked again (base/owners.py), before anything runs it.",
         remediation=list(NOT_ROOTS_FIXES["unknown"]), variants=NOT_ROOTS_FIXES,
         messages=not_roots_messages("{program} was not run"), hint=NOT_ROOTS_HINT),
])
