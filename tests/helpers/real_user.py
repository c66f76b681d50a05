"""A real user for tests that plant a fault as someone other than root: made with useradd (no login shell; a
real home only when asked) and removed with userdel after. Needs root."""
import contextlib
import os
import pwd
import subprocess
from typing import Iterator, NamedTuple, Optional


class User(NamedTuple):
    name: str
    uid: int
    gid: int
    home: str


@contextlib.contextmanager
def made(prefix: str, home_below: Optional[str] = None) -> Iterator[User]:
    """A new user named ``<prefix><pid>`` (at most 32 characters), removed when the block ends. ``home_below``:
    a folder where its real home is made (``<home_below>/home/<name>``, the user's), else it has none."""
    name = ("%s%d" % (prefix, os.getpid() % 100000))[:32]
    home = ""
    argv = ["useradd", "--shell", "/usr/sbin/nologin"]
    if home_below is None:
        argv.append("--no-create-home")
    else:
        home = os.path.join(home_below, "home", name)
        os.makedirs(os.path.dirname(home), exist_ok=True)
        argv += ["--create-home", "--home-dir", home]
    subprocess.run(argv + [name], check=True, capture_output=True)
    try:
        entry = pwd.getpwnam(name)
        yield User(name, entry.pw_uid, entry.pw_gid, home)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)
