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
with no profiler and with ringprof.torch at always_on.
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


def training():
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)

    def run(steps):
        for _ in range(steps):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            ringprof.step()

    return run


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
        run = training()
        run(5)
        off, on = [], []
        for _ in range(args.rounds):
            rpt.set_ops_level("off")
            t0 = time.perf_counter_ns()
            run(20)
            off.append(time.perf_counter_ns() - t0)
            rpt.set_ops_level("always_on")
            t0 = time.perf_counter_ns()
            run(20)
            on.append(time.perf_counter_ns() - t0)
        print("torch: 20-step loop, no operator capture        %8.3f ms" % (statistics.median(off) / 1e6))
        print("torch: 20-step loop, ringprof.torch always_on   %8.3f ms" % (statistics.median(on) / 1e6))
        print("torch: always_on / no capture                   %8.3f" % (statistics.median(on) / statistics.median(off)))
    ringprof.stop()


if __name__ == "__main__":
    main()
