# SPDX-License-Identifier: MIT
"""A build beside the loop that fails (issue #26).

A change a patch cannot make (here an NS and its glue added at a delegation
of a signed ACME zone: the glue is a name below a cut, zone_patch.h)
is committed, then its snapshot is built and signed beside the loop
(acme/compact.c); its NOERROR and the zone's later UPDATEs wait for the
swap.  The test hook GEOACME_TEST_CUT_FAIL drops that build as if memory
ran out:

- "beside": the build is made again on the loop (acme/commit.c
  cut_on_loop), which serves the change: the UPDATE gets NOERROR, the NS
  set and the serial are exact, the log names the failure and the build on
  the loop; a second UPDATE sent while the first is held (the build held on
  its thread by GEOACME_TEST_COMPACT_DELAY_MS) is answered NOERROR after
  it, the serials one after the other;
- "all": the build on the loop fails too: the UPDATE gets SERVFAIL, never
  NOERROR, whether the build failed before its commit was on disk (the
  reply still waited for the sync, which once sent NOERROR) or after; the
  old snapshot keeps serving (old delegation, old serial, other names
  exact); the zone's next change, one a patch would make, is not patched
  onto that snapshot but built whole again (SERVFAIL here too, nothing of
  it served); the changes are committed to the database, so a restart
  without the hook serves them."""
import base64
import os
import re
import threading
import unittest

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

from harness import main, needs_test_hooks
from acme_helpers import TsigKey, signed_acme_server, signed_update

SECRET = "Y3V0ZmFpbC1zZWNyZXQtY3V0ZmFpbC1zZWNyZXQtMTIzNDU2Nzg="
APEX = "cutfail.example.net"

ZONE = """$ORIGIN cutfail.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
child IN NS ns1.child
ns1.child IN A 192.0.2.53
www IN A 192.0.2.1
zzz IN TXT "last"
"""

KEY = TsigKey(APEX + ".", "hmac-sha256", base64.b64decode(SECRET),
              policy='allow_types = ["TXT", "NS", "A"]\n')
HOOK = "GEOACME_TEST_CUT_FAIL"
ZONE_LOG = r"cutfail\.example\.net\.: "
BUILDING = ZONE_LOG + r"building the snapshot with the committed change beside the loop"
FAILED = (ZONE_LOG + r"the build with the committed change failed \(out of memory "
          r"\(GEOACME_TEST_CUT_FAIL\)\)")
ON_LOOP = ZONE_LOG + r"building the snapshot with the committed change on the loop instead"
NOT_SERVED = (ZONE_LOG + r"the committed change cannot be served \(out of memory "
              r"\(GEOACME_TEST_CUT_FAIL\)\); its UPDATEs are answered SERVFAIL and the "
              r"previous snapshot keeps serving")
WAITS = (r"update for cutfail\.example\.net\. waits while the snapshot with a committed "
         r"change is built beside the loop")
# The referral to child (its authority and additional sections), before
# and after the UPDATE: the NSEC proves the cut has no DS.
NSEC = ["child.%s. 60 NSEC www.%s. NS RRSIG NSEC" % (APEX, APEX),
        "child.%s. 60 RRSIG NSEC" % APEX]
OLD = (sorted(["child.%s. 3600 NS ns1.child.%s." % (APEX, APEX)] + NSEC),
       ["ns1.child.%s. 3600 A 192.0.2.53" % APEX])
NEW = (sorted(["child.%s. 3600 NS ns1.child.%s." % (APEX, APEX),
               "child.%s. 3600 NS ns2.child.%s." % (APEX, APEX)] + NSEC),
       ["ns1.child.%s. 3600 A 192.0.2.53" % APEX,
        "ns2.child.%s. 3600 A 192.0.2.54" % APEX])
NEW3 = (sorted(NEW[0] + ["child.%s. 3600 NS ns3.child.%s." % (APEX, APEX)]),
        NEW[1] + ["ns3.child.%s. 3600 A 192.0.2.55" % APEX])
ADD_NS = [("child.%s." % APEX, 3600, "NS", "ns2.child.%s." % APEX),
          ("ns2.child.%s." % APEX, 3600, "A", "192.0.2.54")]
ADD_TXT = [("zzz.%s." % APEX, 3600, "TXT", '"more"')]
ADD_NS3 = [("child.%s." % APEX, 3600, "NS", "ns3.child.%s." % APEX),
           ("ns3.child.%s." % APEX, 3600, "A", "192.0.2.55")]


@needs_test_hooks
class CutFail(unittest.TestCase):

    def update(self, srv, add):
        r = signed_update(srv, APEX, KEY, add=add, tcp=True, timeout=60)
        return dns.rcode.to_text(r.rcode())

    def ask(self, srv, label, rdtype, which="answer"):
        """A section as sorted 'name ttl type rdata' lines (RRSIGs by type covered)."""
        qname = "%s.%s." % (label, APEX) if label else APEX + "."
        q = dns.message.make_query(qname, rdtype, want_dnssec=True, payload=4096)
        q.flags &= ~dns.flags.RD
        m = dns.query.tcp(q, "127.0.0.1", port=srv.port, timeout=5)
        self.assertEqual(dns.rcode.to_text(m.rcode()), "NOERROR", qname)
        return sorted("%s %d %s %s" % (rrset.name, rrset.ttl, dns.rdatatype.to_text(rrset.rdtype),
                                       dns.rdatatype.to_text(rd.type_covered)
                                       if rrset.rdtype == dns.rdatatype.RRSIG else rd.to_text())
                      for rrset in getattr(m, which) for rd in rrset
                      if rrset.rdtype != dns.rdatatype.OPT)

    def serial(self, srv):
        q = dns.message.make_query(APEX + ".", "SOA")
        return dns.query.tcp(q, "127.0.0.1", port=srv.port, timeout=5).answer[0][0].serial

    def delegation(self, srv):
        """The referral to child: its authority and additional sections."""
        return (self.ask(srv, "www.child", "A", "authority"),
                self.ask(srv, "www.child", "A", "additional"))

    def test_beside_fails_built_on_the_loop(self):
        srv = signed_acme_server(APEX, KEY, ZONE, env={HOOK: "beside",
                                                       "GEOACME_TEST_COMPACT_DELAY_MS": "3000"})
        srv.start()
        try:
            s0 = self.serial(srv)
            order = []

            def send(key, add):
                order.append((key, self.update(srv, add)))

            ns = threading.Thread(target=send, args=("ns", ADD_NS))
            ns.start()
            srv.wait_log(BUILDING)
            after = threading.Thread(target=send, args=("after", [
                ("after.%s." % APEX, 120, "TXT", '"after"')]))
            after.start()
            srv.wait_log(WAITS)
            # Held on its thread: neither is answered, the old set is served.
            held = list(order)
            self.assertEqual(self.delegation(srv), OLD)
            ns.join(60)
            after.join(60)
            self.assertEqual(held, [])
            self.assertEqual(order, [("ns", "NOERROR"), ("after", "NOERROR")])
            log = srv.log_since_start()
            self.assertRegex(log, FAILED + r"(.|\n)*" + ON_LOOP)
            self.assertNotRegex(log, NOT_SERVED)
            self.assertNotRegex(log, ZONE_LOG + r"built with the committed change beside the loop")
            done = re.findall(r"update for cutfail\.example\.net\. from key \S+: (\S+).*; serial "
                              r"(\d+), snapshot (to be built beside|patched)", log)
            self.assertEqual(done, [("+child.%s." % APEX, str(s0 + 1), "to be built beside"),
                                    ("+after.%s." % APEX, str(s0 + 2), "patched")])
            self.assertEqual(self.delegation(srv), NEW)
            self.assertEqual(self.ask(srv, "after", "TXT"),
                             ['after.%s. 120 RRSIG TXT' % APEX, 'after.%s. 120 TXT "after"' % APEX])
            self.assertEqual(self.serial(srv), s0 + 2)
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()

    def test_all_fail_servfail_old_snapshot_serves(self):
        # Twice: the build fails while the UPDATE's commit still waits for
        # the disk (its sync held a second), then after the sync (the build
        # held a second on its thread); SERVFAIL both ways.
        srv = signed_acme_server(APEX, KEY, ZONE, env={HOOK: "all",
                                                       "GEOACME_TEST_SYNC": "hold=1000"})
        srv.start()
        try:
            s0 = self.serial(srv)
            www = self.ask(srv, "www", "A")
            zzz = self.ask(srv, "zzz", "TXT")
            zzz_more = sorted(zzz + ['zzz.%s. 3600 TXT "more"' % APEX])
            self.assertEqual(www, ["www.%s. 3600 A 192.0.2.1" % APEX,
                                   "www.%s. 3600 RRSIG A" % APEX])
            self.assertEqual(self.update(srv, ADD_NS), "SERVFAIL")
            log = srv.log_since_start()
            self.assertRegex(log, FAILED + r"(.|\n)*" + ON_LOOP + r"(.|\n)*" + NOT_SERVED)
            # The old snapshot keeps serving: the old delegation, the old
            # serial, the other names as they were.
            self.assertEqual(self.delegation(srv), OLD)
            self.assertEqual(self.serial(srv), s0)
            self.assertEqual(self.ask(srv, "www", "A"), www)
            self.assertEqual(self.ask(srv, "zzz", "TXT"), zzz)
            # Its next change, one a patch makes, is not patched onto the
            # snapshot that lacks the committed one (that would serve a
            # zone no commit ever held): it is built whole again, which
            # fails here too.
            self.assertEqual(self.update(srv, ADD_TXT), "SERVFAIL")
            self.assertEqual(self.serial(srv), s0)
            self.assertEqual(self.ask(srv, "zzz", "TXT"), zzz)
            self.assertEqual(self.delegation(srv), OLD)
            self.assertEqual(srv.stop(), 0)

            # The change was committed before its build was tried: the
            # database (and the records in memory) hold it with serial
            # s0 + 1, only the served snapshot lacks it.  What reads the
            # database next, a new generation or this restart, serves it.
            srv.env = dict(os.environ, **{HOOK: "all", "GEOACME_TEST_COMPACT_DELAY_MS": "1000"})
            srv.start()
            self.assertEqual(self.delegation(srv), NEW)
            self.assertEqual(self.serial(srv), s0 + 2)
            self.assertEqual(self.ask(srv, "zzz", "TXT"), zzz_more)
            self.assertEqual(self.update(srv, ADD_NS3), "SERVFAIL")
            self.assertRegex(srv.log_since_start(), NOT_SERVED)
            self.assertEqual(self.delegation(srv), NEW)
            self.assertEqual(self.serial(srv), s0 + 2)
            self.assertEqual(self.ask(srv, "www", "A"), www)
            self.assertEqual(srv.stop(), 0)

            srv.env = None   # this process's environment: no hook
            srv.start()
            self.assertEqual(self.delegation(srv), NEW3)
            self.assertEqual(self.serial(srv), s0 + 3)
            self.assertEqual(self.ask(srv, "www", "A"), www)
            self.assertEqual(self.ask(srv, "zzz", "TXT"), zzz_more)
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
