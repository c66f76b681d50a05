"""The toolkit's core under its one import name, ``ansible.module_utils.metnos_sandbox``, for code
that runs on the controller outside Ansible's plugin loaders (pytest, scripts/).

Modules get it from Ansible's module packager (ansible.cfg ``module_utils = module_utils``). On the
controller nothing adds that directory to ``ansible.module_utils.__path__`` (measured with
ansible-core 2.21: a filter plugin importing the core is skipped with "No module named
'ansible.module_utils.metnos_sandbox'"), so the filter and action plugins append it themselves and
everything else calls ``use_core()`` once:

    sys.path.insert(0, os.path.join(ROOT, "scripts"))   # not needed in scripts/ itself
    import core_path
    core_path.use_core()
    from ansible.module_utils.metnos_sandbox import diagnostics as D
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def use_core(root=ROOT):
    """Append ``root``/module_utils to ``ansible.module_utils.__path__`` (idempotent); return it."""
    import ansible.module_utils
    utils = os.path.join(root, "module_utils")
    if utils not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(utils)
    return utils
