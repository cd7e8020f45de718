# SPDX-License-Identifier: MIT
"""Issue #16, TSIG: a captured signed UPDATE replayed within the fudge
(item 4), and TSIG key files other users can read (item 7)."""
import base64
import os
import signal
import socket
import struct
import time
import unittest

import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.rrset
import dns.tsig
import dns.update

from acme_helpers import tsig_of
from harness import BASE_CONFIG, Server, ServerTestCase, main
from test_badinput import serve_once

ZONE = """$ORIGIN acme.example.
$TTL 300
@ IN SOA ns1.example. hostmaster.example. 100 3600 600 86400 60
@ IN NS ns1.example.
"""

SECRET = b"lego-default-is-hmac-sha1-secret"
KEY = dns.tsig.Key("lego.acme.example.", SECRET, "hmac-sha256")

CONFIG = """
[[zones]]
zone = "acme.example"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.sqlite"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "lego.acme.example."
algorithm = "hmac-sha256"
secret = "%s"
""" % base64.b64encode(SECRET).decode()

NAME = "_acme-challenge.www.acme.example."


class Replay(ServerTestCase):
    """Item 4: replaying Lego's messages within the 300 s fudge."""
    CONFIG = CONFIG
    FILES = {"acme.zone": ZONE}

    def txt(self):
        r = self.server.query(NAME, "TXT")
        return sorted(rd.to_text() for rs in r.answer for rd in rs)

    def send(self, wire):
        raw = self.server.raw_udp(wire, timeout=3)
        self.assertIsNotNone(raw)
        return raw

    def present(self, token):
        """What Lego's rfc2136 provider sends to publish a challenge."""
        u = dns.update.UpdateMessage("acme.example.", keyring=KEY)
        u.delete(NAME, "TXT")
        u.add(NAME, 120, "TXT", token)
        return u.to_wire()

    def cleanup(self, token):
        u = dns.update.UpdateMessage("acme.example.", keyring=KEY)
        u.delete(NAME, "TXT", token)
        return u.to_wire()

    def assert_refused_as_replay(self, wire):
        raw = self.send(wire)
        self.assertEqual(dns.rcode.to_text(raw[3] & 0xF), "NOTAUTH")
        t = tsig_of(raw)
        self.assertEqual(t.error, dns.rcode.BADTIME)
        self.assertEqual(len(t.mac), 32, "a BADTIME answer is signed")
        self.assertEqual(len(t.other), 6, "with our clock in Other Data")

    def test_replayed_cleanup_and_present(self):
        first, second = '"token-one"', '"token-two"'
        p1 = self.present(first)
        self.assertEqual(self.send(p1)[3] & 0xF, 0)
        c1 = self.cleanup(first)
        self.assertEqual(self.send(c1)[3] & 0xF, 0)
        p2 = self.present(second)
        self.assertEqual(self.send(p2)[3] & 0xF, 0)
        self.assertEqual(self.txt(), [second])
        # The attacker replays what it captured: neither deletes the fresh challenge.
        self.assert_refused_as_replay(p1)
        self.assert_refused_as_replay(c1)
        self.assertEqual(self.txt(), [second])
        self.server.wait_log(r"TSIG from key lego\.acme\.example\.: a replayed UPDATE: its MAC "
                             r"was accepted before \(BADTIME\)")
        # Over TCP, and after a reload, it is still a replay.
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=3)
        try:
            s.sendall(struct.pack("!H", len(p2)) + p2)
            n = struct.unpack("!H", s.recv(2))[0]
            raw = b""
            while len(raw) < n:
                raw += s.recv(n - len(raw))
        finally:
            s.close()
        self.assertEqual(dns.rcode.to_text(raw[3] & 0xF), "NOTAUTH")
        self.assertEqual(tsig_of(raw).error, dns.rcode.BADTIME)
        self.server.send_signal(signal.SIGHUP)
        self.server.wait_log(r"reloaded")
        self.assert_refused_as_replay(p2)
        self.assertEqual(self.txt(), [second])
        # And after a restart: the new process refuses what was signed before it started.
        time.sleep(1.1)
        self.assertEqual(self.server.stop(), 0)
        self.server.start()
        self.assert_refused_as_replay(p2)
        self.server.wait_log(r"an UPDATE signed before this server could remember it")
        self.assertEqual(self.txt(), [second])
        # Lego's own traffic: several UPDATEs in the same second all go through.
        for i in range(5):
            self.assertEqual(self.send(self.present('"t%d"' % i))[3] & 0xF, 0, i)
        self.assertEqual(self.txt(), ['"t4"'])


XFR_SECRET = b"transfer-secret-for-a-secondary"
XFR_KEY = dns.tsig.Key("xfr.example.", XFR_SECRET, "hmac-sha256")
STATIC = """$ORIGIN static.example.
$TTL 300
@ IN SOA ns1.example. hostmaster.example. 7 3600 600 86400 60
@ IN NS ns1.example.
www IN A 192.0.2.80
"""
XFR_CONFIG = """
[[zones]]
zone = "static.example"
zone_type = "Primary"
axfr_policy = "AllowSigned"
[zones.stores]
type = "file"
zone_path = "static.zone"
[[zones.stores.tsig_keys]]
name = "xfr.example."
algorithm = "hmac-sha256"
secret = "%s"
""" % base64.b64encode(XFR_SECRET).decode()


def tcp_messages(port, wire, count_soa=2):
    """Sends one request over TCP; returns the raw answer messages, read
    until the closing SOA (an AXFR) or after the first one that is not
    NOERROR."""
    out = []
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(struct.pack("!H", len(wire)) + wire)
        soas = 0
        while True:
            head = b""
            while len(head) < 2:
                chunk = s.recv(2 - len(head))
                if not chunk:
                    return out
                head += chunk
            n = struct.unpack("!H", head)[0]
            raw = b""
            while len(raw) < n:
                chunk = s.recv(n - len(raw))
                if not chunk:
                    raise AssertionError("connection closed mid-message")
                raw += chunk
            out.append(raw)
            if raw[3] & 0xF:
                return out
            soas += sum(1 for rr in _answer_types(raw) if rr == dns.rdatatype.SOA)
            if soas >= count_soa:
                return out
    finally:
        s.close()


def _answer_types(wire):
    """The types of the answer section's records, walked by hand."""
    (qd, an) = struct.unpack("!HH", wire[4:8])
    pos = 12
    for _ in range(qd):
        _, used = dns.name.from_wire(wire, pos)
        pos += used + 4
    types = []
    for _ in range(an):
        _, used = dns.name.from_wire(wire, pos)
        pos += used
        rtype, _, _, rdlen = struct.unpack("!HHIH", wire[pos:pos + 10])
        types.append(rtype)
        pos += 10 + rdlen
    return types


class TransferReplay(ServerTestCase):
    """Issue #27.5: a signed AXFR/IXFR request captured and sent again within
    the fudge is refused like a replayed UPDATE."""
    CONFIG = XFR_CONFIG
    FILES = {"static.zone": STATIC}

    def request(self, rdtype="AXFR", serial=None):
        q = dns.message.make_query("static.example.", rdtype)
        if serial is not None:
            q.authority.append(dns.rrset.from_text("static.example.", 0, "IN", "SOA",
                                                   ". . %d 0 0 0 0" % serial))
        q.use_tsig(XFR_KEY)
        return q.to_wire()

    def assert_refused_as_replay(self, raw):
        self.assertEqual(dns.rcode.to_text(raw[3] & 0xF), "NOTAUTH")
        self.assertEqual(_answer_types(raw), [])
        t = tsig_of(raw)
        self.assertEqual(t.error, dns.rcode.BADTIME)
        self.assertEqual(len(t.mac), 32, "a BADTIME answer is signed")
        self.assertEqual(len(t.other), 6, "with our clock in Other Data")

    def test_replayed_axfr_and_ixfr_are_refused(self):
        axfr = self.request()
        first = tcp_messages(self.server.port, axfr)
        self.assertEqual(first[0][3] & 0xF, 0)
        types = [t for m in first for t in _answer_types(m)]
        self.assertEqual(types.count(dns.rdatatype.SOA), 2)
        self.assertIn(dns.rdatatype.A, types)
        self.assertEqual(len(tsig_of(first[-1]).mac), 32)
        # The same bytes again, over TCP: one refusal, nothing of the zone.
        again = tcp_messages(self.server.port, axfr)
        self.assertEqual(len(again), 1)
        self.assert_refused_as_replay(again[0])
        self.server.wait_log(r"AXFR of static\.example\. from 127\.0\.0\.1 refused: TSIG key "
                             r"xfr\.example\.: a replayed request: its MAC was accepted before "
                             r"\(BADTIME\)")
        # An IXFR over UDP (the SOA alone), then its replay.
        ixfr = self.request("IXFR", 7)
        raw = self.server.raw_udp(ixfr, timeout=3)
        self.assertEqual(raw[3] & 0xF, 0)
        self.assertEqual(_answer_types(raw), [dns.rdatatype.SOA])
        self.assert_refused_as_replay(self.server.raw_udp(ixfr, timeout=3))
        # After a reload the memory is kept.
        self.server.send_signal(signal.SIGHUP)
        self.server.wait_log(r"reloaded")
        self.assert_refused_as_replay(tcp_messages(self.server.port, axfr)[0])
        # A fresh request from the secondary (new time, new MAC) is served.
        fresh = tcp_messages(self.server.port, self.request())
        self.assertEqual(fresh[0][3] & 0xF, 0)
        self.assertEqual(sum(_answer_types(m).count(dns.rdatatype.SOA) for m in fresh), 2)


KEY_FILE_CONFIG = CONFIG.replace('secret = "%s"' % base64.b64encode(SECRET).decode(),
                                 'key_file = "lego.key"')


class KeyFileModes(unittest.TestCase):
    """Item 7: a key_file of mode 666 was accepted silently while a DNSSEC key of
    mode 644 was refused; both are refused alike now, naming the chmod fix."""

    def start_with_mode(self, mode, wait=8):
        def setup(srv):
            srv.write("lego.key", SECRET, mode)
        return serve_once(KEY_FILE_CONFIG, {"acme.zone": ZONE}, setup=setup, wait=wait)

    def test_readable_by_others_refused(self):
        for mode in (0o666, 0o644, 0o640, 0o604, 0o660):
            rc, log = self.start_with_mode(mode)
            self.assertEqual(rc, 3, "mode %o: %s" % (mode, log))
            self.assertRegex(log, r"config\.toml:\d+:\d+: TSIG key file (/\S+/lego\.key): "
                                  r"(readable|writable) by other users \(mode %04o\); "
                                  r"run: chmod 600 \1" % mode)
            self.assertNotIn("ready:", log)

    def test_owner_only_accepted(self):
        for mode in (0o600, 0o400):
            rc, log = self.start_with_mode(mode, wait=2)
            self.assertIsNone(rc, "mode %o: %s" % (mode, log))
            self.assertIn("ready:", log)

    def test_reload_with_a_readable_key_keeps_serving(self):
        srv = Server(BASE_CONFIG + KEY_FILE_CONFIG, {"acme.zone": ZONE})
        try:
            srv.write("lego.key", SECRET, 0o600)
            srv.start()
            os.chmod(srv.path("lego.key"), 0o644)
            srv.send_signal(signal.SIGHUP)
            srv.wait_log(r"TSIG key file .*lego\.key: readable by other users \(mode 0644\)")
            r = srv.query("acme.example.", "SOA")
            self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
