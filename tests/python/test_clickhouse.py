"""`ringprof ship` into real ClickHouse servers (Debian's 18.16, on loopback).

Two "hosts" (RINGPROF_HOSTNAME) run a known workload each; their files are
shipped, and what ClickHouse holds is checked against the workload's own
counts and against `ringprof table` on the same files, exactly.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import shutil
import threading
import unittest

import support
from clickhouse_servers import CLUSTER, ClickHouseServers

# STEPS steps, each an "outer" zone around 3 "inner" zones (the last with an
# argument), an async span begun in one thread and ended in another, a
# counter, and CPU spent in a Python function so that samples come.
WORKLOAD = textwrap.dedent("""
    import os, sys, threading, time, ringprof
    out, steps = sys.argv[1], int(sys.argv[2])
    ringprof.start(dir=out, sample_hz=499, file_bytes=int(sys.argv[3]))
    def spin(ms):
        end = time.thread_time() + ms / 1000
        while time.thread_time() < end:
            pass
    for s in range(steps):
        ringprof.step(s)
        span = ringprof.async_begin("request")
        with ringprof.zone("outer"):
            for k in range(3):
                with ringprof.zone("inner"):
                    if k == 2:
                        ringprof.zone_arg("batch", s)
                    spin(1)
        t = threading.Thread(target=ringprof.async_end, args=(span,))
        t.start()
        t.join()
        ringprof.counter("queue", s)
    ringprof.step(steps)
    ringprof.stop()
""")

STEPS = 40


def record(root, host, steps=STEPS, file_bytes=64 << 20):
    d = os.path.join(root, host)
    r = subprocess.run([sys.executable, "-c", WORKLOAD, d, str(steps), str(file_bytes)],
                       env=dict(os.environ, RINGPROF_HOSTNAME=host), capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("workload on %s exited %d: %s" % (host, r.returncode, r.stderr))
    return d


def ship(*args):
    return subprocess.run([support.CLI, "ship", *args], capture_output=True, text=True, timeout=300)


def table_totals(path):
    """Per zone: (calls, total ns) as `ringprof table` gives them."""
    rows = support.table(path)
    return {name: (int(r["calls"]), round(float(r["total_us"]) * 1000)) for name, r in rows.items()}


def clickhouse_totals(servers, host, table="spans", i=0):
    return {name: (int(calls), int(total)) for name, calls, total in servers.rows(
        "SELECT name, count(), sum(dur_ns) FROM ringprof.%s WHERE host = '%s' GROUP BY name" % (table, host), i)}


class ShipTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ringprof-ship-")
        cls.hosts = {h: record(cls.tmp, h) for h in ("alpha", "beta")}
        cls.servers = ClickHouseServers(1)

    @classmethod
    def tearDownClass(cls):
        cls.servers.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.servers.query("DROP DATABASE IF EXISTS ringprof")

    def ship_both(self):
        r = ship(*self.hosts.values(), "--clickhouse", self.servers.url())
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_each_hosts_zones_equal_table_on_its_files(self):
        r = self.ship_both()
        self.assertIn("2 files shipped", r.stdout)
        for host, d in self.hosts.items():
            got = clickhouse_totals(self.servers, host)
            self.assertEqual(got, table_totals(d), host)
            # The workload's own counts, and what table must agree with.
            self.assertEqual(got["outer"][0], STEPS)
            self.assertEqual(got["inner"][0], 3 * STEPS)
            self.assertEqual(got["request"][0], STEPS)
            # The rollup says the same.
            rollup = {name: (int(c), int(t)) for name, c, t in self.servers.rows(
                "SELECT name, countMerge(calls), sumMerge(total_ns) FROM ringprof.zone_hourly "
                "WHERE host = '%s' GROUP BY name" % host)}
            self.assertEqual(rollup, got)

    def test_spans_carry_depth_parent_thread_and_arguments(self):
        self.ship_both()
        rows = self.servers.rows("SELECT depth, parent, async, count(), uniqExact(tid) FROM ringprof.spans "
                                 "WHERE host = 'alpha' AND name IN ('inner', 'outer') GROUP BY depth, parent, async "
                                 "ORDER BY depth")
        self.assertEqual(rows, [("0", "", "0", str(STEPS), "1"), ("1", "outer", "0", str(3 * STEPS), "1")])
        args = self.servers.rows("SELECT arg_keys, arg_values FROM ringprof.spans WHERE host = 'alpha' "
                                 "AND name = 'inner' AND length(arg_keys) > 0 ORDER BY begin_ns")
        self.assertEqual(len(args), STEPS)
        self.assertEqual(args[7], ("['batch']", "['7']"))
        # The async span ends on another thread: begun on the main one.
        self.assertEqual(self.servers.rows("SELECT count(), min(dur_ns) > 0 FROM ringprof.spans WHERE host = 'alpha' "
                                           "AND name = 'request' AND async = 1 AND unterminated = 0"),
                         [(str(STEPS), "1")])

    def test_steps_counters_marks_and_samples(self):
        self.ship_both()
        for host in self.hosts:
            # step(0) … step(STEPS): STEPS whole steps, each around its zones.
            steps = self.servers.rows("SELECT count(), min(step), max(step), min(dur_ns) FROM ringprof.steps "
                                      "WHERE host = '%s'" % host)
            self.assertEqual(steps[0][:3], (str(STEPS), "0", str(STEPS - 1)))
            self.assertGreater(int(steps[0][3]), 3_000_000)  # three 1 ms spins at least
            self.assertEqual(self.servers.rows("SELECT count(), sum(value) FROM ringprof.counters WHERE host = '%s' "
                                               "AND name = 'queue'" % host),
                             [(str(STEPS), str(sum(range(STEPS))))])
            # 120 ms of CPU in spin() at 499 Hz: about 60 samples; their
            # stacks resolve to Python frames, spin among them.
            samples = int(self.servers.query("SELECT count() FROM ringprof.samples WHERE host = '%s'" % host))
            self.assertGreater(samples, 10)
            spin = int(self.servers.query(
                "SELECT count() FROM ringprof.samples AS s ANY INNER JOIN ringprof.stacks AS k USING stack_key "
                "WHERE s.host = '%s' AND arrayExists(f -> f LIKE '%%spin%%', k.frames)" % host))
            self.assertGreater(spin, samples / 2)

    def test_shipping_again_inserts_nothing(self):
        self.ship_both()
        before = {h: clickhouse_totals(self.servers, h) for h in self.hosts}
        r = self.ship_both()
        self.assertIn("0 files shipped", r.stdout)
        self.assertIn("2 shipped before", r.stdout)
        self.assertEqual({h: clickhouse_totals(self.servers, h) for h in self.hosts}, before)

    def test_a_ship_stopped_part_way_is_deleted_and_shipped_again(self):
        self.ship_both()
        # As if the ship had died after its rows and before saying done.
        self.servers.query("ALTER TABLE ringprof.files DELETE WHERE state = 'done'")
        self.servers.wait_mutations()
        r = self.ship_both()
        self.assertIn("2 files shipped", r.stdout)
        self.assertIn("shipped again", r.stderr)
        for host, d in self.hosts.items():
            self.assertEqual(clickhouse_totals(self.servers, host), table_totals(d))

    def test_a_schema_of_another_version_is_refused(self):
        self.servers.query("CREATE DATABASE ringprof")
        self.servers.query("CREATE TABLE ringprof.schema_version (version UInt32, created DateTime) ENGINE = TinyLog")
        self.servers.query("INSERT INTO ringprof.schema_version VALUES (7, now())")
        r = ship(self.hosts["alpha"], "--clickhouse", self.servers.url())
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("schema version 7", r.stderr)
        self.assertEqual(self.servers.query("SELECT count() FROM system.tables WHERE database = 'ringprof'").strip(), "1")

    def test_an_unreachable_server_is_one_line(self):
        r = ship(self.hosts["alpha"], "--clickhouse", "http://127.0.0.1:%d" % self.closed_port())
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("cannot reach", r.stderr)

    def test_a_second_ship_at_once_ships_nothing(self):
        import fcntl
        with open(os.path.join(self.hosts["alpha"], ".ringprof-ship.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # as a ship in progress holds it
            r = ship(self.hosts["alpha"], "--clickhouse", self.servers.url())
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("another ringprof ship holds", r.stderr)
        self.assertNotIn("ringprof", self.servers.query("SHOW DATABASES").split())

    def test_names_that_are_not_identifiers_are_refused(self):
        r = ship(self.hosts["alpha"], "--clickhouse", self.servers.url(), "--database", "x; DROP")
        self.assertEqual(r.returncode, 2)
        self.assertIn("letters, digits and '_'", r.stderr)

    @staticmethod
    def closed_port():
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


class LiveDirectoryTest(unittest.TestCase):
    """A process still writing: its sealed files ship, its `.part` waits; a
    zone open across a file's end ships once, whole, with the file that holds
    its end."""

    def test_sealed_files_ship_while_it_runs_and_every_file_once(self):
        servers = ClickHouseServers(1)
        self.addCleanup(servers.stop)
        tmp = tempfile.mkdtemp(prefix="ringprof-ship-live-")
        self.addCleanup(shutil.rmtree, tmp, True)
        d = os.path.join(tmp, "gamma")
        # The smallest file size, so the run (about 110 KB) rolls over several files.
        proc = subprocess.Popen([sys.executable, "-c", WORKLOAD, d, "1200", str(16 << 10)],
                                env=dict(os.environ, RINGPROF_HOSTNAME="gamma"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        shipped_while_running = 0
        try:
            support.wait_for(lambda: len([f for f in os.listdir(d) if f.endswith(".rpf")]) >= 2
                             if os.path.isdir(d) else False, timeout=60, what="two sealed files")
            r = ship(d, "--clickhouse", servers.url())
            self.assertEqual(r.returncode, 0, r.stderr)
            shipped_while_running = int(r.stdout.split()[0])
            self.assertGreaterEqual(shipped_while_running, 2)
            self.assertIn("1 still being written", r.stdout)
        finally:
            out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        r = ship(d, "--clickhouse", servers.url())
        self.assertEqual(r.returncode, 0, r.stderr)
        files = sorted(f for f in os.listdir(d) if f.endswith(".rpf"))
        self.assertEqual(int(r.stdout.split()[0]) + shipped_while_running, len(files), r.stdout)
        self.assertEqual(clickhouse_totals(servers, "gamma"), table_totals(d))
        self.assertEqual(table_totals(d)["outer"][0], 1200)
        # Every file in the ledger once begun and once done.
        states = servers.rows("SELECT countIf(state = 'begun'), countIf(state = 'done'), uniqExact(file_key) "
                              "FROM ringprof.files")
        self.assertEqual(states, [(str(len(files)),) * 3])


class KilledWriterTest(unittest.TestCase):
    """A process killed mid-run leaves its last file as a `.part` for good:
    its writer is gone from this host, so the `.part` is final and ships."""

    def test_a_killed_processs_part_ships(self):
        servers = ClickHouseServers(1)
        self.addCleanup(servers.stop)
        tmp = tempfile.mkdtemp(prefix="ringprof-ship-killed-")
        self.addCleanup(shutil.rmtree, tmp, True)
        d = os.path.join(tmp, "rec")
        # This host's own name (no RINGPROF_HOSTNAME), so that ship can see
        # the writer is gone.
        proc = subprocess.Popen([sys.executable, "-c", WORKLOAD, d, "100000", str(16 << 10)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            support.wait_for(lambda: os.path.isdir(d) and len([f for f in os.listdir(d) if f.endswith(".rpf")]) >= 2,
                             timeout=60, what="two sealed files")
        finally:
            proc.kill()
            proc.wait()
        parts = [f for f in os.listdir(d) if f.endswith(".rpf.part")]
        self.assertEqual(len(parts), 1, os.listdir(d))
        r = ship(d, "--clickhouse", servers.url())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 still being written", r.stdout)
        # Every file that holds a frame: all sealed ones, and the `.part`
        # unless the kill came right after it was made.
        info = subprocess.run([support.CLI, "info", d], capture_output=True, text=True, timeout=60).stdout
        holding = [m for m in re.findall(r"\.rpf(?:\.part)?: \d+ bytes, (\d+) segments", info) if int(m) > 0]
        self.assertGreaterEqual(len(holding), 2, info)
        self.assertEqual(int(r.stdout.split()[0]), len(holding), info)
        host = servers.query("SELECT any(host) FROM ringprof.spans").strip()
        # Zones it was killed in count as `table` counts them: unterminated.
        self.assertEqual(clickhouse_totals(servers, host), table_totals(d))


def start_workload(d, host, steps, env=None):
    """The workload at the smallest file size (16 KiB; the run writes about
    90 bytes a step), so that it rolls over many files."""
    return subprocess.Popen([sys.executable, "-c", WORKLOAD, d, str(steps), str(16 << 10)],
                            env=dict(os.environ, RINGPROF_HOSTNAME=host, **(env or {})),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class FollowTest(unittest.TestCase):
    """`ship --follow` on a live directory: each file once, as it is sealed;
    the files the writer's byte budget deleted first are counted."""

    def setUp(self):
        self.servers = ClickHouseServers(1)
        self.addCleanup(self.servers.stop)
        tmp = tempfile.mkdtemp(prefix="ringprof-follow-")
        self.addCleanup(shutil.rmtree, tmp, True)
        self.dir = os.path.join(tmp, "delta")

    def follow(self, interval):
        return subprocess.Popen([support.CLI, "ship", self.dir, "--clickhouse", self.servers.url(), "--follow",
                                 "--interval", str(interval)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def done_files(self):
        return int(self.servers.query("SELECT countIf(state = 'done') FROM ringprof.files")
                   if "files" in self.servers.query("SHOW TABLES FROM ringprof")
                   else "0") if "ringprof" in self.servers.query("SHOW DATABASES") else 0

    def finish(self, workload, follower, files):
        out, err = workload.communicate(timeout=120)
        self.assertEqual(workload.returncode, 0, err)
        support.wait_for(lambda: self.done_files() >= files(), timeout=60, what="every sealed file shipped")
        follower.send_signal(signal.SIGTERM)
        out, err = follower.communicate(timeout=60)
        self.assertEqual(follower.returncode, 0, err)
        return out

    def test_each_file_ships_once_as_it_is_sealed(self):
        workload = start_workload(self.dir, "delta", 1200)
        follower = self.follow(0.2)
        sealed = lambda: len([f for f in os.listdir(self.dir) if f.endswith(".rpf")])
        out = self.finish(workload, follower, sealed)
        files = sealed()
        self.assertGreaterEqual(files, 3)
        self.assertGreaterEqual(len(out.splitlines()), 2, out)  # shipped in more than one round
        self.assertEqual(self.servers.rows("SELECT countIf(state = 'begun'), countIf(state = 'done'), "
                                           "uniqExact(file_key) FROM ringprof.files"), [(str(files),) * 3])
        self.assertEqual(clickhouse_totals(self.servers, "delta"), table_totals(self.dir))
        self.assertEqual(table_totals(self.dir)["outer"][0], 1200)

    def test_files_deleted_before_they_were_shipped_are_counted(self):
        # A 64 KiB budget keeps the last four 16 KiB files; rounds 3 s apart
        # let the writer delete several files in between.
        workload = start_workload(self.dir, "delta", 2400, {"RINGPROF_MAX_BYTES": "64K"})
        follower = self.follow(3)
        present = lambda: len([f for f in os.listdir(self.dir) if f.endswith(".rpf")])
        out = self.finish(workload, follower, present)
        numbers = [int(re.search(r"-(\d+)\.rpf$", f).group(1)) for f in os.listdir(self.dir) if f.endswith(".rpf")]
        written = max(numbers) + 1  # numbered from 0
        m = re.search(r"(\d+) files deleted by their writer before they could be shipped", out.splitlines()[-1])
        self.assertIsNotNone(m, out)
        deleted = int(m.group(1))
        self.assertGreater(deleted, 0)
        self.assertEqual(self.done_files() + deleted, written, out)


class FleetWatchTest(unittest.TestCase):
    """`ringprof watch --clickhouse`: two hosts run test_watch's program for
    6 s, one with its `changed` zone 20% slower from half-way on, the other
    unchanged; watched per host in ClickHouse with 2.9 s windows."""

    @classmethod
    def setUpClass(cls):
        from test_watch import PROGRAM
        cls.servers = ClickHouseServers(1)
        cls.tmp = tempfile.mkdtemp(prefix="ringprof-fleet-watch-")
        for host, factor in (("slowing", "1.2"), ("even", "1.0")):
            d = os.path.join(cls.tmp, host)
            r = subprocess.run([sys.executable, "-c", PROGRAM, d, "6", factor], capture_output=True, text=True,
                               env=dict(os.environ, RINGPROF_HOSTNAME=host), timeout=60)
            if r.returncode != 0:
                raise AssertionError(r.stderr)
            r = ship(d, "--clickhouse", cls.servers.url())
            if r.returncode != 0:
                raise AssertionError(r.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.servers.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def watch(self, *args):
        return subprocess.run([support.CLI, "watch", "--clickhouse", self.servers.url(), "--window", "2.9s",
                               "--fail-above", "5%", *args], capture_output=True, text=True, timeout=120)

    def test_the_host_whose_zone_slowed_is_flagged_for_that_zone(self):
        r = self.watch("--host", "slowing", "--format", "json")
        self.assertEqual(r.returncode, 3, r.stderr)
        rows = {z["name"]: z for z in json.loads(r.stdout)["zones"]}
        self.assertEqual(rows["changed"]["verdict"], "regressed")
        self.assertGreater(rows["changed"]["change_pct"], 15)
        self.assertLess(rows["changed"]["change_pct"], 25)
        self.assertEqual(rows["steady"]["verdict"], "unchanged")

    def test_the_host_that_did_not_change_passes(self):
        r = self.watch("--host", "even")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(r.stdout.startswith("watch: host even, the last 2.9s against the 2.9s before, 5 slices a side"),
                        r.stdout)
        self.assertNotIn("regressed  ", r.stdout)

    def test_a_host_with_no_rows_is_one_line(self):
        r = self.watch("--host", "nowhere")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("no spans", r.stderr)


class DistributedTest(unittest.TestCase):
    """Two servers as the two shards of one cluster: each host ships into
    its own shard, and the Distributed tables read both."""

    def test_the_fleets_totals_are_the_sum_over_the_shards(self):
        servers = ClickHouseServers(2)
        self.addCleanup(servers.stop)
        tmp = tempfile.mkdtemp(prefix="ringprof-ship-dist-")
        self.addCleanup(shutil.rmtree, tmp, True)
        hosts = {"alpha": record(tmp, "alpha"), "beta": record(tmp, "beta", steps=25)}
        for i, (host, d) in enumerate(hosts.items()):
            r = ship(d, "--clickhouse", servers.url(i), "--cluster", CLUSTER)
            self.assertEqual(r.returncode, 0, r.stderr)
        per_shard = [clickhouse_totals(servers, h, i=i) for i, h in enumerate(hosts)]
        for i, (host, d) in enumerate(hosts.items()):
            self.assertEqual(per_shard[i], table_totals(d))
            self.assertEqual(clickhouse_totals(servers, host, i=1 - i), {})  # nothing of it on the other shard
        fleet_sql = "SELECT name, count(), sum(dur_ns) FROM ringprof.spans_all GROUP BY name"
        for i in range(2):  # the same from either shard
            fleet = {name: (int(c), int(t)) for name, c, t in servers.rows(fleet_sql, i)}
            expected = {}
            for shard in per_shard:
                for name, (c, t) in shard.items():
                    pc, pt = expected.get(name, (0, 0))
                    expected[name] = (pc + c, pt + t)
            self.assertEqual(fleet, expected)
            self.assertEqual(fleet["outer"][0], 40 + 25)
        rollup = {name: (int(c), int(t)) for name, c, t in servers.rows(
            "SELECT name, countMerge(calls), sumMerge(total_ns) FROM ringprof.zone_hourly_all GROUP BY name")}
        self.assertEqual(rollup, expected)


if __name__ == "__main__":
    unittest.main()
