"""How often `ringprof ab` (diff --runs) is wrong on this machine.

Runs TRIALS trials of two kinds, each `ringprof ab` with RUNS runs per side,
interleaved, of the test helper's `work` benchmark (zones "steady" and
"changed", ROUNDS rounds of UNITS units of work each), with BUSY busy loops
(`sh -c 'while :; do :; done'`) running beside it the whole time:
  same     base and head the same program: a false alarm is any zone, or the
           whole-process row, flagged, or --fail-above 5% exiting non-zero;
  +PCT%    head does PCT% more work in "changed": detected when "changed" is
           regressed with an interval covering +PCT% and --fail-above 5%
           exits 3; "steady" must stay unchanged.
Beside each, the first base run against the first head run alone (`diff`
of one recording a side, the noise floor assumed), for comparison.
Prints the rates and writes them as JSON to OUT.

    python3 bench/diff_calibration.py BUILD_DIR [--trials 20] [--runs 5] [--busy 1] [--pct 10] [--out FILE]

BUILD_DIR: a build with tools/ringprof and tests/ringprof_test_helper
(build/test-release). Takes about 10 s per trial and kind on a 2-core machine.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def ab(cli, out, base, head, runs):
    r = subprocess.run([cli, "ab", out, "--base", base, "--head", head, "--runs", str(runs), "--format", "json",
                        "--fail-above", "5%"], capture_output=True, text=True, timeout=1200)
    if r.returncode not in (0, 3):
        sys.exit("ringprof ab exited %d: %s" % (r.returncode, r.stderr))
    return r.returncode, json.loads(r.stdout)


def pair(cli, out):
    """The first base run against the first head run, as one-recording diff sees them."""
    r = subprocess.run([cli, "diff", os.path.join(out, "base", "run-01"), os.path.join(out, "head", "run-01"),
                        "--format", "json"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit("ringprof diff exited %d: %s" % (r.returncode, r.stderr))
    return {z["name"]: z for z in json.loads(r.stdout)["zones"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--busy", type=int, default=1)
    ap.add_argument("--pct", type=float, default=10)
    ap.add_argument("--units", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    cli = os.path.join(a.build, "tools", "ringprof")
    helper = os.path.join(a.build, "tests", "ringprof_test_helper")
    same_cmd = "%s work %d %d %d" % (helper, a.units, a.units, a.rounds)
    changed_cmd = "%s work %d %d %d" % (helper, a.units, round(a.units * (1 + a.pct / 100)), a.rounds)
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.busy)]
    tally = {"same_clean": 0, "same_exit0": 0, "detected": 0, "covered": 0, "steady_unchanged": 0, "exit3": 0,
             "pair_same_clean": 0, "pair_detected_covered": 0, "pair_steady_unchanged": 0}
    changes = []
    t0 = time.time()
    try:
        with tempfile.TemporaryDirectory(prefix="ringprof-calibration-") as tmp:
            for t in range(a.trials):
                code, d = ab(cli, os.path.join(tmp, "same"), same_cmd, same_cmd, a.runs)
                flagged = [z["name"] for z in d["zones"] if z["verdict"] != "unchanged"]
                if d["process"] and d["process"]["verdict"] != "unchanged":
                    flagged.append("(process)")
                tally["same_clean"] += not flagged
                tally["same_exit0"] += code == 0
                p = pair(cli, os.path.join(tmp, "same"))
                tally["pair_same_clean"] += all(z["verdict"] == "unchanged" for z in p.values())
                code, d = ab(cli, os.path.join(tmp, "changed"), same_cmd, changed_cmd, a.runs)
                z = {r["name"]: r for r in d["zones"]}
                c, s = z["changed"], z["steady"]
                tally["detected"] += c["verdict"] == "regressed"
                tally["covered"] += c["ci_low_pct"] <= a.pct <= c["ci_high_pct"]
                tally["steady_unchanged"] += s["verdict"] == "unchanged"
                tally["exit3"] += code == 3
                changes.append(round(c["change_pct"], 2))
                p = pair(cli, os.path.join(tmp, "changed"))
                tally["pair_detected_covered"] += (p["changed"]["verdict"] == "regressed" and
                                                   p["changed"]["ci_low_pct"] <= a.pct <= p["changed"]["ci_high_pct"])
                tally["pair_steady_unchanged"] += p["steady"]["verdict"] == "unchanged"
                print("trial %d/%d: same %s; changed %+.1f%% [%+.1f, %+.1f] %s, steady %s, exit %d"
                      % (t + 1, a.trials, ", ".join(flagged) or "clean", c["change_pct"], c["ci_low_pct"],
                         c["ci_high_pct"], c["verdict"], s["verdict"], code), flush=True)
    finally:
        for p in busy:
            p.kill()
    result = {"trials": a.trials, "runs": a.runs, "busy_loops": a.busy, "pct": a.pct, "seconds": round(time.time() - t0),
              **tally, "changed_measured_pct": changes}
    print(json.dumps(result))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
