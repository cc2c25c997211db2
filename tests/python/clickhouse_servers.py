"""ClickHouse servers for the tests, on loopback: Debian's clickhouse-server
(install-deps.sh installs it), each in a fresh directory with free ports,
named shards of one cluster ("ringprof_test") so that Distributed tables over
them work. Started and waited for (its /ping answers), stopped after.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

SERVER = shutil.which("clickhouse-server") or "/usr/sbin/clickhouse-server"
CLUSTER = "ringprof_test"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClickHouseServers:
    def __init__(self, count=1):
        if not os.access(SERVER, os.X_OK):
            raise AssertionError("no clickhouse-server at %s: install-deps.sh installs Debian's" % SERVER)
        self.root = tempfile.mkdtemp(prefix="ringprof-ch-")
        self.ports = [(free_port(), free_port()) for _ in range(count)]  # (http, tcp)
        shards = "".join("<shard><replica><host>127.0.0.1</host><port>%d</port></replica></shard>" % tcp
                         for _, tcp in self.ports)
        self.procs = []
        try:
            for i, (http, tcp) in enumerate(self.ports):
                d = os.path.join(self.root, "server%d" % i)
                for sub in ("data", "tmp", "log"):
                    os.makedirs(os.path.join(d, sub))
                with open(os.path.join(d, "users.xml"), "w") as f:
                    f.write("""<?xml version="1.0"?><yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas></yandex>""")
                with open(os.path.join(d, "config.xml"), "w") as f:
                    f.write("""<?xml version="1.0"?><yandex>
  <logger><level>warning</level><log>{d}/log/server.log</log><errorlog>{d}/log/error.log</errorlog>
    <console>0</console></logger>
  <http_port>{http}</http_port><tcp_port>{tcp}</tcp_port><listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path><tmp_path>{d}/tmp/</tmp_path><users_config>{d}/users.xml</users_config>
  <mark_cache_size>268435456</mark_cache_size>
  <default_profile>default</default_profile><default_database>default</default_database>
  <remote_servers><{cluster}>{shards}</{cluster}></remote_servers>
</yandex>""".format(d=d, http=http, tcp=tcp, cluster=CLUSTER, shards=shards))
                self.procs.append(subprocess.Popen([SERVER, "--config-file=" + os.path.join(d, "config.xml")],
                                                   cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            for i in range(count):
                self._wait_ready(i)
        except BaseException:
            self.stop()
            raise

    def url(self, i=0):
        return "http://127.0.0.1:%d" % self.ports[i][0]

    def _wait_ready(self, i, timeout=60.0):
        deadline = time.monotonic() + timeout
        while True:
            if self.procs[i].poll() is not None:
                raise AssertionError("clickhouse-server %d exited %d: %s" % (
                    i, self.procs[i].returncode, self.procs[i].stderr.read().decode(errors="replace")[-2000:]))
            try:
                with urllib.request.urlopen(self.url(i) + "/ping", timeout=2) as r:
                    if r.read().strip() == b"Ok.":
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError("clickhouse-server %d did not answer /ping within %gs" % (i, timeout))
            time.sleep(0.05)  # polling a server's start: it has no other signal

    def query(self, sql, i=0):
        req = urllib.request.Request(self.url(i) + "/", data=sql.encode(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            raise AssertionError("ClickHouse: %s: %s" % (sql, e.read().decode(errors="replace")[:500]))

    def rows(self, sql, i=0):
        """The answer's rows as tuples of text (TSV)."""
        text = self.query(sql + " FORMAT TSV", i)
        return [tuple(line.split("\t")) for line in text.splitlines()]

    def wait_mutations(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        for i in range(len(self.procs)):
            while self.query("SELECT count() FROM system.mutations WHERE is_done = 0", i).strip() != "0":
                if time.monotonic() > deadline:
                    raise AssertionError("mutations not done within %gs" % timeout)
                time.sleep(0.05)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stderr:
                p.stderr.close()
        shutil.rmtree(self.root, ignore_errors=True)
