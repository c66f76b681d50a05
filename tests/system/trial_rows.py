"""The directives tried one by one on a real unit (tests/system/test_unit_directives.py) and set
together on one unit (tests/system/test_unit_context.py): systemd-analyze security's list,
resource limits, root directory and bind mounts, address families, IP and socket policy, ...

Each row: (row id, unit lines, effect check in directive_trial.py, options). Options:
``user`` (default metnos; False: no User=, e.g. DynamicUser=), ``since`` (first systemd version that knows it).
"""

ROWS = [
    ("ProtectSystem", ["ProtectSystem=strict"], "ro:/usr", {}),
    ("ProtectHome", ["ProtectHome=yes"], "mounted:/home", {}),
    ("PrivateTmp", ["PrivateTmp=yes"], "tmp_marker_hidden", {}),
    ("PrivateDevices", ["PrivateDevices=yes"], "dev_private", {}),
    ("PrivateNetwork", ["PrivateNetwork=yes"], "ns:net", {}),
    ("PrivateIPC", ["PrivateIPC=yes"], "ns:ipc", {}),
    ("PrivateUsers", ["PrivateUsers=yes"], "ns:user", {}),
    ("PrivateMounts", ["PrivateMounts=yes"], "ns:mnt", {}),
    ("PrivatePIDs", ["PrivatePIDs=yes"], "ns:pid", {"since": 257}),
    ("ProtectHostname", ["ProtectHostname=yes"], "ns:uts", {}),
    ("ProtectKernelTunables", ["ProtectKernelTunables=yes"], "ro:/proc/sys", {}),
    ("ProtectKernelModules", ["ProtectKernelModules=yes"], "mounted:/usr/lib/modules", {}),
    ("ProtectKernelLogs", ["ProtectKernelLogs=yes"], "mounted:/proc/kmsg", {}),
    ("ProtectControlGroups", ["ProtectControlGroups=yes"], "ro:/sys/fs/cgroup/unified", {}),
    ("ProtectClock", ["ProtectClock=yes"], "clock_filtered", {}),
    ("ProtectProc", ["ProtectProc=invisible"], "proc_hidepid", {}),
    ("ProcSubset", ["ProcSubset=pid"], "proc_subset_pid", {}),
    ("NoNewPrivileges", ["NoNewPrivileges=yes"], "no_new_privs", {}),
    ("RestrictSUIDSGID", ["RestrictSUIDSGID=yes"], "suid_denied", {}),
    ("RestrictRealtime", ["RestrictRealtime=yes"], "realtime_filtered", {}),
    ("RestrictNamespaces", ["RestrictNamespaces=yes"], "userns_refused", {}),
    ("LockPersonality", ["LockPersonality=yes"], "personality_locked", {}),
    ("MemoryDenyWriteExecute", ["MemoryDenyWriteExecute=yes"], "wx_denied", {}),
    ("SystemCallArchitectures", ["SystemCallArchitectures=native"], "seccomp_extra_filter", {}),
    ("SystemCallFilter", ["SystemCallFilter=@system-service"], "ptrace_killed", {}),
    ("SystemCallFilter(~@mount)", ["SystemCallFilter=~@mount"], "umount_killed", {}),
    ("SystemCallFilter(~@mount, EPERM)", ["SystemCallFilter=~@mount", "SystemCallErrorNumber=EPERM"],
     "umount_eperm_filtered", {}),
    ("CapabilityBoundingSet", ["CapabilityBoundingSet=CAP_NET_BIND_SERVICE"], "capbnd_net_bind_only", {}),
    ("RestrictAddressFamilies", ["RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6"], "netlink_refused", {}),
    ("IPAddressDeny", ["IPAddressDeny=any"], "ip_denied", {}),
    ("SocketBindDeny", ["SocketBindDeny=any"], "bind_denied", {}),
    ("RestrictNetworkInterfaces", ["RestrictNetworkInterfaces=~lo"], "ifaces_restricted", {}),
    ("RestrictFileSystems", ["RestrictFileSystems=~overlay"], "fs_restricted", {}),
    ("DevicePolicy", ["DevicePolicy=strict", "DeviceAllow=/dev/null rw"], "device_closed", {}),
    ("TasksMax", ["TasksMax=7"], "pids_max", {}),
    ("MemoryMax", ["MemoryMax=256M"], "memory_max", {}),
    ("UMask", ["UMask=0077"], "umask_0077", {}),
    ("SupplementaryGroups", ["SupplementaryGroups=users"], "group_users", {}),
    ("DynamicUser", ["DynamicUser=yes"], "dynamic_uid", {"user": False}),
    ("SecureBits", ["SecureBits=noroot noroot-locked"], "securebits_noroot", {}),
    ("Nice", ["Nice=5"], "nice_5", {}),
    ("OOMScoreAdjust", ["OOMScoreAdjust=100"], "oom_adj_100", {}),
    ("CPUSchedulingPolicy", ["CPUSchedulingPolicy=batch"], "sched_batch", {}),
    ("WorkingDirectory", ["WorkingDirectory=/srv/trial"], "cwd:/srv/trial", {}),
    ("LimitNOFILE", ["LimitNOFILE=64"], "rlimit_nofile_64", {}),
    # its own user: RLIMIT_NPROC counts every process of the uid, the other rows' included
    ("LimitNPROC", ["LimitNPROC=16"], "rlimit_nproc_small", {"user": "metnos-nproc"}),
    ("LimitAS", ["LimitAS=2G"], "rlimit_as", {}),
    ("LimitCORE", ["LimitCORE=0"], "rlimit_core_0", {}),
    ("LimitMEMLOCK", ["LimitMEMLOCK=0"], "rlimit_memlock_0", {}),
    ("RootDirectory", ["RootDirectory=/srv/trialroot", "MountAPIVFS=yes",
                       "BindReadOnlyPaths=/usr /etc /opt/metnos-trial"], "root_marker", {}),
    ("BindPaths", ["BindPaths=/srv/trial/src:/srv/trial/dst"], "bound:/srv/trial/dst", {}),
    ("BindReadOnlyPaths", ["BindReadOnlyPaths=/srv/trial/src:/srv/trial/rodst"], "ro_bound:/srv/trial/rodst", {}),
    ("TemporaryFileSystem", ["TemporaryFileSystem=/srv/trial"], "tmpfs:/srv/trial", {}),
    ("ReadOnlyPaths", ["ReadOnlyPaths=/srv/trial/ro"], "ro:/srv/trial/ro", {}),
    ("InaccessiblePaths", ["InaccessiblePaths=/srv/trial/secret"], "inaccessible:/srv/trial/secret", {}),
    ("NoExecPaths", ["NoExecPaths=/srv/trial/bin"], "noexec:/srv/trial/bin", {}),
    ("LoadCredential", ["LoadCredential=trial:/etc/hostname"], "credentials", {}),
]

# What the trial host needs: the paths the rows name, a marker in /tmp and /dev, a module dir.
SETUP = r"""
set -e
mkdir -p /srv/trial/ro /srv/trial/secret /srv/trial/bin /srv/trial/src /srv/trial/dst /srv/trial/rodst \
         /srv/trialroot/usr /srv/trialroot/etc /srv/trialroot/opt/metnos-trial /srv/trialroot/proc \
         /srv/trialroot/dev /srv/trialroot/sys /srv/trialroot/tmp /srv/trialroot/run /usr/lib/modules \
         /var/lib/metnos-trial
chmod 0755 /srv/trial /srv/trial/*
chown metnos /srv/trial/ro
# RLIMIT_NPROC counts the processes of a uid on the whole host, and the containers of a rootful podman share
# the host's uids: the row's own user gets a uid no other container of the test run has (61000 + release).
nproc_uid=$((61000 + $(. /etc/os-release; v="${VERSION_ID:-0}"; echo "${v%%.*}")))
id metnos-nproc >/dev/null 2>&1 || \
  useradd --system --no-create-home --shell /usr/sbin/nologin -u "$nproc_uid" metnos-nproc
touch /srv/trial/src/.metnos-trial-marker /srv/trialroot/.metnos-trial-root /tmp/.metnos-trial-marker \
      /dev/.metnos-trial-marker
for d in bin sbin lib lib64; do [ -e /srv/trialroot/$d ] || ln -s usr/$d /srv/trialroot/$d; done
"""


def unit_text(row, script="/opt/metnos-trial/directive_trial.py", out_dir="/var/lib/metnos-trial"):
    """A oneshot unit with one row's directives that runs the trial inside itself."""
    name, lines, check, opts = row
    head = ["[Service]", "Type=oneshot"]
    user = opts.get("user", "metnos")
    if user:
        head.append("User=%s" % user)
    head += ["ExecStart=/usr/bin/python3 %s unit %s" % (script, check),
             "StandardOutput=truncate:%s/%s.json" % (out_dir, slug(name)), "StandardError=journal",
             "TimeoutStartSec=240"]
    return "\n".join(head + list(lines)) + "\n"


def slug(name):
    return "".join(c if c.isalnum() else "-" for c in name).strip("-").lower()
