"""The Python recording API: zones, decorators, threads, settings, windows,
fork and interpreter exit, read back through the ringprof CLI."""
import collections
import inspect
import os
import sys
import textwrap
import threading
import unittest

import ringprof
import support


SHARED_ZONE = ringprof.zone("shared")


@ringprof.zone
def module_level_work(x):
    return x * 3


class ZoneTest(unittest.TestCase):
    def tearDown(self):
        if ringprof.is_recording():
            ringprof.stop()

    def test_zones_decorators_and_call_sites(self):
        d = support.fresh_dir(self)
        self.assertTrue(ringprof.start(dir=d, sample_hz=0))

        @ringprof.zone
        def decorated(x):
            return x + 1

        class Model:
            @ringprof.zone("forward")
            def forward(self, y):
                return y * 2

        def helper():
            with ringprof.zone():  # unnamed: the enclosing function's qualified name
                pass

        with_line = inspect.currentframe().f_lineno + 2
        for _ in range(3):
            with ringprof.zone("outer"):
                for _ in range(2):
                    with ringprof.zone("inner"):
                        pass
        self.assertEqual([decorated(i) for i in range(5)], [1, 2, 3, 4, 5])
        m = Model()
        self.assertEqual([m.forward(i) for i in range(4)], [0, 2, 4, 6])
        helper()
        ringprof.stop()

        self.assertEqual(support.calls(d), {
            "outer": 3, "inner": 6, "forward": 4, helper.__qualname__: 1,
            decorated.__qualname__: 5})
        # Decorated functions keep their identity for introspection.
        self.assertEqual(decorated.__name__, "decorated")
        self.assertTrue(callable(decorated.__wrapped__))
        # The call site: this file and the line of the `with`.
        outer = [e for e in support.chrome(d) if e.get("name") == "outer"]
        self.assertEqual(len(outer), 3)
        self.assertEqual(outer[0]["args"]["file"], __file__)
        self.assertEqual(outer[0]["args"]["line"], with_line)
        fwd = next(e for e in support.chrome(d) if e.get("name") == "forward")
        # co_firstlineno: a decorated function starts at its first decorator.
        self.assertEqual(fwd["args"]["line"], inspect.getsourcelines(Model.forward.__wrapped__)[1])

    def test_one_site_with_names_built_at_run_time(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)
        for i in range(6):
            with ringprof.zone("batch %d" % (i % 3)):
                pass
        ringprof.stop()
        self.assertEqual(support.calls(d), {"batch 0": 2, "batch 1": 2, "batch 2": 2})

    def test_exceptions_pass_through_and_the_zone_still_ends(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)

        @ringprof.zone("raises")
        def raises():
            raise KeyError("x")

        with self.assertRaises(ValueError):
            with ringprof.zone("failing"):
                raise ValueError("boom")
        with self.assertRaises(KeyError):
            raises()
        with ringprof.zone("after"):
            pass
        ringprof.stop()
        self.assertEqual(support.calls(d), {"failing": 1, "raises": 1, "after": 1})
        info = support.cli("info", d)
        self.assertIn("zone_begin: 3", info)
        self.assertIn("zone_end: 3", info)

    def test_nothing_is_recorded_while_off_and_code_still_runs(self):
        self.assertFalse(ringprof.is_recording())
        z = ringprof.zone("never")
        with z:
            pass

        @ringprof.zone
        def f():
            return 42

        self.assertEqual(f(), 42)
        ringprof.counter("c", 1.0)
        ringprof.instant("i")
        self.assertEqual(ringprof.mode(), "off")

    def test_one_zone_object_entered_inside_itself(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)
        z = ringprof.zone("reentrant")
        with z:
            with z:
                pass
        ringprof.stop()
        self.assertEqual(support.calls(d), {"reentrant": 2})

    def test_one_zone_object_shared_by_threads(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)
        barrier = threading.Barrier(4)

        def work():
            barrier.wait()
            for _ in range(300):
                with SHARED_ZONE:
                    with SHARED_ZONE:
                        pass

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ringprof.stop()
        self.assertEqual(support.calls(d), {"shared": 4 * 300 * 2})
        info = support.cli("info", d)
        self.assertIn("zone_begin: 2400", info)
        self.assertIn("zone_end: 2400", info)

    def test_decorated_functions_pickle_by_reference(self):
        import pickle
        self.assertIs(pickle.loads(pickle.dumps(module_level_work)), module_level_work)
        self.assertEqual(module_level_work(2), 6)

    def test_generators_and_coroutines_are_refused_at_decoration(self):
        def gen():
            yield 1

        async def coro():
            return 1

        for fn in (gen, coro):
            with self.assertRaisesRegex(TypeError, "generator or coroutine"):
                ringprof.zone(fn)
        with self.assertRaises(TypeError):
            ringprof.zone(3)

    def test_threads_get_their_own_rings_and_names(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)
        barrier = threading.Barrier(3)

        def work():
            barrier.wait()
            for _ in range(500):
                with ringprof.zone("work"):
                    pass

        threads = [threading.Thread(target=work, name="worker-%d" % i) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        renamed = threading.Thread(target=lambda: (ringprof.set_thread_name("loader"), work_once()))

        def work_once():
            with ringprof.zone("load"):
                pass

        renamed.start()
        renamed.join()
        ringprof.stop()
        for i in range(3):
            self.assertEqual(support.calls(d, "--thread", "worker-%d" % i), {"work": 500})
        self.assertEqual(support.calls(d, "--thread", "loader"), {"load": 1})
        self.assertEqual(ringprof.recorder_stats()["dropped_ring"], 0)

    @unittest.skipIf(sys.version_info >= (3, 12), "threads announce themselves up to Python 3.11 (docs/python.md)")
    def test_a_thread_announced_at_its_start_keeps_the_applications_profile_function(self):
        # The application's own threading profile function, installed before
        # start(): ringprof's runs first in each new thread, then hands over.
        seen = []

        def app_profile(frame, event, arg):
            seen.append((threading.current_thread().name, event))

        threading.setprofile(app_profile)
        try:
            d = support.fresh_dir(self)
            ringprof.start(dir=d, sample_hz=0)
            self.assertIsNot(threading._profile_hook, app_profile)  # ringprof's is in place
            t = threading.Thread(target=lambda: None, name="quiet-worker")  # records no event itself
            t.start()
            t.join()
            ringprof.stop()
            self.assertIs(threading._profile_hook, app_profile)  # given back at stop()
            self.assertIn(("quiet-worker", "call"), seen)  # the application's function still saw the thread
            self.assertIn("quiet-worker", support.cli("info", d))  # announced: a thread of the recording
        finally:
            if ringprof.is_recording():
                ringprof.stop()
            threading.setprofile(None)

    def test_counters_instants_steps_and_flows(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)
        # Steps are numbered process-wide (earlier tests' steps count too).
        first = ringprof.step()
        self.assertEqual([ringprof.step() for _ in range(2)], [first + 1, first + 2])
        self.assertEqual(ringprof.step(41), 41)
        ringprof.counter("queue_depth", 3.5)
        ringprof.counter("queue_depth", 7)
        ringprof.instant("checkpoint")
        with ringprof.zone("producer"):
            ringprof.flow_begin(77, "request")
        with ringprof.zone("consumer"):
            ringprof.flow_end(77)
        ringprof.stop()
        events = support.chrome(d)
        self.assertEqual([e["args"]["value"] for e in events if e.get("name") == "queue_depth"], [3.5, 7])
        self.assertEqual(sum(1 for e in events if e.get("name") == "checkpoint" and e["ph"] == "i"), 1)
        self.assertEqual([e["args"]["step"] for e in events if e.get("name", "").startswith("step ")],
                         [first, first + 1, first + 2, 41])
        flows = sorted(e["ph"] for e in events if e.get("name") == "request")
        self.assertEqual(flows, ["f", "s"])

    def test_mark_collective_is_the_collective_zone_argument(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)
        with ringprof.zone("barrier"):
            ringprof.mark_collective()
        with ringprof.zone("all_reduce"):
            ringprof.mark_collective("tp0")
        with ringprof.zone("all_gather"):
            ringprof.mark_collective(group="dp1")
        ringprof.stop()
        args = {z.name: z.args for z in ringprof.open(d).zones}
        self.assertEqual(args, {"barrier": {"collective": "world"}, "all_reduce": {"collective": "tp0"},
                                "all_gather": {"collective": "dp1"}})
        for bad in [(1,), ("a", "b")]:
            with self.assertRaises(TypeError):
                ringprof.mark_collective(*bad)
        with self.assertRaises(TypeError):
            ringprof.mark_collective(name="tp0")


class SettingsTest(unittest.TestCase):
    def test_rank_from_the_launchers_variables_then_set_rank(self):
        d = support.fresh_dir(self)
        r = support.run_python(textwrap.dedent("""
            import ringprof
            ringprof.start(dir=%r, sample_hz=0)
            print(sorted(ringprof.rank_info().items()))
            with ringprof.zone("before"):
                pass
            ringprof.flush()
            ringprof.set_rank(5, world_size=16, job_id="j2")
            with ringprof.zone("after"):
                pass
            ringprof.stop()
        """ % d), env={"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "TORCHELASTIC_RUN_ID": "job42"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[('job_id', 'job42'), ('local_rank', 1), ('rank', 3), ('source', 'RANK'), "
                      "('world_size', 8)]", r.stdout)
        # The files state the identity as it was last set.
        self.assertIn("\n    rank 5 of 16, job j2 (from set_rank)\n", support.cli("info", d))
        # Without any variable, the rank is unknown and info says nothing of it.
        d2 = support.fresh_dir(self)
        env = {k: "" for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID", "SLURM_PROCID",
                               "SLURM_JOB_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")}
        r = support.run_python("import ringprof\nringprof.start(dir=%r, sample_hz=0)\n"
                               "print(ringprof.rank_info()['rank'])\nringprof.instant('x')\nringprof.stop()\n" % d2, env=env)
        self.assertEqual(r.stdout.strip(), "-1", r.stderr)
        self.assertNotRegex(support.cli("info", d2), r"\n    rank ")

    def test_keywords_override_variables_and_bad_ones_only_warn(self):
        d = support.fresh_dir(self)
        other = d + "-from-env"
        r = support.run_python(textwrap.dedent("""
            import ringprof
            ok = ringprof.start(dir=%r, sample_hz="lots", bogus=1, flush_at_exit=False, mode="detailed")
            print("started", ok, ringprof.mode())
            with ringprof.zone("z"):
                pass
            ringprof.stop()
        """ % d), env={"RINGPROF_DIR": other, "RINGPROF_FILE_BYTES": "64K"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("started True detailed", r.stdout)
        self.assertIn("ignoring RINGPROF_SAMPLE_HZ=lots", r.stderr)
        self.assertIn("ignoring start(bogus=1): not a setting", r.stderr)
        self.assertEqual(support.calls(d), {"z": 1})
        self.assertFalse(os.path.exists(other))

    def test_mode_schedule_and_duty_cycle_take_their_words(self):
        with self.assertRaises(ValueError):
            ringprof.set_mode("loud")
        with self.assertRaises(ValueError):
            ringprof.set_schedule("active=x")
        with self.assertRaises(ValueError):
            ringprof.set_duty_cycle(steps=2, every="soon")


class WindowTest(unittest.TestCase):
    def test_callbacks_run_on_the_package_thread_and_survive_a_raising_one(self):
        d = support.fresh_dir(self)
        r = support.run_python(textwrap.dedent("""
            import threading, time, ringprof
            ringprof.start(dir=%r, sample_hz=0)
            seen = []
            done = threading.Event()
            def bad(w):
                raise RuntimeError("callback trouble")
            def good(w):
                seen.append((w, threading.current_thread().name))
                if len(seen) == 2:
                    done.set()
            ringprof.on_window_complete(bad)
            ringprof.on_window_complete(good)
            ringprof.set_schedule(wait=1, active=1, repeat=2)
            for i in range(6):
                with ringprof.zone("step work"):
                    pass
                ringprof.step()
            ringprof.flush()
            print("delivered", done.wait(30), seen)
        """ % d))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("delivered True [(1, 'ringprof-windows'), (2, 'ringprof-windows')]", r.stdout)
        self.assertEqual(r.stderr.count("raised RuntimeError: callback trouble; carrying on"), 2)
        # The files hold both windows: each has exactly its one active step's zone.
        self.assertEqual(support.calls(d, "--window-id", "1"), {"step work": 1})
        self.assertEqual(support.calls(d, "--window-id", "2"), {"step work": 1})


class ProcessTest(unittest.TestCase):
    def test_interpreter_exit_with_recording_on_flushes_everything(self):
        d = support.fresh_dir(self)
        r = support.run_python(textwrap.dedent("""
            import threading, ringprof
            assert ringprof.is_recording()       # RINGPROF_AUTOSTART=1
            def forever():
                while True:
                    with ringprof.zone("daemon"):
                        pass
            threading.Thread(target=forever, daemon=True).start()
            for _ in range(1000):
                with ringprof.zone("main"):
                    pass
            # no stop(): exit flushes while the daemon thread still records
        """), env={"RINGPROF_AUTOSTART": "1", "RINGPROF_DIR": d, "RINGPROF_SAMPLE_HZ": "0"}, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        counts = support.calls(d)
        self.assertEqual(counts["main"], 1000)
        self.assertGreater(counts.get("daemon", 0), 0)
        self.assertNotIn("torn", support.cli("info", d).split("Segments:")[1].split("intact")[0])

    def fork_job(self, policy):
        d = support.fresh_dir(self)
        r = support.run_python(textwrap.dedent("""
            import multiprocessing, ringprof
            def worker(n):
                for _ in range(n):
                    with ringprof.zone("child work"):
                        pass
            ringprof.start(dir=%r, sample_hz=0, fork=%r)
            with ringprof.zone("parent work"):
                p = multiprocessing.get_context("fork").Process(target=worker, args=(50,))
                p.start()
                p.join()
            print("child exit", p.exitcode)
            ringprof.stop()
        """ % (d, policy)), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("child exit 0", r.stdout)
        return d

    def test_forked_worker_records_into_its_own_files(self):
        d = self.fork_job("record")
        self.assertEqual(support.calls(d), {"parent work": 1, "child work": 50})
        self.assertIn("Processes: 2", support.cli("info", d))

    def test_forked_worker_records_nothing_when_fork_is_off(self):
        d = self.fork_job("off")
        self.assertEqual(support.calls(d), {"parent work": 1})


if __name__ == "__main__":
    unittest.main()


class ReadingTest(unittest.TestCase):
    """ringprof.open(): a recording's events from Python, as the CLI reads them."""

    def record(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)
        for i in range(4):
            with ringprof.zone("outer"):
                with ringprof.zone("inner"):
                    ringprof.counter("depth", i)
            ringprof.step()
        ringprof.set_schedule(wait=0, active=1, repeat=1)
        ringprof.step()
        with ringprof.zone("in window"):
            pass
        ringprof.step()
        ringprof.stop()
        return d

    def test_zones_steps_and_counters_come_back_exactly(self):
        d = self.record()
        rec = ringprof.open(d)
        self.assertEqual(len(rec.zones), 9)
        names = collections.Counter(z.name for z in rec.zones)
        self.assertEqual(names, {"outer": 4, "inner": 4, "in window": 1})
        for z in rec.zones:
            self.assertEqual(z.thread, "MainThread")
            self.assertEqual(z.dur_ns, z.end_ns - z.start_ns)
            self.assertEqual(z.depth, 1 if z.name == "inner" else 0)
            self.assertEqual(z.file, __file__)
        outer = [z for z in rec.zones if z.name == "outer"]
        inner = [z for z in rec.zones if z.name == "inner"]
        for o, i in zip(sorted(outer, key=lambda z: z.start_ns), sorted(inner, key=lambda z: z.start_ns)):
            self.assertTrue(o.start_ns <= i.start_ns and i.end_ns <= o.end_ns)
            self.assertEqual(o.self_ns, o.dur_ns - i.dur_ns)
        first = rec.steps[0].step  # steps are numbered process-wide
        self.assertEqual([s.step for s in rec.steps], list(range(first, first + 6)))
        self.assertEqual([c.value for c in rec.counters], [0.0, 1.0, 2.0, 3.0])
        self.assertEqual({c.name for c in rec.counters}, {"depth"})
        self.assertEqual(len(rec.samples), 0)
        # The same zones as the CLI's table counts.
        self.assertEqual(dict(names), support.calls(d))

    def test_a_window_and_a_dataframe(self):
        d = self.record()
        rec = ringprof.open(d)
        (window,) = rec.windows()
        inside = ringprof.open(d, window_id=window["id"])
        self.assertEqual([z.name for z in inside.zones], ["in window"])
        self.assertEqual([s.step for s in inside.steps], [rec.steps[4].step])
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas is not installed")
        df = rec.dataframe("zones")
        self.assertEqual(len(df), 9)
        self.assertEqual(df.groupby("name").size().to_dict(), {"outer": 4, "inner": 4, "in window": 1})
        with self.assertRaises(ValueError):
            rec.dataframe("everything")

    def test_missing_path_is_one_clear_error(self):
        with self.assertRaisesRegex(FileNotFoundError, "ringprof.open: /nonexistent/rec: no such file"):
            ringprof.open("/nonexistent/rec")


class ManyNamesTest(unittest.TestCase):
    def test_a_site_with_ever_new_names_records_them_all(self):
        d = support.fresh_dir(self)
        ringprof.start(dir=d, sample_hz=0)
        for i in range(100):  # past the per-site locations: the rest travel inline
            with ringprof.zone("request %d" % i):
                pass
        ringprof.stop()
        got = support.calls(d)
        self.assertEqual(got, {"request %d" % i: 1 for i in range(100)})
