# SPDX-License-Identifier: MIT
"""A snapshot an outgoing transfer holds is patched, not rebuilt (issue #26.1).

A slow secondary starts an AXFR of a signed ACME zone big enough not to fit
in the socket buffers (its receive buffer is 4 kB), reads the first message
and stops reading: the transfer holds the snapshot.  UPDATEs then add and
delete records: each is answered NOERROR, the log says the snapshot was
patched (before issue #26 it said "rebuilt": the whole zone was built again
on the loop), and the answers are exact before and after.  The slow reader
then reads on: its transfer is the zone as it was when it started (its serial
at both ends, the seed records only, every record once), and the log line
that ends it names that serial.  UPDATEs that come while the transfer is
still listing the zone (a name per loop round, by a test hook) patch it too,
and the list goes on with the version it began with.

A reload while such a transfer holds the snapshot: the old configuration is
let go of on the loop and freed on the builder's reaper thread (issue #26:
0.7 s on the loop at 100 000 records before) while the transfer still sends
the old snapshot; the reader gets it whole and exact, and the new
configuration answers (and takes an UPDATE) meanwhile."""
import base64
import re
import signal
import socket
import struct
import time
import unittest

import dns.message
import dns.name
import dns.rdata
import dns.rdataclass
import dns.query
import dns.rcode
import dns.rdatatype

from harness import main, needs_test_hooks
from acme_helpers import TsigKey, signed_acme_server, signed_update

SECRET = "cGlubmVkLXNlY3JldC1waW5uZWQtc2VjcmV0LTEyMzQ1Njc4OTA="
APEX = "pin.example.net"
NAMES = 12000

ZONE = """$ORIGIN pin.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
_acme-challenge.www IN TXT "seed"
""" + "".join('n%05d IN TXT "seed record %05d, long enough to fill the buffers"\n' % (i, i)
              for i in range(NAMES))

KEY = TsigKey(APEX + ".", "hmac-sha256", base64.b64decode(SECRET))
ZONE_LINES = 'axfr_policy = "AllowAll"\n'
STORE = "max_records = 100000\n"


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise AssertionError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def read_message(s):
    """One message of the transfer as (owner, type, rdata bytes) tuples,
    walked by hand: dnspython takes seconds for 48 000 records."""
    (length,) = struct.unpack("!H", recv_exact(s, 2))
    wire = recv_exact(s, length)
    (qd, an) = struct.unpack("!HH", wire[4:8])
    pos = 12
    for _ in range(qd):
        _, used = dns.name.from_wire(wire, pos)
        pos += used + 4
    out = []
    for _ in range(an):
        owner, used = dns.name.from_wire(wire, pos)
        pos += used
        rtype, _, _, rdlen = struct.unpack("!HHIH", wire[pos:pos + 10])
        pos += 10
        out.append((owner.to_text(), rtype, wire[pos:pos + rdlen]))
        pos += rdlen
    return out


def soa_serial(rdata):
    return struct.unpack("!I", rdata[-20:-16])[0]


def txt_text(rdata):
    return dns.rdata.from_wire(dns.rdataclass.IN, dns.rdatatype.TXT, rdata, 0, len(rdata)).to_text()


class PinnedSnapshotPatched(unittest.TestCase):

    def update(self, srv, add=(), delete=()):
        r = signed_update(srv, APEX, KEY, add=[(n, 120, "TXT", d) for n, d in add],
                          delete=[(n, "TXT", d) for n, d in delete], tcp=True, timeout=10)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR", srv.log_since_start()[-2000:])

    def txt(self, srv, name):
        r = srv.query(name, "TXT", dnssec=True)
        return (dns.rcode.to_text(r.rcode()),
                sorted(rd.to_text() for rrset in r.answer for rd in rrset
                       if rrset.rdtype == dns.rdatatype.TXT),
                sorted(rrset.ttl for rrset in r.answer if rrset.rdtype == dns.rdatatype.TXT),
                [rrset.rdtype for rrset in r.answer])

    def serial(self, srv):
        return srv.query(APEX + ".", "SOA").answer[0][0].serial

    def hold_axfr(self, srv):
        """The slow secondary: a 4 kB receive window, one message read."""
        slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(("127.0.0.1", srv.port))
        q = dns.message.make_query(APEX + ".", "AXFR").to_wire()
        slow.sendall(struct.pack("!H", len(q)) + q)
        return slow, read_message(slow)

    def read_rest(self, slow, first):
        records = first
        while sum(r[1] == dns.rdatatype.SOA for r in records) < 2:
            records += read_message(slow)
        return records

    def test_reload_while_a_transfer_holds_the_snapshot(self):
        srv = signed_acme_server(APEX, KEY, ZONE, ZONE_LINES, STORE)
        slow = None
        try:
            srv.start()
            s0 = self.serial(srv)
            slow, first = self.hold_axfr(srv)
            self.assertEqual(soa_serial(first[0][2]), s0)
            srv.wait_log(r"transfer of pin\.example\.net\. \(serial %d\) to 127\.0\.0\.1: %d records "
                         r"listed" % (s0, 4 * NAMES + 13))
            srv.send_signal(signal.SIGHUP)
            srv.wait_log(r"info: reloaded: 1 zone\n", timeout=60)
            srv.wait_log(r"info: reload: the previous configuration was freed in \d+ ms beside the "
                         r"running one\n", timeout=30)
            # The new configuration serves (every signature taken from the
            # signer's cache: the same serial, no bump) and takes changes;
            # the transfer has not ended.
            s1 = self.serial(srv)
            self.assertEqual(s1, s0)
            www = "_acme-challenge.www.%s." % APEX
            self.update(srv, add=[(www, '"after the reload"')])
            self.assertEqual(self.txt(srv, www),
                             ("NOERROR", ['"after the reload"', '"seed"'], [120],
                              [dns.rdatatype.TXT, dns.rdatatype.RRSIG]))
            self.assertNotRegex(srv.log_since_start(),
                                r"AXFR of pin\.example\.net\. \(serial \d+\) to \S+: \d+ records|cut short")

            # The reader reads on: the old snapshot, whole, every record once.
            records = self.read_rest(slow, first)
            slow.close()
            slow = None
            self.assertEqual([soa_serial(r[2]) for r in records if r[1] == dns.rdatatype.SOA],
                             [s0, s0])
            txt = {(r[0], txt_text(r[2])) for r in records if r[1] == dns.rdatatype.TXT}
            self.assertEqual(len(txt), NAMES + 1)
            self.assertIn((www, '"seed"'), txt)
            self.assertNotIn((www, '"after the reload"'), txt)
            self.assertEqual(len(records[1:-1]), len(set(records[1:-1])))
            self.assertEqual(len([r for r in records if r[1] == dns.rdatatype.NSEC]), NAMES + 2)
            self.assertEqual(len([r for r in records if r[1] == dns.rdatatype.RRSIG]),
                             2 * (NAMES + 1) + 4)
            srv.wait_log(r"AXFR of pin\.example\.net\. \(serial %d\) to 127\.0\.0\.1: %d records"
                         % (s0, len(records)))
            self.assertEqual(srv.stop(), 0)
        finally:
            if slow:
                slow.close()
            srv.cleanup()

    def test_update_while_a_transfer_holds_the_snapshot(self):
        srv = signed_acme_server(APEX, KEY, ZONE, ZONE_LINES, STORE)
        slow = None
        try:
            srv.start()
            www = "_acme-challenge.www.%s." % APEX
            # Secondaries copy it: the start's signing has a serial of its own.
            s0 = self.serial(srv)
            self.assertEqual(self.txt(srv, www),
                             ("NOERROR", ['"seed"'], [3600], [dns.rdatatype.TXT, dns.rdatatype.RRSIG]))

            # The slow secondary: a 4 kB receive window, one message read.
            slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            slow.connect(("127.0.0.1", srv.port))
            q = dns.message.make_query(APEX + ".", "AXFR").to_wire()
            slow.sendall(struct.pack("!H", len(q)) + q)
            first = read_message(slow)
            # Listed in slices of about 1 024 names, one per loop round (issue
            # #26): 12 003 names (the apex, www, its _acme-challenge, the n names).
            srv.wait_log(r"transfer of pin\.example\.net\. \(serial %d\) to 127\.0\.0\.1: %d records "
                         r"listed in 1[0-9] loop rounds \(0 patches applied meanwhile\)"
                         % (s0, 4 * NAMES + 13))
            self.assertEqual(first[0][1], dns.rdatatype.SOA)
            self.assertEqual(soa_serial(first[0][2]), s0)

            self.update(srv, add=[(www, '"token one"'), ("new.%s." % APEX, '"a new name"')])
            self.update(srv, delete=[(www, '"seed"'), ("n00007.%s." % APEX,
                                      '"seed record 00007, long enough to fill the buffers"')])
            log = srv.log_since_start()
            # The transfer is still under way: it has not ended (nor been cut).
            self.assertNotRegex(log, r"AXFR of pin\.example\.net\. \(serial \d+\) to \S+: \d+ records|"
                                     r"cut short")
            self.assertEqual(len(re.findall(r"serial \d+, snapshot patched in", log)), 2, log[-3000:])
            self.assertNotIn("snapshot rebuilt", log)

            self.assertEqual(self.serial(srv), s0 + 2)
            self.assertEqual(self.txt(srv, www),
                             ("NOERROR", ['"token one"'], [120], [dns.rdatatype.TXT, dns.rdatatype.RRSIG]))
            self.assertEqual(self.txt(srv, "new.%s." % APEX),
                             ("NOERROR", ['"a new name"'], [120], [dns.rdatatype.TXT, dns.rdatatype.RRSIG]))
            gone = srv.query("n00007.%s." % APEX, "TXT", dnssec=True)
            self.assertEqual(dns.rcode.to_text(gone.rcode()), "NXDOMAIN")
            self.assertEqual(gone.answer, [])

            # The slow secondary reads on: the zone as it was at serial s0.
            records = first
            while sum(r[1] == dns.rdatatype.SOA for r in records) < 2:
                records += read_message(slow)
            slow.close()
            slow = None
            self.assertEqual(records[0][1], dns.rdatatype.SOA)
            self.assertEqual(records[-1][1], dns.rdatatype.SOA)
            self.assertEqual([soa_serial(r[2]) for r in records if r[1] == dns.rdatatype.SOA],
                             [s0, s0])
            txt = {(r[0], txt_text(r[2])) for r in records if r[1] == dns.rdatatype.TXT}
            self.assertEqual(len(txt), NAMES + 1)
            self.assertIn((www, '"seed"'), txt)
            self.assertNotIn((www, '"token one"'), txt)
            self.assertIn(("n00007.%s." % APEX, '"seed record 00007, long enough to fill the buffers"'),
                          txt)
            self.assertFalse(any(n.startswith("new.") for n, _ in txt))
            # Every record once: the RRSIGs and NSECs of the names as they were.
            self.assertEqual(len(records[1:-1]), len(set(records[1:-1])))
            nsec = [r for r in records if r[1] == dns.rdatatype.NSEC]
            self.assertEqual(len(nsec), NAMES + 2)   # the apex, www's and every n
            self.assertEqual(len([r for r in records if r[1] == dns.rdatatype.RRSIG]),
                             2 * (NAMES + 1) + 4)     # TXT and NSEC; apex SOA, NS, DNSKEY, NSEC
            srv.wait_log(r"AXFR of pin\.example\.net\. \(serial %d\) to 127\.0\.0\.1: %d records" % (s0, len(records)))
            self.assertEqual(srv.stop(), 0)
        finally:
            if slow:
                slow.close()
            srv.cleanup()

    @needs_test_hooks
    def test_updates_while_the_transfer_is_listed(self):
        """UPDATEs patch the snapshot while the AXFR is still listing it (a
        name per loop round here: GEOACME_TEST_XFR_LIST_SLICE): the list
        goes on where it was (issue #26: it started over, and after three
        patches listed the rest in one long loop round) and is still the
        zone as it was when the transfer began."""
        srv = signed_acme_server(APEX, KEY, ZONE, ZONE_LINES, STORE,
                                 env={"GEOACME_TEST_XFR_LIST_SLICE": "1"})
        slow = None
        try:
            srv.start()
            www = "_acme-challenge.www.%s." % APEX
            s0 = self.serial(srv)
            slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            slow.connect(("127.0.0.1", srv.port))
            q = dns.message.make_query(APEX + ".", "AXFR").to_wire()
            slow.sendall(struct.pack("!H", len(q)) + q)
            # The transfer has begun (its first slice is listed at once);
            # the rest takes some 10 000 loop rounds.
            started = r"AXFR of pin\.example\.net\. \(serial %d\) to 127\.0\.0\.1" % s0
            deadline = time.time() + 10
            while not re.search(started, srv.log_since_start()) and time.time() < deadline:
                time.sleep(0.002)
            self.update(srv, add=[(www, '"token one"'), ("new.%s." % APEX, '"a new name"')])
            self.update(srv, delete=[(www, '"seed"'), ("n00007.%s." % APEX,
                                      '"seed record 00007, long enough to fill the buffers"')])
            self.update(srv, add=[("n00008.%s." % APEX, '"one more"')])
            srv.wait_log(r"transfer of pin\.example\.net\. \(serial %d\) to 127\.0\.0\.1: %d records "
                         r"listed in \d+ loop rounds \(\d+ patch(es)? applied meanwhile\)"
                         % (s0, 4 * NAMES + 13), timeout=60)
            m = re.search(r"records listed in (\d+) loop rounds \((\d+) patch", srv.log_since_start())
            self.assertGreater(int(m.group(1)), 5000)
            self.assertGreaterEqual(int(m.group(2)), 1, "no UPDATE came while the list was made")
            self.assertEqual(self.serial(srv), s0 + 3)
            self.assertEqual(self.txt(srv, www),
                             ("NOERROR", ['"token one"'], [120], [dns.rdatatype.TXT, dns.rdatatype.RRSIG]))

            records = self.read_rest(slow, read_message(slow))
            slow.close()
            slow = None
            self.assertEqual([soa_serial(r[2]) for r in records if r[1] == dns.rdatatype.SOA],
                             [s0, s0])
            txt = {(r[0], txt_text(r[2])) for r in records if r[1] == dns.rdatatype.TXT}
            self.assertEqual(len(txt), NAMES + 1)
            self.assertIn((www, '"seed"'), txt)
            self.assertNotIn((www, '"token one"'), txt)
            self.assertIn(("n00007.%s." % APEX, '"seed record 00007, long enough to fill the buffers"'),
                          txt)
            self.assertIn(("n00008.%s." % APEX, '"seed record 00008, long enough to fill the buffers"'),
                          txt)
            self.assertNotIn(("n00008.%s." % APEX, '"one more"'), txt)
            self.assertFalse(any(n.startswith("new.") for n, _ in txt))
            self.assertEqual(len(records[1:-1]), len(set(records[1:-1])))
            self.assertEqual(len([r for r in records if r[1] == dns.rdatatype.NSEC]), NAMES + 2)
            self.assertEqual(len([r for r in records if r[1] == dns.rdatatype.RRSIG]),
                             2 * (NAMES + 1) + 4)
            srv.wait_log(r"AXFR of pin\.example\.net\. \(serial %d\) to 127\.0\.0\.1: %d records"
                         % (s0, len(records)))
            self.assertEqual(srv.stop(), 0)
        finally:
            if slow:
                slow.close()
            srv.cleanup()


if __name__ == "__main__":
    main()
