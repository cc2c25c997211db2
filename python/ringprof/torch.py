"""PyTorch operators as ringprof zones.

    import ringprof, ringprof.torch
    ringprof.start()          # operators are recorded from here on

Every operator PyTorch's dispatcher runs (aten::linear, aten::addmm, ...),
autograd's backward operators and record_function() labels become zones on
the thread that ran them, through RecordFunction's global callbacks. The
callbacks are registered only while ringprof records.

Levels (set_ops_level, or RINGPROF_TORCH_OPS): "always_on" (the default:
recorded whenever ringprof records), "detailed" (only inside detailed
windows; the callbacks' own cost is still paid while recording), "off".
"""
import os as _os
import sys as _sys

import torch as _torch  # loads libtorch before the extension that links it

import ringprof as _ringprof
from . import _ringprof_torch as _ext

_LEVELS = {"off": 0, "always_on": 1, "detailed": 2}
_NAMES = {v: k for k, v in _LEVELS.items()}


def set_ops_level(level):
    """Which operators are recorded: "always_on", "detailed" or "off"."""
    if level not in _LEVELS:
        raise ValueError("ringprof.torch ops level must be always_on, detailed or off, not %r" % (level,))
    _ext._set_level(_LEVELS[level])
    if level != "off" and _ringprof.is_recording():
        _ext._enable()


def ops_level():
    return _NAMES[_ext._level()]


def _on_start():
    if _ext._level() != 0:
        _ext._enable()


def _on_stop():
    _ext._disable()


_env_level = _os.environ.get("RINGPROF_TORCH_OPS")
if _env_level:
    if _env_level in _LEVELS:
        _ext._set_level(_LEVELS[_env_level])
    else:
        print("ringprof: warning: ignoring RINGPROF_TORCH_OPS=%s (expected always_on, detailed or off); "
              "using the default" % _env_level, file=_sys.stderr)

_ringprof._start_listeners.append(_on_start)
_ringprof._stop_listeners.append(_on_stop)
if _ringprof.is_recording():  # RINGPROF_AUTOSTART, or started before this import
    _on_start()
