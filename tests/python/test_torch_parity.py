"""ringprof.torch.profile against the real torch.profiler.profile: with_flops
and profile_memory give the same numbers per operator, on the same program.

FLOPs are exact in both (one formula over the same input shapes). Memory is
exact in ringprof (each allocation charged to the operator open on its
thread) but not in torch 1.13, which charges an operator every allocation
whose microsecond falls inside its interval and takes its children's from
it: over 20 runs of allocating(5) below, torch's Self CPU Mem for aten::mm
was right in 11 (its child aten::resolve_conj took the block in the
others), aten::empty's never twice the same (16,116 to 24,216 bytes for
30,280 allocated), and its "[memory]" row had 16 or 17 events for 15 frees.
Even its inclusive CPU Mem of aten::zeros read 6,228 or 8,192 bytes for
10,240 in some runs inside this suite. So memory is checked against the
sizes the program allocates, which are known, and torch only for the calls.
"""
import contextlib
import io
import os
import unittest

import torch
import torch.profiler

import ringprof
import ringprof.torch
import support

torch.manual_seed(0)


class Convs(torch.nn.Module):
    """Every operator torch.profiler counts FLOPs for, with shapes that make
    the formulas' terms distinct (stride, padding, dilation, groups)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(12, 10)                       # aten::addmm
        self.conv = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1)
        self.grouped = torch.nn.Conv2d(6, 6, (3, 2), stride=(1, 2), padding=(2, 0), dilation=(2, 1), groups=3)

    def forward(self, x, img, a, b, c):
        y = self.fc(x).sum()
        z = self.grouped(self.conv(img)).sum()
        w = torch.bmm(a, b).sum() + torch.baddbmm(c, a, b).sum()
        return y + z + torch.mm(x, x.t()).mul(0.5).sum() + w


def workload():
    model = Convs()
    inputs = (torch.randn(7, 12), torch.randn(2, 4, 11, 9), torch.randn(3, 5, 4), torch.randn(3, 4, 2),
              torch.randn(3, 5, 2))

    def run(n):
        for _ in range(n):
            model(*inputs).backward()
    return run


class FlopsTest(unittest.TestCase):
    def test_every_operator_s_flops_equal_torch_profiler_s(self):
        run = workload()
        run(1)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                    with_flops=True) as theirs:
            run(3)
        torch_flops = {e.key: (e.flops, e.count) for e in theirs.key_averages() if e.flops}
        d = support.fresh_dir(self)
        with ringprof.torch.profile(record_shapes=True, with_flops=True, dir=d, sample_hz=0) as ours:
            run(3)
        ours_flops = {e.key: (e.flops, e.count) for e in ours.key_averages() if e.flops}
        self.assertEqual(ours_flops, torch_flops)
        # torch counts these seven (the list in python/src/torch_flops.h); each ran here.
        self.assertEqual(set(ours_flops), {"aten::addmm", "aten::conv2d", "aten::bmm", "aten::baddbmm", "aten::mm",
                                           "aten::mul", "aten::add"})
        # The formulas by hand, for three calls: addmm 2*7*12*10; conv2d 2*N*Ho*Wo*Kh*Kw*Cin*Cout/groups with
        # Ho=(11+2-3)/2+1=6, Wo=(9+2-3)/2+1=5, then Ho=(6+4-2*2-1)/1+1=6, Wo=(5-1-1)/2+1=2 for the grouped one.
        self.assertEqual(ours_flops["aten::addmm"], (3 * 2 * 7 * 12 * 10, 3))
        conv = 2 * 2 * 6 * 5 * 3 * 3 * 4 * 6
        grouped = 2 * 2 * 6 * 2 * 3 * 2 * 6 * 6 // 3
        self.assertEqual(ours_flops["aten::conv2d"], (3 * (conv + grouped), 6))
        # bmm and baddbmm once per forward (their inputs need no gradient, so backward runs none): 2*B*M*K*N.
        self.assertEqual(ours_flops["aten::bmm"], (3 * 2 * 3 * 5 * 4 * 2, 3))
        self.assertEqual(ours_flops["aten::baddbmm"], (3 * 2 * 3 * 5 * 4 * 2, 3))

    def test_table_prints_a_flops_column_in_torch_s_unit(self):
        run = workload()
        d = support.fresh_dir(self)
        with ringprof.torch.profile(with_flops=True, dir=d, sample_hz=0) as ours:
            run(2)
        text = ours.key_averages().table(sort_by="flops", row_limit=3)
        header = [l for l in text.splitlines() if "Name" in l][0]
        # The smallest operator's FLOPs (aten::add of two 0-dim sums: 1) set the unit: plain FLOPs.
        self.assertTrue(header.rstrip().endswith("Total FLOPs"), header)
        first = [l for l in text.splitlines()[3:] if l.strip()][0]
        self.assertIn("aten::conv2d", first)  # the largest FLOPs sorted first
        # The tools show them too: a FLOPs column, sortable, and achieved GFLOP/s.
        rows = support.table(d, "--sort", "flops")
        self.assertEqual(int(rows["aten::addmm"]["flops"]), 2 * 2 * 7 * 12 * 10)
        self.assertGreater(float(rows["aten::addmm"]["gflops_per_s"]), 0)
        self.assertEqual(rows["aten::linear"]["flops"], "")  # torch counts linear through its addmm

    def test_no_flops_without_with_flops(self):
        run = workload()
        d = support.fresh_dir(self)
        with ringprof.torch.profile(record_shapes=True, dir=d, sample_hz=0) as ours:
            run(1)
        self.assertFalse(any(e.flops for e in ours.key_averages()))
        self.assertNotIn("FLOPs", ours.key_averages().table())


X, Y = torch.randn(16, 8), torch.randn(8, 24)


def allocating(n):
    """Top-level operators of known sizes, each in Python code of its own, and
    the blocks freed with no operator open (torch's "[memory]" row)."""
    x, y = X, Y
    for i in range(n):
        a = torch.empty(1000 + i)           # 4 * (1000 + i) bytes
        b = torch.mm(x, y)                  # 16 * 24 * 4 bytes
        c = torch.zeros(256, dtype=torch.float64)  # 2048 bytes, in its aten::empty
        del a, b, c


class MemoryTest(unittest.TestCase):
    def test_self_cpu_memory_per_operator_is_exactly_what_the_program_allocated(self):
        allocating(2)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as theirs:
            allocating(5)
        t = {e.key: e for e in theirs.key_averages()}
        d = support.fresh_dir(self)
        with ringprof.torch.profile(profile_memory=True, dir=d, sample_hz=0) as ours:
            allocating(5)
        r = {e.key: e for e in ours.key_averages()}
        empty_bytes = sum(4 * (1000 + i) for i in range(5)) + 5 * 2048
        expected = {"aten::empty": (empty_bytes, empty_bytes, 10), "aten::mm": (5 * 16 * 24 * 4, 5 * 16 * 24 * 4, 5),
                    "aten::zeros": (0, 5 * 2048, 5), "aten::zero_": (0, 0, 5)}
        for key, (self_mem, mem, count) in expected.items():
            self.assertEqual((r[key].self_cpu_memory_usage, r[key].cpu_memory_usage, r[key].count),
                             (self_mem, mem, count), key)
            # torch's calls agree; its memory columns are not stable enough
            # to compare (the docstring).
            self.assertEqual(t[key].count, count, "torch.profiler: " + key)
        # Every block freed by `del`, with no operator open: torch's "[memory]" row, 15 frees.
        self.assertEqual((r["[memory]"].count, r["[memory]"].self_cpu_memory_usage), (15, -(empty_bytes + 5 * 1536)))
        self.assertEqual(ours.key_averages().memory_allocated, empty_bytes + 5 * 1536)
        # No device pool on a CPU run: no CUDA memory, and no CUDA Mem column.
        self.assertTrue(all(e.cuda_memory_usage == 0 for e in ours.key_averages()))
        text = ours.key_averages().table(sort_by="self_cpu_memory_usage")
        self.assertIn("Self CPU Mem", text)
        self.assertNotIn("CUDA Mem", text)
        self.assertIn("aten::empty", [l for l in text.splitlines()[3:] if l.strip()][0])

    @unittest.skipUnless(torch.cuda.is_available(), "needs a CUDA device (bench/gpu/device_checks.sh runs it)")
    def test_cuda_blocks_are_in_the_device_columns_and_pool(self):
        torch.empty(1, device="cuda")  # the context and the allocator's first segment, before the block
        d = support.fresh_dir(self)
        with ringprof.torch.profile(profile_memory=True, dir=d, sample_hz=0) as ours:
            blocks = [torch.empty(1000 + i, device="cuda") for i in range(5)]
            del blocks
        r = {e.key: e for e in ours.key_averages()}
        # The caching allocator reports each block at its size rounded up to 512 bytes.
        rounded = sum((4 * (1000 + i) + 511) // 512 * 512 for i in range(5))
        self.assertEqual((r["aten::empty"].self_cuda_memory_usage, r["aten::empty"].self_cpu_memory_usage),
                         (rounded, 0))
        self.assertIn("Self CUDA Mem", ours.key_averages().table())
        self.assertIn("torch:cuda:0", support.cli("memory", d))

    def test_the_pool_and_totals_are_in_the_files(self):
        d = support.fresh_dir(self)
        with ringprof.torch.profile(profile_memory=True, dir=d, sample_hz=0):
            allocating(3)
        out = support.cli("memory", d)
        self.assertIn("torch:cpu", out)
        # The table charges the same bytes from the files alone.
        rows = support.table(d)
        self.assertEqual(int(rows["aten::mm"]["self_mem_bytes"]), 3 * 16 * 24 * 4)

    def test_memory_reporting_is_taken_off_the_thread_after_the_block(self):
        d = support.fresh_dir(self)
        with ringprof.torch.profile(profile_memory=True, dir=d, sample_hz=0):
            self.assertTrue(ringprof.torch._ext._memory_reporting_installed())
        self.assertFalse(ringprof.torch._ext._memory_reporting_installed())
        # torch.profiler can take its place on this thread again.
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as p:
            torch.empty(10)
        self.assertIn("aten::empty", [e.key for e in p.key_averages()])

    def _windows(self, memory_setting):
        """Four steps under a schedule whose window is steps 1 and 2, in a
        child interpreter with RINGPROF_TORCH_MEMORY set as given."""
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import ringprof, ringprof.torch, torch\n"
                "from test_torch_parity import allocating\n"
                "ringprof.start(dir=%r, sample_hz=0, schedule='wait=1,active=2')\n"
                "for _ in range(4):\n"
                "    allocating(1); ringprof.step()\n"
                "    assert ringprof.torch._ext._memory_reporting_installed() == (%r == '1' and ringprof.mode() == 'detailed')\n"
                "ringprof.stop()\n"
                "assert not ringprof.torch._ext._memory_reporting_installed()\n")
        d = support.fresh_dir(self)
        env = dict(os.environ)
        if memory_setting is None:
            env.pop("RINGPROF_TORCH_MEMORY", None)
        else:
            env["RINGPROF_TORCH_MEMORY"] = memory_setting
        import subprocess
        import sys
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, "-c", code % (here, d, memory_setting)], env=env, check=True, timeout=120)
        return support.table(d)

    def test_ringprof_torch_memory_1_records_memory_in_every_window(self):
        rows = self._windows("1")
        # Steps 1 and 2 are the window: two calls' blocks, none of the others'.
        self.assertEqual(int(rows["aten::mm"]["self_mem_bytes"]), 2 * 16 * 24 * 4)

    def test_windows_record_no_torch_memory_by_default(self):
        rows = self._windows(None)
        self.assertIn("aten::mm", rows)
        self.assertNotIn("self_mem_bytes", rows["aten::mm"])

    def test_a_block_inside_a_recording_leaves_the_thread_as_it_found_it(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)
        try:
            with ringprof.torch.profile(profile_memory=True, schedule=torch.profiler.schedule(wait=1, warmup=0, active=2)) as p:
                for _ in range(4):
                    allocating(1)
                    p.step()
            self.assertFalse(ringprof.torch._ext._memory_reporting_installed())
        finally:
            ringprof.stop()

    def test_pytorch_reads_the_hook_as_no_profiler(self):
        # PyTorch treats whatever holds its profiler slot as a profiler state:
        # these read it (RPC and data pipes call them), and must see none.
        d = support.fresh_dir(self)
        with ringprof.torch.profile(profile_memory=True, dir=d, sample_hz=0):
            self.assertFalse(torch.autograd._profiler_enabled())
            self.assertEqual(str(torch._C._autograd._profiler_type()), "ActiveProfilerType.NONE")
            torch.mm(X, Y)
        self.assertFalse(ringprof.torch._ext._memory_reporting_installed())
        rows = support.table(d)
        self.assertEqual(int(rows["aten::mm"]["self_mem_bytes"]), 16 * 24 * 4)

    def test_torch_profiler_started_inside_takes_the_reports_and_gives_them_back(self):
        d = support.fresh_dir(self)
        err = io.StringIO()
        with ringprof.torch.profile(profile_memory=True, dir=d, sample_hz=0):
            torch.mm(X, Y)  # ringprof's
            with contextlib.redirect_stderr(err):
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                            profile_memory=True) as theirs:
                    self.assertFalse(ringprof.torch._ext._memory_reporting_installed())
                    torch.mm(X, Y)  # torch.profiler's alone
            self.assertTrue(ringprof.torch._ext._memory_reporting_installed())
            torch.mm(X, Y)  # ringprof's again
        self.assertFalse(ringprof.torch._ext._memory_reporting_installed())
        self.assertIn("ringprof's profile_memory pauses", err.getvalue())
        mm = {e.key: e for e in theirs.key_averages()}["aten::mm"]
        self.assertEqual((mm.count, mm.cpu_memory_usage), (1, 16 * 24 * 4))
        # The mm inside torch.profiler's block is an operator in ringprof's
        # files too (3 calls), with no memory: its bytes went to torch.profiler.
        rows = support.table(d)
        self.assertEqual((int(rows["aten::mm"]["calls"]), int(rows["aten::mm"]["self_mem_bytes"])),
                         (3, 2 * 16 * 24 * 4))
        # torch.profiler still starts after both (PyTorch 2.x's Kineto stayed
        # half-prepared once torch.profiler had been refused).
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as p:
            torch.mm(X, Y)
        self.assertIn("aten::mm", [e.key for e in p.key_averages()])

    def test_a_block_ending_while_torch_profiler_runs_is_not_resumed(self):
        d = support.fresh_dir(self)
        ours = ringprof.torch.profile(profile_memory=True, dir=d, sample_hz=0)
        ours.start()
        with contextlib.redirect_stderr(io.StringIO()):
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True):
                ours.stop()
        self.assertFalse(ringprof.torch._ext._memory_reporting_installed())

    def test_a_running_torch_profiler_keeps_its_slot(self):
        d = support.fresh_dir(self)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as p:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                with ringprof.torch.profile(profile_memory=True, dir=d, sample_hz=0):
                    torch.mm(X, Y)
            self.assertIn("another profiler", err.getvalue())
            torch.mm(X, Y)
        self.assertEqual({e.key: (e.cpu_memory_usage, e.count) for e in p.key_averages()}["aten::mm"],
                         (2 * 16 * 24 * 4, 2))
        self.assertFalse(ringprof.torch._ext._memory_reporting_installed())

if __name__ == "__main__":
    unittest.main()
