# SPDX-License-Identifier: MIT
"""Limits against the real binary: TCP connection cap and idle timeout
(slow-loris), UDP response sizes, response rate limiting, DNS cookies, and
the privilege drop.  Every load here goes to 127.0.0.1/::1 only, bounded in
count and time."""
import os
import pwd
import re
import select
import socket
import struct
import time
import unittest

import dns.edns
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype

from harness import BASE_CONFIG, Server, ServerTestCase, example_zone, main, make_key, rrs

ZONE = example_zone("""www     600 IN A 192.0.2.80
""") + "".join('big IN TXT "%s"\n' % (("%d" % i) * 200) for i in range(6)) \
    + "".join('mid IN TXT "%s"\n' % (("%d" % i) * 200) for i in range(3))

ZONE_CONFIG = """
[[zones]]
zone = "example.com"
file = "example.com.zone"
"""

FILES = {"example.com.zone": ZONE}
WWW = ["www.example.com. 600 IN A 192.0.2.80"]
COOKIE = 10


def tc(msg):
    return bool(msg.flags & dns.flags.TC)


def cookie_bytes(opt):
    # dnspython >= 2.6 has a CookieOption with client/server; older ones a GenericOption.
    if hasattr(opt, "client"):
        return opt.client + opt.server
    return opt.data


def find_cookie(msg):
    for opt in msg.options:
        if opt.otype == COOKIE:
            return cookie_bytes(opt)
    return None


def with_cookie(server, name, data, rdtype="A"):
    q = server.make_query(name, rdtype)
    q.use_edns(0, 0, 1232, options=[dns.edns.GenericOption(COOKIE, data)])
    return q


class TcpConnectionCap(ServerTestCase):
    """400 idle or stalled connections against a cap of 20: UDP and new TCP
    clients are still answered, because connections that never completed a
    query are closed first to make room (and one /24 keeps at most 16;
    test_abuse_tcp.py shows the honest clients this spares)."""
    CONFIG = """
tcp_request_timeout = 60
[server]
tcp_max_connections = 20
""" + ZONE_CONFIG
    FILES = FILES

    def test_slow_loris_does_not_lock_out_clients(self):
        conns = []
        try:
            for i in range(400):
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
                if i % 3 == 1:
                    s.sendall(b"\x00")                    # half a length prefix
                elif i % 3 == 2:
                    s.sendall(b"\x00\x40\x12\x34\x00")    # a prefix and 3 of 64 bytes
                conns.append(s)
                if i % 100 == 99:
                    # Real clients keep getting answers while the pile grows.
                    self.assertEqual(rrs(self.server.query("www.example.com"), "answer"), WWW)
                    r = self.server.query("www.example.com", tcp=True, timeout=5)
                    self.assertEqual(rrs(r, "answer"), WWW)
            for _ in range(5):
                self.assertEqual(rrs(self.server.query("www.example.com"), "answer"), WWW)
                r = self.server.query("www.example.com", tcp=True, timeout=5)
                self.assertEqual(rrs(r, "answer"), WWW)
            # All but the newest 20 or so were closed by the server.
            deadline = time.time() + 5
            closed = set()
            while time.time() < deadline and len(closed) < 380:
                for k, s in enumerate(conns):
                    if k in closed:
                        continue
                    r, _, _ = select.select([s], [], [], 0)
                    if r:
                        try:
                            data = s.recv(100)
                        except (ConnectionResetError, OSError):
                            data = b""
                        if data == b"":
                            closed.add(k)
                time.sleep(0.1)
            self.assertGreaterEqual(len(closed), 380, "server kept more than its cap open")
            # The oldest are the ones that went.
            self.assertTrue(all(k in closed for k in range(300)))
        finally:
            for s in conns:
                s.close()
        self.assertTrue(self.server.alive())


class TcpClientThatNeverReads(ServerTestCase):
    """A client pipelining thousands of queries for a big answer and never
    reading stalls only itself."""
    CONFIG = ZONE_CONFIG
    FILES = FILES

    def test_others_still_served(self):
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        wire = self.server.make_query("big.example.com", "TXT").to_wire()
        msg = struct.pack("!H", len(wire)) + wire
        s.setblocking(False)
        sent = 0
        deadline = time.time() + 5
        try:
            # ~1.3 KB of answer per 40-byte query: the server's output fills long before this.
            while sent < 3000 and time.time() < deadline:
                try:
                    s.send(msg)
                    sent += 1
                except BlockingIOError:
                    time.sleep(0.01)
            # Answered at all (no duration is asserted: a loaded machine
            # stretches them); a server blocked by the stalled client would
            # answer neither.
            for _ in range(5):
                self.assertEqual(rrs(self.server.query("www.example.com", timeout=10), "answer"), WWW)
                r = self.server.query("www.example.com", tcp=True, timeout=10)
                self.assertEqual(rrs(r, "answer"), WWW)
        finally:
            s.close()
        self.assertTrue(self.server.alive())


class TcpIdleTimeout(ServerTestCase):
    """tcp_request_timeout (Hickory's key, seconds) closes idle connections.

    No duration is asserted (a loaded machine stretches them): idle and
    stalled connections get closed, a busy one with gaps well under the
    timeout is kept past it, a trickling one is closed before it completes
    a query.  That timers never fire early is tests/unit/test_loop.c's."""
    CONFIG = "tcp_request_timeout = 2\n" + ZONE_CONFIG
    FILES = FILES

    def closed(self, s, limit=30):
        """True when the server closes s (EOF or reset) within a generous limit."""
        s.settimeout(limit)
        try:
            while True:
                if not s.recv(65535):
                    return True
        except socket.timeout:
            return False
        except (ConnectionResetError, OSError):
            return True

    def test_idle_connection_closed(self):
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        try:
            self.assertTrue(self.closed(s), "idle connection still open after 30 s")
        finally:
            s.close()

    def test_partial_message_closed(self):
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        try:
            s.sendall(b"\x00\x20\x12")
            self.assertTrue(self.closed(s), "stalled connection still open after 30 s")
        finally:
            s.close()

    def test_busy_connection_kept(self):
        """Eleven queries 0.4 s apart (4 s, twice the timeout): only a stall
        of 1.6 s between two of them could close the connection."""
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        try:
            wire = self.server.make_query("www.example.com").to_wire()
            for i in range(11):
                if i:
                    time.sleep(0.4)
                s.sendall(struct.pack("!H", len(wire)) + wire)
                n = struct.unpack("!H", s.recv(2))[0]
                r = dns.message.from_wire(s.recv(n))
                self.assertEqual(rrs(r, "answer"), WWW)
        finally:
            s.close()

    def test_trickled_query_closed(self):
        """A client that sends one byte now and then never completes a query:
        doc/config.md says the timeout counts from the last complete query."""
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        wire = self.server.make_query("www.example.com").to_wire()
        data = struct.pack("!H", len(wire)) + wire
        closed = False
        try:
            # One byte every 0.4 s, never the last one: the query is never
            # complete, so the connection must be closed before the loop ends
            # (about 13 s, six times the timeout).
            for b in data[:-1]:
                try:
                    s.sendall(bytes([b]))
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                r, _, _ = select.select([s], [], [], 0.4)
                if r:
                    try:
                        if s.recv(100) == b"":
                            closed = True
                            break
                    except (ConnectionResetError, OSError):
                        closed = True
                        break
        finally:
            s.close()
        self.assertTrue(closed, "a trickling client kept its connection with tcp_request_timeout = 2")


class UdpSize(ServerTestCase):
    """UDP answers never exceed what the client offered (512 without EDNS,
    less than 512 counts as 512) nor udp_max_size (default 1232)."""
    CONFIG = ZONE_CONFIG
    FILES = FILES

    def check(self, name, rdtype, payload, edns=True, dnssec=False):
        q = self.server.make_query(name, rdtype, payload=payload, edns=edns, dnssec=dnssec)
        raw = self.server.raw_udp(q.to_wire(), timeout=2)
        self.assertIsNotNone(raw)
        limit = min(max(payload if edns else 512, 512), 1232)
        self.assertLessEqual(len(raw), limit, "%s %s offered %s" % (name, rdtype, payload))
        return dns.message.from_wire(raw, ignore_trailing=False)

    def test_sizes(self):
        full = self.server.query("big.example.com", "TXT", tcp=True)
        full_len = len(full.to_wire())
        self.assertGreater(full_len, 1232)
        for payload in (0, 100, 511, 512, 513, 1000, 1232, 1400, 4096, 65535):
            for name, count in (("big.example.com", 6), ("mid.example.com", 3)):
                r = self.check(name, "TXT", payload)
                q_len = len(self.server.query(name, "TXT", tcp=True).to_wire())
                fits = q_len <= min(max(payload, 512), 1232)
                self.assertEqual(tc(r), not fits, "%s offered %d" % (name, payload))
                if fits:
                    self.assertEqual(len(r.answer[0]), count)
        r = self.check("big.example.com", "TXT", 512, edns=False)
        self.assertTrue(tc(r))
        r = self.check("mid.example.com", "TXT", 512, edns=False)
        self.assertTrue(tc(r))
        r = self.check("www.example.com", "A", 512, edns=False)
        self.assertFalse(tc(r))

    def test_tcp_gets_everything(self):
        r = self.server.query("big.example.com", "TXT", tcp=True, payload=512)
        self.assertFalse(tc(r))
        self.assertEqual(len(r.answer[0]), 6)


class UdpSizeRaised(ServerTestCase):
    """With udp_max_size = 4096 the server uses what the client offers, up to that."""
    CONFIG = "[server]\nudp_max_size = 4096\n" + ZONE_CONFIG
    FILES = FILES

    def test_offered_size_used_up_to_the_cap(self):
        for payload, want_tc in ((512, True), (1232, True), (4096, False), (65535, False)):
            q = self.server.make_query("big.example.com", "TXT", payload=payload)
            raw = self.server.raw_udp(q.to_wire(), timeout=2)
            self.assertLessEqual(len(raw), min(payload, 4096))
            self.assertEqual(tc(dns.message.from_wire(raw)), want_tc, payload)


class RateLimiting(unittest.TestCase):
    CONFIG = BASE_CONFIG + "[server]\nrrl_rate = 5\nrrl_slip = 2\n" + ZONE_CONFIG

    def setUp(self):
        self.server = Server(self.CONFIG, FILES).start()

    def tearDown(self):
        rc = self.server.stop()
        log = self.server.log()
        self.server.cleanup()
        self.assertEqual(rc, 0, log[-3000:])

    def burst(self, n, cookie=None):
        """Sends n queries at once from one socket; returns the replies by ID."""
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind(("127.0.0.1", 0))
        replies = {}
        try:
            for i in range(n):
                q = self.server.make_query("www.example.com")
                if cookie is not None:
                    q.use_edns(0, 0, 1232, options=[dns.edns.GenericOption(COOKIE, cookie)])
                q.id = i
                s.sendto(q.to_wire(), ("127.0.0.1", self.server.port))
            s.settimeout(1.0)
            while True:
                try:
                    data = s.recv(65535)
                except socket.timeout:
                    break
                m = dns.message.from_wire(data)
                replies[m.id] = m
        finally:
            s.close()
        return replies

    def test_burst_is_limited_with_slip(self):
        start = time.time()
        replies = self.burst(100)
        seconds = int(time.time() - start) + 2
        answered = [m for m in replies.values() if not tc(m) and rrs(m, "answer") == WWW]
        slipped = [m for m in replies.values() if tc(m)]
        self.assertGreaterEqual(len(answered), 5)
        self.assertLessEqual(len(answered), 5 * seconds)
        for m in slipped:
            self.assertEqual(m.answer, [])
            self.assertEqual(m.rcode(), dns.rcode.NOERROR)
        limited = 100 - len(answered)
        self.assertLessEqual(abs(len(slipped) - limited / 2), 2,
                             "%d answered, %d slipped" % (len(answered), len(slipped)))
        dropped = 100 - len(replies)
        self.assertGreater(dropped, 30)
        self.assertEqual(len(answered) + len(slipped) + dropped, 100)

    def test_valid_server_cookie_is_exempt(self):
        client = b"\x01\x02\x03\x04\x05\x06\x07\x08"
        first = self.server.query(with_cookie(self.server, "www.example.com", client))
        full = find_cookie(first)
        self.assertEqual(len(full), 24)
        self.burst(30)   # use up the budget of 127.0.0.0/24
        replies = self.burst(60, cookie=full)
        self.assertEqual(len(replies), 60)
        self.assertTrue(all(not tc(m) and rrs(m, "answer") == WWW for m in replies.values()))
        # A made-up server cookie does not buy anything.
        fake = client + b"\x01\0\0\0" + struct.pack("!I", int(time.time())) + b"\0" * 8
        replies = self.burst(60, cookie=fake)
        self.assertLess(len([m for m in replies.values() if not tc(m)]), 20)

    def test_tcp_never_limited(self):
        self.burst(30)
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        try:
            for i in range(60):
                wire = self.server.make_query("www.example.com").to_wire()
                s.sendall(struct.pack("!H", len(wire)) + wire)
            got = 0
            buf = b""
            while got < 60:
                chunk = s.recv(65535)
                self.assertTrue(chunk, "connection closed after %d answers" % got)
                buf += chunk
                while len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
                    n = struct.unpack("!H", buf[:2])[0]
                    m = dns.message.from_wire(buf[2:2 + n])
                    self.assertFalse(tc(m))
                    self.assertEqual(rrs(m, "answer"), WWW)
                    buf = buf[2 + n:]
                    got += 1
        finally:
            s.close()


class Cookies(ServerTestCase):
    """RFC 7873 with the RFC 9018 server cookie."""
    CONFIG = ZONE_CONFIG
    FILES = FILES
    CLIENT = b"\xaa\xbb\xcc\xdd\x11\x22\x33\x44"

    def test_client_cookie_gets_a_server_cookie(self):
        before = int(time.time())
        r = self.server.query(with_cookie(self.server, "www.example.com", self.CLIENT))
        self.assertEqual(rrs(r, "answer"), WWW)
        c = find_cookie(r)
        self.assertIsNotNone(c)
        self.assertEqual(len(c), 24)
        self.assertEqual(c[:8], self.CLIENT)
        self.assertEqual(c[8], 1, "server cookie version")
        self.assertEqual(c[9:12], b"\0\0\0")
        ts = struct.unpack("!I", c[12:16])[0]
        self.assertLessEqual(abs(ts - before), 2)

    def test_server_cookie_round_trip(self):
        r = self.server.query(with_cookie(self.server, "www.example.com", self.CLIENT))
        c = find_cookie(r)
        r2 = self.server.query(with_cookie(self.server, "www.example.com", c))
        self.assertEqual(rrs(r2, "answer"), WWW)
        c2 = find_cookie(r2)
        self.assertEqual(len(c2), 24)
        self.assertEqual(c2[:8], self.CLIENT)
        # Still valid: sent back again, it is accepted and returned (RFC 9018 4.3).
        self.assertEqual(c2, c)
        # Over TCP too, and with another client cookie the old server part is not reused.
        r3 = self.server.query(with_cookie(self.server, "www.example.com", c), tcp=True)
        self.assertEqual(find_cookie(r3), c)
        other = b"\x99" * 8
        r4 = self.server.query(with_cookie(self.server, "www.example.com", other + c[8:]))
        self.assertEqual(find_cookie(r4)[:8], other)
        self.assertNotEqual(find_cookie(r4)[8:], c[8:])

    def test_bad_server_cookie_gets_a_fresh_one(self):
        fake = self.CLIENT + b"\x01\0\0\0" + struct.pack("!I", int(time.time())) + b"\x55" * 8
        r = self.server.query(with_cookie(self.server, "www.example.com", fake))
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertEqual(rrs(r, "answer"), WWW)
        self.assertNotEqual(find_cookie(r), fake)
        self.assertEqual(find_cookie(r)[:8], self.CLIENT)

    def test_malformed_cookie_length_formerr(self):
        for n in (0, 1, 7, 9, 15, 41, 64):
            q = with_cookie(self.server, "www.example.com", bytes(range(n)))
            raw = self.server.raw_udp(q.to_wire(), timeout=2)
            self.assertIsNotNone(raw, "no answer for a %d-byte cookie" % n)
            m = dns.message.from_wire(raw)
            self.assertEqual(m.rcode(), dns.rcode.FORMERR, "%d-byte cookie" % n)
            self.assertEqual(m.id, q.id)
        self.assertEqual(rrs(self.server.query("www.example.com"), "answer"), WWW)

    def test_no_cookie_no_option(self):
        r = self.server.query("www.example.com")
        self.assertIsNone(find_cookie(r))


class CookiesOff(ServerTestCase):
    CONFIG = "[server]\ncookies = false\n" + ZONE_CONFIG
    FILES = FILES

    def test_cookie_ignored_when_off(self):
        r = self.server.query(with_cookie(self.server, "www.example.com", b"\1" * 8))
        self.assertEqual(rrs(r, "answer"), WWW)
        self.assertIsNone(find_cookie(r))


@unittest.skipUnless(os.geteuid() == 0, "the privilege drop needs root (running as uid %d)"
                     % os.geteuid())
class PrivilegeDrop(unittest.TestCase):
    def test_runs_as_nobody(self):
        nobody = pwd.getpwnam("nobody")
        srv = Server(BASE_CONFIG + 'user = "nobody"\n' + ZONE_CONFIG + """
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "example.com.pem"
""", FILES)
        try:
            # The server reads its files after the drop: the folder must be
            # reachable, the zone readable, and the key owned by nobody (0600).
            os.chmod(srv.dir, 0o755)
            make_key(srv.path("example.com.pem"))
            os.chown(srv.path("example.com.pem"), nobody.pw_uid, nobody.pw_gid)
            srv.start()
            self.assertRegex(srv.log_since_start(), r"running as user nobody")
            # The default control socket's folder is root's: nobody cannot make
            # it, so the channel is off with a warning, and the server runs.
            self.assertRegex(srv.log_since_start(), r"control.sock: Permission denied; the "
                             r"control channel is off \(set \[server\] control_socket")
            with open("/proc/%d/status" % srv.proc.pid) as f:
                status = f.read()
            uids = re.search(r"^Uid:\s+(.*)$", status, re.M).group(1).split()
            gids = re.search(r"^Gid:\s+(.*)$", status, re.M).group(1).split()
            groups = re.search(r"^Groups:[ \t]*(.*)$", status, re.M).group(1).split()
            cap_eff = re.search(r"^CapEff:\s+(\w+)$", status, re.M).group(1)
            self.assertEqual(uids, [str(nobody.pw_uid)] * 4)
            self.assertEqual(gids, [str(nobody.pw_gid)] * 4)
            self.assertEqual(groups, [])
            self.assertEqual(int(cap_eff, 16), 0)
            r = srv.query("www.example.com", dnssec=True)
            self.assertEqual(rrs(r, "answer")[0], WWW[0])
            self.assertIn("RRSIG", [dns.rdatatype.to_text(s.rdtype) for s in r.answer])
            # A reload reads everything again as nobody.
            srv.write("example.com.zone", ZONE.replace("192.0.2.80", "192.0.2.81"))
            srv.send_signal(1)
            srv.wait_log(r"reloaded")
            self.assertEqual(rrs(srv.query("www.example.com"), "answer"),
                             ["www.example.com. 600 IN A 192.0.2.81"])
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()

    def test_unknown_user_refused(self):
        srv = Server(BASE_CONFIG + 'user = "no-such-user-geoacme"\n' + ZONE_CONFIG, FILES)
        try:
            with self.assertRaises(AssertionError) as cm:
                srv.start()
            self.assertIn("no-such-user-geoacme", str(cm.exception))
            self.assertEqual(srv.exit_code, 1)
        finally:
            srv.cleanup()

    def test_unreadable_key_after_drop_is_named(self):
        srv = Server(BASE_CONFIG + 'user = "nobody"\n' + ZONE_CONFIG + """
[[zones.keys]]
key_path = "example.com.pem"
""", FILES)
        try:
            os.chmod(srv.dir, 0o755)
            make_key(srv.path("example.com.pem"))   # root's, 0600: nobody cannot read it
            with self.assertRaises(AssertionError) as cm:
                srv.start()
            self.assertIn("example.com.pem", str(cm.exception))
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
