"""What the Python tests share: the CLI, fresh directories, child interpreters.

The tests read recordings back through the `ringprof` CLI (RINGPROF_CLI, set
by ctest) and parse its CSV and Chrome JSON with the standard library.
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time

CLI = os.environ.get("RINGPROF_CLI", "ringprof")


def fresh_dir(test):
    d = tempfile.mkdtemp(prefix="ringprof-py-")
    test.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
    return os.path.join(d, "rec")


def cli(*args):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("ringprof %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


def table(path, *args):
    """Zone rows by name, from `ringprof table --format csv`."""
    rows = csv.DictReader(cli("table", "--format", "csv", *args, path).splitlines())
    return {r["name"]: r for r in rows}


def calls(path, *args):
    return {name: int(r["calls"]) for name, r in table(path, *args).items()}


def window_ids(path):
    """The ids of the windows `ringprof info` lists, in order."""
    return [int(m) for m in re.findall(r"window (\d+) begins", cli("info", path))]


def chrome(path, *args):
    out = os.path.join(os.path.dirname(path), "trace.json")
    cli("convert", *args, path, "-o", out)
    with open(out) as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d


def run_python(code, env=None, timeout=120):
    """Runs `code` in a child interpreter that imports the package as the tests do."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=timeout)


def wait_for(predicate, timeout=30.0, what="a condition"):
    """Polls `predicate` until it holds or `timeout` passes (never a bare sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


def median_lateness(rank_dirs, name, straggler, spans=False):
    """Worked out here, apart from `ringprof ranks`: the median over calls of
    how much later the straggler began its k-th collective (an async span
    when `spans`, else a zone, named `name` or, when `name` ends in ":",
    starting with it) than the median of the other ranks' k-th. The ranks
    share one host and its clock, and every rank makes the same calls. The
    median of the others is the upper one, as in `ranks` (docs/ranks.md)."""
    import ringprof
    begins = []
    for d in rank_dirs:
        rec = ringprof.open(d)
        begins.append(sorted(x.start_ns for x in (rec.spans if spans else rec.zones) if x.name == name or (name.endswith(":") and x.name.startswith(name))))
    counts = {len(b) for b in begins}
    if len(counts) != 1:
        raise AssertionError("ranks made different numbers of %s calls: %s" % (name, [len(b) for b in begins]))
    late = []
    for k in range(len(begins[0])):
        others = sorted(b[k] for r, b in enumerate(begins) if r != straggler)
        late.append(begins[straggler][k] - others[len(others) // 2])
    late.sort()
    return late[len(late) // 2]
