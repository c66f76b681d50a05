"""What the hostile sets' tests share (tests/unit/test_hostile_corpus.py, tests/unit/test_hostile_bwrap.py, and
benchmarks/bench-render.py): the watchdog that turns unbounded work into a failure, the one answer of a render,
and the bwrap state an entry of the second set is rendered with."""
import signal

WATCHDOG_SECONDS = 20


class Watchdog(object):
    """``with Watchdog():`` raises AssertionError in the block after ``seconds`` (SIGALRM), and puts the previous
    handler back after it."""

    def __init__(self, seconds=WATCHDOG_SECONDS):
        self.seconds = seconds
        self.old = None

    def __enter__(self):
        seconds = self.seconds

        def boom(_sig, _frame):
            raise AssertionError("watchdog: no answer in %d s (unbounded work)" % seconds)
        self.old = signal.signal(signal.SIGALRM, boom)
        signal.alarm(seconds)
        return self

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)


def outcome(prof):
    """A render's one answer: its refusal's code when refused, else its decision (wrapped, direct)."""
    return prof["refusal"] if prof["decision"] == "refused" else prof["decision"]


def bwrap_status(bwrap=None):
    """The bwrap state an entry of tests/corpus/hostile_bwrap.py is rendered with: the bwrap it names, active."""
    return {"bwrap_available": True, "bwrap_path": bwrap or "/usr/bin/bwrap", "disabled_via_env": False,
            "active": True}
