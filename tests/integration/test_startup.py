# SPDX-License-Identifier: MIT
"""Start-up outcomes from issue #14: every configured listen address is bound
(there was a silent cap at 64), and a daemon that cannot take its signals
(SIGTERM, SIGINT, SIGHUP through a signalfd) refuses to start instead of
running deaf to them.  And from issue #15: the log says which path serves
UDP (epoll, the only one since issue #23 removed io_uring), and a bad
`udp_io` is refused with its position; an old config's `udp_io = "io_uring"`
is refused with why."""
import os
import re
import resource
import signal
import subprocess
import tempfile
import shutil
import time
import unittest

import dns.message
import dns.query
import dns.rcode

import harness
from harness import BIN, Server, main, rrs

ZONE = """$ORIGIN example.com.
$TTL 300
@       IN SOA ns1.example.com. hostmaster.example.com. 1 3600 600 86400 60
@       IN NS  ns1.example.com.
ns1     IN A   192.0.2.53
"""

N_ADDRS = 70


class ManyListenAddresses(unittest.TestCase):
    def test_more_than_64_addresses_are_all_bound(self):
        addrs = ["127.0.0.%d" % i for i in range(1, N_ADDRS + 1)]
        config = ('listen_addrs_ipv4 = [%s]\nlisten_port = 0\nlog_level = "info"\n'
                  '[[zones]]\nzone = "example.com"\nfile = "example.com.zone"\n'
                  % ", ".join('"%s"' % a for a in addrs))
        server = Server(config, {"example.com.zone": ZONE}).start()
        try:
            log = server.log_since_start()
            for a in addrs:
                self.assertIn("listening on %s:%d (udp, tcp)" % (a, server.port), log)
            for a in ("127.0.0.1", "127.0.0.64", "127.0.0.65", "127.0.0.%d" % N_ADDRS):
                for tcp in (False, True):
                    with self.subTest(addr=a, tcp=tcp):
                        r = server.query("ns1.example.com", "A", addr=a, tcp=tcp)
                        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                        self.assertEqual(rrs(r, "answer"), ["ns1.example.com. 300 IN A 192.0.2.53"])
        finally:
            server.cleanup()


UDP_CONFIG = """listen_addrs_ipv4 = ["127.0.0.1"]
listen_addrs_ipv6 = ["::1"]
listen_port = 0
log_level = "info"
%s
[[zones]]
zone = "example.com"
file = "example.com.zone"
"""


RING = '[server]\nudp_io = "io_uring"'


class UdpPath(unittest.TestCase):
    def serve_and_ask(self, server_table):
        server = Server(UDP_CONFIG % server_table, {"example.com.zone": ZONE}).start()
        try:
            for addr in ("127.0.0.1", "::1"):
                with self.subTest(addr=addr):
                    r = server.query("ns1.example.com", "A", addr=addr)
                    self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                    self.assertEqual(rrs(r, "answer"), ["ns1.example.com. 300 IN A 192.0.2.53"])
            return server.log_since_start()
        finally:
            server.cleanup()

    def test_default_is_epoll(self):
        log = self.serve_and_ask("")
        self.assertIn("udp: served by epoll (recvmmsg/sendmmsg)\n", log)
        self.assertNotIn("io_uring", log)
        self.assertEqual(len(re.findall(r"udp: served by", log)), 1, log)

    def test_epoll_explicit(self):
        """An old config that names the default still loads."""
        log = self.serve_and_ask('[server]\nudp_io = "epoll"')
        self.assertIn("udp: served by epoll (recvmmsg/sendmmsg)\n", log)
        self.assertNotIn("io_uring", log)

    def test_io_uring_refused_as_removed(self):
        """io_uring was removed (issue #23): an old config asking for it is
        refused at its position with why, not silently served by epoll."""
        server = Server(UDP_CONFIG % RING, {"example.com.zone": ZONE})
        try:
            with self.assertRaises(AssertionError):
                server.start()
            self.assertNotEqual(server.exit_code, 0)
            self.assertIn("%s:6:10: expected 'udp_io' to be \"epoll\" (io_uring was removed; "
                          "delete the key), found 'io_uring'" % server.config_path,
                          server.log())
        finally:
            server.cleanup()

    def test_same_port_again_at_once(self):
        """A server started again at once on the same port (a restart, also
        after kill -9) binds it: a fixed port still in use is tried again
        for a while."""
        port = harness.free_port()
        for i in range(4):
            server = Server(UDP_CONFIG % "", {"example.com.zone": ZONE}, args=["-p", str(port)])
            try:
                server.start()
                self.assertEqual(server.port, port)
                r = server.query("ns1.example.com", "A")
                self.assertEqual(rrs(r, "answer"), ["ns1.example.com. 300 IN A 192.0.2.53"])
                if i % 2:
                    self.assertEqual(server.kill9(), -signal.SIGKILL)
            finally:
                server.cleanup()

    def test_bad_value_refused_with_its_position(self):
        server = Server(UDP_CONFIG % '[server]\nudp_io = "uring"', {"example.com.zone": ZONE})
        try:
            with self.assertRaises(AssertionError):
                server.start()
            self.assertNotEqual(server.exit_code, 0)
            self.assertIn("%s:6:10: expected 'udp_io' to be \"epoll\", found 'uring'"
                          % server.config_path, server.log())
        finally:
            server.cleanup()


ACME = """listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = 0
log_level = "info"
[[zones]]
zone = "example.com"
[zones.stores]
type = "sqlite"
journal_path = "acme.sqlite"
zone_path = "example.com.zone"
"""


class SignalSetup(unittest.TestCase):
    """With too few descriptors for the signalfd, the daemon used to start,
    block SIGTERM/SIGHUP and never read them (only kill -9 stopped it)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="geoacme-test-")
        for name, text in (("config.toml", ACME), ("example.com.zone", ZONE)):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        # Seed the database once, so later starts hold its descriptors.
        self.run_with_limit(None)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_with_limit(self, limit):
        """Starts the server under RLIMIT_NOFILE = limit; returns (outcome, log)."""
        log_path = os.path.join(self.dir, "log.%s" % limit)

        def pre():
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        with open(log_path, "wb") as log:
            proc = subprocess.Popen([BIN, "serve", "-c", "config.toml"], cwd=self.dir,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    preexec_fn=pre)
        read = lambda: open(log_path, errors="replace").read()
        try:
            deadline = time.time() + 15
            while time.time() < deadline and proc.poll() is None and "ready:" not in read():
                time.sleep(0.02)
            if proc.poll() is not None:
                return ("exit", proc.returncode), read()
            self.assertIn("ready:", read())
            proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 10
            while time.time() < deadline and "reloading" not in read():
                time.sleep(0.02)
            self.assertIn("reloading config.toml", read(), "SIGHUP not handled at limit %s" % limit)
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(10)
            except subprocess.TimeoutExpired:
                self.fail("SIGTERM not handled at limit %s:\n%s" % (limit, read()))
            return ("served", rc), read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def test_signals_handled_or_start_refused(self):
        refused_for_signals = False
        for limit in range(6, 16):
            with self.subTest(limit=limit):
                (what, rc), log = self.run_with_limit(limit)
                if what == "served":
                    self.assertEqual(rc, 0, log)
                    continue
                # Refused: a non-zero exit, an error line, never "ready".
                self.assertNotEqual(rc, 0, log)
                self.assertNotIn("ready:", log)
                self.assertRegex(log, r"(error: |config\.toml:)")
                if re.search(r"error: cannot handle SIG(TERM|INT|HUP): Too many open files", log):
                    refused_for_signals = True
                    self.assertEqual(rc, 1)
        # One limit leaves room for the database but not the signalfd.
        self.assertTrue(refused_for_signals, "no limit reached the signal set-up")


if __name__ == "__main__":
    main()
