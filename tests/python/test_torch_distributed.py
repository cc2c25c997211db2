"""Real torch.distributed jobs under ringprof.torch, read back by the CLI.

Each test starts its ranks as separate processes (gloo on CPU, a file
rendezvous in a fresh directory, so no port is needed), each recording into
its own directory of one job directory.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import torch
import torch.distributed as dist

import support

# A DDP rank: a small model (4680 parameters, 18 KiB: one gradient bucket,
# under DDP's 1 MiB first-bucket cap, so one all_reduce per step), the
# operator capture at always_on, no zone or mark placed by hand around any
# collective. Rank EXTRA_RANK spends EXTRA_MS of CPU in a zone "extra_work"
# between its forward and its backward, as a straggler does.
DDP_RANK = textwrap.dedent("""
    import os, sys, time
    import torch, torch.distributed as dist
    import ringprof, ringprof.torch
    out, rank = sys.argv[1], int(os.environ["RANK"])
    steps, extra_rank, extra_ms = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    ringprof.start(dir=os.path.join(out, "rank%d" % rank), sample_hz=0)
    ringprof.torch.set_ops_level("always_on")
    dist.init_process_group("gloo", init_method="file://" + os.path.join(out, "rendezvous"),
                            rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64)
    for s in range(steps):
        ringprof.step(s)
        loss = model(x).sum()
        if rank == extra_rank:
            with ringprof.zone("extra_work"):  # CPU until a deadline, yielding (see examples/ranks_job.cpp)
                end = time.perf_counter() + extra_ms / 1000
                while time.perf_counter() < end:
                    os.sched_yield()
        loss.backward()
        opt.step()
        opt.zero_grad()
    ringprof.step(steps)
    dist.barrier()
    dist.destroy_process_group()
    ringprof.stop()
""")


def run_job(job, program, world, *args, timeout=180):
    """Runs `program` as `world` ranks recording under `job`."""
    os.makedirs(job)
    procs = [subprocess.Popen([sys.executable, "-c", program, job, *map(str, args)],
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), TORCHELASTIC_RUN_ID="ddp-test"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(world)]
    for r, p in enumerate(procs):
        out, err = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise AssertionError("rank %d exited %d: %s" % (r, p.returncode, err))


@unittest.skipUnless(dist.is_available() and dist.is_gloo_available(), "this PyTorch has no gloo backend")
class DdpJobTest(unittest.TestCase):
    """Three DDP ranks, rank 1 spending 20 ms in extra_work before each
    backward: its all_reduce begins 20 ms after the others'."""

    STEPS, EXTRA_MS = 30, 20.0

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ringprof-ddp-")
        cls.job = os.path.join(cls.tmp, "job")
        run_job(cls.job, DDP_RANK, 3, cls.STEPS, 1, cls.EXTRA_MS)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def rank_dir(self, r):
        return os.path.join(self.job, "rank%d" % r)

    def test_each_bucket_all_reduce_is_one_async_span_timed_inside_the_run(self):
        report = json.loads(support.cli("ranks", "--format", "json", self.job))
        for r in range(3):
            text = support.cli("table", self.rank_dir(r))
            self.assertNotIn("unterminated", text)
            self.assertNotIn("without a begin", text)
            rows = support.table(self.rank_dir(r))
            # One bucket, one all_reduce per step (DDP's construction adds
            # broadcasts and an all_gather, never an all_reduce).
            self.assertEqual(int(rows["gloo:all_reduce"]["calls"]), self.STEPS, rows["gloo:all_reduce"])
            # An async span holds no thread: no self time.
            self.assertEqual(float(rows["gloo:all_reduce"]["self_us"]), 0.0)
            # Each lasts less than two steps (a waiting rank's all_reduce
            # lasts about the straggler's extra time, under one step).
            step_ns = report["ranks"][r]["step_time_median_ns"]
            self.assertGreater(step_ns, self.EXTRA_MS * 1e6)
            self.assertLess(float(rows["gloo:all_reduce"]["max_us"]) * 1000, 2 * step_ns)
            self.assertGreater(float(rows["gloo:all_reduce"]["min_us"]), 0)
            # Every process-group operation is a collective of the rank.
            gloo_calls = sum(int(row["calls"]) for name, row in rows.items() if name.startswith("gloo:"))
            self.assertEqual(report["ranks"][r]["collectives"], gloo_calls)

    def test_the_chrome_trace_shows_async_slices_paired_by_id(self):
        events = support.chrome(self.rank_dir(0))
        spans = [e for e in events if e.get("cat") == "async" and e["name"] == "gloo:all_reduce"]
        begins = {e["id2"]["local"]: e for e in spans if e["ph"] == "b"}
        ends = {e["id2"]["local"]: e for e in spans if e["ph"] == "e"}
        self.assertEqual(len(begins), self.STEPS)
        self.assertEqual(set(begins), set(ends))
        for i, b in begins.items():
            self.assertLessEqual(b["ts"], ends[i]["ts"])
            self.assertEqual(b["args"]["Input type"], "[float]")  # the bucket's tensor
        self.assertFalse([e for e in events if e.get("name") == "gloo:all_reduce" and e.get("ph") == "X"])

    def test_ranks_names_the_straggler_and_its_extra_work(self):
        report = json.loads(support.cli("ranks", "--format", "json", self.job))
        self.assertEqual([r["rank"] for r in report["ranks"]], [0, 1, 2])
        self.assertEqual(len(report["stragglers"]), 1, report["stragglers"])
        s = report["stragglers"][0]
        self.assertEqual((s["rank"], s["kind"]), (1, "late at collectives"))
        self.assertTrue(s["reason"].startswith("zone extra_work: +"), s["reason"])
        extra = sorted(z.dur_ns for z in __import__("ringprof").open(self.rank_dir(1)).zones
                       if z.name == "extra_work")
        self.assertEqual(len(extra), self.STEPS)
        median = extra[len(extra) // 2]
        self.assertGreaterEqual(median, self.EXTRA_MS * 1e6)
        self.assertLessEqual(abs(s["late_ns_median"] - median), median / 10, (s["late_ns_median"], median))

    def test_findings_reports_the_straggler(self):
        r = subprocess.run([support.CLI, "findings", self.job], capture_output=True, text=True, timeout=120)
        self.assertIn("rank 1", r.stdout, r.stdout + r.stderr)
        self.assertIn("extra_work", r.stdout, r.stdout)
        self.assertNotIn("No known problem", r.stdout)


if __name__ == "__main__":
    unittest.main()
