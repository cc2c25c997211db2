"""torch.profiler and ringprof in one process: CUPTI lent and taken back.

CUPTI serves one client at a time. When torch.profiler starts with CUDA
activities, its Kineto registers its own CUPTI buffer callbacks in place of
ringprof's: the records ringprof still had in CUPTI would complete into
Kineto, which drops them ("bufferCompleted called with unknown buffer"), and
ringprof's clock would make Kineto drop its own GPU records too. So the
functions torch.profiler prepares and stops Kineto with are wrapped: before
Kineto takes CUPTI, ringprof takes back its buffers and lets go
(ringprof.gpu_hand_over, one warning, a mark in the files); after Kineto has
stopped, ringprof takes CUPTI back. Nothing happens when ringprof does not
hold CUPTI or torch.profiler traces the CPU only.
"""
import functools as _functools

from . import _ringprof

CLIENT = "torch.profiler"
_held_by_torch = [False]


def _wants_cuda(activities):
    try:
        return any(getattr(a, "name", str(a)).upper().endswith("CUDA") for a in activities or ())
    except TypeError:
        return False


def _wrap_prepare(prepare):
    @_functools.wraps(prepare)
    def wrapped(config, activities, *args, **kwargs):
        if _wants_cuda(activities) and not _held_by_torch[0]:
            _held_by_torch[0] = _ringprof._gpu_hand_over(CLIENT)
        return prepare(config, activities, *args, **kwargs)
    wrapped._ringprof_wrapped = True
    return wrapped


def _wrap_disable(disable):
    @_functools.wraps(disable)
    def wrapped(*args, **kwargs):
        try:
            return disable(*args, **kwargs)
        finally:
            if _held_by_torch[0]:
                _held_by_torch[0] = False
                _ringprof._gpu_take_back(CLIENT)
    wrapped._ringprof_wrapped = True
    return wrapped


def install(torch):
    """Wraps Kineto's prepare and disable functions where torch.profiler
    looks them up: torch.autograd (older releases call them there) and
    torch.autograd.profiler (which imports them by name)."""
    import torch.autograd.profiler as profiler_module
    for module in (torch.autograd, profiler_module):
        for name, wrap in (("_prepare_profiler", _wrap_prepare), ("_disable_profiler", _wrap_disable)):
            fn = getattr(module, name, None)
            if fn is not None and not getattr(fn, "_ringprof_wrapped", False):
                setattr(module, name, wrap(fn))
