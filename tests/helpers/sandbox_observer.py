"""What an executor sees of its start: its environment, its open descriptors (what each names) and its ids,
written as JSON to argv[1] (default: <its folder>/../../data/w/out, the test executor's granted folder). Copied
into a test executor's folder as its main.py (test_stored_profile_exec.py);
run directly with the same planted start, it is the canary that proves it sees what was planted."""
import json
import os
import sys


def main(out):
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[name] = os.readlink("/proc/self/fd/" + name)
        except OSError:
            pass            # the listing's own descriptor, closed by now
    seen = {"env": dict(os.environ), "fds": fds, "uid": os.getuid(), "groups": os.getgroups()}
    with open(out, "w") as handle:
        json.dump(seen, handle)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "data", "w", "out"))
