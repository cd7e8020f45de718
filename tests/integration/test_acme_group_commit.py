# SPDX-License-Identifier: MIT
"""Group commit: an UPDATE is answered once its commit is on disk, but the
disk is not waited for on the event loop (acme/commit.h, storage/wal_sync.h).

UPDATEs sent at once over UDP and pipelined on one TCP connection are all
answered NOERROR (TCP in order), signed, visible, and survive kill -9 right
after the last reply; the same through the blocking fallback
(GEOACME_TEST_SYNC=blocking).  With the sync's completion held back
(GEOACME_TEST_SYNC=hold=MS, a slow disk seen from the loop) queries are
answered, and see the change, while its UPDATE's reply waits; pipelined
messages behind the UPDATE on its TCP connection wait for it, and the idle
timeout spares a connection that waits for its reply; NOTIFY waits for the
sync too.  On a socket bound to 0.0.0.0 a held reply leaves from the
address asked.  A failing
sync (GEOACME_TEST_SYNC=fail) answers SERVFAIL."""
import os
import select
import signal
import socket
import struct
import time
import unittest

import dns.flags
import dns.message
import dns.opcode
import dns.query
import dns.rcode
import dns.update

from acme_helpers import TsigKey, acme_files, acme_zone_toml, seed_zone, serial, txt
from harness import BASE_CONFIG, Server, main, needs_test_hooks

KEY = TsigKey("update.acme.example.", "hmac-sha256", b"group-commit-test-secret-32byte!")
ZONE = "acme.example."
CONFIG = BASE_CONFIG + acme_zone_toml("acme.example", [KEY])
FILES = acme_files(seed_zone(ZONE), [KEY])

AIO_LOG = "durable commits: the WAL's fdatasync runs off the loop (Linux AIO)"
BLOCKING_LOG = "durable commits: SQLite syncs in COMMIT, on the loop (GEOACME_TEST_SYNC=blocking)"


def update_msg(name, value):
    u = dns.update.UpdateMessage(ZONE, keyring=KEY.key())
    u.add(name, 60, "TXT", '"%s"' % value)
    return u


def parse_reply(u, wire):
    """The reply to u, its TSIG checked against u's MAC (raises if wrong)."""
    return dns.message.from_wire(wire, keyring=u.keyring, request_mac=u.mac)


def recv_exact(sock, n, deadline):
    buf = b""
    while len(buf) < n:
        sock.settimeout(max(0.05, deadline - time.time()))
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise AssertionError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def tcp_read_msg(sock, deadline):
    (n,) = struct.unpack("!H", recv_exact(sock, 2, deadline))
    return recv_exact(sock, n, deadline)


class Burst(unittest.TestCase):
    """Several UPDATEs at once, each answered after the disk has it."""

    env = None
    mode_log = AIO_LOG

    def setUp(self):
        env = dict(os.environ, **self.env) if self.env else None
        self.server = Server(CONFIG, FILES, env=env)
        self.server.start()

    def tearDown(self):
        self.server.cleanup()

    def test_burst_then_kill9(self):
        self.assertIn(self.mode_log, self.server.log_since_start())
        names = []

        # UDP: eight UPDATEs from eight sockets, all sent before any reply is read.
        udp = []
        for i in range(8):
            name = "u%d.burst.acme.example." % i
            u = update_msg(name, "udp %d" % i)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(u.to_wire(), ("127.0.0.1", self.server.port))
            udp.append((u, s, name))
        for u, s, name in udp:
            s.settimeout(10)
            r = parse_reply(u, s.recv(65535))
            s.close()
            self.assertEqual(r.id, u.id)
            self.assertEqual(r.rcode(), dns.rcode.NOERROR, name)
            self.assertTrue(r.had_tsig)
            names.append(name)

        # TCP: six UPDATEs pipelined on one connection, in one write.
        msgs = [update_msg("t%d.burst.acme.example." % i, "tcp %d" % i) for i in range(6)]
        wire = b"".join(struct.pack("!H", len(w)) + w for w in (m.to_wire() for m in msgs))
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as c:
            c.sendall(wire)
            deadline = time.time() + 20
            replies = [tcp_read_msg(c, deadline) for _ in msgs]
        # The last reply is in: no chance for a clean shutdown.
        self.assertEqual(self.server.kill9(), -signal.SIGKILL)
        for i, (u, w) in enumerate(zip(msgs, replies)):
            r = parse_reply(u, w)
            self.assertEqual(r.id, u.id, "TCP reply %d out of order" % i)
            self.assertEqual(r.rcode(), dns.rcode.NOERROR)
            names.append("t%d.burst.acme.example." % i)

        self.server.start()
        for name in names:
            value = ("udp " if name[0] == "u" else "tcp ") + name[1]
            self.assertEqual(txt(self.server, name), ['"%s"' % value], name)
        # One serial bump per UPDATE, from the seed's 1.
        self.assertEqual(serial(self.server, ZONE), 1 + len(names))


class Wildcard(unittest.TestCase):
    """On a socket bound to 0.0.0.0 a held UDP reply leaves from the address
    the UPDATE was sent to (IP_PKTINFO), like every other reply."""

    def setUp(self):
        config = ('listen_addrs_ipv4 = ["0.0.0.0"]\nlisten_port = 0\nlog_level = "debug"\n' +
                  acme_zone_toml("acme.example", [KEY]))
        self.server = Server(config, FILES)
        self.server.start()

    def tearDown(self):
        self.server.cleanup()

    def test_reply_from_the_address_asked(self):
        self.assertIn(AIO_LOG, self.server.log_since_start())
        for i in range(3):
            u = update_msg("wc%d.acme.example." % i, "wildcard")
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(u.to_wire(), ("127.0.0.2", self.server.port))
            s.settimeout(10)
            wire, peer = s.recvfrom(65535)
            s.close()
            self.assertEqual(peer, ("127.0.0.2", self.server.port))
            self.assertEqual(parse_reply(u, wire).rcode(), dns.rcode.NOERROR)


@needs_test_hooks
class BurstBlocking(Burst):
    """The fallback: SQLite syncs in COMMIT, replies go at once."""

    env = {"GEOACME_TEST_SYNC": "blocking"}
    mode_log = BLOCKING_LOG


@needs_test_hooks
class Window(unittest.TestCase):
    """The sync's completion is held back 2.5 s: the window made visible."""

    HOLD_MS = 2500

    def setUp(self):
        self.server = Server(CONFIG, FILES,
                             env=dict(os.environ, GEOACME_TEST_SYNC="hold=%d" % self.HOLD_MS))
        self.server.start()

    def tearDown(self):
        self.server.cleanup()

    def test_queries_answered_while_the_reply_waits(self):
        self.assertIn(AIO_LOG, self.server.log_since_start())
        u = update_msg("w.acme.example.", "waiting")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sent = time.time()
        s.sendto(u.to_wire(), ("127.0.0.1", self.server.port))
        # The change is served at once, and queries are answered meanwhile,
        # over UDP and TCP ...
        deadline = time.time() + 3
        while txt(self.server, "w.acme.example.") != ['"waiting"'] and time.time() < deadline:
            time.sleep(0.02)
        self.assertEqual(txt(self.server, "w.acme.example."), ['"waiting"'])
        r = self.server.query(ZONE, "SOA", tcp=True)
        self.assertEqual(r.answer[0][0].serial, 2)
        # ... while the UPDATE's reply waits for the disk.
        if time.time() - sent < self.HOLD_MS / 1000 - 0.5:
            self.assertEqual(select.select([s], [], [], 0)[0], [], "replied before the sync")
        s.settimeout(self.HOLD_MS / 1000 + 10)
        r = parse_reply(u, s.recv(65535))
        s.close()
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertGreaterEqual(time.time() - sent, self.HOLD_MS / 1000 - 0.1)

    def test_tcp_pipeline_waits_behind_the_update(self):
        """A query pipelined behind an UPDATE on its connection is answered
        after the UPDATE's reply; another connection is served meanwhile."""
        u = update_msg("p.acme.example.", "pipelined")
        q = dns.message.make_query("p.acme.example.", "TXT")
        q.flags &= ~dns.flags.RD
        wire = b"".join(struct.pack("!H", len(w)) + w for w in (u.to_wire(), q.to_wire()))
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as c:
            sent = time.time()
            c.sendall(wire)
            other = self.server.query("p.acme.example.", "TXT", tcp=True)
            self.assertEqual([rd.to_text() for rd in other.answer[0]], ['"pipelined"'])
            deadline = time.time() + self.HOLD_MS / 1000 + 15
            first = dns.message.from_wire(tcp_read_msg(c, deadline), keyring=u.keyring,
                                          request_mac=u.mac)
            second = dns.message.from_wire(tcp_read_msg(c, deadline))
        self.assertGreaterEqual(time.time() - sent, self.HOLD_MS / 1000 - 0.1)
        self.assertEqual((first.id, first.rcode()), (u.id, dns.rcode.NOERROR))
        self.assertEqual((second.id, second.rcode()), (q.id, dns.rcode.NOERROR))
        self.assertEqual([rd.to_text() for rd in second.answer[0]], ['"pipelined"'])

    def test_tcp_client_gone_meanwhile(self):
        """A connection that closes (FIN, then RST) while its reply waits:
        the reply goes nowhere, the server goes on."""
        for i, linger in enumerate((False, True)):
            u = update_msg("g%d.acme.example." % i, "gone")
            c = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
            if linger:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            w = u.to_wire()
            c.sendall(struct.pack("!H", len(w)) + w)
            # Served at once, answered only after the held sync: close meanwhile.
            deadline = time.time() + 15
            while txt(self.server, "g%d.acme.example." % i) != ['"gone"']:
                self.assertLess(time.time(), deadline, "g%d never served" % i)
                time.sleep(0.02)
            c.close()
        time.sleep(self.HOLD_MS / 1000 + 0.5)
        self.assertTrue(self.server.alive())
        self.assertEqual(serial(self.server, ZONE), 3)
        u = update_msg("after.acme.example.", "after")
        r = dns.query.tcp(u, "127.0.0.1", port=self.server.port, timeout=self.HOLD_MS / 1000 + 10)
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)

    def test_sigterm_sends_what_waits(self):
        """A clean stop syncs on the spot and answers before it exits."""
        u = update_msg("s.acme.example.", "stopping")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(u.to_wire(), ("127.0.0.1", self.server.port))
        deadline = time.time() + 3
        while txt(self.server, "s.acme.example.") != ['"stopping"'] and time.time() < deadline:
            time.sleep(0.02)
        self.assertEqual(self.server.stop(), 0)
        s.settimeout(5)
        r = parse_reply(u, s.recv(65535))
        s.close()
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.server.start()
        self.assertEqual(txt(self.server, "s.acme.example."), ['"stopping"'])


@needs_test_hooks
class WindowNotify(unittest.TestCase):
    """NOTIFY waits for the disk: a secondary hears of the new serial only
    after the UPDATE's sync (held back 3 s) has completed."""

    def setUp(self):
        self.sec = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sec.bind(("127.0.0.1", 0))
        zone = acme_zone_toml("acme.example", [KEY]).replace(
            'zone_type = "Primary"\n',
            'zone_type = "Primary"\nnotify = ["127.0.0.1:%d"]\n' % self.sec.getsockname()[1], 1)
        self.server = Server(BASE_CONFIG + zone, FILES,
                             env=dict(os.environ, GEOACME_TEST_SYNC="hold=3000"))
        self.server.start()

    def tearDown(self):
        self.server.cleanup()
        self.sec.close()

    def notified_serial(self, deadline):
        """The serial of the next NOTIFY (answered, so it is not sent again)."""
        self.sec.settimeout(max(0.05, deadline - time.time()))
        wire, peer = self.sec.recvfrom(65535)
        m = dns.message.from_wire(wire)
        self.assertEqual(m.opcode(), dns.opcode.NOTIFY)
        r = dns.message.make_response(m)
        self.sec.sendto(r.to_wire(), peer)
        return m.answer[0][0].serial

    def test_notify_after_the_sync(self):
        self.assertEqual(self.notified_serial(time.time() + 10), 1, "the start's NOTIFY")
        u = update_msg("n.acme.example.", "notified")
        c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sent = time.time()
        c.sendto(u.to_wire(), ("127.0.0.1", self.server.port))
        self.assertEqual(serial(self.server, ZONE), 2, "served at once")
        self.assertEqual(self.notified_serial(time.time() + 20), 2)
        self.assertGreaterEqual(time.time() - sent, 2.9, "NOTIFY before the sync")
        c.settimeout(10)
        self.assertEqual(parse_reply(u, c.recv(65535)).rcode(), dns.rcode.NOERROR)
        c.close()


@needs_test_hooks
class WindowIdle(unittest.TestCase):
    """A TCP connection waiting for its UPDATE's reply is not idle: with a
    1 s idle timeout and the sync held back 3 s, the reply still comes."""

    def setUp(self):
        config = BASE_CONFIG + "tcp_request_timeout = 1\n" + acme_zone_toml("acme.example", [KEY])
        self.server = Server(config, FILES, env=dict(os.environ, GEOACME_TEST_SYNC="hold=3000"))
        self.server.start()

    def tearDown(self):
        self.server.cleanup()

    def test_waiting_connection_outlives_the_idle_timeout(self):
        u = update_msg("i.acme.example.", "idle")
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as c:
            sent = time.time()
            w = u.to_wire()
            c.sendall(struct.pack("!H", len(w)) + w)
            r = parse_reply(u, tcp_read_msg(c, time.time() + 20))
            self.assertGreaterEqual(time.time() - sent, 2.9)
            self.assertEqual(r.rcode(), dns.rcode.NOERROR)
            # Idle again once answered: the timeout applies as before.
            c.settimeout(10)
            self.assertEqual(c.recv(1), b"")


@needs_test_hooks
class Failing(unittest.TestCase):
    """Every sync fails (GEOACME_TEST_SYNC=fail): the UPDATE is answered
    SERVFAIL, signed, and the error is logged; the server goes on."""

    def setUp(self):
        self.server = Server(CONFIG, FILES, env=dict(os.environ, GEOACME_TEST_SYNC="fail"))
        self.server.start()

    def tearDown(self):
        self.server.cleanup()

    def test_servfail(self):
        for tcp in (False, True):
            u = update_msg("f.acme.example.", "tcp" if tcp else "udp")
            fn = dns.query.tcp if tcp else dns.query.udp
            r = fn(u, "127.0.0.1", port=self.server.port, timeout=10)
            self.assertEqual(r.rcode(), dns.rcode.SERVFAIL)
            self.assertTrue(r.had_tsig)
        self.server.wait_log(r"acme.example.: fdatasync of .*acme.sqlite-wal failed "
                             r"\(Input/output error\): the last changes may not be on disk")
        self.assertEqual(self.server.query(ZONE, "SOA").rcode(), dns.rcode.NOERROR)


if __name__ == "__main__":
    main()
