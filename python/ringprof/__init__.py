"""ringprof for Python: always-on recording into ringprof's rolling files.

    import ringprof
    ringprof.start(dir="runs/ringprof")        # or RINGPROF_AUTOSTART=1
    with ringprof.zone("load"):
        batch = next(loader)
    @ringprof.zone
    def train_step(batch): ...
    ringprof.step()

Settings are keywords named like the RINGPROF_* variables, lower-case and
without the prefix (docs/configuration.md); a keyword overrides its variable.
Zones, instants, counters and steps are native calls that record one event
each (docs/python.md gives their cost). ringprof.torch adds PyTorch operators.
"""
import atexit as _atexit
import os as _os
import sys as _sys
import threading as _threading

from . import _ringprof
from ._ringprof import (Zone, ZonedFunction, async_begin, async_end, counter, flow_begin, flow_end, flow_step, flush, instant,
                        is_recording, mark, mark_collective, mode, rank_info, recorder_stats, request_window, set_rank,
                        set_thread_name, step, zone, zone_arg)

from . import _threads
from .reading import open  # noqa: A001 (ringprof.open, as in the docs)

__all__ = ["open", "start", "stop", "flush", "is_recording", "zone", "zone_arg", "instant", "counter", "step",
           "set_thread_name",
           "set_mode", "mode", "set_schedule", "set_duty_cycle", "request_window", "on_window_complete",
           "remove_window_callback", "flow_begin", "flow_step", "flow_end", "async_begin", "async_end", "mark", "recorder_stats",
           "set_rank", "rank_info", "mark_collective"]

# Functions other parts of the package run after start() and before stop()
# (ringprof.torch registers PyTorch's callbacks only while recording).
_start_listeners = [_threads.install]
_stop_listeners = [_threads.uninstall]


def _setting_text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def start(**settings):
    """Starts recording. Returns False (after a warning) when it could not start.

    start(dir="runs/ringprof", mode="detailed", sample_hz=0, schedule="wait=1,active=2")
    """
    global _session_dir
    env = {"RINGPROF_" + key.upper(): _setting_text(value) for key, value in settings.items()}
    started, directory = _ringprof._start(env)
    if started:
        _session_dir = _os.path.abspath(directory)
        _run_listeners(_start_listeners)
    return started


def _recording_dir():
    """Where this process's files go: start()'s directory, or for a session
    the library started (RINGPROF_AUTOSTART), RINGPROF_DIR or its default."""
    if _session_dir is not None:
        return _session_dir
    return _os.path.abspath(_os.environ.get("RINGPROF_DIR") or "ringprof")


_session_dir = None


def stop():
    """Writes and seals everything recorded, then stops recording."""
    _run_listeners(_stop_listeners)
    _ringprof.stop()


def _run_listeners(listeners):
    for fn in list(listeners):
        try:
            fn()
        except Exception as e:  # the application carries on whatever ringprof's parts do
            print("ringprof: warning: %s failed: %s: %s" % (getattr(fn, "__qualname__", fn), type(e).__name__, e),
                  file=_sys.stderr)


def set_mode(level):
    """Sets the base level: "always_on", "detailed" or "off"."""
    _ringprof._set_mode(str(level))
    _ringprof._level_changed()


def _period_text(value):
    if isinstance(value, (int, float)):
        return "%dms" % max(1, round(value * 1000))
    return str(value)


def set_schedule(schedule=None, *, skip_first=0, wait=0, warmup=0, active=0, repeat=0):
    """Detailed windows on steps, as torch.profiler.schedule counts them.

    set_schedule(wait=1, warmup=1, active=3, repeat=2), or the text
    RINGPROF_SCHEDULE takes; set_schedule() with no active steps removes it.
    """
    if schedule is None:
        schedule = "skip_first=%d,wait=%d,warmup=%d,active=%d,repeat=%d" % (skip_first, wait, warmup, active, repeat)
        if active == 0:
            schedule = ""
    _ringprof._set_schedule(schedule)


def set_duty_cycle(steps=0, every=None):
    """One detailed window of `steps` steps every `every` (seconds, or "10m"); steps=0 removes it."""
    if steps == 0:
        _ringprof._set_duty_cycle("")
    else:
        _ringprof._set_duty_cycle("steps=%d,every=%s" % (steps, _period_text(every)))


# ---- completed windows, delivered on a thread the package owns ----

_callbacks_lock = _threading.Lock()
_callbacks = {}
_next_callback_id = 1
_callback_thread = None
_callbacks_closed = False


def on_window_complete(fn):
    """Calls fn(window_id) after each detailed window is in the files.

    fn runs on a Python thread ringprof owns ("ringprof-windows"), one call at
    a time; an exception it raises is reported on stderr and the next window
    is delivered as usual. Returns an id for remove_window_callback().
    """
    global _next_callback_id
    if not callable(fn):
        raise TypeError("on_window_complete takes a function of one argument, the window id")
    with _callbacks_lock:
        handle = _next_callback_id
        _next_callback_id += 1
        _callbacks[handle] = fn
        _ensure_callback_thread()
    return handle


def remove_window_callback(handle):
    with _callbacks_lock:
        _callbacks.pop(handle, None)


def _ensure_callback_thread():
    global _callback_thread
    if _callback_thread is not None and _callback_thread.is_alive():
        return
    _ringprof._windows_listen()
    _ringprof._windows_reopen()
    _callback_thread = _threading.Thread(target=_deliver_windows, name="ringprof-windows", daemon=True)
    _callback_thread.start()


def _deliver_windows():
    while True:
        window = _ringprof._next_window(0.5)
        if window is None:
            if _callbacks_closed:
                return
            continue
        with _callbacks_lock:
            targets = list(_callbacks.values())
        for fn in targets:
            try:
                fn(window)
            except Exception as e:
                print("ringprof: warning: on_window_complete callback %s raised %s: %s; carrying on"
                      % (getattr(fn, "__qualname__", fn), type(e).__name__, e), file=_sys.stderr)


def _at_exit():
    # Windows already completed are delivered; then the thread ends, before
    # the interpreter is torn down. Recording itself is flushed by the
    # library's own exit handler (RINGPROF_FLUSH_AT_EXIT), after Python is gone.
    global _callbacks_closed
    _run_listeners(_stop_listeners)
    _callbacks_closed = True
    _ringprof._windows_close()
    thread = _callback_thread
    if thread is not None and thread is not _threading.current_thread():
        thread.join(timeout=5.0)


def _after_fork_child():
    # The callback thread does not exist in the child; it is started again
    # when the child registers a callback or already has some.
    global _callback_thread, _callbacks_lock
    _callbacks_lock = _threading.Lock()
    _callback_thread = None  # (the queue was reset by a C fork handler: py_windows.cpp)
    if _callbacks and not _callbacks_closed:
        _ensure_callback_thread()
    # RINGPROF_FORK=record: the child records into its own files. A
    # multiprocessing worker (a DataLoader's, a Pool's) ends with os._exit(),
    # which skips exit handlers, so its recording is stopped by multiprocessing's
    # last finalizer instead. Its bootstrap clears the finalizers inherited
    # from the parent, then runs the after-fork hooks: the finalizer is made there.
    if is_recording() and "multiprocessing" in _sys.modules:
        import multiprocessing.util
        multiprocessing.util.register_after_fork(_fork_token, _stop_at_worker_exit)


class _ForkToken:
    """Keeps the after-fork registration alive (multiprocessing holds it weakly)."""


_fork_token = _ForkToken()


def _stop_at_worker_exit(_token):
    import multiprocessing.util
    multiprocessing.util.Finalize(None, _ringprof.stop, exitpriority=-100)


_atexit.register(_at_exit)
_os.register_at_fork(after_in_child=_after_fork_child)
if is_recording():  # RINGPROF_AUTOSTART: the library started before this import
    _threads.install()
