"""A real user for tests that plant a fault as someone other than root: made with useradd (no home, no login
shell) and removed with userdel after. Needs root."""
import contextlib
import os
import pwd
import subprocess
from typing import Iterator, NamedTuple


class User(NamedTuple):
    name: str
    uid: int
    gid: int


@contextlib.contextmanager
def made(prefix: str) -> Iterator[User]:
    """A new user named ``<prefix><pid>`` (at most 32 characters), removed when the block ends."""
    name = ("%s%d" % (prefix, os.getpid() % 100000))[:32]
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        entry = pwd.getpwnam(name)
        yield User(name, entry.pw_uid, entry.pw_gid)
    finally:
        subprocess.run(["userdel", name], check=False)
