"""Reading recordings from Python: ringprof.open(path).

    rec = ringprof.open("runs/ringprof")           # a directory, a file, or a list of them
    for z in rec.zones:                            # named tuples
        print(z.name, z.dur_ns, z.thread)
    df = rec.dataframe("zones")                    # pandas, when installed
    df.groupby("name").dur_ns.describe()

Kinds and their fields:
  zones     pid tid thread name start_ns end_ns dur_ns self_ns depth file line args (dict: zone_arg key -> text)
            stack (with_stack: "file(line): function" of each caller, innermost first; else [])
  spans     pid tid end_tid thread name id start_ns end_ns dur_ns unterminated args   (async spans: begun on
            thread tid, ended on end_tid; PyTorch's process-group work such as gloo:all_reduce)
  samples   pid tid thread ts_ns function stack (function names, leaf first)
  gpu       pid kind name start_ns end_ns dur_ns device stream correlation bytes
  memory    pid tid kind pool ts_ns address bytes          (kind: alloc | free)
  steps     pid tid ts_ns step
  counters  pid tid name ts_ns value
Times are CLOCK_MONOTONIC nanoseconds, as in the files. The files are read
once, by the same library the `ringprof` command uses; damaged parts are
reported on stderr, one line each, and the rest is read.
"""
import collections
import os
import sys

KINDS = ("zones", "spans", "samples", "gpu", "memory", "steps", "counters")


class Records:
    """One kind of record: a sequence of named tuples over columns."""

    def __init__(self, kind, columns):
        self.kind = kind
        self.columns = columns
        self._type = collections.namedtuple(kind.rstrip("s").capitalize() if kind != "gpu" else "GpuRecord",
                                            list(columns))

    def __len__(self):
        first = next(iter(self.columns.values()), [])
        return len(first)

    def __iter__(self):
        return (self._type(*row) for row in zip(*self.columns.values()))

    def __getitem__(self, i):
        return self._type(*(col[i] for col in self.columns.values()))

    def __repr__(self):
        return "<ringprof %s: %d records>" % (self.kind, len(self))


class Recording:
    """The events of one or more ringprof files or directories."""

    def __init__(self, paths, window_id=None):
        from . import _ringprof_tools
        if isinstance(paths, (str, bytes, os.PathLike)):
            paths = [paths]
        self.paths = [os.fspath(p) for p in paths]
        for p in self.paths:
            if not os.path.exists(p):
                raise FileNotFoundError("ringprof.open: %s: no such file or directory" % p)
        self.window_id = window_id
        columns = _ringprof_tools.read_records(self.paths, window_id)
        self.problems = columns.pop("problems")
        for line in self.problems:
            print(line, file=sys.stderr)
        self._records = {kind: Records(kind, columns[kind]) for kind in KINDS}

    zones = property(lambda self: self._records["zones"])
    spans = property(lambda self: self._records["spans"])
    samples = property(lambda self: self._records["samples"])
    gpu = property(lambda self: self._records["gpu"])
    memory = property(lambda self: self._records["memory"])
    steps = property(lambda self: self._records["steps"])
    counters = property(lambda self: self._records["counters"])

    def dataframe(self, kind):
        """One kind of record as a pandas DataFrame (one column per field)."""
        if kind not in KINDS:
            raise ValueError("kind must be one of %s, not %r" % (", ".join(KINDS), kind))
        try:
            import pandas
        except ImportError:
            raise ImportError("Recording.dataframe() needs pandas (Debian: apt-get install python3-pandas); "
                              "the records themselves need nothing: iterate Recording.%s" % kind) from None
        return pandas.DataFrame(self._records[kind].columns)

    def windows(self):
        """The detailed windows the files mark: dicts of pid, id, begin_ns, end_ns, warmup_ns, triggered."""
        from . import _ringprof_tools
        return _ringprof_tools.windows(self.paths)

    def __repr__(self):
        return "<ringprof recording %s: %s>" % (
            ", ".join(self.paths), ", ".join("%d %s" % (len(r), k) for k, r in self._records.items()))


def open(paths, window_id=None):
    """Reads a recording: a directory, a file, or a list of them (see the module's text)."""
    return Recording(paths, window_id)
