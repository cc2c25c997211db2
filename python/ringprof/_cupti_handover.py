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

PyTorch's memory reports reach one profiler per thread too (its profiler
state slot, torch_memory.h): where ringprof.torch holds it (profile_memory,
the sampled heap profile), ringprof's reporting steps aside when
torch.profiler (or the legacy autograd profiler, emit_nvtx, emit_itt)
prepares or starts, and comes back when it stops; one warning where a
profile_memory block loses its reports.
"""
import functools as _functools

from . import _ringprof

CLIENT = "torch.profiler"
_held_by_torch = [False]
_memory = {"yield": None, "resume": None}


def _yield_memory():
    # One line each time: it happens once per torch.profiler run at most.
    if _memory["yield"] is not None and _memory["yield"]():
        import sys
        print("ringprof: warning: torch.profiler takes PyTorch's memory reports on this thread: "
              "ringprof's profile_memory pauses until it stops", file=sys.stderr)


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
        _yield_memory()
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
            if _memory["resume"] is not None:
                _memory["resume"]()
    wrapped._ringprof_wrapped = True
    return wrapped


def _wrap_enable(enable):
    @_functools.wraps(enable)
    def wrapped(*args, **kwargs):
        _yield_memory()  # callers that enable without preparing first
        return enable(*args, **kwargs)
    wrapped._ringprof_wrapped = True
    return wrapped


def install(torch, yield_memory=None, resume_memory=None):
    """Wraps Kineto's prepare, enable and disable functions where
    torch.profiler looks them up: torch.autograd (older releases call them
    there) and torch.autograd.profiler (which imports them by name).
    yield_memory/resume_memory take ringprof's memory reporting off the
    thread and put it back."""
    _memory["yield"], _memory["resume"] = yield_memory, resume_memory
    import torch.autograd.profiler as profiler_module
    modules = [torch.autograd, profiler_module]
    try:  # the legacy profiler (torch.autograd.profiler_legacy.profile) imports its pair by name
        import torch.autograd.profiler_legacy as legacy_module
        modules.append(legacy_module)
    except ImportError:
        pass
    for module in modules:
        for name, wrap in (("_prepare_profiler", _wrap_prepare), ("_enable_profiler", _wrap_enable),
                           ("_disable_profiler", _wrap_disable), ("_enable_profiler_legacy", _wrap_enable),
                           ("_disable_profiler_legacy", _wrap_disable)):
            fn = getattr(module, name, None)
            if fn is not None and not getattr(fn, "_ringprof_wrapped", False):
                setattr(module, name, wrap(fn))
