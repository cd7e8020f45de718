# SPDX-License-Identifier: MIT
"""Issue #14's protocol defects, asserted on the wire with dnspython and kdig:

- a malformed ECS or COOKIE option gets FORMERR *with* an OPT record when
  the query had one (RFC 6891 7; the malformed option is not echoed);
- an ECS option with a non-zero SCOPE PREFIX-LENGTH in a query is malformed
  (RFC 7871 6): FORMERR with an OPT;
- a message with an opcode we do not implement gets NOTIMP even when it is
  header-only or carries DSO TLVs (RFC 8490 5.4): the opcode is judged first;
- an explicit NSEC or RRSIG query is answered whether or not DO is set
  (RFC 3225 3), and at a CNAME owner the CNAME is not followed.
"""
import struct
import unittest

import dns.edns
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype

from harness import (BASE_CONFIG, SITES_TOML, Server, ds_records, example_zone, geo_toml, header, main,
                     make_key, make_mmdb, qname, rr_types, rrs, zone_toml)
from resolvers import Unbound

ZONE = example_zone("""blog    IN CNAME ns1.example.com.
a.b     IN TXT  "below an empty non-terminal"
""")

CONFIG = SITES_TOML + geo_toml() + zone_toml(body='[[zones.geo]]\nname = "www"\n',
                                            signing_key="example.com.pem")

ECS = 8
COOKIE = 10


class _Signed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + CONFIG, {"example.com.zone": ZONE})
        make_key(cls.server.path("example.com.pem"))
        make_mmdb(cls.server.dir)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()


class MalformedOptions(_Signed):
    def send_options(self, *options, do=False):
        q = dns.message.make_query("ns1.example.com", "A", use_edns=0, want_dnssec=do,
                                   options=[dns.edns.GenericOption(c, p) for c, p in options])
        q.flags &= ~dns.flags.RD
        raw = self.server.raw_udp(q.to_wire())
        self.assertIsNotNone(raw, "no reply")
        return dns.message.from_wire(raw)

    def assertFormerrWithOpt(self, r, do=False):
        self.assertEqual(dns.rcode.to_text(r.rcode()), "FORMERR")
        self.assertTrue(r.flags & dns.flags.QR)
        self.assertFalse(r.flags & dns.flags.AA)
        # The question is echoed, nothing else but the OPT.
        self.assertEqual([q.to_text() for q in r.question], ["ns1.example.com. IN A"])
        self.assertEqual((r.answer, r.authority), ([], []))
        self.assertEqual(r.edns, 0, "no OPT record in the FORMERR")
        self.assertEqual(r.payload, 1232)
        self.assertEqual(bool(r.ednsflags & dns.flags.DO), do)
        # Neither the malformed option nor anything else is echoed.
        self.assertEqual(list(r.options), [])

    def test_malformed_ecs_gets_formerr_with_opt(self):
        cases = {
            "unknown family": struct.pack("!HBB", 3, 24, 0) + bytes([192, 0, 2]),
            "IPv4 source /33": struct.pack("!HBB", 1, 33, 0) + bytes([192, 0, 2, 0, 0]),
            "bits beyond /23": struct.pack("!HBB", 1, 23, 0) + bytes([192, 0, 3]),
            "address too long": struct.pack("!HBB", 1, 24, 0) + bytes([192, 0, 2, 0]),
            "shorter than 4": b"\x00\x01\x18",
        }
        for what, payload in cases.items():
            for do in (False, True):
                with self.subTest(case=what, do=do):
                    self.assertFormerrWithOpt(self.send_options((ECS, payload), do=do), do)
        one = struct.pack("!HBB", 1, 24, 0) + bytes([192, 0, 2])
        with self.subTest(case="two ECS options"):
            self.assertFormerrWithOpt(self.send_options((ECS, one), (ECS, one)))

    def test_nonzero_ecs_scope_in_a_query_is_formerr(self):
        for scope in (1, 24, 32):
            with self.subTest(scope=scope):
                r = self.send_options((ECS, struct.pack("!HBB", 1, 24, scope) + bytes([192, 0, 2])))
                self.assertFormerrWithOpt(r)
        v6 = struct.pack("!HBB", 2, 48, 56) + bytes([0x20, 1, 0xd, 0xb8, 0, 1])
        self.assertFormerrWithOpt(self.send_options((ECS, v6)))
        # Scope 0, the same address: answered, ECS echoed with scope 0.
        r = self.send_options((ECS, struct.pack("!HBB", 1, 24, 0) + bytes([192, 0, 2])))
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertEqual(rrs(r, "answer"), ["ns1.example.com. 3600 IN A 192.0.2.53"])
        ecs = [o for o in r.options if o.otype == ECS]
        self.assertEqual(len(ecs), 1)
        self.assertEqual((ecs[0].address, ecs[0].srclen, ecs[0].scopelen), ("192.0.2.0", 24, 0))

    def test_malformed_cookie_gets_formerr_with_opt(self):
        for length in (1, 7, 9, 15, 41):
            with self.subTest(length=length):
                self.assertFormerrWithOpt(self.send_options((COOKIE, bytes(range(length)))))
        # A well-formed client cookie in the same place is answered.
        r = self.send_options((COOKIE, bytes(range(8))))
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")

    def test_broken_option_framing_is_formerr_without_opt(self):
        # An option length running past the OPT's rdata: the OPT itself is
        # malformed, so there is no OPT to answer with (as before).
        q = dns.message.make_query("ns1.example.com", "A", use_edns=False)
        wire = bytearray(q.to_wire())
        wire[11] = 1   # ARCOUNT
        wire += b"\x00" + struct.pack("!HHIH", 41, 1232, 0, 4) + struct.pack("!HH", ECS, 40)
        raw = self.server.raw_udp(bytes(wire))
        self.assertEqual(raw[3] & 0xF, dns.rcode.FORMERR)
        self.assertEqual(struct.unpack("!HHHH", raw[4:12]), (1, 0, 0, 0))

    def test_kdig_sees_the_opt(self):
        # kdig's raw EDNS option: ECS (8) with scope 24 in a query, then a
        # 5-byte COOKIE (10).
        for opt in ("8:0001180cc00002", "10:0102030405"):
            with self.subTest(opt=opt):
                out = self.server.kdig("ns1.example.com", "A", "+ednsopt=" + opt, "+norecurse")
                self.assertIn("status: FORMERR", out.stdout, out.stdout + out.stderr)
                self.assertIn(";; EDNS PSEUDOSECTION:", out.stdout, out.stdout)
                edns = out.stdout.split(";; EDNS PSEUDOSECTION:")[1].split(";; QUESTION")[0]
                self.assertIn("Version: 0; flags: ; UDP size: 1232 B", edns)
                self.assertNotIn("COOKIE", edns)
                self.assertNotIn("CLIENT-SUBNET", edns)


class Opcodes(_Signed):
    def raw(self, data):
        raw = self.server.raw_udp(data)
        self.assertIsNotNone(raw, "no reply")
        return raw

    def assertNotimp(self, raw, opcode):
        self.assertTrue(raw[2] & 0x80, "QR")
        self.assertEqual((raw[2] >> 3) & 0xF, opcode, "opcode echoed")
        self.assertEqual(raw[3] & 0xF, dns.rcode.NOTIMP)
        self.assertEqual(raw[:2], b"\x12\x34", "ID echoed")
        self.assertEqual(struct.unpack("!HHHH", raw[4:12]), (0, 0, 0, 0))
        self.assertEqual(len(raw), 12)

    def test_header_only_unknown_opcodes_are_notimp(self):
        for opcode in (1, 2, 3, 6, 7, 15):
            with self.subTest(opcode=opcode):
                self.assertNotimp(self.raw(header(flags=opcode << 11, qd=0)), opcode)

    def test_dso_with_tlvs_is_notimp(self):
        # RFC 8490: a DSO Keepalive TLV (type 1, 8 bytes) after a header with
        # every count 0.  Without DSO support: NOTIMP (RFC 8490 5.4).
        keepalive = struct.pack("!HHII", 1, 8, 15000, 15000)
        self.assertNotimp(self.raw(header(flags=6 << 11, qd=0) + keepalive), 6)

    def test_unknown_opcode_with_a_question_still_echoes_it(self):
        raw = self.raw(header(flags=15 << 11) + qname("example.com") + b"\0\6\0\1")
        self.assertEqual(raw[3] & 0xF, dns.rcode.NOTIMP)
        self.assertEqual(struct.unpack("!HHHH", raw[4:12]), (1, 0, 0, 0))

    def test_header_only_query_and_update_stay_formerr(self):
        for opcode in (0, 5):
            with self.subTest(opcode=opcode):
                raw = self.raw(header(flags=opcode << 11, qd=0))
                self.assertEqual(raw[3] & 0xF, dns.rcode.FORMERR)


class ExplicitDnssecTypes(_Signed):
    """RFC 3225 3: DNSSEC records that match the query type are returned
    whatever DO says; without DO no RRSIG comes along with other records."""

    def q(self, name, rdtype, do):
        r = self.server.query(name, rdtype, dnssec=do)
        self.assertTrue(r.flags & dns.flags.AA)
        return r

    def test_nsec_query_without_do(self):
        for name, nxt in (("ns1.example.com", "www.example.com. A RRSIG NSEC"),
                          ("blog.example.com", "ns1.example.com. CNAME RRSIG NSEC"),
                          ("www.example.com", "example.com. A AAAA RRSIG NSEC")):
            with self.subTest(name=name):
                r = self.q(name, "NSEC", False)
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                self.assertEqual(rrs(r, "answer"), ["%s. 300 IN NSEC %s" % (name, nxt)])
                self.assertEqual((r.authority, rr_types(r, "additional")), ([], []))
                # With DO: the same NSEC, and its RRSIG.
                r1 = self.q(name, "NSEC", True)
                self.assertEqual(rr_types(r1, "answer"), ["NSEC", "RRSIG"])
                self.assertEqual([l for l in rrs(r1, "answer") if " IN NSEC " in l],
                                 rrs(r, "answer"))

    def test_nsec_query_at_missing_and_empty_names(self):
        r = self.q("nope.example.com", "NSEC", False)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
        self.assertEqual(rr_types(r, "authority"), ["SOA"])
        r = self.q("b.example.com", "NSEC", False)   # empty non-terminal
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertEqual((r.answer, rr_types(r, "authority")), ([], ["SOA"]))

    def rrsig_answer(self, r):
        return sorted("%s %d RRSIG %s" % (s.name, s.ttl, dns.rdatatype.to_text(rd.type_covered))
                      for s in r.answer for rd in s if s.rdtype == dns.rdatatype.RRSIG)

    def test_rrsig_query_without_do(self):
        cases = {
            "ns1.example.com": ["ns1.example.com. 300 RRSIG NSEC", "ns1.example.com. 3600 RRSIG A"],
            # At a CNAME owner: the RRSIGs there, the CNAME is not followed.
            "blog.example.com": ["blog.example.com. 300 RRSIG NSEC",
                                 "blog.example.com. 3600 RRSIG CNAME"],
            # At a geo name: what the name holds in the zone (its NSEC); the
            # per-client A/AAAA signatures come with A/AAAA answers only.
            "www.example.com": ["www.example.com. 300 RRSIG NSEC"],
        }
        for name, want in cases.items():
            for do in (False, True):
                with self.subTest(name=name, do=do):
                    r = self.q(name, "RRSIG", do)
                    self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                    self.assertEqual(rr_types(r, "answer"), ["RRSIG"] * len(want))
                    self.assertEqual(self.rrsig_answer(r), want)
                    self.assertEqual(r.authority, [])

    def test_kdig_rrsig_at_cname_owner(self):
        out = self.server.kdig("blog.example.com", "RRSIG", "+norecurse")
        self.assertIn("status: NOERROR", out.stdout, out.stdout + out.stderr)
        answer = out.stdout.split(";; ANSWER SECTION:")[1].split(";;")[0]
        self.assertIn("RRSIG\tCNAME 13 3 3600", answer)
        self.assertNotIn("\tCNAME\t", answer)

    def test_other_types_without_do_are_unchanged(self):
        r = self.q("blog.example.com", "A", False)
        self.assertEqual(rrs(r, "answer"), ["blog.example.com. 3600 IN CNAME ns1.example.com.",
                                            "ns1.example.com. 3600 IN A 192.0.2.53"])
        r = self.q("ns1.example.com", "TXT", False)
        self.assertEqual((r.answer, rr_types(r, "authority")), ([], ["SOA"]))


class ValidatedByUnbound(_Signed):
    """Through a validating unbound: the explicit NSEC answer validates, and
    the answers that did not change (CNAME chains, denial) still do."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.unbound = Unbound([("example.com", cls.server.port)],
                              ds_records(cls.server, "example.com")).start()

    @classmethod
    def tearDownClass(cls):
        cls.unbound.stop()
        super().tearDownClass()

    def test_validated(self):
        cases = (("blog.example.com", "NSEC", "NOERROR", ["NSEC", "RRSIG"]),
                 ("ns1.example.com", "NSEC", "NOERROR", ["NSEC", "RRSIG"]),
                 ("blog.example.com", "A", "NOERROR", ["CNAME", "RRSIG", "A", "RRSIG"]),
                 ("nope.example.com", "A", "NXDOMAIN", []))
        for name, rdtype, rcode, types in cases:
            with self.subTest(name=name, type=rdtype):
                r = self.unbound.query(name, rdtype)
                self.assertEqual(dns.rcode.to_text(r.rcode()), rcode, self.unbound.log())
                self.assertTrue(r.flags & dns.flags.AD, "not validated: %s" % r)
                self.assertEqual(rr_types(r, "answer"), types)


if __name__ == "__main__":
    main()
