"""Where the tests find the checkout, spelled once (issue 55): ROOT (the collection's source tree), CORE (its Python
core, module_utils/metnos_sandbox), and read_text() for a file of it."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORE = os.path.join(ROOT, "module_utils", "metnos_sandbox")


def read_text(path):
    """A file's text (UTF-8)."""
    with open(path, encoding="utf-8") as handle:
        return handle.read()
