# SPDX-License-Identifier: MIT
"""UPDATEs patch the served snapshot in place (core/zone/zone_patch.h): a
sequence of TSIG-signed UPDATEs that add and remove names at several depths
(empty non-terminals appear and go, the NSEC chain gains and loses names and
its last name changes) is answered exactly as the same records built whole:
the server is killed with SIGKILL after the last acknowledged UPDATE and
started again from its SQLite store (which builds the snapshot whole), and
every probe answer, with DNSSEC, is the same before and after (signature
bytes and validity times aside: they are made anew).  Unbound validates
positive answers, NXDOMAIN and NODATA at an empty non-terminal after the
patches; the log shows the snapshot was patched, not rebuilt; an UPDATE
that is refused (prerequisite not met) changes nothing."""
import re

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsigkeyring
import dns.update

import unittest

from harness import BASE_CONFIG, Server, ds_records, main, make_key
from resolvers import Unbound

SECRET = "cGF0Y2gtc2VjcmV0LXBhdGNoLXNlY3JldC0xMjM0NTY="

ZONE = """$ORIGIN acme.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
www IN A 192.0.2.1
_acme-challenge.www IN TXT "seed"
""" + "".join('h%02d IN TXT "seed %d"\n' % (i, i) for i in range(0, 40, 3))

CONFIG = """
[[zones]]
zone = "acme.example.net"
zone_type = "Primary"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.sqlite"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "patch.acme.example.net."
algorithm = "hmac-sha256"
secret = "%s"
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "acme.pem"
""" % SECRET

APEX = "acme.example.net"

# (operation, owner relative to the apex, rdata); applied in order.
STEPS = [
    ("add", "_acme-challenge.a.b.c", '"t1"'),          # two new ENTs (b.c, c)
    ("add", "_acme-challenge.a.b.c", '"t2"'),
    ("add", "zzz", '"last name in the chain"'),         # the chain's last name changes
    ("add", "_acme-challenge.h01", '"below an existing-free name"'),
    ("add", "h01", '"the ENT becomes a name"'),
    ("del", "_acme-challenge.a.b.c", '"t1"'),
    ("add", "x.b.c", '"a sibling under the ENT b.c"'),
    ("delall", "_acme-challenge.a.b.c", None),           # a.b.c goes, b.c stays for x.b.c
    ("delall", "zzz", None),                             # the last name goes
    ("delall", "h03", None),
    ("add", "_acme-challenge.www", '"second token"'),
    ("delall", "x.b.c", None),                           # b.c and c go too
    ("delall", "h01", None),                             # h01 is an ENT again
    ("add", "deep.e.f.g.h", '"four new ENTs"'),
    ("ttl", "h06", '"seed 6"'),                          # TTL change of an existing record
]

PROBES = ["", "www", "_acme-challenge.www", "_acme-challenge.a.b.c", "a.b.c", "b.c", "c",
          "x.b.c", "zzz", "zzzz", "h01", "_acme-challenge.h01", "h03", "h06", "h09",
          "deep.e.f.g.h", "e.f.g.h", "h", "g.h", "nothere", "a", "0", "~"]
TYPES = ["TXT", "A", "NSEC", "SOA", "DNSKEY"]


def fqdn(rel):
    return APEX + "." if not rel else "%s.%s." % (rel, APEX)


def normalised(msg):
    """A response as comparable text: RRSIG validity times and signature
    bytes left out (signing again makes new ones); everything else exact."""
    out = ["rcode %s flags %s" % (dns.rcode.to_text(msg.rcode()), dns.flags.to_text(msg.flags))]
    for name, section in (("answer", msg.answer), ("authority", msg.authority),
                          ("additional", msg.additional)):
        lines = []
        for rrset in section:
            for rd in rrset:
                if rrset.rdtype == dns.rdatatype.RRSIG:
                    text = "RRSIG %s %d %d %d %d %s" % (
                        dns.rdatatype.to_text(rd.type_covered), rd.algorithm, rd.labels,
                        rd.original_ttl, rd.key_tag, rd.signer)
                else:
                    text = rd.to_text()
                lines.append("%s %s %d %s" % (name, rrset.name, rrset.ttl, text))
        out.extend(sorted(lines))
    return "\n".join(out)


class PatchedEqualsBuilt(unittest.TestCase):

    def update(self, srv, op, rel, rdata, prereq_absent=None):
        keyring = dns.tsigkeyring.from_text({"patch.acme.example.net.": SECRET})
        up = dns.update.UpdateMessage(APEX, keyring=keyring, keyalgorithm="hmac-sha256")
        if prereq_absent:
            up.absent(prereq_absent)
        if op == "add":
            up.add(fqdn(rel), 120, "TXT", rdata)
        elif op == "del":
            up.delete(fqdn(rel), "TXT", rdata)
        elif op == "delall":
            up.delete(fqdn(rel))
        elif op == "ttl":
            up.delete(fqdn(rel), "TXT", rdata)
            up.add(fqdn(rel), 90, "TXT", rdata)
        return dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=10)

    def answers(self, srv):
        out = {}
        for rel in PROBES:
            for t in TYPES:
                q = dns.message.make_query(fqdn(rel), t, want_dnssec=True, payload=4096)
                q.flags &= ~dns.flags.RD
                r = dns.query.tcp(q, "127.0.0.1", port=srv.port, timeout=5)
                out[(rel, t)] = normalised(r)
        return out

    def test_patched_equals_built(self):
        srv = Server(BASE_CONFIG + CONFIG, {"acme.zone": ZONE})
        make_key(srv.path("acme.pem"))
        try:
            srv.start()
            for op, rel, rdata in STEPS:
                r = self.update(srv, op, rel, rdata)
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR", (op, rel))
            log = srv.log_since_start()
            self.assertEqual(len(re.findall(r"snapshot patched in", log)), len(STEPS), log[-3000:])
            self.assertNotIn("snapshot rebuilt", log)
            # Refused by a prerequisite: nothing changes (answers, serial).
            before = self.answers(srv)
            r = self.update(srv, "add", "refused", '"never"', prereq_absent=fqdn("www"))
            self.assertEqual(dns.rcode.to_text(r.rcode()), "YXDOMAIN")
            self.assertEqual(self.answers(srv), before)

            ub = Unbound([(APEX, srv.port)], ds_records(srv, APEX)).start()
            try:
                for rel, t, rcode, answer_type in (
                        ("_acme-challenge.www", "TXT", "NOERROR", dns.rdatatype.TXT),
                        ("deep.e.f.g.h", "TXT", "NOERROR", dns.rdatatype.TXT),
                        ("_acme-challenge.a.b.c", "TXT", "NXDOMAIN", None),
                        ("zzz", "TXT", "NXDOMAIN", None),
                        ("e.f.g.h", "TXT", "NOERROR", None),      # NODATA at an ENT
                        ("h01", "TXT", "NOERROR", None),          # an ENT again
                        ("h06", "TXT", "NOERROR", dns.rdatatype.TXT)):
                    m = ub.query(fqdn(rel), t)
                    self.assertEqual(dns.rcode.to_text(m.rcode()), rcode, (rel, ub.log()[-2000:]))
                    self.assertTrue(m.flags & dns.flags.AD, (rel, t, ub.log()[-2000:]))
                    types = [rrset.rdtype for rrset in m.answer]
                    if answer_type:
                        self.assertIn(answer_type, types, rel)
                    else:
                        self.assertEqual(types, [], rel)
            finally:
                ub.stop()

            # Killed without warning right after the last acknowledged
            # UPDATE, then started again: built whole from SQLite.
            srv.kill9()
            srv.start()
            after = self.answers(srv)
            for key in before:
                self.assertEqual(after[key], before[key], "%s %s" % key)
            # Spot checks of the exact contents.
            self.assertIn('answer h06.acme.example.net. 90 "seed 6"', before[("h06", "TXT")])
            self.assertIn("rcode NXDOMAIN", before[("c", "TXT")])
            self.assertIn("rcode NOERROR", before[("g.h", "TXT")])
            self.assertIn("rcode NXDOMAIN", before[("_acme-challenge.a.b.c", "TXT")])
            self.assertIn("hostmaster.example.com. %d 7200" % (1 + len(STEPS)), before[("", "SOA")])
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
