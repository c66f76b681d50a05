"""The host context of a Metnos install laid out under one directory (profile.HostContext's keys):
the one builder every test uses, each overriding only the keys its tree lays out differently.
Keys left out of HostContext's input take profile.DEFAULT_HOST's values: every key is given here so
that nothing of the real host's /srv or /var/lib leaks into a test."""


def host_dict(root, **over):
    """{key: value} for a tree under ``root`` (str or pathlib.Path); ``over`` replaces keys."""
    r = str(root)
    host = {"runtime_dir": r + "/runtime", "executors_dir": r + "/executors", "python_executable": "/usr/bin/python3",
            "python_prefix": r + "/venv", "python_package_roots": [r + "/venv/lib"], "i18n_dbs": [r + "/i18n"],
            "lexicon_dbs": [], "resources": {}, "indexes": {}, "integrations_dir": r + "/integrations",
            "mail_credentials_dir": r + "/creds/mail", "mail_accounts": {}, "dialog_dir": r + "/dialog",
            "undo_root": r + "/undo", "systemd_read_paths": [], "system_read_paths": [],
            "python_installation": [], "writable_roots": [r]}
    unknown = set(over) - set(host) - {"executor_dir", "undo_exception"}
    assert not unknown, "fake host: unknown keys %s" % sorted(unknown)
    host.update(over)
    return host
