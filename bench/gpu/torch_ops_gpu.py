#!/usr/bin/env python3
"""ringprof.torch on a GPU: are kernels attributed to the operators that launched them?

    PYTHONPATH=build/gpu/python python3 bench/gpu/torch_ops_gpu.py OUT_DIR

Trains torch_compare.py's model for a few steps under ringprof.torch.profile
(every operator recorded, GPU tracing on) and checks, from the window's
key_averages(): aten::convolution and aten::addmm (or aten::linear) have
Self CUDA or CUDA total time; the CUDA time launched inside operators is at
least 90% of all GPU time in the window; the Chrome trace opens as JSON.
device_checks.sh runs it on the GPU machine (bench/gpu/results/log.txt).
"""
import json
import os
import sys

import torch

import ringprof
import ringprof.torch
from torch_compare import build  # noqa: E402 (same folder)


def main():
    out = sys.argv[1]
    model, opt, x, y = build()
    loss_fn = torch.nn.CrossEntropyLoss()
    ringprof.torch.set_ops_level("always_on")
    seen = {}

    def ready(p):
        trace = os.path.join(out, "torch-ops-window.json")
        p.export_chrome_trace(trace)
        with open(trace) as f:
            json.load(f)
        rows = p.key_averages()
        seen["rows"] = {r.key: r for r in rows}
        seen["table"] = rows.table(sort_by="cuda_time_total", row_limit=15)
        seen["sum_gpu_us"] = rows._sum_gpu

    with ringprof.torch.profile(schedule=torch.profiler.schedule(wait=2, warmup=1, active=3, repeat=1),
                                on_trace_ready=ready, dir=os.path.join(out, "torch-ops"), gpu=1) as p:
        for _ in range(8):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            torch.cuda.synchronize()
            p.step()
    print(seen.get("table", "no window completed"))
    rows = seen.get("rows") or {}
    failures = []
    for op in ("aten::convolution", "aten::addmm"):
        r = rows.get(op)
        if r is None or r.cuda_time_total <= 0:
            failures.append("%s has no CUDA time" % op)
    inside = sum(r.self_cuda_time_total for r in rows.values())
    if not seen.get("sum_gpu_us") or inside < 0.9 * seen["sum_gpu_us"]:
        failures.append("operators launched %.1f of %.1f us of GPU time" % (inside, seen.get("sum_gpu_us", 0)))
    for f in failures:
        print("torch_ops_gpu: FAIL: " + f)
    if failures:
        sys.exit(1)
    print("torch_ops_gpu: kernels attributed to operators")


if __name__ == "__main__":
    main()
