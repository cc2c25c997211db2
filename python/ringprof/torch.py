"""PyTorch operators as ringprof zones.

    import ringprof, ringprof.torch
    ringprof.start()          # operators are recorded from here on

Every operator PyTorch's dispatcher runs (aten::linear, aten::addmm, ...),
autograd's backward operators and record_function() labels become zones on
the thread that ran them, through RecordFunction's global callbacks,
registered only while ringprof records.

Operator levels (set_operator_level, or RINGPROF_TORCH_OPS):
  "sampled"    the default: a random sample of operators (probability
               RINGPROF_TORCH_OPS_SAMPLING, default 0.01) at the always-on
               level, and every operator inside detailed windows;
  "always_on"  every operator whenever ringprof records;
  "detailed"   every operator inside detailed windows, none outside;
  "off"        none.
Why sampling by default: any RecordFunction callback, even one that does
nothing, makes PyTorch slower on every operator (docs/performance.md,
"Python and PyTorch"); a sampled callback leaves most operators alone.

Input shapes and dtypes (zone arguments "Input Dims" and "Input type") are
recorded for every operator while the level is detailed, never outside it;
set_operator_level(..., shapes=False) or RINGPROF_TORCH_SHAPES=0 leaves them out.

"Operator level" is this module's word for which PyTorch operators become
zones; ringprof's own detail level (ringprof.set_mode) is another setting.
The names set_ops_level, ops_level, ops_sampling and ops_shapes from before
0.2 still work.
"""
import os as _os
import sys as _sys

import torch as _torch  # noqa: F401 (loads libtorch before the extension that links it)

import ringprof as _ringprof
from . import _ringprof_torch as _ext

_LEVELS = {"off": 0, "always_on": 1, "detailed": 2, "sampled": 3}
_NAMES = {v: k for k, v in _LEVELS.items()}


def set_operator_level(level, sampling=None, shapes=None):
    """Which operators are recorded: "sampled", "always_on", "detailed" or "off".

    sampling: the probability an operator is recorded at the "sampled" level
    outside detailed windows (0 < p <= 1).
    shapes: whether operators recorded at the detailed level carry their input
    shapes and dtypes (default True).
    """
    if level not in _LEVELS:
        raise ValueError("ringprof.torch operator level must be sampled, always_on, detailed or off, not %r" % (level,))
    if sampling is not None:
        if not 0 < sampling <= 1:
            raise ValueError("ringprof.torch sampling must be in (0, 1], not %r" % (sampling,))
        _ext._set_sampling(float(sampling))
    if shapes is not None:
        _ext._set_record_shapes(bool(shapes))
    _ext._set_level(_LEVELS[level])


def operator_level():
    return _NAMES[_ext._level()]


def operator_sampling():
    return _ext._sampling()


def operator_shapes():
    """Whether input shapes are recorded at the detailed level."""
    return _ext._record_shapes()


# The names before 0.2, when "ops" meant both operators and operations.
set_ops_level = set_operator_level
ops_level = operator_level
ops_sampling = operator_sampling
ops_shapes = operator_shapes


# PyTorch's allocations and frees in detailed windows (torch_memory.h): on
# the thread that calls ringprof.step() (and the threads that take its
# state: autograd's workers), from the step where a window opens to the step
# where it closes. Off by default (RINGPROF_TORCH_MEMORY=1 turns it on):
# PyTorch's CPU allocator keeps the size of each block reported to it, and
# a block allocated in a window and freed after it stays in its table.
_memory_in_windows = False
_memory_window_thread = None  # the thread whose reporting a window installed

# PyTorch's allocations in the sampled heap profile (docs/memory.md), at
# every level while recording and RINGPROF_HEAP_INTERVAL is not 0: on the
# thread that starts recording or imports this module while recording, on
# each thread that calls ringprof.step(), and on the threads that take their
# state (autograd's workers). RINGPROF_TORCH_HEAP: "1" (the default) the
# device allocators (CUDA's caching allocator); "all" PyTorch's CPU
# allocator too (a global lock per CPU block, and PyTorch's warning about
# blocks from before); "0" PyTorch's allocators left alone.
_heap_setting = "1"


def _sync_heap_reporting():
    """Heap reporting on this thread while recording with a heap interval, off otherwise."""
    want = _heap_setting != "0" and _ringprof.is_recording() and _ext._heap_sampling_interval() > 0
    if want and not _ext._heap_reporting_installed():
        _ext._install_heap_reporting(cpu=_heap_setting == "all")
    elif not want:
        _ext._uninstall_heap_reporting()  # also while torch.profiler holds the slot: nothing comes back


def _on_step():
    global _memory_window_thread
    _ext._sync()  # a window that opens at a step() is captured from that step
    _sync_heap_reporting()
    if not _memory_in_windows:
        return
    import threading
    detailed = _ringprof.is_recording() and _ringprof.mode() == "detailed"
    me = threading.get_ident()
    if detailed and _memory_window_thread is None:
        if _ext._install_memory_reporting():
            _memory_window_thread = me
    elif not detailed and _memory_window_thread == me:
        _ext._uninstall_memory_reporting()
        _memory_window_thread = None


def _memory_window_closed():
    """The window's memory reporting off this thread, when a window put it there."""
    global _memory_window_thread
    if _memory_window_thread is not None and _memory_window_thread == __import__("threading").get_ident():
        _ext._uninstall_memory_reporting()
        _memory_window_thread = None


def _on_start():
    _ext._enable()
    _sync_heap_reporting()


def _on_stop():
    _ext._disable()
    _memory_window_closed()
    _ext._uninstall_heap_reporting()


def _read_environment():
    level = _os.environ.get("RINGPROF_TORCH_OPS")
    if level:
        if level in _LEVELS:
            _ext._set_level(_LEVELS[level])
        else:
            print("ringprof: warning: ignoring RINGPROF_TORCH_OPS=%s (expected sampled, always_on, detailed or off); "
                  "using the default" % level, file=_sys.stderr)
    sampling = _os.environ.get("RINGPROF_TORCH_OPS_SAMPLING")
    if sampling:
        try:
            p = float(sampling)
            if not 0 < p <= 1:
                raise ValueError
            _ext._set_sampling(p)
        except ValueError:
            print("ringprof: warning: ignoring RINGPROF_TORCH_OPS_SAMPLING=%s (expected a probability in (0, 1]); "
                  "using the default" % sampling, file=_sys.stderr)
    global _memory_in_windows
    memory = _os.environ.get("RINGPROF_TORCH_MEMORY")
    if memory:
        if memory in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            _memory_in_windows = memory in ("1", "true", "yes", "on")
        else:
            print("ringprof: warning: ignoring RINGPROF_TORCH_MEMORY=%s (expected 1 or 0); using the default"
                  % memory, file=_sys.stderr)
    global _heap_setting
    heap = _os.environ.get("RINGPROF_TORCH_HEAP")
    if heap:
        if heap in ("1", "true", "yes", "on"):
            _heap_setting = "1"
        elif heap in ("0", "false", "no", "off"):
            _heap_setting = "0"
        elif heap == "all":
            _heap_setting = "all"
        else:
            print("ringprof: warning: ignoring RINGPROF_TORCH_HEAP=%s (expected 1, all or 0); using the default"
                  % heap, file=_sys.stderr)
    shapes = _os.environ.get("RINGPROF_TORCH_SHAPES")
    if shapes:
        # On/off as every ringprof setting takes it (docs/configuration.md).
        if shapes in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            _ext._set_record_shapes(shapes in ("1", "true", "yes", "on"))
        else:
            print("ringprof: warning: ignoring RINGPROF_TORCH_SHAPES=%s (expected 1 or 0); using the default"
                  % shapes, file=_sys.stderr)


_read_environment()
# A forked child (a DataLoader worker) inherits the forking thread's hook:
# off there unless the child records too.
_os.register_at_fork(after_in_child=_sync_heap_reporting)
_ringprof._ringprof._set_level_hook(_on_step)
_ringprof._start_listeners.append(_on_start)
_ringprof._stop_listeners.append(_on_stop)
if _ringprof.is_recording():  # RINGPROF_AUTOSTART, or started before this import
    _on_start()

from . import _cupti_handover  # noqa: E402 (after the extension: wraps torch.profiler's Kineto calls)

_cupti_handover.install(_torch, _ext._yield_memory_reporting, _ext._resume_memory_reporting)

from . import _distributed  # noqa: E402
from . import _modules  # noqa: E402

_wrap_distributed = _os.environ.get("RINGPROF_TORCH_DISTRIBUTED", "1")
if _wrap_distributed not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
    print("ringprof: warning: ignoring RINGPROF_TORCH_DISTRIBUTED=%s (expected 1 or 0); using the default"
          % _wrap_distributed, file=_sys.stderr)
    _wrap_distributed = "1"
if _wrap_distributed in ("1", "true", "yes", "on"):
    _distributed.install(_torch, _ext, _ringprof.is_recording)


# ---- a drop-in for torch.profiler.profile ----

import queue as _queue
import warnings as _warnings

_ACTIVITY_NAMES = ("CPU", "CUDA")


def _schedule_params(schedule):
    """The numbers inside a torch.profiler.schedule(...) function, or None.

    torch's schedule() returns a closure over skip_first, wait, warmup, active
    and repeat; reading them lets ringprof's own scheduler (which counts steps
    the same way) run the windows, with no Python call per step.
    """
    code = getattr(schedule, "__code__", None)
    closure = getattr(schedule, "__closure__", None)
    if code is None or not closure:
        return None
    try:
        values = dict(zip(code.co_freevars, (c.cell_contents for c in closure)))
    except ValueError:
        return None
    if not {"wait", "warmup", "active"} <= values.keys():
        return None
    params = {k: int(values.get(k, 0)) for k in ("skip_first", "wait", "warmup", "active", "repeat")}
    # Newer PyTorch: skip_first_wait drops the first cycle's wait, which is
    # the same as skipping `wait` fewer steps first.
    if values.get("skip_first_wait"):
        if params["skip_first"] < params["wait"]:
            return None
        params["skip_first"] -= params["wait"]
    return params


def _warn(what):
    print("ringprof: warning: ringprof.torch.profile: %s" % what, file=_sys.stderr)


class _Row:
    """One operator's totals, under the attribute names torch's FunctionEventAvg uses."""

    def __init__(self, row):
        self.key = row["name"]
        # torch's FunctionEventAvg.input_shapes is a list; ringprof keeps the text it recorded.
        self.input_shapes = dict(row["arg_list"]).get("Input Dims", "")
        self.count = row["calls"]
        ns = 1000.0
        self.cpu_time_total = row["total_ns"] / ns          # microseconds, as torch reports them
        self.self_cpu_time_total = row["self_ns"] / ns
        self.cpu_time = self.cpu_time_total / self.count if self.count else 0.0
        self.cuda_time_total = row["gpu_total_ns"] / ns
        self.self_cuda_time_total = row["gpu_self_ns"] / ns
        self.cuda_time = self.cuda_time_total / self.count if self.count else 0.0
        # Host memory: every pool but the devices' (torch:cuda:N); bytes
        # allocated minus freed, as torch's CPU Mem and CUDA Mem columns.
        self.cpu_memory_usage = row["mem"] - row["device_mem"]
        self.self_cpu_memory_usage = row["self_mem"] - row["self_device_mem"]
        self.cuda_memory_usage = row["device_mem"]
        self.self_cuda_memory_usage = row["self_device_mem"]
        self.device_memory_usage = self.cuda_memory_usage
        self.self_device_memory_usage = self.self_cuda_memory_usage
        self.flops = row["flops"]
        # torch's FunctionEventAvg.stack: "file(line): function", innermost first
        # (key_averages(group_by_stack_n=N): its first N frames).
        self.stack = list(row.get("stack", []))

    def __repr__(self):
        return "<%s count=%d cpu_time_total=%.3fus>" % (self.key, self.count, self.cpu_time_total)


_SORT_KEYS = {
    "cpu_time_total": "cpu_time_total", "self_cpu_time_total": "self_cpu_time_total", "cpu_time": "cpu_time",
    "cuda_time_total": "cuda_time_total", "self_cuda_time_total": "self_cuda_time_total", "cuda_time": "cuda_time",
    "device_time_total": "cuda_time_total", "self_device_time_total": "self_cuda_time_total",
    "count": "count", "cpu_memory_usage": "cpu_memory_usage", "self_cpu_memory_usage": "self_cpu_memory_usage",
    "cuda_memory_usage": "cuda_memory_usage", "self_cuda_memory_usage": "self_cuda_memory_usage",
    "device_memory_usage": "cuda_memory_usage", "self_device_memory_usage": "self_cuda_memory_usage",
    "flops": "flops",
}

_MEMORY_ATTRS = ("cpu_memory_usage", "self_cpu_memory_usage", "cuda_memory_usage", "self_cuda_memory_usage")


def _merge_by_shapes(rows):
    """Rows of one operator and input shapes merged: the tools split rows by
    every zone argument (dtypes too), torch's group_by_input_shape by shapes only."""
    merged = {}
    for r in rows:
        key = (r.key, r.input_shapes, tuple(r.stack))
        m = merged.get(key)
        if m is None:
            merged[key] = r
            continue
        for attr in ("count", "cpu_time_total", "self_cpu_time_total", "cuda_time_total", "self_cuda_time_total",
                     "flops") + _MEMORY_ATTRS:
            setattr(m, attr, getattr(m, attr) + getattr(r, attr))
        m.device_memory_usage = m.cuda_memory_usage
        m.self_device_memory_usage = m.self_cuda_memory_usage
        m.cpu_time = m.cpu_time_total / m.count if m.count else 0.0
        m.cuda_time = m.cuda_time_total / m.count if m.count else 0.0
    return list(merged.values())


class KeyAverages(list):
    """The operator table of one window: a list of rows (key, count, cpu_time_total, ...)
    with table() printing it as torch.profiler's key_averages().table() does."""

    def __init__(self, result, by_shapes=False, stack_n=0, memory=False, flops=False):
        rows = [_Row(r) for r in result["rows"]]
        if memory and result["mem_outside_events"]:
            # torch's "[memory]" row: what was allocated and freed with no
            # operator open on the thread.
            rows.append(_Row({"name": "[memory]", "arg_list": [], "calls": result["mem_outside_events"],
                              "total_ns": 0, "self_ns": 0, "gpu_total_ns": 0, "gpu_self_ns": 0,
                              "mem": result["mem_outside"], "self_mem": result["mem_outside"],
                              "device_mem": result["mem_outside_device"],
                              "self_device_mem": result["mem_outside_device"], "flops": 0}))
        if by_shapes:
            rows = _merge_by_shapes(rows)
        super().__init__(rows)
        self._by_shapes = by_shapes
        self._stack_n = stack_n
        self._sum_self = result["sum_self_ns"] / 1000.0
        self._sum_gpu = result["sum_gpu_ns"] / 1000.0
        self._has_gpu = result["has_gpu"]
        self.memory_allocated = result["mem_allocated"]  # bytes, every allocation in the window
        self.memory_freed = result["mem_freed"]
        # Columns as torch shows them: memory with profile_memory=True (CUDA's
        # when a device pool has any), FLOPs with with_flops=True when any
        # operator has them.
        self._memory = memory
        self._cuda_memory = memory and any(r.cuda_memory_usage or r.self_cuda_memory_usage for r in rows)
        self._flops = flops and any(r.flops for r in rows)

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, **unused):
        rows = list(self)
        if sort_by is not None:
            attr = _SORT_KEYS.get(sort_by)
            if attr is None:
                _warn("sort_by=%r is not a column ringprof has; sorted by cpu_time_total" % (sort_by,))
                attr = "cpu_time_total"
            rows.sort(key=lambda r: (-getattr(r, attr), r.key))
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        width = max([len("Name")] + [min(len(r.key), max_name_column_width) for r in rows])
        cols = [("Self CPU %", 12), ("Self CPU", 12), ("CPU total %", 12), ("CPU total", 12),
                ("CPU time avg", 12)]
        if self._has_gpu:
            cols += [("Self CUDA", 12), ("Self CUDA %", 12), ("CUDA total", 12), ("CUDA time avg", 13)]
        if self._memory:
            cols += [("CPU Mem", 12), ("Self CPU Mem", 12)]
            if self._cuda_memory:
                cols += [("CUDA Mem", 12), ("Self CUDA Mem", 12)]
        cols += [("# of Calls", 12)]
        if self._by_shapes:
            cols += [("Input Shapes", max([len("Input Shapes")] + [len(r.input_shapes) for r in rows]))]
        if self._stack_n:
            cols += [("Source Location", max([len("Source Location")] + [len(f) for r in rows for f in r.stack]))]
        if self._flops:
            # torch's unit: the one that fits the smallest operator's FLOPs.
            scale, unit = _flops_unit(min(r.flops for r in self if r.flops > 0))
            cols += [("Total %s" % unit, 12)]
        line = "-" * (width + 2 + sum(w + 2 for _, w in cols))
        out = [line, "  ".join(["Name".rjust(width)] + [c.rjust(w) for c, w in cols]), line]
        pct = lambda part, whole: "%.2f%%" % (100.0 * part / whole if whole else 0.0)
        for r in rows:
            name = r.key if len(r.key) <= width else r.key[:width - 3] + "..."
            cells = [pct(r.self_cpu_time_total, self._sum_self), _us(r.self_cpu_time_total),
                     pct(r.cpu_time_total, self._sum_self), _us(r.cpu_time_total), _us(r.cpu_time)]
            if self._has_gpu:
                cells += [_us(r.self_cuda_time_total), pct(r.self_cuda_time_total, self._sum_gpu),
                          _us(r.cuda_time_total), _us(r.cuda_time)]
            if self._memory:
                cells += [_memory_text(r.cpu_memory_usage), _memory_text(r.self_cpu_memory_usage)]
                if self._cuda_memory:
                    cells += [_memory_text(r.cuda_memory_usage), _memory_text(r.self_cuda_memory_usage)]
            cells.append(str(r.count))
            if self._by_shapes:
                cells.append(r.input_shapes)
            if self._stack_n:
                # As torch prints it: the innermost frame on the row's line, each caller below.
                cells.append(r.stack[0] if r.stack else "")
            if self._flops:
                cells.append("%8.3f" % (r.flops * scale) if r.flops > 0 else "--")
            just = [c.rjust(w) for c, (_, w) in zip(cells, cols)]
            if self._stack_n:
                at = len(cells) - 1 - (1 if self._flops else 0)
                just[at] = cells[at].ljust(cols[at][1])
            out.append("  ".join([name.rjust(width)] + just))
            for frame in r.stack[1:] if self._stack_n else ():
                at = len(cols) - 1 - (1 if self._flops else 0)
                out.append("  ".join([" " * width] + [" " * w for _, w in cols[:at]] + [frame.ljust(cols[at][1])]))
        out.append(line)
        out.append("Self CPU time total: %s" % _us(self._sum_self))
        if self._has_gpu:
            out.append("Self CUDA time total: %s" % _us(self._sum_gpu))
        return "\n".join(out) + "\n"


def _memory_text(nbytes):
    """Bytes as torch's tables print them: "20.00 Kb", "348 b"."""
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(nbytes) >= size:
            return "%.2f %s" % (nbytes / size, unit)
    return "%d b" % nbytes


def _flops_unit(smallest):
    """torch's FLOPs unit for a table: a scale and "FLOPs", "KFLOPs", ... "PFLOPs"."""
    import math
    units = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")
    k = int(max(0.0, min(math.log10(smallest) / 3, float(len(units) - 1))))
    return 10.0 ** (-3 * k), units[k]


def _us(value):
    if value >= 1e6:
        return "%.3fs" % (value / 1e6)
    if value >= 1e3:
        return "%.3fms" % (value / 1e3)
    return "%.3fus" % value


class profile:
    """torch.profiler.profile, recorded by ringprof into its rolling files.

        with ringprof.torch.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=2),
                                    on_trace_ready=lambda p: p.export_chrome_trace("trace.json")) as p:
            for batch in loader:
                train(batch)
                p.step()

    Inside the block, p.step() is the step boundary: it calls ringprof.step(),
    so the loop must not call ringprof.step() too (the schedule counts every
    step of the process). Operators are recorded at the operator level (sampled
    outside windows by default); the schedule's active steps are ringprof
    windows, where every operator is recorded, and at the end
    of each, on_trace_ready(p) runs in the step() call, as torch runs it, with
    export_chrome_trace() and key_averages() covering that window. Without a
    schedule the whole `with` block is one window. record_shapes=True gives
    the windows' operators their input shapes, with_stack=True the Python
    stack that called each (key_averages(group_by_stack_n=N)). When ringprof
    is not recording yet, the profile starts it (keywords: dir=..., any
    start() setting) and stops it at the end.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, use_cuda=None, **settings):
        self._settings = settings
        self._record_shapes = bool(record_shapes)
        self._shapes_before = None
        self._on_trace_ready = on_trace_ready
        self._schedule = schedule
        self._params = None
        if schedule is not None:
            self._params = _schedule_params(schedule)
            if self._params is None:
                _warn("cannot read this schedule (not made by torch.profiler.schedule); "
                           "every step is recorded as one window")
        self._with_stack = bool(with_stack)
        self._stacks_before = None
        self._profile_memory = bool(profile_memory)
        self._memory_installed = False
        self._with_flops = bool(with_flops)
        self._flops_before = None
        self._with_modules = bool(with_modules)
        self._modules_installed = False
        if experimental_config:
            _warn("experimental_config ignored: not used")
        if activities is not None:
            for a in activities:
                if getattr(a, "name", str(a)) not in _ACTIVITY_NAMES:
                    _warn("activity %s ignored" % (a,))
        self.step_num = 0
        self._own_session = False
        self._dir = None
        self._window = None
        self._windows = _queue.Queue()
        self._callback = None
        self._open = False

    # -- torch.profiler.profile's interface --

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        if not _ringprof.is_recording():
            self._own_session = _ringprof.start(**self._settings)
        elif self._settings:
            _warn("ringprof is already recording; settings %s ignored" % sorted(self._settings))
        self._dir = _ringprof._recording_dir()
        self._windows = _queue.Queue()  # only this block's windows
        if _ext._level() == _LEVELS["off"]:
            set_operator_level("sampled")
        # record_shapes: the windows' operators carry their input shapes, as
        # torch's do; restored at stop().
        self._shapes_before = _ext._record_shapes()
        _ext._set_record_shapes(self._record_shapes)
        # with_stack: the windows' operators carry the Python stack that called
        # them; restored at stop().
        self._stacks_before = _ext._record_stacks()
        _ext._set_record_stacks(self._with_stack)
        if self._with_stack and not _ringprof._ringprof._python_frames()[0]:
            _warn("with_stack: %s" % _ringprof._ringprof._python_frames()[1])
        # with_flops: the windows' operators carry their FLOPs; restored at stop().
        self._flops_before = _ext._record_flops()
        _ext._set_record_flops(self._with_flops)
        # profile_memory: PyTorch's allocations and frees on this thread (and
        # the threads that take its state: autograd's workers).
        if self._profile_memory:
            self._memory_installed = _ext._install_memory_reporting()
            if not self._memory_installed:
                _warn("profile_memory: another profiler (torch.profiler?) is profiling this thread; "
                      "no memory recorded")
        # with_modules: a zone around each nn.Module's forward.
        if self._with_modules:
            self._modules_installed = _modules.install()
        self._callback = _ringprof.on_window_complete(self._windows.put)
        if self._params is not None:
            _ringprof.set_schedule(**self._params)
        else:
            _ringprof.set_schedule(active=2 ** 32 - 1, repeat=1)
        self.step_num = 0
        self._open = True
        _ringprof.step()  # opens step 0 of the schedule, as torch's profiler does at start
        _ext._sync()      # every operator of a window that opens here, from its first

    def step(self):
        _ringprof.step()
        _ext._sync()  # the capture follows a window that opened or closed at this step at once
        self.step_num += 1
        if self._params is not None and self._action(self.step_num - 1) == "save":
            self._deliver()

    def stop(self):
        if not self._open:
            return
        self._open = False
        window_open = self._params is None or self._action(self.step_num) in ("record", "save")
        if self._modules_installed:
            _modules.uninstall()  # module zones a raise left open end inside the window
            self._modules_installed = False
        _ringprof.set_schedule()  # removes it, closing the window still open
        _ext._set_record_shapes(self._shapes_before)  # (syncs the capture too)
        _ext._set_record_stacks(self._stacks_before)
        _ext._set_record_flops(self._flops_before)
        if self._memory_installed:
            _ext._uninstall_memory_reporting()
            self._memory_installed = False
        _memory_window_closed()
        if window_open:
            self._deliver()
        _ringprof.remove_window_callback(self._callback)
        if self._own_session:
            _ringprof.stop()

    def export_chrome_trace(self, path):
        """Writes the last completed window as a Chrome trace (gzipped when path ends in .gz)."""
        from . import _ringprof_tools
        result = _ringprof_tools.chrome_trace(self._files(), str(path), self._window_id())
        for line in result["problems"]:
            print(line, file=_sys.stderr)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The operator table of the last completed window; with
        group_by_input_shape, one row per operator and input shapes (recorded
        with record_shapes=True); with group_by_stack_n=N, one row per operator
        and the innermost N frames of the Python stack that called it
        (recorded with with_stack=True), in each row's `stack`."""
        from . import _ringprof_tools
        n = int(group_by_stack_n or 0)
        if n < 0:
            raise ValueError("group_by_stack_n must be >= 0, not %r" % (group_by_stack_n,))
        if n and not self._with_stack:
            _warn("group_by_stack_n without with_stack=True: operators carry no stacks, every row has none")
        return KeyAverages(_ringprof_tools.table(self._files(), self._window_id(), bool(group_by_input_shape), "", n),
                           bool(group_by_input_shape), n, self._profile_memory, self._with_flops)

    @property
    def window_id(self):
        """The ringprof window id of the last completed window (for `ringprof ... --window-id`)."""
        return self._window

    # -- internals --

    def _files(self):
        """This process's files: window ids are per process, and the directory
        may hold other runs' files or forked workers' (ringprof-PID-...)."""
        import glob
        files = sorted(glob.glob(_os.path.join(glob.escape(self._dir), "ringprof-%d-*.rpf*" % _os.getpid())))
        if not files:
            raise RuntimeError("ringprof.torch.profile: no files of this process in %s" % self._dir)
        return files

    def _window_id(self):
        if self._window is None:
            raise RuntimeError("ringprof.torch.profile: no window has completed yet")
        return self._window

    def _action(self, step):
        """What the schedule does at `step`: "none", "warmup", "record" or "save"."""
        p = self._params
        return _ringprof._ringprof._schedule_action(p["skip_first"], p["wait"], p["warmup"], p["active"],
                                                    p["repeat"], step)

    def _deliver(self):
        if not _ringprof.is_recording():
            return  # no window was recorded (RINGPROF_DISABLE=1, or start() failed)
        _ringprof.flush()  # the window's events into the files; its callback follows
        try:
            window = self._windows.get(timeout=10)
            while not self._windows.empty():  # a trigger's window may have closed too: the latest is ours
                window = self._windows.get_nowait()
        except _queue.Empty:
            _warn("a window did not complete within 10 s; on_trace_ready skipped")
            return
        self._window = window
        if self._on_trace_ready is not None:
            self._on_trace_ready(self)


