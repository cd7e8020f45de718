# SPDX-License-Identifier: MIT
"""The demo zones validated by three validating resolvers: unbound, Knot
Resolver (kresd) and BIND 9 (named).

geoacme serves config.toml.example's two zones (example.com with its geo
name www, and acme.example.net); each resolver is started on a free
loopback port with the two zones pointed at geoacme (unbound stub-zone,
kresd policy.FORWARD, named forward zone) and, as its only trust anchors,
the DS records `geoacme ds` prints.  For every resolver: positive answers
are the records geoacme itself gives (same RRsets, TTLs no higher) with AD;
NXDOMAIN and NODATA are validated (AD, no answer records); and a resolver
with a wrong anchor answers SERVFAIL.  ECS: only unbound forwards a
client's subnet (its subnetcache module; kresd 5 and named have no ECS
client support), so the geo answer per subnet is checked through unbound.

Runs in a network namespace of its own (harness.enter_private_netns), so
that the resolvers' own attempts to reach the root servers (priming) cannot
leave the machine.
"""
import os
import sys
import unittest

import dns.flags
import dns.rcode
import dns.rdatatype

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))

from harness import demo_server, ds_records, enter_private_netns, main  # noqa: E402
from resolvers import Kresd, NamedResolver, Unbound  # noqa: E402
from wildcards import demo_with_wildcards  # noqa: E402

ZONES = ("example.com", "acme.example.net")

POSITIVE = [("example.com", "SOA"), ("example.com", "NS"), ("example.com", "MX"),
            ("example.com", "TXT"), ("example.com", "CAA"), ("example.com", "DNSKEY"),
            ("mail.example.com", "A"), ("ns1.example.com", "AAAA"),
            ("www.example.com", "A"), ("www.example.com", "AAAA"),     # geo, for the resolver's address
            ("blog.example.com", "A"),                                  # CNAME to the geo name
            ("acme.example.net", "SOA"), ("acme.example.net", "NS"), ("acme.example.net", "DNSKEY")]
NXDOMAIN = [("nope.example.com", "A"), ("zzz.www.example.com", "AAAA"), ("nope.acme.example.net", "TXT"),
            # The delegated challenge: a CNAME into the ACME zone, to a name not there.
            ("_acme-challenge.example.com", "TXT")]
NODATA = [("mail.example.com", "AAAA"), ("www.example.com", "MX"), ("acme.example.net", "TXT"),
          ("example.com", "AAAA")]
# Issue #28 (wildcards.DEMO in the demo zone): synthesized answers, the
# literal '*', a wildcard CNAME, a DNAME followed to a wildcard; wildcard
# NODATA, also reached through the DNAME.
WILDCARD = [("x.wild.example.com", "TXT"), ("a.b.wild.example.com", "MX"),
            ("*.wild.example.com", "TXT"), ("x.alias.example.com", "A"),
            ("x.dn.example.com", "TXT")]
WILDCARD_NODATA = [("x.wild.example.com", "A"), ("y.x.wild.example.com", "AAAA")]
ECS_CLIENTS = [(("192.0.2.0", 26), "A"), (("192.0.2.128", 26), "A"), (("198.51.100.0", 25), "A"),
               (("2001:db8:1::", 48), "AAAA"), (("203.0.113.64", 28), "A")]


def setUpModule():
    global SERVER, ANCHORS
    SERVER = demo_server(edit_zone=demo_with_wildcards).start()
    ANCHORS = ds_records(SERVER, *ZONES)


def tearDownModule():
    SERVER.cleanup()


def rrsets(msg, with_ttl=False):
    """Answer section without signatures: {(name, type): (ttl, sorted rdata)}."""
    out = {}
    for rrset in msg.answer:
        if rrset.rdtype == dns.rdatatype.RRSIG:
            continue
        out[(rrset.name.to_text().lower(), dns.rdatatype.to_text(rrset.rdtype))] = (
            rrset.ttl, sorted(rd.to_text() for rd in rrset))
    return out


def wrong(ds):
    """The DS with one bit of its digest flipped."""
    f = ds.split()
    return " ".join(f[:-1] + ["%0*X" % (len(f[-1]), int(f[-1], 16) ^ 1)])


class ResolverChecks:
    """The checks every resolver must pass; subclasses say which resolver."""
    RESOLVER = None
    EXTRA = {}

    @classmethod
    def setUpClass(cls):
        stubs = [(z, SERVER.port) for z in ZONES]
        cls.resolver = cls.RESOLVER(stubs, ANCHORS, **cls.EXTRA).start()
        try:
            cls.broken = cls.RESOLVER(stubs, [wrong(ds) for ds in ANCHORS], **cls.EXTRA).start()
        except Exception:
            cls.resolver.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.resolver.stop()
        cls.broken.stop()

    def ask(self, name, rdtype, **kw):
        r = self.resolver.query(name, rdtype, **kw)
        self.assertTrue(r.flags & dns.flags.AD, "no AD for %s %s (%s):\n%s\n%s"
                        % (name, rdtype, dns.rcode.to_text(r.rcode()), r, self.resolver.log()[-3000:]))
        return r

    def assertSameAnswer(self, got, direct):
        """The same records as geoacme's own answer (rcodes are checked by the
        callers: geoacme does not follow a CNAME into its other zone, RFC
        1034 4.3.2 lets it stop there, the resolver follows it)."""
        want = rrsets(direct)
        have = rrsets(got)
        self.assertEqual(sorted(have), sorted(want))
        for key, (ttl, data) in want.items():
            self.assertEqual(have[key][1], data, key)
            self.assertLessEqual(have[key][0], ttl, key)

    def check(self, cases, rcode, same_answer):
        """Each (name, type) validates with rcode and geoacme's own records
        (same_answer) or with none (NODATA)."""
        for name, rdtype in cases:
            with self.subTest(name=name, type=rdtype):
                r = self.ask(name, rdtype)
                self.assertEqual(dns.rcode.to_text(r.rcode()), rcode)
                if same_answer:
                    self.assertSameAnswer(r, SERVER.query(name, rdtype, dnssec=True))
                else:
                    self.assertEqual(rrsets(r), {})

    def test_positive_answers_validate(self):
        self.check(POSITIVE, "NOERROR", True)
        for name, rdtype in POSITIVE:
            self.assertTrue(self.resolver.query(name, rdtype).answer, (name, rdtype))

    def test_nxdomain_validates(self):
        self.check(NXDOMAIN, "NXDOMAIN", True)

    def test_nodata_validates(self):
        self.check(NODATA, "NOERROR", False)

    def test_wildcard_and_dname_answers_validate(self):
        self.check(WILDCARD, "NOERROR", True)

    def test_wildcard_nodata_validates(self):
        self.check(WILDCARD_NODATA, "NOERROR", False)
        r = self.ask("x.dn.example.com", "A")   # the DNAME, its CNAME, then NODATA
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertSameAnswer(r, SERVER.query("x.dn.example.com", "A", dnssec=True))
        self.assertEqual(sorted(rrsets(r)), [("dn.example.com.", "DNAME"), ("x.dn.example.com.", "CNAME")])

    def test_wrong_anchor_is_servfail(self):
        for name, rdtype in (("www.example.com", "A"), ("example.com", "SOA"), ("nope.example.com", "A"),
                             ("acme.example.net", "SOA")):
            with self.subTest(name=name, type=rdtype):
                r = self.broken.query(name, rdtype)
                self.assertEqual(dns.rcode.to_text(r.rcode()), "SERVFAIL", str(r))
                self.assertFalse(r.flags & dns.flags.AD)
                self.assertEqual(r.answer, [])


class UnboundValidates(ResolverChecks, unittest.TestCase):
    RESOLVER = Unbound
    EXTRA = {"subnet": True}

    def test_geo_answers_with_ecs_validate(self):
        seen = set()
        for ecs, rdtype in ECS_CLIENTS:
            with self.subTest(client=ecs):
                r = self.ask("www.example.com", rdtype, ecs=ecs)
                direct = SERVER.query("www.example.com", rdtype, dnssec=True, ecs=ecs)
                self.assertSameAnswer(r, direct)
                seen.add(tuple(rrsets(r)[("www.example.com.", rdtype)][1]))
        # The subnets are answered differently: ECS went through.
        self.assertGreaterEqual(len(seen), 4)


class KresdValidates(ResolverChecks, unittest.TestCase):
    RESOLVER = Kresd


class NamedValidates(ResolverChecks, unittest.TestCase):
    RESOLVER = NamedResolver


if __name__ == "__main__":
    enter_private_netns()
    main()
