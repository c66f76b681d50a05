"""A repository file that is not importable by name (a module of library/, a filter or action plugin,
a script with a dash in its name) loaded as a Python module, as Ansible or the shell would run it.
The core resolves under ``ansible.module_utils`` (tests/conftest.py calls ``core_path.use_core()``)."""
import importlib.util
import os

from helpers.paths import ROOT


def load(relpath, name):
    """``ROOT/relpath`` executed as a fresh module called ``name``."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relpath))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
