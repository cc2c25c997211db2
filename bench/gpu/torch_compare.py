#!/usr/bin/env python3
"""One small PyTorch training loop, run under each profiler in turn, for the
side-by-side GPU check (bench/gpu/device_checks.sh runs it, analyse_gpu_run.py
reads what it leaves).

    torch_compare.py --mode MODE --steps N --out DIR

Modes:
  none        no profiler
  ringprof    ringprof.start() + ringprof.torch at the always_on operator level
              (--level always_on or detailed: the recording's base level)
  torch       torch.profiler over the whole run, CPU and CUDA activities
  plain       like none, for a run under CUDA_INJECTION64_PATH (the program
              knows nothing of ringprof)
  window      ringprof always_on, with a detailed window of 20 steps in the
              middle after one warmup step (ringprof.set_schedule: the
              detailed kinds switched on and off at run time)
  clash       ringprof always_on, and torch.profiler started for steps
              [N/3, 2N/3) while ringprof holds CUPTI

Steps: in ringprof modes boundary 0 comes before the model is built and
boundary i+1 at the end of iteration i (ringprof.step(i) marks boundary i),
so step 0 also holds the model's creation; under torch.profiler a
record_function("ringprof_compare_step#i") surrounds iteration i. Steps from
1 on are the same iterations on both sides. Each iteration ends with
torch.cuda.synchronize(), so a step's GPU work is done inside the step.
--ops off and --gpu 0 split ringprof's cost between operators and GPU tracing.

Prints one JSON line: mode, step times (ms, host, per iteration), and for
torch.profiler the kernels it saw. The torch mode writes DIR/torch_kernels.json
(each kernel, copy and set: step, stream, name, start, duration, launch time)
and DIR/torch_ops.json (key_averages() rows), compact enough to bring back.
"""
import argparse
import json
import os
import sys
import time

import contextlib

import torch
import torch.nn as nn

# --device cpu runs the same code without a GPU, to try this script (and
# device_checks.sh) on a machine without one before spending GPU time.
DEV = "cuda"
# torch.profiler's record_function around each iteration (torch mode): the
# step of each kernel is the annotation its launch falls in.
STEP_MARK = "ringprof_compare_step#"


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def nvtx_range(name):
    return torch.cuda.nvtx.range(name) if DEV == "cuda" else contextlib.nullcontext()


def build():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(64 * 16, 256), nn.ReLU(), nn.Linear(256, 10),
    ).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data = torch.randn(64, 3, 32, 32, device=DEV)
    target = torch.randint(0, 10, (64,), device=DEV)
    return model, opt, data, target


def train(steps, boundary, before_step=None, annotate=None):
    """Runs `steps` iterations; boundary(i) is called at boundary i (0 before
    the model is built); annotate(i), when given, is a context manager around
    iteration i. Returns each iteration's host time in ms."""
    boundary(0)
    model, opt, data, target = build()
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for i in range(steps):
        if before_step:
            before_step(i)
        sync()
        t0 = time.perf_counter()
        with annotate(i) if annotate else contextlib.nullcontext():
            opt.zero_grad(set_to_none=True)
            with nvtx_range("train_step"):
                loss = loss_fn(model(data), target)
                loss.backward()
                opt.step()
            sync()
        times.append((time.perf_counter() - t0) * 1000.0)
        boundary(i + 1)
    return times


def torch_kernels(trace_path):
    """Kernels, copies and sets from torch.profiler's exported trace, each with
    the step whose annotation (STEP_MARK + N) holds its launch."""
    with open(trace_path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data  # a bare list from CPU-only builds
    steps = sorted((e["ts"], e["ts"] + e.get("dur", 0), int(e["name"].split("#")[1]))
                   for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith(STEP_MARK))
    launches = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            c = e.get("args", {}).get("correlation")
            if c is not None:
                launches[c] = (e["ts"], e.get("dur", 0), e["name"])
    out = []
    for e in events:
        cat = e.get("cat")
        if e.get("ph") != "X" or cat not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        args = e.get("args", {})
        launch = launches.get(args.get("correlation"))
        step = -1
        if launch:
            for lo, hi, n in steps:
                if lo <= launch[0] < hi:
                    step = n
                    break
        out.append({"kind": cat, "step": step, "stream": args.get("stream"), "device": args.get("device"),
                    "name": e["name"], "ts_us": e["ts"], "dur_us": e.get("dur", 0),
                    "launch_us": launch[0] if launch else None, "launch_api": launch[2] if launch else None,
                    "correlation": args.get("correlation")})
    return out, len(steps)


def key_average_rows(prof):
    rows = []
    for r in prof.key_averages():
        def get(*names):
            for n in names:
                v = getattr(r, n, None)
                if v is not None:
                    return float(v)
            return 0.0
        rows.append({"key": r.key, "count": r.count, "device_type": str(getattr(r, "device_type", "")),
                     "self_device_us": get("self_device_time_total", "self_cuda_time_total"),
                     "device_us": get("device_time_total", "cuda_time_total"),
                     "self_cpu_us": get("self_cpu_time_total"), "cpu_us": get("cpu_time_total")})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["none", "plain", "ringprof", "torch", "window", "clash"], required=True)
    ap.add_argument("--level", choices=["always_on", "detailed"], default="always_on")
    ap.add_argument("--ops", choices=["always_on", "off"], default="always_on",
                    help="ringprof.torch's operator level (ringprof modes)")
    ap.add_argument("--gpu", choices=["1", "0"], default="1", help="ringprof's GPU tracing (ringprof modes)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = ap.parse_args()
    global DEV
    DEV = args.device
    os.makedirs(args.out, exist_ok=True)
    result = {"mode": args.mode, "level": args.level, "steps": args.steps, "pid": os.getpid()}

    if args.mode in ("none", "plain"):
        times = train(args.steps, lambda i: None)
    elif args.mode == "torch":
        from torch.profiler import ProfilerActivity, profile
        from torch.profiler import record_function
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            times = train(args.steps, lambda i: None, annotate=lambda i: record_function(STEP_MARK + str(i)))
        trace = os.path.join(args.out, "torch_trace.json")
        t0 = time.perf_counter()
        prof.export_chrome_trace(trace)
        result["export_s"] = time.perf_counter() - t0
        kernels, nsteps = torch_kernels(trace)
        with open(os.path.join(args.out, "torch_kernels.json"), "w") as f:
            json.dump(kernels, f)
        with open(os.path.join(args.out, "torch_ops.json"), "w") as f:
            json.dump(key_average_rows(prof), f)
        result.update(kernels=sum(1 for k in kernels if k["kind"] == "kernel"), profiler_steps=nsteps,
                      output_bytes=os.path.getsize(trace))
        os.remove(trace)  # its size is the figure; the compact lists above are what comes back
    else:
        import ringprof
        import ringprof.torch
        ringprof.torch.set_ops_level(args.ops)
        level = "always_on" if args.mode in ("window", "clash") else args.level
        if not ringprof.start(dir=os.path.join(args.out, "ringprof"), mode=level, gpu=int(args.gpu)):
            print("torch_compare: ringprof did not start", file=sys.stderr)
            sys.exit(1)
        if args.mode == "window":
            # Boundaries mark steps 0..N; ringprof counts a step at each mark.
            # One warmup step: the drainer switches CUPTI's detailed kinds
            # on microseconds after the window opens, and an NVTX range
            # pushed before that is not recorded (docs/gpu.md).
            ringprof.set_schedule(wait=args.steps // 2 - 1, warmup=1, active=20, repeat=1)
        before = None
        if args.mode == "clash":
            state = {}
            lo, hi = args.steps // 3, 2 * args.steps // 3

            def before(i):
                from torch.profiler import ProfilerActivity, profile
                if i == lo:
                    state["prof"] = profile(activities=[ProfilerActivity.CUDA])
                    state["prof"].__enter__()
                elif i == hi:
                    p = state.pop("prof")
                    p.__exit__(None, None, None)
                    result["torch_kernels_in_clash"] = sum(
                        1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)
                    trace = os.path.join(args.out, "clash_trace.json")
                    p.export_chrome_trace(trace)
                    kernels, _ = torch_kernels(trace)
                    with open(os.path.join(args.out, "torch_kernels.json"), "w") as f:
                        json.dump(kernels, f)
                    os.remove(trace)
            result["clash_steps"] = [lo, hi]
        times = train(args.steps, ringprof.step, before)
        ringprof.stop()
        try:
            result["stats"] = ringprof.recorder_stats()
        except Exception as e:  # the step times matter more than the counters
            result["stats"] = repr(e)
    result["step_ms"] = times
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
