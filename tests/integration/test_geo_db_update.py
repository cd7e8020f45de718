# SPDX-License-Identifier: MIT
"""Updating a location database while the server answers under load.

Operators refresh .mmdb files the way their download scripts do: copy over
the file in place, truncate and write it, or write a temporary file and
rename it over.  libmaxminddb maps the file, so before geoacme kept a
private copy the first two killed the server with SIGBUS.  Each case here
runs dnsperf (Debian's dnsperf) against the server while the file changes,
then asserts: the server is still running, dnsperf lost no query, and the
new version is served (the fixture generator's --moved variant puts the
Amsterdam network in Sydney).  A broken file keeps the old version serving.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import BASE_CONFIG, FIXTURES, Server, main
from test_geo import (EXPECTED, GeoTestCase, ZONE, geo_config, stop_and_cleanup)

AMSTERDAM = ("192.0.2.0", 26)
# 192.0.2.0/26 in ECS, as dnsperf's -E takes it: code 8, family 1, source
# prefix 26, scope 0, the four address bytes (RFC 7871 section 6).
ECS_HEX = "8:0001" + "1a" + "00" + "c0000200"


def write_fixture(directory, moved):
    args = ["perl", os.path.join(FIXTURES, "make_mmdb.pl"), "--layout", "city", "--out",
            directory]
    if moved:
        args.append("--moved")
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return os.path.join(directory, "city.mmdb")


class DatabaseUpdate(GeoTestCase):

    @classmethod
    def setUpClass(cls):
        cls.versions = tempfile.mkdtemp(prefix="geoacme-mmdb-")
        os.makedirs(os.path.join(cls.versions, "a"))
        os.makedirs(os.path.join(cls.versions, "b"))
        cls.old = write_fixture(os.path.join(cls.versions, "a"), moved=False)
        cls.new = write_fixture(os.path.join(cls.versions, "b"), moved=True)
        with open(cls.old, "rb") as f:
            cls.old_bytes = f.read()
        with open(cls.new, "rb") as f:
            cls.new_bytes = f.read()
        assert cls.old_bytes != cls.new_bytes

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.versions, ignore_errors=True)

    def setUp(self):
        self.server = Server(BASE_CONFIG + geo_config(["city.mmdb"]), {"example.com.zone": ZONE})
        shutil.copyfile(self.old, self.server.path("city.mmdb"))
        self.server.start()
        self.db = self.server.path("city.mmdb")
        self.assertRegex(self.server.log_since_start(),
                         r"info: geo: loaded \S*city\.mmdb: type \"GeoAcme-Test-City\", built "
                         r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, IPv6, \d+ nodes, %d bytes "
                         r"\(private copy\)" % len(self.old_bytes))
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, EXPECTED["A"]["amsterdam"])

    def tearDown(self):
        stop_and_cleanup(self.server)

    def start_load(self, seconds):
        qfile = self.server.path("queries.txt")
        with open(qfile, "w") as f:
            f.write("www.example.com A\nwww.example.com AAAA\n")
        # A moderate rate: the machine is shared; what matters is that
        # queries are in flight while the file changes.
        return subprocess.Popen(
            ["dnsperf", "-s", "127.0.0.1", "-p", str(self.server.port), "-d", qfile,
             "-l", str(seconds), "-Q", "2000", "-t", "3", "-E", ECS_HEX],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def finish_load(self, proc):
        out, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, out)
        sent = int(re.search(r"Queries sent:\s+(\d+)", out).group(1))
        completed = int(re.search(r"Queries completed:\s+(\d+)", out).group(1))
        lost = int(re.search(r"Queries lost:\s+(\d+)", out).group(1))
        self.assertGreater(sent, 1000, out)
        self.assertEqual(lost, 0, out)
        self.assertEqual(completed, sent, out)
        self.assertRegex(out, r"NOERROR \d+ \(100\.00%\)", out)

    def wait_new_version(self):
        self.server.wait_log(r"info: geo: reloaded \S*city\.mmdb: type \"GeoAcme-Test-City\", "
                             r"built .* %d bytes \(private copy\)" % len(self.new_bytes))
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, EXPECTED["A"]["at_sydney"])
        got, _ = self.geo("www.example.com", "AAAA", ecs=("2001:db8:1::", 48))
        self.assertEqual(got, EXPECTED["AAAA"]["at_sydney"])

    def test_cp_over_in_place(self):
        load = self.start_load(4)
        time.sleep(1)
        shutil.copyfile(self.new, self.db)     # open(O_TRUNC) + write, as cp does
        self.finish_load(load)
        self.assertTrue(self.server.alive())
        self.wait_new_version()

    def test_truncate_then_slow_write(self):
        load = self.start_load(5)
        time.sleep(1)
        with open(self.db, "r+b") as f:
            f.truncate(0)
            f.flush()
            # Queries keep coming while the file is empty, then half there.
            time.sleep(0.4)
            half = len(self.new_bytes) // 2
            f.write(self.new_bytes[:half])
            f.flush()
            time.sleep(0.4)
            f.write(self.new_bytes[half:])
        self.finish_load(load)
        self.assertTrue(self.server.alive())
        self.wait_new_version()

    def test_rename_over(self):
        load = self.start_load(4)
        time.sleep(1)
        tmp = self.db + ".tmp"
        shutil.copyfile(self.new, tmp)
        os.rename(tmp, self.db)
        self.finish_load(load)
        self.assertTrue(self.server.alive())
        self.wait_new_version()

    def test_broken_file_keeps_the_old_version(self):
        # A truncated download: the search tree is there, the metadata is not.
        with open(self.db + ".tmp", "wb") as f:
            f.write(self.new_bytes[: len(self.new_bytes) // 2])
        os.rename(self.db + ".tmp", self.db)
        self.server.wait_log(r"error: geo: \S*city\.mmdb changed but cannot be used: \S*city\.mmdb: "
                             r".*; still serving the version loaded before")
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, EXPECTED["A"]["amsterdam"])
        # Logged once, not on every check.
        time.sleep(2.5)
        self.assertEqual(len(re.findall(r"changed but cannot be used",
                                        self.server.log_since_start())), 1)
        # The fixed file is picked up.
        with open(self.db + ".tmp", "wb") as f:
            f.write(self.new_bytes)
        os.rename(self.db + ".tmp", self.db)
        self.wait_new_version()

    def test_sighup_loads_the_new_version(self):
        with open(self.db + ".tmp", "wb") as f:
            f.write(self.new_bytes)
        os.rename(self.db + ".tmp", self.db)
        # Whichever comes first, the watch or the reload, the new data serves.
        self.server.send_signal(__import__("signal").SIGHUP)
        self.server.wait_log(r"reloaded: 1 zone\b")
        self.server.wait_log(r"info: geo: (re)?loaded \S*city\.mmdb: .* %d bytes"
                             % len(self.new_bytes))
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, EXPECTED["A"]["at_sydney"])


MARKER = b"\xab\xcd\xefMaxMind.com"


def padded(data, size):
    """The same database grown to `size` bytes: zeros before the metadata
    marker only lengthen the data section, where nothing points, so every
    lookup answers as before (libmaxminddb finds the metadata by its marker
    in the last 128 KiB)."""
    at = data.rindex(MARKER)
    return data[:at] + b"\0" * (size - len(data)) + data[at:]


class DatabaseCap(GeoTestCase):
    """Issue #26.3: a new version is copied a slice per loop turn, and one over
    [geo] max_database_mib (8 here) is not copied at all."""

    @classmethod
    def setUpClass(cls):
        DatabaseUpdate.setUpClass.__func__(cls)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.versions, ignore_errors=True)

    def setUp(self):
        config = geo_config(["city.mmdb"]).replace("[geo]\n", "[geo]\nmax_database_mib = 8\n", 1)
        self.server = Server(BASE_CONFIG + config, {"example.com.zone": ZONE})
        shutil.copyfile(self.old, self.server.path("city.mmdb"))
        self.server.start()
        self.db = self.server.path("city.mmdb")
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, EXPECTED["A"]["amsterdam"])

    def tearDown(self):
        stop_and_cleanup(self.server)

    def replace(self, data):
        with open(self.db + ".tmp", "wb") as f:
            f.write(data)
        os.rename(self.db + ".tmp", self.db)

    def test_oversized_is_refused_and_the_old_one_serves(self):
        big = padded(self.new_bytes, 9 << 20)
        self.replace(big)
        self.server.wait_log(r"error: geo: \S*city\.mmdb changed but cannot be used: \S*city\.mmdb "
                             r"is %d bytes, over the 8 MiB of \[geo\] max_database_mib; refused, "
                             r"still serving the version loaded before" % len(big))
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, EXPECTED["A"]["amsterdam"])
        got, _ = self.geo("www.example.com", "AAAA", ecs=("2001:db8:1::", 48))
        self.assertEqual(got, EXPECTED["AAAA"]["amsterdam"])
        time.sleep(2.5)
        self.assertEqual(len(re.findall(r"max_database_mib", self.server.log_since_start())), 1)
        self.assertNotIn("reloaded", self.server.log_since_start())
        # Back under the cap: picked up.
        self.replace(self.new_bytes)
        DatabaseUpdate.wait_new_version(self)

    def test_a_large_version_is_copied_in_slices(self):
        # 7 MiB: seven slices of 1 MiB, each in its own loop turn.
        big = padded(self.new_bytes, 7 << 20)
        self.replace(big)
        self.server.wait_log(r"info: geo: reloaded \S*city\.mmdb: type \"GeoAcme-Test-City\", "
                             r"built .* %d bytes \(private copy\)" % len(big))
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, EXPECTED["A"]["at_sydney"])
        got, _ = self.geo("www.example.com", "AAAA", ecs=("2001:db8:1::", 48))
        self.assertEqual(got, EXPECTED["AAAA"]["at_sydney"])


class MissingDatabase(unittest.TestCase):
    """A database that is not there names the config line that asks for it."""

    def test_check_and_serve_name_the_line(self):
        config = BASE_CONFIG + geo_config(["city.mmdb", "missing.mmdb"])
        srv = Server(config, {"example.com.zone": ZONE})
        try:
            write_fixture(srv.dir, moved=False)
            # The databases line of geo_config: "databases = [...]" after [geo].
            lines = config.splitlines()
            line = lines.index('databases = ["city.mmdb", "missing.mmdb"]') + 1
            col = len('databases = ["city.mmdb", ') + 1
            want = (r"config\.toml:%d:%d: \[geo\] databases: \S*missing\.mmdb: No such file or "
                    r"directory" % (line, col))
            out = srv.tool(os.environ.get("GEOACME_BIN"), "check", "-c", srv.config_path)
            self.assertEqual(out.returncode, 3, out.stderr)
            self.assertRegex(out.stderr, want)
            with self.assertRaises(AssertionError):
                srv.start()
            self.assertEqual(srv.exit_code, 3)
            self.assertRegex(srv.log(), want)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
