"""What ringprof costs Python code, in one run (docs/performance.md, "Python").

Google Benchmark times C++; these costs live in the interpreter, so this
script times them the same way: the cases alternate round by round, so the
machine's noise falls on all of them alike, and each figure is the median of
its rounds. Run it with the interpreter the package was built for:

    PYTHONPATH=build/wip/python /usr/bin/python3 bench/python_bench.py [--rounds 15]

Zones: `with ringprof.zone("x")` recording (null sink, sampler off) against
an empty `with` of a trivial context manager (a class whose __enter__ and
__exit__ do nothing) and of contextlib.nullcontext(); a decorated function
against the same function undecorated. Training: the 20-step loop of
tests/python/test_torch.py (linear, ReLU, linear, MSE loss, backward, SGD)
with no profiler and with ringprof.torch at always_on. with_stack: one
operator 12 Python frames down at the detailed level, without and with its
Python stack, beside torch.profiler without and with with_stack.
"""
import argparse
import importlib
import contextlib
import statistics
import time

import ringprof


class Trivial:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def per_iteration_ns(fn, n):
    t0 = time.perf_counter_ns()
    fn(n)
    return (time.perf_counter_ns() - t0) / n


def loop_empty_with(n):
    for _ in range(n):
        with Trivial():
            pass


def loop_nullcontext(n):
    null = contextlib.nullcontext()
    for _ in range(n):
        with null:
            pass


def loop_zone(n):
    for _ in range(n):
        with ringprof.zone("bench zone"):
            pass


def plain(x):
    return x


@ringprof.zone
def decorated(x):
    return x


def loop_plain(n):
    for i in range(n):
        plain(i)


def loop_decorated(n):
    for i in range(n):
        decorated(i)


def loop_bare(n):
    for _ in range(n):
        pass


def training(width, hidden, batch):
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, width), torch.randn(batch, 4)

    def run(steps):
        for _ in range(steps):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            ringprof.step()

    return run


def torch_loop(rpt, run, label, rounds):
    ext = rpt._ext
    run(5)
    cases = ("no operator capture", "no-op RecordFunction callback", "no-op callback sampled (1%)",
             "ringprof.torch always_on", "ringprof.torch sampled (1%)")
    levels = {"ringprof.torch always_on": "always_on", "ringprof.torch sampled (1%)": "sampled"}
    times = {k: [] for k in cases}
    for r in range(rounds):
        # A different order each round, so no case always follows the same one.
        for name in cases[r % len(cases):] + cases[:r % len(cases)]:
            rpt.set_operator_level(levels.get(name, "off"), sampling=0.01)
            ext._noop_callback(name.startswith("no-op"), 0.01 if "sampled" in name else 1.0)
            t0 = time.perf_counter_ns()
            run(20)
            times[name].append(time.perf_counter_ns() - t0)
            ext._noop_callback(False)
    rpt.set_operator_level("sampled", sampling=0.01)
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["no operator capture"]
    for k in cases:
        print("torch %s: 20 steps, %-30s %9.3f ms  %6.3f x" % (label, k, med[k] / 1e6, med[k] / base))


def sampling_accuracy(rpt, steps, probability):
    """What sampled capture costs in accuracy: the same loop recorded in full
    and sampled, compared per operator (counts scaled back by 1/p)."""
    import collections
    import tempfile
    run = training(16, 32, 8)
    run(5)
    results = {}
    ringprof.stop()
    for level in ("always_on", "sampled"):
        d = tempfile.mkdtemp(prefix="ringprof-bench-")
        rpt.set_operator_level(level, sampling=probability)
        ringprof.start(dir=d, sample_hz=0)
        run(steps)
        ringprof.stop()
        zones = ringprof.open(d).zones
        count = collections.Counter(z.name for z in zones)
        total = collections.defaultdict(int)
        for z in zones:
            total[z.name] += z.dur_ns
        results[level] = (count, total)
    rpt.set_operator_level("sampled", sampling=0.01)
    full_count, full_total = results["always_on"]
    s_count, s_total = results["sampled"]
    print("sampling accuracy, %d steps of the 16-32-4 loop, p=%g (%d of %d operators recorded):" % (
        steps, probability, sum(s_count.values()), sum(full_count.values())))
    print("  %-48s %8s %9s %10s %10s" % ("operator", "calls", "estimate", "mean ns", "sampled"))
    for name, n in full_count.most_common(8):
        est = s_count.get(name, 0) / probability
        mean = full_total[name] / n
        s_mean = s_total[name] / s_count[name] if s_count.get(name) else float("nan")
        print("  %-48s %8d %9.0f %10.0f %10.0f" % (name[:48], n, est, mean, s_mean))
    ringprof.start(sink="null", sample_hz=0)


def at_depth(depth, fn, n):
    """fn(n) called `depth` Python frames down: an operator's stack as deep as a model's."""
    if depth == 0:
        return fn(n)
    return at_depth(depth - 1, fn, n)


def with_stack_cost(rpt, rounds, n=20000, depth=12):
    """What with_stack adds per operator: torch.add of two 1-element tensors
    called 12 Python frames down, recorded at the detailed level without and
    with its Python stack, against torch.profiler without and with with_stack.
    Two figures per case: the calling thread's time inside the loop, and the
    whole process's CPU time (every thread) from before the loop until the
    case's events are handled: ringprof's drainer and writer through a
    flush(), torch.profiler's processing when its block exits."""
    import torch
    a, b = torch.ones(1), torch.ones(1)

    def ops(k):
        t0 = time.perf_counter_ns()
        for _ in range(k):
            torch.add(a, b)
        return (time.perf_counter_ns() - t0) / k

    def plain():
        c0 = time.process_time_ns()
        wall = at_depth(depth, ops, n)
        return wall, (time.process_time_ns() - c0) / n

    def ringprof_case(stacks):
        def run():
            rpt._ext._set_record_stacks(stacks)
            ringprof.set_mode("detailed")
            rpt._ext._sync()
            c0 = time.process_time_ns()
            try:
                wall = at_depth(depth, ops, n)
            finally:
                ringprof.set_mode("always_on")
                rpt._ext._set_record_stacks(False)
            ringprof.flush()
            return wall, (time.process_time_ns() - c0) / n
        return run

    def torch_case(stack):
        def run():
            c0 = time.process_time_ns()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_stack=stack):
                wall = at_depth(depth, ops, n)
            return wall, (time.process_time_ns() - c0) / n
        return run

    cases = {"no capture": plain,
             "ringprof detailed": ringprof_case(False), "ringprof detailed, with_stack": ringprof_case(True),
             "torch.profiler": torch_case(False), "torch.profiler, with_stack": torch_case(True)}
    rpt.set_operator_level("detailed", shapes=False)
    wall = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    names = list(cases)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            w, c = cases[name]()
            wall[name].append(w)
            cpu[name].append(c)
    rpt.set_operator_level("sampled", sampling=0.01, shapes=True)
    w = {k: statistics.median(v) for k, v in wall.items()}
    c = {k: statistics.median(v) for k, v in cpu.items()}
    for k in names:
        print("torch.add %d frames down: %-30s %7.0f ns per operator on the thread, %7.0f ns process CPU" % (
            depth, k, w[k], c[k]))
    for label, key in (("thread", w), ("process CPU", c)):
        print("with_stack adds (%s): ringprof %+.0f ns, torch.profiler %+.0f ns per operator" % (
            label, key["ringprof detailed, with_stack"] - key["ringprof detailed"],
            key["torch.profiler, with_stack"] - key["torch.profiler"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    ringprof.start(sink="null", sample_hz=0)
    cases = {"bare loop": loop_bare, "empty with (trivial class)": loop_empty_with,
             "with nullcontext()": loop_nullcontext, "with ringprof.zone": loop_zone,
             "plain call": loop_plain, "@ringprof.zone call": loop_decorated}
    times = {k: [] for k in cases}
    for _ in range(args.rounds):
        for name, fn in cases.items():
            times[name].append(per_iteration_ns(fn, args.n))
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in med.items():
        print("python: %-40s %8.1f ns" % (k, v))
    bare = med["bare loop"]
    print("python: zone / empty with of a trivial class    %8.3f" % (
        (med["with ringprof.zone"] - bare) / (med["empty with (trivial class)"] - bare)))
    print("python: zone / with nullcontext()               %8.3f" % (
        (med["with ringprof.zone"] - bare) / (med["with nullcontext()"] - bare)))
    print("python: decorated call - plain call             %8.1f ns" % (med["@ringprof.zone call"] - med["plain call"]))
    if not args.no_torch:
        rpt = importlib.import_module("ringprof.torch")
        # The tests' model (operators of about a microsecond, where PyTorch's
        # own RecordFunction floor weighs most) and a wider one.
        for label, shape in (("16-32-4, batch 8", (16, 32, 8)), ("256-1024-4, batch 64", (256, 1024, 64))):
            torch_loop(rpt, training(*shape), label, args.rounds)
        sampling_accuracy(rpt, 1000, 0.01)
        with_stack_cost(rpt, args.rounds)
    ringprof.stop()


if __name__ == "__main__":
    main()
