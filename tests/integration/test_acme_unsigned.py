# SPDX-License-Identifier: MIT
"""An unsigned ACME zone is patched per UPDATE, not built whole (issue #26.1).

Without `dnssec` for the zone every UPDATE and every purge built the whole
snapshot on the loop: at 100 000 names, a long silent round per Lego TXT
record.  Now the unsigned snapshot keeps its names in order and is patched
like a signed one, with nothing to sign:

- UPDATEs that add a name below a new empty non-terminal, add to a name,
  delete a record and empty a name (its empty non-terminals going with it)
  are each logged "patched", never "rebuilt", and answered exactly (no
  RRSIG, no NSEC: the zone is unsigned);
- an IXFR from before them, applied to the AXFR taken then, gives exactly
  the zone an AXFR gives now (the journal's entries are the patches'
  differences);
- a compaction (forced by GEOACME_TEST_COMPACT_BYTES, held on its thread by
  GEOACME_TEST_COMPACT_DELAY_MS) runs beside the loop for the unsigned zone
  too: UPDATEs sent meanwhile are acknowledged and served at once from the
  old snapshot, patched; after the silent swap (same records, same serial)
  every one is still served, and the IXFR still gives the AXFR.
"""
import os
import re
import unittest

import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsigkeyring
import dns.update

from harness import BASE_CONFIG, Server, main, needs_test_hooks
from acme_helpers import TransferChecks

SECRET = "dW5zaWduZWQtcGF0Y2gtc2VjcmV0LXVuc2lnbmVkLXBhdGNoLTE="
APEX = "plain.example.net"
NAMES = 30

ZONE = """$ORIGIN plain.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
""" + "".join('n%03d IN TXT "seed %03d"\n' % (i, i) for i in range(NAMES))

CONFIG = """
[[zones]]
zone = "plain.example.net"
zone_type = "Primary"
axfr_policy = "AllowAll"
[zones.stores]
type = "sqlite"
allow_update = true
max_records = 100000
journal_path = "acme.sqlite"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "plain.example.net."
algorithm = "hmac-sha256"
secret = "%s"
""" % SECRET

SWAPPED = r"plain\.example\.net\.: compacted beside the loop"


def name(label):
    return "%s.%s." % (label, APEX)


@needs_test_hooks
class UnsignedPatch(TransferChecks, unittest.TestCase):
    APEX = APEX

    def update(self, srv, add=(), delete=()):
        keyring = dns.tsigkeyring.from_text({APEX + ".": SECRET})
        up = dns.update.UpdateMessage(APEX, keyring=keyring, keyalgorithm="hmac-sha256")
        for owner, data in add:
            up.add(owner, 120, "TXT", data)
        for owner, data in delete:
            if data is None:
                up.delete(owner)
            else:
                up.delete(owner, "TXT", data)
        r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=30)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR", srv.log_since_start()[-3000:])

    def txt(self, srv, owner):
        r = srv.query(owner, "TXT", dnssec=True, tcp=True)
        return (dns.rcode.to_text(r.rcode()),
                sorted(rd.to_text() for rrset in r.answer for rd in rrset),
                sorted(dns.rdatatype.to_text(rrset.rdtype)
                       for section in (r.answer, r.authority) for rrset in section))

    def serial(self, srv):
        return srv.query(APEX + ".", "SOA").answer[0][0].serial

    def start(self, env=None):
        srv = Server(BASE_CONFIG + CONFIG, {"acme.zone": ZONE}, ready_timeout=60,
                     env=dict(os.environ, **(env or {})))
        srv.start()
        return srv

    def snapshots(self, srv):
        return re.findall(r"update for plain\.example\.net\. from key \S+: .*; serial (\d+), "
                          r"snapshot (\w+)", srv.log_since_start())

    def test_updates_patched(self):
        srv = self.start()
        try:
            s0 = self.serial(srv)
            before = self.axfr(srv)
            self.update(srv, add=[(name("_acme-challenge.www.deep"), '"token"')])
            self.update(srv, add=[(name("n001"), '"one bis"')])
            self.update(srv, delete=[(name("n002"), '"seed 002"')])
            self.update(srv, delete=[(name("_acme-challenge.www.deep"), None)],
                        add=[(name("late"), '"late"')])
            self.assertEqual(self.snapshots(srv),
                             [(str(s0 + k), "patched") for k in range(1, 5)])
            self.assertEqual(
                [self.txt(srv, name(n)) for n in ("n001", "n002", "late", "www.deep",
                                                  "_acme-challenge.www.deep", "deep")],
                [("NOERROR", ['"one bis"', '"seed 001"'], ["TXT"]),
                 ("NXDOMAIN", [], ["SOA"]),
                 ("NOERROR", ['"late"'], ["TXT"]),
                 ("NXDOMAIN", [], ["SOA"]),
                 ("NXDOMAIN", [], ["SOA"]),
                 ("NXDOMAIN", [], ["SOA"])])
            self.assertEqual(self.serial(srv), s0 + 4)
            now = self.axfr(srv)
            self.assertFalse([r for r in now if r[1] in (dns.rdatatype.RRSIG,
                                                         dns.rdatatype.NSEC)])
            self.assertEqual(len([r for r in now if r[1] == dns.rdatatype.TXT]), NAMES + 1)
            self.assert_ixfr_gives(srv, before, s0, now)
            self.assertNotRegex(srv.log_since_start(), r"building it whole|rebuilt")
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()

    def test_updates_during_a_compaction(self):
        srv = self.start({"GEOACME_TEST_COMPACT_BYTES": "1",
                          "GEOACME_TEST_COMPACT_DELAY_MS": "4000"})
        try:
            s0 = self.serial(srv)
            before = self.axfr(srv)
            # The first UPDATE is patched and grows the snapshot; the second
            # finds the growth due and starts the compaction.
            self.update(srv, add=[(name("x1"), '"one"')])
            self.update(srv, add=[(name("x2"), '"two"')])
            srv.wait_log(r"plain\.example\.net\.: compacting the snapshot beside the loop")
            self.update(srv, add=[(name("x3"), '"three"'), (name("n005"), '"five bis"')])
            self.update(srv, delete=[(name("n007"), '"seed 007"')])
            expect = [("NOERROR", ['"one"'], ["TXT"]),
                      ("NOERROR", ['"two"'], ["TXT"]),
                      ("NOERROR", ['"three"'], ["TXT"]),
                      ("NOERROR", ['"five bis"', '"seed 005"'], ["TXT"]),
                      ("NXDOMAIN", [], ["SOA"])]
            labels = ("x1", "x2", "x3", "n005", "n007")
            answers = [self.txt(srv, name(n)) for n in labels]
            self.assertNotRegex(srv.log_since_start(), SWAPPED,
                                "the compaction swapped in before the UPDATEs were queried")
            self.assertEqual(answers, expect)
            self.assertEqual(self.serial(srv), s0 + 4)
            srv.wait_log(SWAPPED + r": \d+ records built and signed in \d+ ms, 3 commits made "
                         r"meanwhile patched in, swapped in on the loop in [0-9.]+ ms \(the same "
                         r"signatures, the same serial\)", timeout=60)
            self.assertEqual([self.txt(srv, name(n)) for n in labels], expect)
            self.assertEqual(self.serial(srv), s0 + 4)
            self.assertEqual(self.snapshots(srv),
                             [(str(s0 + k), "patched") for k in range(1, 5)])
            self.assert_ixfr_gives(srv, before, s0, self.axfr(srv))
            self.assertNotRegex(srv.log_since_start(), r"rebuilt|compaction failed|dropped")
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
