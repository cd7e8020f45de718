# SPDX-License-Identifier: MIT
"""A change a patch cannot make is built beside the loop (issue #26).

Glue (a name below a zone cut) cannot be patched into a served snapshot
(core/zone/zone_patch.h): the snapshot is built whole.  That build took
seconds on the loop at 100 000 signed names.  Now the change is committed,
the snapshot built and signed beside the loop as a compaction is, and
swapped in on the loop; the UPDATE's NOERROR waits for the swap, so a
client that got it can query its change.  The test hook
GEOACME_TEST_COMPACT_DELAY_MS holds the built snapshot on its thread:

- an UPDATE adding a delegation with its DS and glue is not answered while
  the build is held, and the zone is answered as it was (the serial too);
  a second UPDATE sent meanwhile waits its turn (the log says so), and both
  are answered NOERROR, in order, serials one after the other;
- then the referral is exact (RFC 4035 3.1.4: no AA, NS, DS and its RRSIG
  in the authority, the glue in the additional, unsigned), the DS is
  answered with AA, the glue has no NSEC (the cut's NSEC lists NS DS RRSIG
  NSEC), a name below the cut added later is a referral too;
- secondaries: the history goes on across such a change (the build beside
  the loop computes its difference from the served snapshot and the swap
  journals it): an IXFR from before it is a difference, and applied to the
  zone as it was gives the zone as it is; so is one across a later change
  below the cut and a plain change after it."""
import base64
import re
import threading
import unittest

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

from harness import main, needs_test_hooks
from acme_helpers import TransferChecks, TsigKey, signed_acme_server, signed_update

SECRET = "Y3V0YnVpbGQtc2VjcmV0LWN1dGJ1aWxkLXNlY3JldC0xMjM0NTY="
APEX = "cut.example.net"

ZONE = """$ORIGIN cut.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
www IN A 192.0.2.1
zzz IN TXT "last"
"""

KEY = TsigKey(APEX + ".", "hmac-sha256", base64.b64decode(SECRET),
              policy='allow_types = ["TXT", "NS", "DS", "A"]\n')
ZONE_LINES = 'axfr_policy = "AllowAll"\n'
DS = "12345 13 2 " + "ab" * 32
BUILDING = r"cut\.example\.net\.: building the snapshot with the committed change beside the loop"
SWAPPED = r"cut\.example\.net\.: built with the committed change beside the loop"


def name(label):
    return "%s.%s." % (label, APEX) if label else APEX + "."


def section(msg, which):
    """A section as sorted 'name ttl type rdata' lines (RRSIGs by type covered)."""
    out = []
    for rrset in getattr(msg, which):
        if rrset.rdtype == dns.rdatatype.OPT:
            continue
        for rd in rrset:
            text = ("RRSIG %s" % dns.rdatatype.to_text(rd.type_covered)
                    if rrset.rdtype == dns.rdatatype.RRSIG else
                    "%s %s" % (dns.rdatatype.to_text(rrset.rdtype), rd.to_text()))
            out.append("%s %d %s" % (rrset.name, rrset.ttl, text))
    return sorted(out)


@needs_test_hooks
class CutBuild(TransferChecks, unittest.TestCase):
    APEX = APEX

    def update(self, srv, add=(), delete=()):
        r = signed_update(srv, APEX, KEY, add=add, delete=delete, tcp=True, timeout=60)
        return dns.rcode.to_text(r.rcode())

    def ask(self, srv, label, rdtype):
        q = dns.message.make_query(name(label), rdtype, want_dnssec=True, payload=4096)
        q.flags &= ~dns.flags.RD
        return dns.query.tcp(q, "127.0.0.1", port=srv.port, timeout=5)

    def serial(self, srv):
        return self.ask(srv, "", "SOA").answer[0][0].serial

    def assert_referral(self, srv, label):
        m = self.ask(srv, label, "A")
        self.assertEqual(dns.rcode.to_text(m.rcode()), "NOERROR", label)
        self.assertFalse(m.flags & dns.flags.AA, label)
        self.assertEqual(section(m, "answer"), [], label)
        self.assertEqual(section(m, "authority"), [
            "child.cut.example.net. 3600 DS " + DS,
            "child.cut.example.net. 3600 NS ns.child.cut.example.net.",
            "child.cut.example.net. 3600 RRSIG DS",
        ], label)
        self.assertEqual(section(m, "additional"),
                         ["ns.child.cut.example.net. 3600 A 192.0.2.53"], label)

    def test_glue_built_beside_the_loop(self):
        srv = signed_acme_server(APEX, KEY, ZONE, ZONE_LINES,
                                 env={"GEOACME_TEST_COMPACT_DELAY_MS": "3000"})
        srv.start()
        try:
            s0 = self.serial(srv)
            zone0 = self.axfr(srv)
            results = {}

            def send(key, **kw):
                results[key] = self.update(srv, **kw)

            cut = threading.Thread(target=send, args=("cut",), kwargs={"add": [
                (name("child"), 3600, "NS", "ns.child.%s." % APEX),
                (name("child"), 3600, "DS", DS),
                (name("ns.child"), 3600, "A", "192.0.2.53")]})
            cut.start()
            srv.wait_log(BUILDING)
            after = threading.Thread(target=send, args=("after",), kwargs={
                "add": [(name("after"), 120, "TXT", '"after"')]})
            after.start()
            srv.wait_log(r"update for cut\.example\.net\. waits while the snapshot with a "
                         r"committed change is built beside the loop")
            # Held: the zone is answered as it was, no reply yet.
            meanwhile = [dns.rcode.to_text(self.ask(srv, label, "A").rcode())
                         for label in ("child", "ns.child", "after", "www")]
            serial = self.serial(srv)
            self.assertNotRegex(srv.log_since_start(), SWAPPED,
                                "swapped in before the zone was queried")
            self.assertEqual(results, {})
            self.assertEqual(meanwhile, ["NXDOMAIN", "NXDOMAIN", "NXDOMAIN", "NOERROR"])
            self.assertEqual(serial, s0)
            cut.join(60)
            after.join(60)
            self.assertEqual(results, {"cut": "NOERROR", "after": "NOERROR"})
            log = srv.log_since_start()
            self.assertRegex(log, SWAPPED + r": \d+ records built and signed in \d+ ms, 0 commits "
                             r"made meanwhile patched in, swapped in on the loop in [0-9.]+ ms, "
                             r"serial %d -> %d \(the IXFR history goes on: \d+ bytes of difference\)"
                             % (s0, s0 + 1))
            done = re.findall(r"update for cut\.example\.net\. from key \S+: (\S+).*; serial "
                              r"(\d+), snapshot (to be built beside|patched)", log)
            self.assertEqual(done, [("+child.cut.example.net.", str(s0 + 1), "to be built beside"),
                                    ("+after.cut.example.net.", str(s0 + 2), "patched")])
            self.assertEqual(self.serial(srv), s0 + 2)

            # The delegation, exactly (RFC 4035 3.1.4), and the data beside it.
            for label in ("child", "x.child", "ns.child"):
                self.assert_referral(srv, label)
            m = self.ask(srv, "child", "DS")
            self.assertTrue(m.flags & dns.flags.AA)
            self.assertEqual(section(m, "answer"), ["child.cut.example.net. 3600 DS " + DS,
                                                    "child.cut.example.net. 3600 RRSIG DS"])
            m = self.ask(srv, "after", "TXT")
            self.assertEqual(section(m, "answer"), ['after.cut.example.net. 120 RRSIG TXT',
                                                    'after.cut.example.net. 120 TXT "after"'])
            zone = self.axfr(srv)
            nsec = sorted((o, t) for o, ty, _, t in zone if ty == dns.rdatatype.NSEC)
            # (A transfer's names are relative to the apex.)
            self.assertEqual(nsec, [
                ("@", "after NS SOA RRSIG NSEC DNSKEY"),
                ("after", "child TXT RRSIG NSEC"),
                ("child", "www NS DS RRSIG NSEC"),
                ("www", "zzz A RRSIG NSEC"),
                ("zzz", "@ TXT RRSIG NSEC"),
            ])
            # The glue and the cut's NS are not signed; the DS is.
            signed = {(o, t.split()[0]) for o, ty, _, t in zone if ty == dns.rdatatype.RRSIG}
            self.assertIn(("child", "DS"), signed)
            self.assertNotIn(("child", "NS"), signed)
            self.assertNotIn(("ns.child", "A"), signed)
            self.assertIn(("ns.child", dns.rdatatype.A, 3600, "192.0.2.53"), zone)
            # The history went on across the change: an IXFR from before it
            # is a difference that turns the zone as it was into this one.
            self.assert_ixfr_gives(srv, zone0, s0, zone)

            # A name below the cut, later: built beside the loop, answered
            # once served, a difference too; then a plain change.
            self.assertEqual(self.update(srv, add=[(name("deep.ns.child"), 3600, "A",
                                                    "192.0.2.54")]), "NOERROR")
            self.assert_referral(srv, "deep.ns.child")
            base, s3 = self.axfr(srv), self.serial(srv)
            self.assertEqual(s3, s0 + 3)
            self.assertIn(("deep.ns.child", dns.rdatatype.A, 3600, "192.0.2.54"),
                          base)
            self.assertEqual(self.update(srv, add=[(name("zzz"), 3600, "TXT", '"more"')]),
                             "NOERROR")
            self.assert_ixfr_gives(srv, base, s3, self.axfr(srv))
            self.assert_ixfr_gives(srv, zone, s0 + 2, self.axfr(srv))
            self.assertNotRegex(srv.log_since_start(), r"snapshot rebuilt|on the loop instead")
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
