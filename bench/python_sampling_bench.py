"""What CPU sampling with Python frames costs a PyTorch training step
(docs/performance.md, "CPU sampling"), in one run, interleaved:

    PYTHONPATH=build/test-release/python /usr/bin/python3 bench/python_sampling_bench.py [--rounds 15]

The step is the stacks issue's: nn.Sequential(Linear, ReLU, Linear), cross
entropy, backward, SGD, plus a pure-Python function. Each round runs the same
number of steps in four fresh processes, in alternating order: without
ringprof, recording with sampling off, recording with sampling at --hz
(default 99, the default rate) through perf_signal (every sample unwinds
.eh_frame and reads the Python frames) and through perf_event (the kernel's
frame-pointer call chains, no Python frames). The figures are each case's median
process CPU time per step (time.process_time: every thread of the process,
ringprof's drainer and writer included) and the main thread's, against
sampling off. Also printed: the bytes on disk per sample in the sampled runs.
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import torch


def make_step():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)
    y = torch.randint(0, 10, (64,))

    def python_work(n):
        s = 0
        for i in range(n):
            s += i * i % 7
        return s

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return python_work(20000)

    return step


CHILD = r"""
import sys, time, torch
sys.path[:0] = [__BENCH_DIR__]
import python_sampling_bench as b
torch.set_num_threads(1)  # one thread: the step's CPU time is not spread over an idle pool
step = b.make_step()
hz, steps, directory, sampler = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
if hz >= 0:
    import ringprof
    ringprof.start(dir=directory, sample_hz=hz, gpu=0, sampler=sampler)
for _ in range(20):  # warm-up: first touches, the drainer's first scans
    step()
t0, w0 = time.process_time(), time.thread_time()
for _ in range(steps):
    step()
cpu, main = time.process_time() - t0, time.thread_time() - w0
handler = 0.0
if hz >= 0:
    ringprof.stop()
    s = ringprof.recorder_stats()
    handler = s["sample_handler_ns"] / s["samples_taken"] if s["samples_taken"] else 0.0
print(cpu, main, handler)
"""


def run(hz, sampler, steps, directory):
    """One fresh process: (process CPU per step, main thread CPU per step, handler ns per sample)."""
    code = CHILD.replace("__BENCH_DIR__", repr(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code, str(hz), str(steps), directory, sampler], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]) / steps, float(out[1]) / steps, float(out[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--hz", type=int, default=99)
    a = ap.parse_args()
    sampled = "perf_signal at %d Hz" % a.hz
    cases = {"without ringprof": (-1, "auto"), "sampling off": (0, "auto"), sampled: (a.hz, "perf_signal"),
             "perf_event at %d Hz" % a.hz: (a.hz, "perf")}
    results = {name: [] for name in cases}
    root = tempfile.mkdtemp(prefix="ringprof-sampling-bench-")
    try:
        for r in range(a.rounds):
            order = list(cases.items())
            if r % 2:
                order.reverse()
            for name, (hz, sampler) in order:
                results[name].append(run(hz, sampler, a.steps, os.path.join(root, "%s-%d-%d" % (sampler, hz, r))))
        dirs = glob.glob(os.path.join(root, "perf_signal-*"))
        size = sum(os.path.getsize(f) for d in dirs for f in glob.glob(os.path.join(d, "*.rpf")))
        samples = 0
        cli = os.environ.get("RINGPROF_CLI", "ringprof")
        for d in dirs:
            for line in subprocess.run([cli, "info", d], capture_output=True, text=True).stdout.splitlines():
                if line.startswith("Samples:"):
                    samples += int(line.split()[1])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base_proc = statistics.median(r[0] for r in results["sampling off"])
    base_thread = statistics.median(r[1] for r in results["sampling off"])
    for name, rs in results.items():
        proc = statistics.median(r[0] for r in rs)
        thread = statistics.median(r[1] for r in rs)
        print("%-22s process CPU per step %.3f ms (%.4f of sampling off), main thread %.3f ms (%.4f)"
              % (name, proc * 1e3, proc / base_proc, thread * 1e3, thread / base_thread))
    handler = [r[2] for r in results[sampled]]
    print("sample handler time per sample (recorder_stats): median %.1f us" % (statistics.median(handler) / 1e3))
    if samples:
        print("bytes on disk per sample (whole files, every event included): %.1f (%d samples, %d bytes)"
              % (size / samples, samples, size))


if __name__ == "__main__":
    main()
