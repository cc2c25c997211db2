"""ringprof.torch: PyTorch operators as zones, checked against torch.profiler
on the same training loop (CPU, Debian's python3-torch)."""
import collections
import textwrap
import unittest

import torch
import torch.profiler

import ringprof
import ringprof.torch
import support

STEPS = 20


def make_loop():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)

    def loop(steps, on_step=lambda: None):
        for _ in range(steps):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            on_step()

    return loop


def torch_profiler_counts(loop):
    """Operator call counts as torch.profiler recorded them.

    The raw events torch recorded, where this PyTorch exposes them: at its
    microsecond resolution two back-to-back calls of one operator can look
    nested, and key_averages() then folds one into the other (a count of 29 to
    34 for aten::div_'s 40 calls, varying run to run); the raw events hold 40.
    """
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        loop(STEPS)
    averages = {e.key: e.count for e in p.key_averages()}
    kineto = getattr(p.profiler, "kineto_results", None)
    if kineto is None:
        return averages, averages
    raw = collections.Counter(e.name() for e in kineto.events())
    return dict(raw), averages


class TorchOpsTest(unittest.TestCase):
    def tearDown(self):
        if ringprof.is_recording():
            ringprof.stop()
        ringprof.torch.set_ops_level("always_on")

    def record(self, loop, steps=STEPS, **settings):
        d = support.fresh_dir(self)
        self.assertTrue(ringprof.start(dir=d, sample_hz=0, **settings))
        loop(steps, ringprof.step)
        ringprof.stop()
        return d

    def test_operator_counts_equal_torch_profilers(self):
        loop = make_loop()
        loop(2)  # first calls initialise lazily; both recordings see the steady state
        expected, averages = torch_profiler_counts(loop)
        got = support.calls(self.record(loop))
        self.assertEqual(got, expected)
        # Every operator key_averages() shows is there, and never more often.
        for name, count in averages.items():
            self.assertIn(name, got)
            self.assertLessEqual(count, got[name])
        self.assertEqual(got["aten::linear"], 2 * STEPS)
        self.assertEqual(got["aten::addmm"], 2 * STEPS)
        self.assertEqual(got["AddmmBackward0"], 2 * STEPS)
        self.assertEqual(got["Optimizer.step#SGD.step"], STEPS)

    def test_linear_contains_addmm_and_backward_links_to_forward(self):
        loop = make_loop()
        events = support.chrome(self.record(loop))
        zones = [e for e in events if e.get("ph") == "X"]
        linear = [e for e in zones if e["name"] == "aten::linear"]
        addmm = [e for e in zones if e["name"] == "aten::addmm"]
        self.assertEqual(len(addmm), 2 * STEPS)
        for a in addmm:
            self.assertTrue(any(l["tid"] == a["tid"] and l["ts"] <= a["ts"] and a["ts"] + a["dur"] <= l["ts"] + l["dur"]
                                for l in linear), "aten::addmm at %s outside every aten::linear" % a["ts"])
        # Each backward node (AddmmBackward0, ReluBackward0, ...) ends a flow
        # that the forward operator with its sequence number began.
        backward = [e for e in zones if e["name"].endswith("Backward0") and not e["name"].startswith("autograd::")]
        self.assertEqual(len(backward), 6 * STEPS)  # 2 addmm, 2 t, relu, mse_loss per step
        starts = {e["id"] for e in events if e.get("name") == "fwdbwd" and e["ph"] == "s"}
        ends = [e["id"] for e in events if e.get("name") == "fwdbwd" and e["ph"] == "f"]
        self.assertEqual(len(ends), len(backward))
        self.assertEqual(set(ends), starts)
        for fid in starts:
            self.assertLess(fid, 2 ** 53)  # exact in a browser's JSON numbers

    def test_detailed_level_records_operators_in_windows_only(self):
        loop = make_loop()
        ringprof.torch.set_ops_level("detailed")
        d = self.record(loop, schedule="wait=2,active=3,repeat=1")
        self.assertEqual(support.calls(d)["aten::addmm"], 2 * 3)
        self.assertEqual(support.calls(d, "--window-id", "1")["aten::addmm"], 2 * 3)

    def test_off_records_no_operators(self):
        loop = make_loop()
        ringprof.torch.set_ops_level("off")
        d = self.record(loop)
        self.assertEqual(support.cli("info", d).count("zone_begin"), 0)

    def test_callbacks_are_registered_only_while_recording(self):
        ext = ringprof.torch._ext
        self.assertFalse(ext._enabled())
        ringprof.start(dir=support.fresh_dir(self), sample_hz=0)
        self.assertTrue(ext._enabled())
        ringprof.stop()
        self.assertFalse(ext._enabled())

    def test_record_function_labels_and_autostart(self):
        d = support.fresh_dir(self)
        r = support.run_python(textwrap.dedent("""
            import torch, ringprof.torch
            for i in range(3):
                with torch.autograd.profiler.record_function("label %d" % (i % 2)):
                    torch.ones(4).add_(1)
        """), env={"RINGPROF_AUTOSTART": "1", "RINGPROF_DIR": d, "RINGPROF_SAMPLE_HZ": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        got = support.calls(d)
        self.assertEqual(got["label 0"], 2)
        self.assertEqual(got["label 1"], 1)
        self.assertEqual(got["aten::add_"], 3)


if __name__ == "__main__":
    unittest.main()
