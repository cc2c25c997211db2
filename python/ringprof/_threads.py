"""New `threading` threads announce themselves while ringprof records.

The CPU sampler covers a thread once the drainer knows it: from its first
event, or from the sampler's scan of /proc/self/task every 100 ms. A worker
thread that records nothing and lives a few tens of milliseconds would be
gone before the scan. threading.setprofile() makes every thread started
afterwards call a function at its first Python call: ringprof's records the
thread's name (an event, so the drainer adopts the thread at once and the
sampler covers it) and hands the thread the profile function that was there
before, if any, so it runs once per thread and costs nothing after.

Not on Python 3.12 and later: there a thread's profile function counts in
the interpreter's instrumentation (sys.monitoring), and setting and removing
one for each new thread would re-instrument every code object, in every
thread, each time. Threads that record nothing are left to the scan there.
"""
import sys as _sys
import threading as _threading

from . import _ringprof

_previous = None  # threading's profile function before ours


def _announce(frame, event, arg):
    previous = _previous
    _sys.setprofile(previous)  # this thread goes on with the application's, or none
    try:
        _ringprof._announce_thread()
    except Exception:  # the application's thread starts whatever ringprof does
        pass
    if previous is not None:
        return previous(frame, event, arg)
    return None


def _current():
    getprofile = getattr(_threading, "getprofile", None)  # Python 3.10+
    return getprofile() if getprofile else getattr(_threading, "_profile_hook", None)


def install():
    global _previous
    if _sys.version_info >= (3, 12):
        return
    current = _current()
    if current is _announce:
        return
    _previous = current
    _threading.setprofile(_announce)


def uninstall():
    """Leaves a profile function installed after ours in place."""
    if _current() is _announce:
        _threading.setprofile(_previous)
