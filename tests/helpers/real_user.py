"""A real user for tests that plant a fault as someone other than root: made with useradd (no login shell; a
real home only when asked) and removed with userdel after (made); and a test's tree for such plants with a
markers folder the planted code writes in (Plant, planted). Needs root."""
import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from typing import Callable, Dict, Iterator, NamedTuple, Optional


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


class Plant(object):
    """A test's tree (``top``: a new folder under /var/tmp, root's, 0755) and its user (``user`` its name, ``uid``,
    ``gid``): a markers folder everyone may write (``marks``, 1777), where planted code leaves
    ``<kind>.<uid>.<pid>``, named by the uid that ran it. A test subclasses it to plant its own faults."""

    def __init__(self, user: User, prefix: str) -> None:
        self.user, self.uid, self.gid = user.name, user.uid, user.gid
        self.top = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
        os.chmod(self.top, 0o755)
        self.marks = self.path("marks")
        os.mkdir(self.marks)
        os.chmod(self.marks, 0o1777)

    def path(self, *names: str) -> str:
        return os.path.join(self.top, *names)

    def marks_of(self, kind: Optional[str] = None) -> Dict[int, int]:
        """{uid: count} of the markers of ``kind`` (every marker for None), by the name each run wrote, checked
        against the file's owner (who really made it)."""
        found: Dict[int, int] = {}
        for name in os.listdir(self.marks):
            if kind is None or name.startswith(kind + "."):
                uid = int(name.split(".")[1])
                assert os.lstat(os.path.join(self.marks, name)).st_uid == uid, name
                found[uid] = found.get(uid, 0) + 1
        return found

    def clear(self) -> None:
        for name in os.listdir(self.marks):
            os.unlink(os.path.join(self.marks, name))


@contextlib.contextmanager
def planted(user_prefix: str, tree_prefix: str, kind: Callable[[User, str], Plant] = Plant) -> Iterator[Plant]:
    """A user made (``made(user_prefix)``) and its plant (``kind``: Plant or a test's subclass, its tree named
    ``tree_prefix``...), the tree removed, then the user, when the block ends."""
    with made(user_prefix) as user:
        plant = kind(user, tree_prefix)
        try:
            yield plant
        finally:
            shutil.rmtree(plant.top)
