"""ringprof.torch.profile(with_stack=True): each operator recorded in a window
carries the Python stack that called it, as torch.profiler's with_stack does;
key_averages(group_by_stack_n=N), `ringprof table --group-by-stack N`, the
Chrome trace's "Call stack" and ringprof.open's zones read it back.

The program below calls one operator (torch.mm) from two Python functions, a
known number of times each, so every count is exact and every line number is
read from the program's own source."""
import contextlib
import csv
import inspect
import io
import json
import os
import unittest

import torch

import ringprof
import ringprof.torch
import support

FRAMES_OK, FRAMES_WHY = ringprof._ringprof._python_frames()
W = torch.randn(8, 8)


def layer_a(x):
    return torch.mm(x, W)


def layer_b(x):
    return torch.mm(x, W)


class Net:
    def forward(self, x):
        for _ in range(3):
            x = layer_a(x)
        return layer_b(x)


def line_of(fn, text):
    """The line of `fn` whose source holds `text`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if text in l)


FILE = layer_a.__code__.co_filename
A = "%s(%d): layer_a" % (FILE, line_of(layer_a, "torch.mm"))
B = "%s(%d): layer_b" % (FILE, line_of(layer_b, "torch.mm"))
FWD_A = "%s(%d): Net.forward" % (FILE, line_of(Net.forward, "layer_a(x)"))
FWD_B = "%s(%d): Net.forward" % (FILE, line_of(Net.forward, "layer_b(x)"))


@unittest.skipUnless(FRAMES_OK, "this interpreter's frames cannot be read: %s" % FRAMES_WHY)
class WithStackTest(unittest.TestCase):
    def setUp(self):
        self.d = support.fresh_dir(self)
        self.x = torch.randn(4, 8)

    def tearDown(self):
        if ringprof.is_recording():
            ringprof.stop()
        ringprof.torch.set_operator_level("sampled", sampling=0.01)

    def profile(self, steps=2, **kwargs):
        net = Net()
        with ringprof.torch.profile(dir=self.d, sample_hz=0, **kwargs) as p:
            for _ in range(steps):
                net.forward(self.x)
        return p

    def mm_zones(self, path):
        return [z for z in ringprof.open(path).zones if z.name == "aten::mm"]

    def test_key_averages_splits_an_operator_by_its_callers(self):
        p = self.profile(with_stack=True)
        rows = {tuple(r.stack): r.count for r in p.key_averages(group_by_stack_n=2) if r.key == "aten::mm"}
        # Two steps: layer_a three times a step, layer_b once.
        self.assertEqual(rows, {(A, FWD_A): 6, (B, FWD_B): 2})
        # Without grouping, one row with every call.
        plain = [r for r in p.key_averages() if r.key == "aten::mm"]
        self.assertEqual([r.count for r in plain], [8])
        # N frames at most, innermost first.
        one = {tuple(r.stack): r.count for r in p.key_averages(group_by_stack_n=1) if r.key == "aten::mm"}
        self.assertEqual(one, {(A,): 6, (B,): 2})

    def test_the_table_prints_each_rows_source_location(self):
        p = self.profile(with_stack=True)
        text = p.key_averages(group_by_stack_n=2).table(sort_by="count", row_limit=-1)
        lines = text.splitlines()
        self.assertTrue(lines[1].rstrip().endswith("Source Location"))
        # A row's innermost frame on its own line, its caller on the line below.
        i = next(i for i, l in enumerate(lines) if l.strip().startswith("aten::mm") and l.rstrip().endswith(A))
        self.assertEqual(lines[i + 1].strip(), FWD_A)
        self.assertTrue(lines[i + 1].startswith(" "))

    def test_every_operator_of_the_window_carries_the_stack_that_called_it(self):
        ringprof.torch.set_operator_level("always_on")
        net = Net()
        ringprof.start(dir=self.d, sample_hz=0)
        net.forward(self.x)  # before the window: recorded, without stacks
        with ringprof.torch.profile(with_stack=True) as p:
            net.forward(self.x)
        self.assertFalse(ringprof.torch._ext._recording_stacks())
        self.assertFalse(ringprof.torch._ext._record_stacks())  # restored
        net.forward(self.x)  # after it: without again
        ringprof.stop()
        zones = sorted(self.mm_zones(self.d), key=lambda z: z.start_ns)
        self.assertEqual(len(zones), 12)
        self.assertEqual([z.stack for z in zones[:4] + zones[8:]], [[]] * 8)
        inside = [z.stack for z in zones[4:8]]
        self.assertEqual([s[:2] for s in inside], [[A, FWD_A]] * 3 + [[B, FWD_B]])
        # The whole stack, out to this test method.
        here = "%s: WithStackTest.%s" % (FILE, "test_every_operator_of_the_window_carries_the_stack_that_called_it")
        for s in inside:
            self.assertTrue(any(f.startswith(FILE + "(") and f.endswith(here.split(": ")[1]) for f in s[2:]), s)
        self.assertIsNotNone(p.window_id)

    def test_without_with_stack_no_operator_has_a_stack(self):
        p = self.profile()
        self.assertEqual({tuple(z.stack) for z in self.mm_zones(self.d)}, {()})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rows = [r for r in p.key_averages(group_by_stack_n=2) if r.key == "aten::mm"]
        self.assertEqual([(r.count, r.stack) for r in rows], [(8, [])])
        self.assertIn("group_by_stack_n without with_stack=True", err.getvalue())

    def test_the_chrome_trace_carries_the_call_stack(self):
        p = self.profile(with_stack=True)
        out = self.d + "-trace.json"
        p.export_chrome_trace(out)
        with open(out) as f:
            events = json.load(f)["traceEvents"]
        stacks = [e["args"]["Call stack"] for e in events if e.get("ph") == "X" and e["name"] == "aten::mm"]
        self.assertEqual(len(stacks), 8)
        self.assertEqual(sum(s.startswith(A + ";" + FWD_A + ";") for s in stacks), 6)
        self.assertEqual(sum(s.startswith(B + ";" + FWD_B + ";") for s in stacks), 2)

    def test_cli_table_groups_by_stack(self):
        self.profile(with_stack=True)
        text = support.cli("table", "--group-by-stack", "2", "--format", "csv", self.d)
        rows = [r for r in csv.DictReader(text.splitlines()) if r["name"] == "aten::mm"]
        self.assertEqual(sorted((r["stack"], int(r["calls"])) for r in rows),
                         sorted([(A + "; " + FWD_A, 6), (B + "; " + FWD_B, 2)]))
        text = support.cli("table", "--group-by-stack", "1", self.d)
        self.assertIn("Source location", text.splitlines()[0])
        self.assertIn(A, text)

    def test_an_extracted_window_keeps_the_stacks(self):
        p = self.profile(with_stack=True)
        out = self.d + "-extract"
        support.cli("extract", self.d, "--window-id", str(p.window_id), "-o", out)
        stacks = sorted(tuple(z.stack[:2]) for z in self.mm_zones(out))
        self.assertEqual(stacks, sorted([(A, FWD_A)] * 6 + [(B, FWD_B)] * 2))


if __name__ == "__main__":
    unittest.main()
