#!/usr/bin/env python3
"""A small PyTorch training loop for run_gpu_checks.sh.

    train_small.py --mode none|ringprof|torch --steps N --out DIR

Prints one JSON line: the mode, the median step time (ms), the kernels seen
by torch.profiler (torch mode) and where the output went. In ringprof mode
the program itself is unchanged: the script is started with
CUDA_INJECTION64_PATH pointing at libringprof_inject.so, and the kernels are
counted afterwards with `ringprof gpu`. In torch mode the profiler covers the
whole run (model creation included), as the injected ringprof does, so the
two kernel counts must be equal.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn as nn


def build():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(64 * 16, 256), nn.ReLU(), nn.Linear(256, 10),
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data = torch.randn(64, 3, 32, 32, device="cuda")
    target = torch.randint(0, 10, (64,), device="cuda")
    return model, opt, data, target


def train(steps):
    model, opt, data, target = build()
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.nvtx.range("train_step"):
            loss = loss_fn(model(data), target)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000.0)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["none", "ringprof", "torch"], required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    result = {"mode": args.mode, "steps": args.steps}
    if args.mode == "torch":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            times = train(args.steps)
        trace = os.path.join(args.out, "torch_trace.json")
        prof.export_chrome_trace(trace)
        kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                      and not e.name.startswith("Memcpy") and not e.name.startswith("Memset"))
        # The exported trace is the authority: it keeps every CUPTI kernel record.
        with open(trace) as f:
            kernels_json = sum(1 for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel")
        result.update(kernels=kernels_json, kernels_events_api=kernels, output_bytes=os.path.getsize(trace))
    else:
        times = train(args.steps)
    warm = times[10:] if len(times) > 20 else times
    result["median_step_ms"] = statistics.median(warm)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
