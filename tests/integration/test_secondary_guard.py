# SPDX-License-Identifier: MIT
"""A geoacme secondary against a fake primary (dnspython, TCP on 127.0.0.2)
that misbehaves in every way a copy must survive (issue #27 points 1 and 4,
#26 point 4):

- older serials by every route: a NOTIFY carrying an older SOA, an IXFR
  answered with the whole zone at an older serial, an IXFR answered with an
  older SOA alone, and an AXFR (asked for after a newer SOA alone) with an
  older zone: the copy keeps its serial and records; the first offer of an
  episode is logged once and every offer is counted in /metrics;
- an IXFR answered with the whole zone at the copy's own serial: current,
  nothing applied or built;
- an AXFR whose closing SOA differs from its opening one: refused;
- an IXFR that deletes a record the copy does not hold: a divergence, logged,
  then an AXFR that leaves the copy equal to the primary's zone;
- a zone with DNAME, or with a '*' label: refused, never served wrong;
- transfers past xfr_in_max_records or xfr_in_max_bytes: refused;
- a slow transfer that keeps coming (1 KiB/s or more each window) goes on
  past the window's length, one that stops coming is abandoned (test hook
  GEOACME_TEST_XFR_IN_WINDOW_MS: a 1 s window instead of 30 s).

Each case asserts the secondary's answers (serial, records, rcode, AA) and
its log line and metric.  The secondary never queries the primary over UDP
(its checks are IXFR requests over TCP: RFC 1995 4), so the fake primary
listens on TCP only; NOTIFYs are sent from its address."""
import os
import re
import socket
import struct
import threading
import time
import unittest
import urllib.request

import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from harness import BASE_CONFIG, Server, main, needs_test_hooks, rrs

ZONE = "fake.example."
PRIMARY_ADDR = "127.0.0.2"
MAX_RECORDS = 50
MAX_BYTES = 4000

SECONDARY = """
[server]
http_listen = ["127.0.0.1:0"]

[[zones]]
zone = "fake.example"
zone_type = "Secondary"
primaries = ["{addr}:{port}"]
allow_axfr = true
xfr_in_max_records = {records}
xfr_in_max_bytes = {bytes}
[zones.stores]
type = "sqlite"
journal_path = "copy.sqlite"
"""


def zone(serial, extra=()):
    """The fake zone at `serial`: refresh 3600 (checks come from NOTIFY),
    retry 1 s (a failed check is repeated at once)."""
    return [("@", 300, "SOA", "ns1.fake.example. hostmaster.fake.example. %d 3600 1 86400 60"
             % serial),
            ("@", 300, "NS", "ns1.fake.example."),
            ("ns1", 300, "A", "192.0.2.1"),
            ("www", 300, "A", "192.0.2.%d" % (serial % 250))] + list(extra)


def axfr(records, closing=None):
    """An AXFR-style answer: the zone, then its SOA again (or `closing`)."""
    return records + [closing or records[0]]


def rrset(rec):
    name, ttl, rtype, rdata = rec
    owner = dns.name.from_text(name, dns.name.from_text(ZONE)) if name != "@" else \
        dns.name.from_text(ZONE)
    return dns.rrset.from_text(owner, ttl, "IN", rtype, rdata)


class FakePrimary:
    """Answers transfer requests over TCP with whatever the test sets:
    self.on_ixfr and self.on_axfr are lists of records (one answer), sent
    in messages of `per_message` records.  Requests are recorded as
    (qtype, serial asked for or None)."""

    def __init__(self, addr=PRIMARY_ADDR):
        self.addr = addr
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.on_ixfr = []
        self.on_axfr = []
        self.per_message = 20
        self.pace = 0           # seconds between two messages of an answer
        # held: the last message of an answer is held back until the
        # secondary hangs up (or 10 s pass): one that hangs up has abandoned
        # the transfer before its end.  sent[] tells how many were sent.
        self.held = False
        self.sent = []          # per answer: (messages sent, total, wire sizes)
        self.requests = []
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _read(conn, n):
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _serve(self, conn):
        with conn:
            try:
                (n,) = struct.unpack("!H", self._read(conn, 2))
                q = dns.message.from_wire(self._read(conn, n))
                qtype = q.question[0].rdtype
                serial = q.authority[0][0].serial if qtype == dns.rdatatype.IXFR else None
                with self.lock:
                    self.requests.append((dns.rdatatype.to_text(qtype), serial))
                    records = list(self.on_ixfr if qtype == dns.rdatatype.IXFR else self.on_axfr)
                wires = []
                for i in range(0, max(len(records), 1), self.per_message):
                    r = dns.message.make_response(q)
                    r.flags |= dns.flags.AA
                    for rec in records[i:i + self.per_message]:
                        r.answer.append(rrset(rec))   # each its own RRset: order kept
                    wires.append(r.to_wire())
                sent = 0
                for k, wire in enumerate(wires):
                    if self.held and k == len(wires) - 1 and k > 0 and self._hung_up(conn):
                        break
                    if k and self.pace:
                        time.sleep(self.pace)
                    conn.sendall(struct.pack("!H", len(wire)) + wire)
                    sent += 1
                with self.lock:
                    self.sent.append((sent, len(wires), [len(w) for w in wires]))
                time.sleep(0.5)   # let the secondary close first
            except (EOFError, OSError):
                pass

    @staticmethod
    def _hung_up(conn):
        conn.settimeout(10)
        try:
            return conn.recv(1) == b""
        except socket.timeout:
            return False
        except OSError:
            return True
        finally:
            conn.settimeout(None)

    def notify(self, secondary, serial=None):
        """A NOTIFY from the primary's address, with the SOA as a hint when serial is set."""
        m = dns.message.make_query(ZONE, "SOA")
        m.set_opcode(dns.opcode.NOTIFY)
        m.flags = dns.flags.AA | (m.flags & ~dns.flags.RD)
        if serial is not None:
            m.answer.append(rrset(zone(serial)[0]))
        r = dns.query.udp(m, "127.0.0.1", port=secondary.port, source=self.addr, timeout=3)
        assert r.rcode() == dns.rcode.NOERROR, r

    def close(self):
        self.closed = True
        self.sock.close()


class Guard(unittest.TestCase):
    def setUp(self):
        self.primary = FakePrimary()
        self.primary.on_axfr = axfr(zone(10))
        self.primary.on_ixfr = axfr(zone(10))
        self.secondary = Server(BASE_CONFIG + SECONDARY.format(
            addr=PRIMARY_ADDR, port=self.primary.port, records=MAX_RECORDS, bytes=MAX_BYTES))
        self.secondary.start()
        self.wait_serial(10)
        self.assertEqual(self.primary.requests, [("AXFR", None)])

    def tearDown(self):
        self.secondary.cleanup()
        self.primary.close()

    # --- helpers ---

    def soa(self):
        r = self.secondary.query(ZONE, "SOA", timeout=1)
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertTrue(r.flags & dns.flags.AA)
        return r.answer[0][0].serial

    def wait_serial(self, serial, timeout=15):
        deadline = time.time() + timeout
        got = None
        while time.time() < deadline:
            try:
                got = self.soa()
            except Exception:
                got = None
            if got == serial:
                return
            time.sleep(0.05)
        raise AssertionError("serial %s, never %s:\n%s" % (got, serial,
                                                           self.secondary.log_since_start()))

    def metrics(self):
        url = "http://127.0.0.1:%d/metrics" % self.secondary.http_port()
        with urllib.request.urlopen(url, timeout=5) as r:
            text = r.read().decode()
        out = {}
        m = re.search(r'^geoacme_secondary_outdated_offers_total\{zone="fake\.example\."\} (\d+)$',
                      text, re.M)
        out["outdated"] = int(m.group(1)) if m else None
        for reason, v in re.findall(r'^geoacme_secondary_transfers_refused_total\{zone="fake\.'
                                    r'example\.",reason="(\w+)"\} (\d+)$', text, re.M):
            out[reason] = int(v)
        return out

    def wait_metric(self, key, at_least, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = self.metrics().get(key)
            if got is not None and got >= at_least:
                return got
            time.sleep(0.05)
        raise AssertionError("metric %s never reached %d: %s\n%s" % (
            key, at_least, self.metrics(), self.secondary.log_since_start()))

    def assert_copy_is(self, serial, www="192.0.2.10"):
        self.assertEqual(self.soa(), serial)
        r = self.secondary.query("www." + ZONE, "A")
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertTrue(r.flags & dns.flags.AA)
        self.assertEqual([(rr.name.to_text(), rr.ttl, rd.to_text()) for rr in r.answer for rd in rr],
                         [("www." + ZONE, 300, www)])

    def outdated_lines(self):
        return re.findall(r"fake\.example\.: .* offers serial \d+, (?:older|2\^31 away).* the "
                          r"primary is outdated", self.secondary.log_since_start())

    # --- older serials ---

    def test_notify_and_ixfr_with_an_older_zone_keep_the_copy(self):
        old = zone(5, [("old", 300, "A", "192.0.2.55")])
        self.primary.on_ixfr = axfr(old)
        self.primary.on_axfr = axfr(old)
        self.primary.notify(self.secondary, serial=5)
        # The NOTIFY's hint and the IXFR answer, and retries (retry = 1 s).
        self.wait_metric("outdated", 3)
        self.secondary.wait_log(r"fake\.example\.: NOTIFY from 127\.0\.0\.2 offers serial 5, older "
                                r"than our copy's 10")
        self.assert_copy_is(10)
        r = self.secondary.query("old." + ZONE, "A")
        self.assertEqual(r.rcode(), dns.rcode.NXDOMAIN)
        self.assertEqual(len(self.outdated_lines()), 1, self.secondary.log_since_start())
        self.assertNotRegex(self.secondary.log_since_start(), r"(AXFR|IXFR) from .*serial 10 -> 5")
        self.assertIn(("IXFR", 10), self.primary.requests)
        # A newer serial ends the episode; an older one after it is logged again.
        self.primary.on_ixfr = axfr(zone(11))
        self.primary.notify(self.secondary, serial=11)
        self.wait_serial(11)
        self.secondary.wait_log(r"fake\.example\.: 127\.0\.0\.2:%d offers serial 11, newer than our "
                                r"10, again" % self.primary.port)
        self.assert_copy_is(11, www="192.0.2.11")
        self.primary.on_ixfr = axfr(old)
        self.primary.notify(self.secondary)
        self.secondary.wait_log(r"the IXFR answer from 127\.0\.0\.2:%d offers serial 5, older than "
                                r"our copy's 11" % self.primary.port)
        self.assertEqual(len(self.outdated_lines()), 2)
        self.assert_copy_is(11, www="192.0.2.11")

    def test_ixfr_answered_with_an_older_soa_alone(self):
        self.primary.on_ixfr = [zone(5)[0]]
        self.primary.notify(self.secondary)   # no hint: only the IXFR answer offers 5
        self.secondary.wait_log(r"the IXFR answer from 127\.0\.0\.2:%d offers serial 5, older "
                                r"than our copy's 10 \(RFC 1982\)" % self.primary.port)
        self.assertGreaterEqual(self.wait_metric("outdated", 1), 1)
        self.assert_copy_is(10)
        self.assertEqual(self.primary.requests[1], ("IXFR", 10))

    def test_axfr_with_an_older_serial(self):
        # A newer SOA alone makes the secondary ask for the whole zone;
        # the AXFR then brings an older one.
        self.primary.on_ixfr = [zone(12)[0]]
        self.primary.on_axfr = axfr(zone(5))
        self.primary.notify(self.secondary)
        self.secondary.wait_log(r"the AXFR answer from 127\.0\.0\.2:%d offers serial 5, older than "
                                r"our copy's 10" % self.primary.port)
        self.wait_metric("outdated", 1)
        self.assert_copy_is(10)
        self.assertEqual(self.primary.requests[1:3], [("IXFR", 10), ("AXFR", None)])

    def test_serial_2_31_away_is_not_taken(self):
        far = (10 + 2 ** 31) % 2 ** 32
        self.primary.on_ixfr = axfr(zone(far))
        self.primary.notify(self.secondary)
        self.secondary.wait_log(r"offers serial %d, 2\^31 away, no order, than our copy's 10"
                                % far)
        self.assert_copy_is(10)

    def test_same_serial_whole_zone_is_current_not_rebuilt(self):
        # A primary that answers every IXFR with its whole zone: nothing to apply.
        self.primary.notify(self.secondary)
        self.secondary.wait_log(r"fake\.example\.: serial 10 is current")
        log = self.secondary.log_since_start()
        self.assertEqual(len(re.findall(r"AXFR from .* copy built whole", log)), 1, log)
        self.assertEqual(self.metrics()["outdated"], 0)
        self.assert_copy_is(10)

    # --- divergence ---

    def test_axfr_with_a_different_closing_soa_is_refused(self):
        self.primary.on_ixfr = [zone(12)[0]]   # newer SOA alone: ask for the AXFR
        self.primary.on_axfr = axfr(zone(11), closing=zone(12)[0])
        self.primary.notify(self.secondary)
        self.secondary.wait_log(r"fake\.example\.: transfer from 127\.0\.0\.2:%d refused: the "
                                r"closing SOA \(serial 12\) differs from the opening one \(serial "
                                r"11\), RFC 5936 2\.2; the copy \(serial 10\) is kept"
                                % self.primary.port)
        self.wait_metric("closing_soa", 1)
        self.assert_copy_is(10)

    def test_divergent_ixfr_falls_back_to_axfr(self):
        new = zone(11, [("new", 300, "A", "192.0.2.111")])
        # From 10 to 11, deleting a record the copy never had.
        self.primary.on_ixfr = [new[0], zone(10)[0], ("gone", 300, "A", "192.0.2.99"),
                                ("www", 300, "A", "192.0.2.10"), new[0],
                                ("www", 300, "A", "192.0.2.11"), new[4], new[0]]
        self.primary.on_axfr = axfr(new)
        self.primary.notify(self.secondary)
        self.wait_serial(11)
        self.secondary.wait_log(r"fake\.example\.: IXFR from 127\.0\.0\.2:%d, serial 10 -> 11, "
                                r"diverges from our copy: it deletes gone\.fake\.example\. A "
                                r"\(TTL 300\), which the copy does not hold; asking for the whole "
                                r"zone \(AXFR\)" % self.primary.port)
        self.secondary.wait_log(r"fake\.example\.: AXFR from 127\.0\.0\.2:%d, serial 10 -> 11"
                                % self.primary.port)
        self.assertEqual(self.wait_metric("diverged", 1), 1)
        self.assertEqual(self.primary.requests[1:], [("IXFR", 10), ("AXFR", None)])
        self.assert_copy_is(11, www="192.0.2.11")
        r = self.secondary.query("new." + ZONE, "A")
        self.assertEqual([rd.to_text() for rr in r.answer for rd in rr], ["192.0.2.111"])
        # The whole copy is the primary's zone, record for record.
        got = dns.query.xfr("127.0.0.1", ZONE, port=self.secondary.port, timeout=5,
                            relativize=False)
        records = sorted(rr.to_text() for m in got for rr in m.answer)
        want = sorted(rrset(rec).to_text() for rec in axfr(new))
        self.assertEqual(records, want)

    def test_ixfr_that_fits_is_applied(self):
        # The control for the divergence case: the same difference without
        # the stray deletion is applied by IXFR, no AXFR asked for.
        new = zone(11)
        self.primary.on_ixfr = [new[0], zone(10)[0], ("www", 300, "A", "192.0.2.10"), new[0],
                                ("www", 300, "A", "192.0.2.11"), new[0]]
        self.primary.notify(self.secondary)
        self.wait_serial(11)
        self.assertEqual(self.primary.requests[1:], [("IXFR", 10)])
        self.assert_copy_is(11, www="192.0.2.11")
        self.assertEqual(self.metrics().get("diverged"), 0)

    # --- wildcards and DNAME (issue #28): served, no longer refused ---

    def test_dname_and_wildcard_are_served(self):
        self.primary.on_ixfr = axfr(zone(11, [("alias", 300, "DNAME", "wild.fake.example."),
                                              ("*.wild", 300, "A", "192.0.2.42")]))
        self.primary.notify(self.secondary)
        self.wait_serial(11)
        r = self.secondary.query("x.wild." + ZONE, "A")
        self.assertEqual(rrs(r, "answer"), ["x.wild.fake.example. 300 IN A 192.0.2.42"])
        r = self.secondary.query("x.alias." + ZONE, "A")
        self.assertEqual(sorted(rrs(r, "answer")), [
            "alias.fake.example. 300 IN DNAME wild.fake.example.",
            "x.alias.fake.example. 300 IN CNAME x.wild.fake.example.",
            "x.wild.fake.example. 300 IN A 192.0.2.42"])

    # --- caps ---

    def test_records_cap(self):
        big = zone(11, [("h%d" % i, 300, "A", "192.0.2.%d" % (i % 250)) for i in range(60)])
        self.primary.on_ixfr = axfr(big)
        self.primary.held = True
        self.primary.notify(self.secondary)
        self.secondary.wait_log(r"transfer from 127\.0\.0\.2:%d refused: more than %d records "
                                r"\(xfr_in_max_records\); the copy \(serial 10\) is kept"
                                % (self.primary.port, MAX_RECORDS))
        self.wait_metric("records_cap", 1)
        self.assert_copy_is(10)
        # Abandoned at the message that crossed the cap (records 41-60 of
        # 65): the secondary hung up before the last message was sent.
        self.assertEqual(self.primary.sent[1][:2], (3, 4))

    def test_bytes_cap(self):
        big = zone(11, [("t%d" % i, 300, "TXT", '"%s"' % ("x" * 250)) for i in range(20)])
        self.primary.on_ixfr = axfr(big)
        self.primary.per_message = 5
        self.primary.held = True
        self.primary.notify(self.secondary)
        self.secondary.wait_log(r"transfer from 127\.0\.0\.2:%d refused: more than %d bytes "
                                r"\(xfr_in_max_bytes\); the copy \(serial 10\) is kept"
                                % (self.primary.port, MAX_BYTES))
        self.wait_metric("bytes_cap", 1)
        self.assert_copy_is(10)
        # Abandoned at the message that crossed the cap: the secondary hung
        # up before the last message was sent.
        sent, total, sizes = self.primary.sent[1]
        crossing = next(i for i in range(total) if sum(sizes[:i + 1]) > MAX_BYTES) + 1
        self.assertLess(crossing, total, sizes)
        self.assertEqual(sent, total - 1, sizes)



@needs_test_hooks
class SlowTransfer(unittest.TestCase):
    """A transfer is judged by its progress each window, not cut at a
    fixed length: here a 1 s window (the hook), at least 1 KiB a second."""

    def setUp(self):
        self.primary = FakePrimary()
        self.primary.on_axfr = axfr(zone(10))
        self.primary.on_ixfr = axfr(zone(10))
        self.secondary = Server(BASE_CONFIG + SECONDARY.format(
            addr=PRIMARY_ADDR, port=self.primary.port, records=10000, bytes=10 ** 7),
            env=dict(os.environ, GEOACME_TEST_XFR_IN_WINDOW_MS="1000"))
        self.secondary.start()
        # The first copy is served once it is built and stored beside the
        # loop (REFUSED until then).
        deadline = time.time() + 15
        while time.time() < deadline and self.serial() != 10:
            time.sleep(0.05)
        self.assertEqual(self.serial(), 10, self.secondary.log_since_start())
        self.assertEqual(self.primary.requests, [("AXFR", None)])

    def tearDown(self):
        self.secondary.cleanup()
        self.primary.close()

    def serial(self):
        """The served serial, or None while nothing is served (REFUSED)."""
        r = self.secondary.query(ZONE, "SOA", timeout=1)
        if r.rcode() == dns.rcode.REFUSED:
            return None
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        return r.answer[0][0].serial

    def big_zone(self, serial):
        """60 TXT records of 200 bytes: about 1.1 KiB a message of 5."""
        return axfr(zone(serial, [("t%d" % i, 300, "TXT", '"%s"' % ("x" * 200))
                                  for i in range(60)]))

    def test_slow_but_steady_goes_on(self):
        # 14 messages 0.4 s apart: 5 s in all, 2.7 KiB a second.
        self.primary.per_message = 5
        self.primary.pace = 0.4
        self.primary.on_ixfr = self.big_zone(11)
        self.primary.notify(self.secondary, 11)
        deadline = time.time() + 20
        while time.time() < deadline and self.serial() != 11:
            time.sleep(0.1)
        self.assertEqual(self.serial(), 11, self.secondary.log_since_start())
        r = self.secondary.query("t59." + ZONE, "TXT")
        self.assertEqual([rd.to_text() for rd in r.answer[0]], ['"%s"' % ("x" * 200)])
        self.assertEqual(self.primary.sent[-1][0], self.primary.sent[-1][1])
        self.assertNotIn("less than 1024 a second", self.secondary.log_since_start())

    def test_one_that_stops_coming_is_abandoned(self):
        # The first messages, then nothing (the last one held back until the
        # secondary hangs up, at most 10 s).
        self.primary.per_message = 30
        self.primary.held = True
        self.primary.on_ixfr = self.big_zone(12)
        self.primary.notify(self.secondary, 12)
        self.secondary.wait_log(r"fake\.example\.: .*: \d+ bytes received in the last 1 s, "
                                r"less than 1024 a second", timeout=15)
        self.assertEqual(self.serial(), 10)
        sent, total, _ = self.primary.sent[-1]
        self.assertEqual(sent, total - 1)


if __name__ == "__main__":
    main()
