# SPDX-License-Identifier: MIT
"""A large UPDATE committed in stages (issue #26.1, acme/staged.h).

Its signatures made ahead, a 2 000-record UPDATE was still committed in one
loop round of about 24 ms.  Now its records are written in slices in one
open SQLite transaction while it is held, then the commit and the patch
come in one round.  The test hook GEOACME_TEST_STAGED_HOLD_MS holds that
transaction open halfway through, and meanwhile:

- queries get the zone as it was (none of the new names), the serial has
  not moved, and an IXFR from it has nothing to send (RFC 2136 3.7);
- a small UPDATE sent meanwhile waits, and is answered after the large one,
  with the next serial;
- afterwards both are served, signed, and an IXFR from before gives
  exactly the zone an AXFR gives now;
- killed (kill -9) there, before its NOERROR, and started again, the zone
  holds none of the large UPDATE: the open transaction's pages are in the
  WAL, uncommitted, and the restart ignores them.
"""
import base64
import os
import re
import threading
import unittest

import dns.rcode
import dns.rdatatype

from harness import main, needs_test_hooks
from acme_helpers import TransferChecks, TsigKey, ixfr_soas, signed_acme_server, signed_update

SECRET = "c3RhZ2VkLWNvbW1pdC1zZWNyZXQtc3RhZ2VkLWNvbW1pdC0xMjM="
APEX = "staged.example.net"
NAMES = 20
BIG = 2000

ZONE = """$ORIGIN staged.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
""" + "".join('n%03d IN TXT "seed %03d"\n' % (i, i) for i in range(NAMES))

KEY = TsigKey(APEX + ".", "hmac-sha256", base64.b64decode(SECRET))
ZONE_LINES = 'axfr_policy = "AllowAll"\n'
STORE = "max_records = 100000\n"

HALFWAY = r"staged\.example\.net\.: a large UPDATE's commit waits \d+ ms with \d+ of its \d+ records"


def name(label):
    return "%s.%s." % (label, APEX)


BIG_ADDS = [(name("b%04d" % i), '"v%d"' % i) for i in range(BIG)]


@needs_test_hooks
class StagedCommit(TransferChecks, unittest.TestCase):
    APEX = APEX

    def update(self, srv, add=(), timeout=60):
        r = signed_update(srv, APEX, KEY, add=[(n, 120, "TXT", d) for n, d in add], tcp=True,
                          timeout=timeout)
        return dns.rcode.to_text(r.rcode())

    def txt(self, srv, owner):
        r = srv.query(owner, "TXT", dnssec=True, tcp=True)
        return (dns.rcode.to_text(r.rcode()),
                sorted(rd.to_text() for rrset in r.answer for rd in rrset
                       if rrset.rdtype == dns.rdatatype.TXT),
                sorted(dns.rdatatype.to_text(rrset.rdtype) for rrset in r.answer))

    def serial(self, srv):
        return srv.query(APEX + ".", "SOA").answer[0][0].serial

    def send(self, srv, results, key, adds):
        def run():
            try:
                results[key] = self.update(srv, add=adds)
            except Exception as e:   # a timeout when the server is killed
                results[key] = type(e).__name__
        t = threading.Thread(target=run)
        t.start()
        return t

    def test_held_halfway(self):
        srv = signed_acme_server(APEX, KEY, ZONE, ZONE_LINES, STORE,
                                 env={"GEOACME_TEST_STAGED_HOLD_MS": "5000"})
        srv.start()
        try:
            s0 = self.serial(srv)
            before = self.axfr(srv)
            results = {}
            first = self.send(srv, results, "big", BIG_ADDS)
            srv.wait_log(HALFWAY, timeout=60)
            second = self.send(srv, results, "small", [(name("after"), '"after"')])
            srv.wait_log(r"update for staged\.example\.net\. waits while a large UPDATE is "
                         r"committed in stages")
            meanwhile = [self.txt(srv, name("b0000")), self.txt(srv, name("b1999")),
                         self.txt(srv, name("after")), self.txt(srv, name("n001"))]
            soas, _ = ixfr_soas(srv, APEX, s0)
            self.assertNotRegex(srv.log_since_start(), r"update for staged\.example\.net\. from key",
                                "an UPDATE was committed before the zone was queried")
            self.assertEqual(meanwhile, [("NXDOMAIN", [], []), ("NXDOMAIN", [], []),
                                         ("NXDOMAIN", [], []),
                                         ("NOERROR", ['"seed 001"'], ["RRSIG", "TXT"])])
            self.assertEqual(self.serial(srv), s0)
            self.assertEqual(soas, [s0], "an IXFR from the served serial has nothing to send")
            first.join(60)
            second.join(60)
            self.assertEqual(results, {"big": "NOERROR", "small": "NOERROR"})
            done = re.findall(r"update for staged\.example\.net\. from key \S+: (\S+).*; serial "
                              r"(\d+), snapshot (\w+) in [0-9.]+ ms \(SQLite commit [0-9.]+ ms\)"
                              r"(, in stages)?", srv.log_since_start())
            self.assertEqual(done, [("+b0000.staged.example.net.", str(s0 + 1), "patched",
                                     ", in stages"),
                                    ("+after.staged.example.net.", str(s0 + 2), "patched", "")])
            for i in (0, 1, 999, 1000, 1999):
                self.assertEqual(self.txt(srv, name("b%04d" % i)),
                                 ("NOERROR", ['"v%d"' % i], ["RRSIG", "TXT"]))
            self.assertEqual(self.serial(srv), s0 + 2)
            now = self.axfr(srv)
            txt = {r[0] for r in now if r[1] == dns.rdatatype.TXT}
            # Owners as the transfer gives them: relative to the apex.
            self.assertEqual(txt - {r[0] for r in before},
                             {"b%04d" % i for i in range(BIG)} | {"after"})
            self.assertEqual(len([r for r in now if r[1] == dns.rdatatype.NSEC]), NAMES + BIG + 2)
            self.assert_ixfr_gives(srv, before, s0, now)
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()

    def test_killed_halfway(self):
        srv = signed_acme_server(APEX, KEY, ZONE, ZONE_LINES, STORE,
                                 env={"GEOACME_TEST_STAGED_HOLD_MS": "60000"})
        srv.start()
        try:
            before = {r for r in self.axfr(srv) if r[1] == dns.rdatatype.TXT}
            wal = srv.path("acme.sqlite") + "-wal"
            wal_before = os.path.getsize(wal)
            results = {}
            first = self.send(srv, results, "big", BIG_ADDS)
            srv.wait_log(HALFWAY, timeout=60)
            # The slices' pages are in the WAL already, uncommitted
            # (storage/journal.c): a crash must ignore them.
            self.assertGreater(os.path.getsize(wal), wal_before + 16 * 4096)
            srv.kill9()
            first.join(70)
            self.assertNotEqual(results.get("big"), "NOERROR")
            srv.start()
            self.assertEqual(self.txt(srv, name("b0000")), ("NXDOMAIN", [], []))
            self.assertEqual({r for r in self.axfr(srv) if r[1] == dns.rdatatype.TXT}, before)
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
