"""Module zones (python/ringprof/_modules.py): each nn.Module forward run
while the level is detailed is a zone named as PyTorch 2.x's profiler names
module events ("nn.Module: Linear_1"), with the module's attribute path from
its root as the zone argument "module", and the operators it runs inside it.

PyTorch 1.13's own torch.profiler.profile(with_modules=True) records no
module events and no module hierarchy for eager models (the hierarchy is for
TorchScript models only; test_torch_1_13_profiler_records_no_module_events
checks it on this model), so the names follow PyTorch 2.x's python tracer.

Module names count instances per class in the order this process first
records them: MODEL, built once, is the only model here with a Net, Linear,
Sequential or ReLU, so its names are the same whichever test runs first; the
other tests' modules are named by what ringprof gave them (name_of)."""
import json
import os
import threading
import unittest

import torch
import torch.profiler

import ringprof
import ringprof.torch
import support
from ringprof import _modules

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.layers = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(16, 4))

    def forward(self, x):
        return self.layers(self.fc1(x))


MODEL = Net()
X = torch.randn(2, 8)

# In the order a forward of MODEL first meets them.
NAMES = {"nn.Module: Net_0": "Net", "nn.Module: Linear_0": "Net.fc1", "nn.Module: Sequential_0": "Net.layers",
         "nn.Module: ReLU_0": "Net.layers.0", "nn.Module: Linear_1": "Net.layers.1"}
PARENT = {"nn.Module: Linear_0": "nn.Module: Net_0", "nn.Module: Sequential_0": "nn.Module: Net_0",
          "nn.Module: ReLU_0": "nn.Module: Sequential_0", "nn.Module: Linear_1": "nn.Module: Sequential_0"}


def name_of(module):
    """The zone name ringprof gave this module at its first recorded forward."""
    return _modules._records[id(module)].name


class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.step = torch.nn.Identity()
        self.fail = False

    def forward(self, x):
        x = self.step(x)
        if self.fail:
            raise ValueError("inner failed")
        return x * 2


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x) + 1


class Catcher(torch.nn.Module):
    """Catches its child's exception and calls another child."""

    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.after = torch.nn.Identity()

    def forward(self, x):
        try:
            x = self.inner(x)
        except ValueError:
            pass
        return self.after(x)


class Holder(torch.nn.Module):
    """MODEL as a child, and a Tanh outside the tree (in a plain list)."""

    def __init__(self):
        super().__init__()
        self.net = MODEL
        self.loose = [torch.nn.Tanh()]

    def forward(self, x):
        return self.loose[0](self.net(x))


class Grower(torch.nn.Module):
    """A head replaced between forwards, and a module made inside the forward."""

    def __init__(self):
        super().__init__()
        self.head = torch.nn.Softsign()

    def forward(self, x):
        return torch.nn.Softplus()(self.head(x))


class ModuleZonesTest(unittest.TestCase):
    def setUp(self):
        ringprof.torch.set_operator_level("always_on")
        # Names count instances per process; other tests in this process
        # (test_torch's with_modules) may have counted some already.
        with _modules._lock:
            _modules._class_counts.clear()
        self.d = support.fresh_dir(self)

    def tearDown(self):
        while _modules.installed():
            _modules.uninstall()
        if ringprof.is_recording():
            ringprof.stop()
        ringprof.torch.set_operator_level("sampled", sampling=0.01)

    def start(self, detailed=True):
        self.assertTrue(ringprof.start(dir=self.d, sample_hz=0))
        if detailed:
            ringprof.set_mode("detailed")
        self.assertTrue(_modules.install())

    def stop(self):
        _modules.uninstall()
        ringprof.stop()
        return ringprof.open(self.d).zones

    def chrome_counts(self):
        """(unterminated zones, zone ends without a begin) of the Chrome trace."""
        out = os.path.join(os.path.dirname(self.d), "trace.json")
        support.cli("convert", self.d, "-o", out)
        with open(out) as f:
            other = json.load(f)["otherData"]
        return other["unterminated_zones"], other["unmatched_zone_ends"]

    def test_names_calls_and_paths_of_three_forwards(self):
        self.start()
        for _ in range(3):
            MODEL(X)
        zones = self.stop()
        calls = support.calls(self.d)
        self.assertEqual({n: c for n, c in calls.items() if n.startswith("nn.Module: ")}, dict.fromkeys(NAMES, 3))
        self.assertEqual(calls["aten::linear"], 6)
        for z in zones:
            if z.name.startswith("nn.Module: "):
                self.assertEqual(z.args, {"module": NAMES[z.name]}, z.name)
                # Each points at its class's forward.
                cls = {"Net": Net, "Linear": torch.nn.Linear, "Sequential": torch.nn.Sequential,
                       "ReLU": torch.nn.ReLU}[z.name[len("nn.Module: "):].rsplit("_", 1)[0]]
                self.assertEqual((z.file, z.line), (cls.forward.__code__.co_filename,
                                                    cls.forward.__code__.co_firstlineno))
        self.assertEqual(self.chrome_counts(), (0, 0))

    def test_modules_nest_and_operators_run_inside_their_module(self):
        self.start()
        for _ in range(3):
            MODEL(X)
        zones = [z for z in self.stop() if z.tid == threading.get_native_id()]

        def innermost_module(z):
            around = [m for m in zones if m.name.startswith("nn.Module: ") and m is not z
                      and m.start_ns <= z.start_ns and z.end_ns <= m.end_ns and m.depth < z.depth]
            return max(around, key=lambda m: m.depth, default=None)

        for z in zones:
            parent = innermost_module(z)
            if z.name in PARENT:
                self.assertEqual(parent.name, PARENT[z.name])
                self.assertEqual(z.depth, parent.depth + 1)
            elif z.name == "nn.Module: Net_0":
                self.assertIsNone(parent)
                self.assertEqual(z.depth, 0)
            elif z.name in ("aten::linear", "aten::addmm"):
                self.assertIn(parent.name, ("nn.Module: Linear_0", "nn.Module: Linear_1"))
            elif z.name == "aten::relu":
                self.assertEqual(parent.name, "nn.Module: ReLU_0")
        self.assertEqual(sum(z.name == "aten::addmm" for z in zones), 6)
        # The table agrees: a module's self time is what its children leave.
        rows = support.table(self.d)
        for name in ("nn.Module: Net_0", "nn.Module: Sequential_0", "nn.Module: Linear_0"):
            self.assertLess(float(rows[name]["self_us"]), float(rows[name]["total_us"]), name)

    def test_nothing_is_recorded_outside_the_detailed_level(self):
        self.start(detailed=False)
        self.assertEqual(ringprof.mode(), "always_on")
        for _ in range(3):
            MODEL(X)
        ringprof.set_mode("detailed")
        for _ in range(2):
            MODEL(X)
        ringprof.set_mode("always_on")
        MODEL(X)
        self.stop()
        calls = support.calls(self.d)
        self.assertEqual({n: c for n, c in calls.items() if n.startswith("nn.Module: ")}, dict.fromkeys(NAMES, 2))
        self.assertEqual(calls["aten::linear"], 12)  # the operators at always_on too
        self.assertEqual(self.chrome_counts(), (0, 0))

    def test_a_forward_that_raises_is_ended_at_the_next_forward(self):
        outer = Outer()
        self.start()
        outer(X)
        outer.inner.fail = True
        with self.assertRaises(ValueError):
            outer(X)
        # Outer's and Inner's entries are stale (1.13 runs no hook after a raise).
        self.assertEqual(len(_modules._local.stack), 2 if torch.__version__.startswith("1.") else 0)
        outer.inner.fail = False
        outer(X)
        self.assertEqual(_modules._local.stack, [])
        zones = self.stop()
        self.assertEqual(self.chrome_counts(), (0, 0))  # every zone ended, every end had its begin
        outers = sorted((z for z in zones if z.name == name_of(outer)), key=lambda z: z.start_ns)
        inners = sorted((z for z in zones if z.name == name_of(outer.inner)), key=lambda z: z.start_ns)
        self.assertEqual((len(outers), len(inners)), (3, 3))
        for o, i in zip(outers, inners):
            self.assertEqual((o.depth, i.depth, o.args["module"], i.args["module"]), (0, 1, "Outer", "Outer.inner"))
            self.assertTrue(o.start_ns <= i.start_ns and i.end_ns <= o.end_ns)
        # The failed call's zones end before the next call's begin.
        self.assertLessEqual(outers[1].end_ns, outers[2].start_ns)
        self.assertEqual(support.calls(self.d)[name_of(outer.inner.step)], 3)

    def test_an_exception_caught_in_a_parents_forward_ends_the_childs_zone_there(self):
        catcher = Catcher()
        catcher.inner.fail = True
        self.start()
        for _ in range(3):
            catcher(X)
        self.assertEqual(_modules._local.stack, [])
        zones = self.stop()
        self.assertEqual(self.chrome_counts(), (0, 0))
        by_name = {}
        for z in zones:
            by_name.setdefault(z.name, []).append(z)
        self.assertEqual(len(by_name[name_of(catcher)]), 3)
        inners = sorted(by_name[name_of(catcher.inner)], key=lambda z: z.start_ns)
        afters = sorted(by_name[name_of(catcher.after)], key=lambda z: z.start_ns)
        self.assertEqual((len(inners), len(afters)), (3, 3))
        for inner, after in zip(inners, afters):
            self.assertEqual((inner.depth, after.depth), (1, 1))  # both Catcher's children
            self.assertLessEqual(inner.end_ns, after.start_ns)  # Inner ended before the next child began
            self.assertEqual((inner.args["module"], after.args["module"]), ("Catcher.inner", "Catcher.after"))

    def test_stop_ends_the_zones_a_raise_left_open(self):
        outer = Outer()
        outer.inner.fail = True
        self.start()
        with self.assertRaises(ValueError):
            outer(X)
        zones = self.stop()  # no forward after the raise: stop() ends them
        self.assertEqual(_modules._local.stack, [])
        self.assertEqual(self.chrome_counts(), (0, 0))
        self.assertEqual(sorted(z.name for z in zones if z.name.startswith("nn.Module: ")),
                         sorted([name_of(outer), name_of(outer.inner), name_of(outer.inner.step)]))

    def test_paths_follow_the_root_and_a_module_outside_the_tree_is_its_class(self):
        holder = Holder()
        self.start()
        for _ in range(3):
            holder(X)
        zones = self.stop()
        args = {z.name: z.args["module"] for z in zones if z.name.startswith("nn.Module: ")}
        expected = {"nn.Module: Holder_0": "Holder", "nn.Module: Tanh_0": "Tanh"}
        expected.update({n: "Holder.net" + p[len("Net"):] for n, p in NAMES.items()})
        self.assertEqual(args, expected)
        self.assertEqual(self.chrome_counts(), (0, 0))

    def test_a_replaced_child_takes_its_path_and_a_module_made_in_forward_its_class(self):
        grower = Grower()
        first = grower.head
        self.start()
        grower(X)
        grower.head = torch.nn.Softsign()  # after the root's paths were computed
        grower(X)
        zones = self.stop()
        paths = {z.name: z.args["module"] for z in zones if z.name.startswith("nn.Module: ")}
        self.assertNotEqual(name_of(first), name_of(grower.head))
        self.assertEqual(paths[name_of(grower)], "Grower")
        self.assertEqual(paths[name_of(first)], "Grower.head")
        self.assertEqual(paths[name_of(grower.head)], "Grower.head")
        made = {n: p for n, p in paths.items() if n.startswith("nn.Module: Softplus_")}
        self.assertEqual(len(made), 2)  # a new module, so a new name, at each call
        self.assertEqual(set(made.values()), {"Softplus"})

    def test_threads_running_one_model_keep_their_own_zones(self):
        self.start()
        threads = [threading.Thread(target=lambda: [MODEL(X) for _ in range(3)]) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        zones = self.stop()
        calls = support.calls(self.d)
        self.assertEqual({n: c for n, c in calls.items() if n.startswith("nn.Module: ")}, dict.fromkeys(NAMES, 6))
        self.assertEqual(self.chrome_counts(), (0, 0))
        depth = {"nn.Module: Net_0": 0, "nn.Module: Linear_0": 1, "nn.Module: Sequential_0": 1,
                 "nn.Module: ReLU_0": 2, "nn.Module: Linear_1": 2}
        per_thread = {}
        for z in zones:
            if z.name in depth:
                self.assertEqual(z.depth, depth[z.name], z.name)
                per_thread.setdefault(z.tid, []).append(z.name)
        self.assertEqual(sorted(len(names) for names in per_thread.values()), [15, 15])

    def test_install_is_counted_and_uninstall_removes_the_hooks(self):
        from torch.nn.modules import module as torch_module
        pre, post = len(torch_module._global_forward_pre_hooks), len(torch_module._global_forward_hooks)
        self.assertTrue(_modules.install())
        self.assertTrue(_modules.install())
        self.assertEqual(len(torch_module._global_forward_pre_hooks), pre + 1)
        self.assertEqual(len(torch_module._global_forward_hooks), post + 1)
        self.assertTrue(_modules.uninstall())
        self.assertTrue(_modules.installed())
        self.assertFalse(_modules.uninstall())
        self.assertFalse(_modules.installed())
        self.assertFalse(_modules.uninstall())  # beyond the installs: nothing
        self.assertEqual(len(torch_module._global_forward_pre_hooks), pre)
        self.assertEqual(len(torch_module._global_forward_hooks), post)

    def test_torch_1_13_profiler_records_no_module_events(self):
        # torch.profiler.profile(with_modules=True) in 1.13: "only for
        # TorchScript models and not eager mode models". PyTorch 2.x's python
        # tracer names module events as ringprof does.
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_modules=True,
                                    with_stack=True) as p:
            MODEL(X)
        names = {e.name for e in p.events()}
        self.assertIn("aten::linear", names)
        modules = {n for n in names if n.startswith("nn.Module: ")}
        if torch.__version__.startswith("1."):
            self.assertEqual(modules, set())
            self.assertEqual({getattr(e, "module_hierarchy", None) for e in p.events()}, {None})
        elif modules:
            self.assertEqual(modules, set(NAMES))


if __name__ == "__main__":
    unittest.main()
