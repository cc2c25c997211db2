#!/usr/bin/env python3
"""Checks and tables from one device_checks.sh run, made on any machine.

    PYTHONPATH=build/gpu/python python3.12 bench/gpu/analyse_gpu_run.py ARCHIVE_OR_DIR [-o RESULTS_DIR]

ARCHIVE_OR_DIR is the folder holding device_checks.sh's
gpu-run.tar.gz.part-* files, one archive, or the unpacked folder. Reads the recordings with
ringprof.open() and the `ringprof` CLI (RINGPROF_CLI, default
build/gpu/tools/ringprof), torch.profiler's lists the torch runs kept, and
each run's JSON line. Prints every check as "ok:" or "FAIL:" and the
side-by-side table; writes RESULTS_DIR/summary.md (default bench/gpu/results).
Exit status 1 when a check failed.
"""
import argparse
import collections
import glob
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

import ringprof

CLI = os.environ.get("RINGPROF_CLI", "build/gpu/tools/ringprof")
results = []   # (ok, text)
lines = []     # the summary's body, markdown


def check(ok, text):
    results.append((bool(ok), text))
    print(("ok: " if ok else "FAIL: ") + text)
    return ok


def say(text=""):
    print(text)
    lines.append(text)


def cli(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def unpack(path):
    if os.path.isdir(os.path.join(path, "runs")):
        return path
    parts = [path] if os.path.isfile(path) else sorted(glob.glob(os.path.join(path, "gpu-run.tar.gz.part-*")))
    tmp = tempfile.mkdtemp(prefix="ringprof-gpu-")
    joined = os.path.join(tmp, "run.tar.gz")
    with open(joined, "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                out.write(f.read())
    with tarfile.open(joined) as t:
        t.extractall(tmp, filter="data")
    return tmp


def run_json(d, name):
    try:
        with open(os.path.join(d, "runs", name + ".json")) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, IndexError, ValueError):
        return None


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


# ---- ringprof's view of one recording ----

class RpRun:
    """GPU records of one ringprof recording, each kernel with the step that launched it."""

    def __init__(self, path):
        rec = ringprof.open(path)
        self.path = path
        self.gpu = list(rec.gpu)
        self.steps = sorted((s.ts_ns, s.step) for s in rec.steps)
        self.zones = rec.zones
        self.launch = {}
        for g in self.gpu:
            if g.kind in ("runtime_api", "driver_api") and g.correlation:
                self.launch[g.correlation] = g
        self.work = [g for g in self.gpu if g.kind in ("kernel", "memcpy", "memset")]

    def step_of(self, ts):
        lo, hi, best = 0, len(self.steps) - 1, -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.steps[mid][0] <= ts:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return self.steps[best][1] if best >= 0 else -1

    def kernels(self):
        """[{step, stream, name, start, dur_us}] for kernels, in start order."""
        out = []
        for g in self.work:
            if g.kind != "kernel":
                continue
            api = self.launch.get(g.correlation)
            out.append({"step": self.step_of(api.start_ns) if api else -1, "stream": g.stream, "name": g.name,
                        "start": g.start_ns, "dur_us": g.dur_ns / 1000.0,
                        "early": bool(api and g.start_ns < api.start_ns)})
        out.sort(key=lambda k: k["start"])
        return out

    def unlaunched(self):
        return sum(1 for g in self.work if g.correlation not in self.launch)


def torch_kernel_list(d, name):
    try:
        with open(os.path.join(d, "runs", name, "torch_kernels.json")) as f:
            ks = json.load(f)
    except OSError:
        return None
    out = [{"step": k["step"], "stream": k["stream"], "name": k["name"], "start": k["ts_us"], "dur_us": k["dur_us"],
            "early": k["launch_us"] is not None and k["ts_us"] < k["launch_us"]}
           for k in ks if k["kind"] == "kernel"]
    out.sort(key=lambda k: k["start"])
    return out


def norm(name):
    return "".join(name.split())


def per_step_names(kernels):
    steps = collections.defaultdict(list)
    for k in kernels:
        steps[k["step"]].append(norm(k["name"]))
    return steps


def compare_kernels(a, b, first_step=1):
    """Per step: the same kernel names, in order, on each stream; then the
    durations paired one to one. Returns (steps equal, steps compared,
    median |rel diff|, pairs, first difference, median signed rel diff,
    total duration ratio a/b over the pairs)."""
    sa, sb = per_step_names(a), per_step_names(b)
    steps = sorted(s for s in set(sa) | set(sb) if s >= first_step)
    equal = sum(1 for s in steps if sa.get(s) == sb.get(s))
    first_diff = next((s for s in steps if sa.get(s) != sb.get(s)), None)
    diffs, signed, tot_a, tot_b = [], [], 0.0, 0.0
    by = lambda ks: {key: [k for k in ks if (k["step"], k["stream"]) == key]
                     for key in {(k["step"], k["stream"]) for k in ks if k["step"] >= first_step}}
    ga, gb = by(a), by(b)
    for key, ka in ga.items():
        kb = gb.get(key, [])
        if [norm(k["name"]) for k in ka] != [norm(k["name"]) for k in kb]:
            continue
        for x, y in zip(ka, kb):
            if y["dur_us"] > 0:
                diffs.append(abs(x["dur_us"] - y["dur_us"]) / y["dur_us"])
                signed.append((x["dur_us"] - y["dur_us"]) / y["dur_us"])
                tot_a += x["dur_us"]
                tot_b += y["dur_us"]
    med = statistics.median(diffs) if diffs else float("nan")
    bias = statistics.median(signed) if signed else float("nan")
    ratio = tot_a / tot_b if tot_b else float("nan")
    return equal, len(steps), med, len(diffs), first_diff, bias, ratio


# ---- the checks ----

def known_counts(d):
    say("## Known counts (bench/gpu/known_counts.cu)")
    say()
    say("| run | add_one | scale | HtoD | DtoH | memset | sync | NVTX | launch calls | unpaired work | clock order |")
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in ("inject_detailed", "preload_detailed", "inject_always", "preload_always"):
        path = os.path.join(d, "runs", "kc_" + name)
        if not os.path.isdir(path):
            check(False, "kc_%s: no recording" % name)
            continue
        expect = {}
        with open(path + ".expect") as f:
            for line in f:
                p = line.split()
                if len(p) == 3 and p[0] == "expect":
                    expect[p[1]] = int(p[2])
        if not check(len(expect) == 6, "kc_%s: the program ran to the end (its expect lines)" % name):
            continue
        rp = RpRun(path)
        detailed = name.endswith("detailed")
        kernels = collections.Counter(g.name.replace("(anonymous namespace)::", "").split("(")[0]
                                      for g in rp.work if g.kind == "kernel")
        rc, gpu_txt, err = cli("gpu", path)
        copies = {}
        for line in gpu_txt.splitlines():
            p = line.split()
            if len(p) >= 2 and p[0] in ("HtoD", "DtoH") and p[1].isdigit():
                copies[p[0]] = int(p[1])
        memsets = sum(1 for g in rp.work if g.kind == "memset")
        syncs = sum(1 for g in rp.gpu if g.kind == "sync")
        nvtx = sum(1 for g in rp.gpu if g.kind == "marker" and g.name == "iteration")
        api = collections.Counter(g.name for g in rp.gpu if g.kind == "runtime_api")
        launches = api.get("cudaLaunchKernel", 0) + api.get("cudaLaunchKernel_v7000", 0)
        unpaired = rp.unlaunched()
        early = sum(1 for k in rp.kernels() if k["early"])
        got = {"add_one": kernels.get("add_one", 0), "scale": kernels.get("scale", 0),
               "HtoD": copies.get("HtoD", 0), "DtoH": copies.get("DtoH", 0), "memset": memsets}
        for key, value in got.items():
            check(value == expect[key], "kc_%s: %s %d (the program made %d)" % (name, key, value, expect[key]))
        want_sync = 10 if detailed else 0
        want_nvtx = expect["nvtx"] if detailed else 0
        check(syncs == want_sync, "kc_%s: %d synchronisation records (want %d: cudaDeviceSynchronize x10, detailed only)"
              % (name, syncs, want_sync))
        check(nvtx == want_nvtx, "kc_%s: %d NVTX ranges 'iteration' (want %d)" % (name, nvtx, want_nvtx))
        check(launches == expect["add_one"] + expect["scale"],
              "kc_%s: %d cudaLaunchKernel calls recorded (want %d)" % (name, launches, expect["add_one"] + expect["scale"]))
        check(unpaired == 0, "kc_%s: every kernel, copy and set has its launching call by correlation id (%d without)"
              % (name, unpaired))
        check(early == 0 and "Clock order violations: 0" in gpu_txt,
              "kc_%s: clock order violations 0 (kernels before their launch: %d)" % (name, early))
        check(rc == 0 and "Lost: 0 records dropped by CUPTI, 0 buffers refused" in gpu_txt,
              "kc_%s: nothing lost (ringprof gpu exit %d)" % (name, rc))
        say("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |" % (
            name, got["add_one"], got["scale"], got["HtoD"], got["DtoH"], memsets, syncs, nvtx, launches, unpaired,
            early))
    say()
    say("Expected: add_one 100, scale 50, HtoD 20, DtoH 20, memset 10, sync 10 and NVTX 10 at `detailed` (0 at "
        "`always_on`, where those kinds are off), 150 launch calls, 0 unpaired, 0 clock order violations.")
    say()


def side_by_side(d, reps):
    say("## PyTorch side by side")
    say()
    base = [run_json(d, "none_%d" % r) for r in range(1, reps + 1)]
    modes = [("ringprof always_on (operators + GPU)", "rp_always"), ("ringprof detailed", "rp_detailed"),
             ("torch.profiler (CPU + CUDA)", "torch"), ("ringprof operators only (`gpu=0`)", "rp_opsonly"),
             ("ringprof GPU tracing only (operators off)", "rp_gpuonly")]
    warm = lambda j: statistics.median(j["step_ms"][10:]) if j else float("nan")
    steps = base[0]["steps"] if base[0] else 0
    say("| | step ms (median of reps) | slowdown: median [min, max] over %d reps | output bytes per step |" % reps)
    say("|---|---|---|---|")
    say("| no profiler | %.3f | | |" % statistics.median([warm(j) for j in base if j]))
    for label, prefix in modes:
        runs = [run_json(d, "%s_%d" % (prefix, r)) for r in range(1, reps + 1)]
        slow = [warm(j) / warm(b) - 1 for j, b in zip(runs, base) if j and b]
        if not slow:
            continue
        if prefix == "torch":
            size = statistics.median([j["output_bytes"] for j in runs if j])
        else:
            size = statistics.median([dir_bytes(os.path.join(d, "runs", "%s_%d" % (prefix, r), "ringprof"))
                                      for r in range(1, reps + 1) if runs[r - 1]])
        say("| %s | %.3f | %+.1f%% [%+.1f%%, %+.1f%%] | %.0f |" % (
            label, statistics.median([warm(j) for j in runs if j]), 100 * statistics.median(slow),
            100 * min(slow), 100 * max(slow), size / max(1, steps)))
    say()
    say("Step time: host time of one iteration (zero_grad, forward, backward, SGD step, then "
        "torch.cuda.synchronize), median over steps 10..%d of each run; slowdown per repetition against the "
        "no-profiler run of the same repetition (the modes interleaved, a fresh process each). torch.profiler's "
        "output is its exported Chrome trace; ringprof's the recording's files." % (steps - 1))
    say()

    say("Kernels, step by step (steps 1..%d; step 0 holds the model's creation on ringprof's side):" % (steps - 1))
    say()
    torch_k = torch_kernel_list(d, "torch_1")
    torch_k2 = torch_kernel_list(d, "torch_2")
    ref = None
    if torch_k and torch_k2:
        ref = compare_kernels(torch_k2, torch_k)
        say("- torch_2 against torch_1 (two torch.profiler processes, the run-to-run reference): %d of %d steps "
            "alike; durations paired %d, median |difference| %.2f%%, median signed %+.2f%%, total %+.2f%%" % (
                ref[0], ref[1], ref[3], 100 * ref[2], 100 * ref[5], 100 * (ref[6] - 1)))
    rp1 = os.path.join(d, "runs", "rp_always_1", "ringprof")
    rp2 = os.path.join(d, "runs", "rp_always_2", "ringprof")
    if os.path.isdir(rp1) and os.path.isdir(rp2):
        c = compare_kernels(RpRun(rp2).kernels(), RpRun(rp1).kernels())
        say("- rp_always_2 against rp_always_1 (two ringprof processes): %d of %d steps alike; median |difference| "
            "%.2f%%, median signed %+.2f%%, total %+.2f%%" % (c[0], c[1], 100 * c[2], 100 * c[5], 100 * (c[6] - 1)))
    for prefix in ("rp_always", "rp_detailed"):
        path = os.path.join(d, "runs", prefix + "_1", "ringprof")
        if not os.path.isdir(path) or torch_k is None:
            check(False, "%s_1 or torch_1 missing" % prefix)
            continue
        rp = RpRun(path)
        rk = rp.kernels()
        eq, n, med, pairs, first, bias, ratio = compare_kernels(rk, torch_k)
        per_step = collections.Counter(k["step"] for k in rk if k["step"] >= 1)
        say("- %s_1 against torch_1: %d kernels (torch.profiler %d); %d of %d steps with the same kernel names in "
            "order on each stream; %d durations paired one to one, median |difference| %.2f%%, median signed "
            "%+.2f%%, total %+.2f%%" % (prefix, len(rk), len(torch_k), eq, n, pairs, 100 * med, 100 * bias,
                                       100 * (ratio - 1)))
        check(eq == n and n > 0, "%s: the same kernels, in the same order, in every step as torch.profiler (%d of "
              "%d steps; first differing step %s; kernels per step %s)" % (prefix, eq, n, first,
                                                                          sorted(set(per_step.values()))))
        # The two profilers cannot hold CUPTI in one process, so the pairs come
        # from two runs of the same program: agreement means no bias and no
        # more spread than two torch.profiler runs have between themselves.
        check(abs(bias) <= 0.01 and abs(ratio - 1) <= 0.01,
              "%s: kernel durations agree with torch.profiler's: median signed difference %+.2f%%, total %+.2f%% "
              "(both within 1%%)" % (prefix, 100 * bias, 100 * (ratio - 1)))
        if ref:
            check(med <= ref[2] + 0.005, "%s: median |difference| against torch.profiler %.2f%%, no more than two "
                  "torch.profiler runs differ by (%.2f%%) + 0.5 points" % (prefix, 100 * med, 100 * ref[2]))
        early = sum(1 for k in rk if k["early"])
        check(early == 0, "%s: no kernel starts before its launch (%d)" % (prefix, early))
        check(rp.unlaunched() == 0, "%s: every kernel, copy and set paired with its launch by correlation id "
              "(%d unpaired)" % (prefix, rp.unlaunched()))
    if torch_k:
        say("- torch.profiler kernels starting before their launch: %d" % sum(1 for k in torch_k if k["early"]))
    say()


def operators(d):
    say("## Operators: Self CUDA time, ringprof table against torch.profiler key_averages()")
    say()
    path = os.path.join(d, "runs", "rp_always_1", "ringprof")
    try:
        with open(os.path.join(d, "runs", "torch_1", "torch_ops.json")) as f:
            # Operators run on the CPU; torch's key_averages() also has a row
            # for each kernel and GPU-side annotation (device CUDA), and one
            # for each of torch_compare.py's step annotations.
            torch_ops = {r["key"]: r for r in json.load(f)
                         if "CUDA" not in r.get("device_type", "") and not r["key"].startswith("ringprof_compare_step#")}
    except OSError:
        check(False, "torch_1: no key_averages rows")
        return
    rc, out, err = cli("table", path, "--format", "csv")
    if not check(rc == 0, "ringprof table on rp_always_1 (exit %d %s)" % (rc, err.strip()[:200])):
        return
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(out)))
    rp_ops = collections.defaultdict(lambda: [0, 0.0])
    for r in rows:
        if r.get("self_gpu_us"):
            rp_ops[r["name"]][0] += int(r["calls"])
            rp_ops[r["name"]][1] += float(r["self_gpu_us"])
    total_t = sum(r["self_device_us"] for r in torch_ops.values())
    total_r = sum(v[1] for v in rp_ops.values())
    say("| operator | calls ringprof | calls torch | Self CUDA us ringprof | Self CUDA us torch | difference |")
    say("|---|---|---|---|---|---|")
    worst = 0.0
    for key in sorted(set(torch_ops) | set(rp_ops), key=lambda k: -torch_ops.get(k, {}).get("self_device_us", 0)):
        t = torch_ops.get(key, {}).get("self_device_us", 0.0)
        r = rp_ops.get(key, [0, 0.0])[1]
        if max(t, r) < 0.01 * max(total_t, 1e-9):
            continue
        diff = (r - t) / t if t else float("inf")
        worst = max(worst, abs(diff))
        say("| %s | %d | %d | %.0f | %.0f | %+.1f%% |" % (key, rp_ops.get(key, [0])[0],
                                                        torch_ops.get(key, {}).get("count", 0), r, t, 100 * diff))
    say()
    say("Operators with at least 1%% of the GPU time. Total Self CUDA: ringprof %.0f us, torch.profiler %.0f us "
        "(different processes: the same work, timed twice)." % (total_r, total_t))
    check(worst <= 0.05, "operators' Self CUDA time within 5%% of torch.profiler's (worst %.1f%%)" % (100 * worst))
    say()


def specials(d):
    say("## What had never run")
    say()
    ref = os.path.join(d, "runs", "rp_always_1", "ringprof")
    ref_total = len(RpRun(ref).kernels()) if os.path.isdir(ref) else None
    # Injection into an unchanged PyTorch program: every kernel, to the last (the exit flush).
    inj = os.path.join(d, "runs", "inject", "ringprof")
    if os.path.isdir(inj):
        rp = RpRun(inj)
        n = sum(1 for g in rp.work if g.kind == "kernel")
        tk = torch_kernel_list(d, "torch_1")
        check(tk is not None and n == len(tk), "inject: unchanged PyTorch program under CUDA_INJECTION64_PATH: %d "
              "kernels, torch.profiler saw %s over the same program" % (n, len(tk) if tk else "?"))
        markers = sum(1 for g in rp.gpu if g.kind == "marker")
        say("inject: NVTX ranges recorded at always_on: %d (NVTX is a detailed kind)" % markers)
    else:
        check(False, "inject: no recording")
    # A detailed window in the middle: NVTX and syncs inside it only, kernels complete throughout.
    win = os.path.join(d, "runs", "window", "ringprof")
    if os.path.isdir(win):
        rp = RpRun(win)
        markers = [g for g in rp.gpu if g.kind == "marker" and g.name == "train_step"]
        msteps = sorted(rp.step_of(g.start_ns) for g in markers)
        per_step = collections.Counter(k["step"] for k in rp.kernels())
        counts = sorted(set(c for s, c in per_step.items() if s >= 1 and s < max(per_step)))
        # torch_compare.py's schedule: warmup step N/2-1, active steps N/2 .. N/2+19. The warmup step's
        # range may be missed (pushed before the drainer switched NVTX on); an active step's may not.
        steps = (run_json(d, "window") or {}).get("steps", 300)
        active = list(range(steps // 2, steps // 2 + 20))
        in_active = [s for s in msteps if s in active]
        outside = [s for s in msteps if s not in active and s != steps // 2 - 1]
        check(in_active == active and not outside,
              "window: torch.cuda.nvtx.range recorded in each of the 20 active steps of the detailed window, once, "
              "and nowhere outside it and its warmup step (%d ranges, steps %s..%s)" % (
                  len(markers), msteps[0] if msteps else "-", msteps[-1] if msteps else "-"))
        syncs = [rp.step_of(g.start_ns) for g in rp.gpu if g.kind == "sync"]
        check(syncs and min(syncs) >= msteps[0] - 1 and max(syncs) <= msteps[-1] + 1 if msteps else False,
              "window: synchronisation records only around the window (%d, steps %s..%s)" % (
                  len(syncs), min(syncs) if syncs else "-", max(syncs) if syncs else "-"))
        check(len(counts) == 1, "window: the same kernel count in every step, in and out of the window (%s)" % counts)
        if ref_total is not None:
            check(len(rp.kernels()) == ref_total, "window: %d kernels, as rp_always_1 (%d)" % (len(rp.kernels()),
                                                                                            ref_total))
    else:
        check(False, "window: no recording")
    # torch.profiler while ringprof holds CUPTI.
    clash = os.path.join(d, "runs", "clash", "ringprof")
    j = run_json(d, "clash")
    try:
        err = open(os.path.join(d, "runs", "clash.err")).read()
    except OSError:
        err = ""
    if os.path.isdir(clash) and j:
        rp = RpRun(clash)
        ks = rp.kernels()
        per_step = collections.Counter(k["step"] for k in ks)
        lo, hi = j.get("clash_steps", [0, 0])
        inside = sum(per_step.get(s, 0) for s in range(lo, hi))
        outside_counts = sorted(set(per_step.get(s, 0) for s in range(1, j["steps"]) if not lo <= s < hi))
        tk = torch_kernel_list(d, "clash") or []
        rc, info, _ = cli("info", clash)
        say("clash: torch.profiler held CUPTI over iterations %d..%d while ringprof recorded: ringprof has %d "
            "kernels there and %s per step elsewhere; torch.profiler recorded %d kernels. Messages: %s" % (
                lo, hi - 1, inside, outside_counts, len(tk),
                " | ".join(l for l in err.splitlines() if "ringprof" in l)[:600] or "none"))
        per = outside_counts[0] if len(outside_counts) == 1 else None
        # Handed over: ringprof keeps every step outside the hand-over
        # complete (the buffers it had in CUPTI are not lost to Kineto) and
        # resumes after it; the gap is torch.profiler's, whole, on the clock
        # torch.profiler expects.
        check(per is not None and per > 0,
              "clash: ringprof lost nothing outside torch.profiler's steps (%s kernels per step, before and after)"
              % outside_counts)
        check(per is not None and len(tk) == per * (hi - lo) and inside == 0,
              "clash: torch.profiler got the %d steps whole (%d kernels, %d per step), ringprof none of them (%d)"
              % (hi - lo, len(tk), per or 0, inside))
        check(sum(1 for k in tk if k["early"]) == 0 and tk,
              "clash: torch.profiler's kernels after their launches on its own clock (%d before)"
              % sum(1 for k in tk if k["early"]))
        check("ringprof.gpu.handed_over" in info and "ringprof.gpu.taken_back" in info,
              "clash: the recording marks the hand-over and the take-back (ringprof info)")
    else:
        check(False, "clash: no recording or no result (exit: see log)")
    # The GPU parts of ranks, findings and the report, on a real recording.
    if os.path.isdir(ref):
        for args in (("ranks", ref), ("findings", ref), ("gpu", ref), ("info", ref)):
            rc, out, e = cli(*args)
            check(rc == 0, "ringprof %s on rp_always_1: exit %d %s" % (args[0], rc, e.strip()[:300]))
            say("```\n$ ringprof %s rp_always_1/ringprof\n%s```" % (args[0], "\n".join(out.splitlines()[:40]) + "\n"))
        report = os.path.join(tempfile.mkdtemp(), "report.html")
        rc, out, e = cli("report", ref, "-o", report)
        check(rc == 0 and os.path.getsize(report) > 0, "ringprof report on rp_always_1: exit %d %s" % (rc, e[:200]))
    say()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("-o", default="bench/gpu/results")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    d = unpack(args.run)
    say("# GPU checks: one run of bench/gpu/device_checks.sh")
    say()
    say("Commands: `bench/gpu/prepare_carry.sh` on the machine without a GPU; on the GPU machine, from the "
        "repository root with build/gpu-carry beside it, `RINGPROF_GPU_REPS=%d bench/gpu/device_checks.sh`; back "
        "here, `PYTHONPATH=build/gpu/python python3.12 bench/gpu/analyse_gpu_run.py OUT --reps %d`." % (
            args.reps, args.reps))
    say()
    try:
        log = open(os.path.join(d, "log.txt")).read().splitlines()
        machine = [l for l in log if l.startswith(("NVIDIA", "PRETTY_NAME", "ldd ", "Build cuda"))]
        say("```\n" + "\n".join(machine) + "\n" + open(os.path.join(d, "versions.txt")).read() + "```")
    except OSError:
        pass
    for part in (known_counts, lambda d: side_by_side(d, args.reps), operators, specials):
        try:
            part(d)
        except Exception as e:  # one broken part must not hide the others
            import traceback
            traceback.print_exc()
            check(False, "analysis part failed: %s: %s" % (type(e).__name__, e))
    say("## Checks")
    say()
    for ok, text in results:
        say("- %s %s" % ("ok" if ok else "**FAIL**", text))
    os.makedirs(args.o, exist_ok=True)
    with open(os.path.join(args.o, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    failed = sum(1 for ok, _ in results if not ok)
    print("%d checks, %d failed" % (len(results), failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
