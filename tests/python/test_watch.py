"""`ringprof watch`: the last window of a recording against a baseline window.

A real process records two zones of 0.25 ms of CPU each for 6 s; halfway
through, one of them becomes 20% slower. Watched with 2.9 s windows (two of
them fit in the recording however late its first event came; the head window
lies wholly after the change, and the base window's last 0.1 s after it is
too little to move its last slice's median), that zone alone is flagged, by
about 20%. The steady zone would be flagged only if its
median call moved 5% or more: the calls spin on the thread's CPU clock, so
load on the machine stretches the calls it preempts, not the median.
"""
import json
import os
import subprocess
import sys
import textwrap
import unittest

import support

# `steady` and `changed`: 0.25 ms of this thread's CPU each, in turn, for
# SECONDS; `changed` 0.3 ms (argv[3] times more) from half-way on. Calls much
# shorter than a scheduler's time slice, so that on a loaded machine few of
# them are preempted and the medians hold.
PROGRAM = textwrap.dedent("""
    import sys, time, ringprof
    out, seconds = sys.argv[1], float(sys.argv[2])
    factor = float(sys.argv[3]) if len(sys.argv) > 3 else 1.2
    ringprof.start(dir=out, sample_hz=0)
    def spin(ms):
        end = time.thread_time() + ms / 1000
        while time.thread_time() < end:
            pass
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        slow = time.monotonic() - t0 >= seconds / 2
        with ringprof.zone("steady"):
            spin(0.25)
        with ringprof.zone("changed"):
            spin(0.25 * (factor if slow else 1.0))
    ringprof.stop()
""")


def watch(*args):
    return subprocess.run([support.CLI, "watch", *args], capture_output=True, text=True, timeout=120)


class WatchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="ringprof-watch-")
        cls.rec = os.path.join(cls.tmp, "rec")
        support.run_python(PROGRAM.replace("sys.argv[1], float(sys.argv[2])", "%r, 6.0" % cls.rec), timeout=60)

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", cls.tmp])

    def verdicts(self, r):
        rows = {z["name"]: z for z in json.loads(r.stdout)["zones"]}
        return rows

    def check(self, r):
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("regressed by more than 5%", r.stderr)
        rows = self.verdicts(r)
        self.assertEqual(rows["changed"]["verdict"], "regressed")
        # Its median call went from 0.25 to 0.3 ms of CPU: +20%, give or take
        # the time the thread was not running while it spun (a busy machine).
        self.assertGreater(rows["changed"]["change_pct"], 15)
        self.assertLess(rows["changed"]["change_pct"], 25)
        self.assertEqual(rows["steady"]["verdict"], "unchanged", rows["steady"])

    def test_the_slowed_zone_alone_is_flagged(self):
        self.check(watch(self.rec, "--window", "2.9s", "--fail-above", "5%", "--format", "json"))

    def test_a_saved_recording_as_the_baseline(self):
        base = os.path.join(self.tmp, "base")
        support.cli("extract", self.rec, "--to", "2.9s", "-o", base)
        self.check(watch(self.rec, "--window", "2.9s", "--baseline", base, "--fail-above", "5%", "--format", "json"))

    def test_the_text_says_which_windows(self):
        r = watch(self.rec, "--window", "2.9s")
        self.assertEqual(r.returncode, 0, r.stderr)  # no --fail-above: a report, not a gate
        self.assertTrue(r.stdout.startswith("watch: the last 2.9s against the 2.9s before, 5 slices a side\n"), r.stdout)

    def test_windows_longer_than_the_recording_are_one_line(self):
        r = watch(self.rec, "--window", "1s", "--baseline", "day")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("the windows need 86401.00 s", r.stderr)


if __name__ == "__main__":
    unittest.main()
