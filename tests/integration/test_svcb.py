# SPDX-License-Identifier: MIT
"""SVCB and HTTPS records in zone files (RFC 9460) through the real binary.

The valid vectors of RFC 9460 Appendix D are loaded from a zone file and
queried; the rdata on the wire must equal, byte for byte, both the hex the
RFC prints and what dnspython (an independent encoder) makes of the same
presentation text.  The invalid vectors of Appendix D.3, and the other
wire-format rules, must each stop the load with a file:line error.
"""
import os
import unittest

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype

from harness import BASE_CONFIG, Server, ServerTestCase, main

HEAD = """$ORIGIN example.com.
$TTL 300
@   IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300
@   IN NS  ns1.example.com.
ns1 IN A   192.0.2.53
"""

# (owner, type, rdata as in RFC 9460 Appendix D, the RFC's wire hex)
VALID = [
    # D.1 AliasMode
    ("d1", "HTTPS", "0 foo.example.com.",
     "0000 03666f6f 076578616d706c65 03636f6d 00"),
    # D.2 ServiceMode, figures 3 to 10
    ("f3", "SVCB", "1 .", "0001 00"),
    ("f4", "SVCB", "16 foo.example.com. port=53",
     "0010 03666f6f076578616d706c6503636f6d00 0003 0002 0035"),
    ("f5", "SVCB", "1 foo.example.com. key667=hello",
     "0001 03666f6f076578616d706c6503636f6d00 029b 0005 68656c6c6f"),
    ("f6", "SVCB", '1 foo.example.com. key667="hello\\210qoo"',
     "0001 03666f6f076578616d706c6503636f6d00 029b 0009 68656c6c6fd2716f6f"),
    ("f7", "SVCB", '1 foo.example.com. (\n    ipv6hint="2001:db8::1,2001:db8::53:1"\n    )',
     "0001 03666f6f076578616d706c6503636f6d00 0006 0020"
     " 20010db8000000000000000000000001 20010db8000000000000000000530001"),
    ("f8", "SVCB", '1 example.com. ( ipv6hint="2001:db8:122:344::192.0.2.33" )',
     "0001 076578616d706c6503636f6d00 0006 0010 20010db80122034400000000c0000221"),
    ("f9", "SVCB", "16 foo.example.org. (\n    alpn=h2,h3-19 mandatory=ipv4hint,alpn\n"
                   "    ipv4hint=192.0.2.1\n    )",
     "0010 03666f6f076578616d706c65036f726700 0000 0004 00010004 0001 0009 0268320568332d3139"
     " 0004 0004 c0000201"),
    ("f10a", "SVCB", '16 foo.example.org. alpn="f\\\\\\\\oo\\\\,bar,h2"',
     "0010 03666f6f076578616d706c65036f726700 0001 000c 08665c6f6f2c626172 026832"),
    ("f10b", "SVCB", "16 foo.example.org. alpn=f\\\\\\092oo\\092,bar,h2",
     "0010 03666f6f076578616d706c65036f726700 0001 000c 08665c6f6f2c626172 026832"),
]

# Beyond the appendix: the other registered keys, keyNNNNN forms, "@" and
# relative targets, unquoted and quoted values in any order.
EXTRA = [
    ("x1", "HTTPS", '1 www alpn="h3,h2" port=8443 no-default-alpn'),
    ("x2", "HTTPS", "2 . ech=AEX+DQBBpQAgACBF2v4Xt9oj7V1hJbIiYB35F3cY3H+bzwSwhWYTDnDncQAEAAEAAQASY2xvdWRmbGFyZS1lY2guY29tAAA="),
    ("x3", "SVCB", '1 dns.example.com. alpn=h2 dohpath="/dns-query{?dns}"'),
    ("x4", "SVCB", '3 @ ipv4hint="192.0.2.1,192.0.2.2" key65000 mandatory=key65000,ipv4hint'),
    ("x5", "HTTPS", "1 . key1=\\002h2 key3=\\000\\080"),
    ("x6", "SVCB", "0 ."),
    ("x7", "HTTPS", '1 www.example.net. port="443" ipv6hint=2001:db8::1 alpn="h2"'),
    ("x8", "HTTPS", "\\# 10 000100 0001 0003 026832"),
]

# RFC 9460 Appendix D.3, then the other wire-format rules: (rdata, error).
INVALID = [
    ("1 foo.example.com. ( key123=abc key123=def )", "key123 appears twice"),
    ("1 foo.example.com. mandatory", "mandatory needs a value"),
    ("1 foo.example.com. alpn", "alpn needs a value"),
    ("1 foo.example.com. port", "port needs a value"),
    ("1 foo.example.com. ipv4hint", "ipv4hint needs a value"),
    ("1 foo.example.com. ipv6hint", "ipv6hint needs a value"),
    ("1 foo.example.com. no-default-alpn=abc", "no-default-alpn takes no value"),
    ("1 foo.example.com. mandatory=key123", "mandatory lists key123, which the record does not have"),
    ("1 foo.example.com. mandatory=mandatory", "mandatory must not list mandatory itself"),
    ("1 foo.example.com. ( mandatory=key123,key123 key123=abc )", "mandatory lists key123 twice"),
    ("1 . alpn=", "alpn needs a non-empty list"),
    ('1 . alpn="h2,"', "alpn: empty item in the list"),
    ("1 . no-default-alpn", "no-default-alpn needs alpn"),
    ("1 . port=65536", "port needs a number"),
    ("1 . ipv4hint=2001:db8::1", "not an IPv4 address"),
    ("1 . ipv6hint=192.0.2.1", "not an IPv6 address"),
    ("1 . key65535=x", "key65535 is reserved"),
    ("1 . key0667=x", 'unknown SvcParamKey "key0667"'),
    ("1 . bogus=1", 'unknown SvcParamKey "bogus"'),
    ("1 . ech=!!!", "ech needs a non-empty base64"),
    ("1 . dohpath=dns-query", "dohpath needs a relative URI template"),
    ("65536 .", "expected SvcPriority"),
    ('1 . alpn="h2', "alpn: bad value"),
    # Generic form: the wire rules apply too.
    ("\\# 7 000100 0001 0000", "alpn needs a non-empty list"),
    ("\\# 16 000100 0003 0002 01bb 0001 0003 026832", "SvcParamKeys must be in increasing order"),
    ("\\# 8 000100 0003 0001 00", "port needs exactly 2 bytes"),
]


def hexbytes(s):
    return bytes.fromhex(s.replace(" ", "").replace("\n", ""))


def zone_with(records):
    return HEAD + "".join("%s IN %s %s\n" % r for r in records)


CONFIG = """
[[zones]]
zone = "example.com"
file = "example.com.zone"
"""


class Vectors(ServerTestCase):
    CONFIG = CONFIG
    FILES = {"example.com.zone": zone_with([r[:3] for r in VALID] + EXTRA)}

    def answer_wire(self, owner, rdtype):
        msg = self.server.query(owner + ".example.com", rdtype)
        self.assertEqual(len(msg.answer), 1, msg.to_text())
        rrset = msg.answer[0]
        self.assertEqual(len(rrset), 1)
        return rrset[0].to_wire()

    def dnspython_wire(self, rdtype, text):
        origin = dns.name.from_text("example.com.")
        rd = dns.rdata.from_text(dns.rdataclass.IN, rdtype, text, origin=origin)
        return rd.to_wire(origin=origin)

    def test_appendix_d_valid_vectors_byte_for_byte(self):
        for owner, rdtype, text, rfc_hex in VALID:
            with self.subTest(owner=owner, rdata=text):
                got = self.answer_wire(owner, rdtype)
                self.assertEqual(got.hex(), hexbytes(rfc_hex).hex())
                self.assertEqual(got.hex(), self.dnspython_wire(rdtype, text).hex())

    def test_other_keys_match_dnspython(self):
        for owner, rdtype, text in EXTRA:
            with self.subTest(owner=owner, rdata=text):
                want = text
                # dnspython 2.3 does not know dohpath (RFC 9461) by name.
                want = want.replace("dohpath=", "key7=")
                self.assertEqual(self.answer_wire(owner, rdtype).hex(),
                                 self.dnspython_wire(rdtype, want).hex())

    def test_target_is_never_compressed(self):
        # x7's target shares no suffix with the question; x1's does.
        msg = self.server.query("x1.example.com", "HTTPS")
        wire = msg.to_wire()
        self.assertIn(bytes.fromhex("0377777707" + "6578616d706c6503636f6d00"), wire)

    def test_question_case_does_not_matter(self):
        msg = self.server.query("F3.Example.COM", "SVCB")
        self.assertEqual([r.to_text() for r in msg.answer[0]], ["1 ."])


class Invalid(unittest.TestCase):
    def test_appendix_d3_and_wire_rules_fail_with_file_and_line(self):
        lines = HEAD.count("\n")
        zone = HEAD + "".join("b%d IN SVCB %s\n" % (i, r) for i, (r, _) in enumerate(INVALID))
        srv = Server(BASE_CONFIG + CONFIG, {"example.com.zone": zone})
        try:
            out = srv.tool(os.environ.get("GEOACME_BIN"), "check", "-c", srv.config_path)
            self.assertEqual(out.returncode, 3, out.stdout + out.stderr)
            errors = out.stderr.splitlines()
            for i, (rdata, why) in enumerate(INVALID):
                with self.subTest(rdata=rdata):
                    prefix = "%s:%d: SVCB: " % (srv.path("example.com.zone"), lines + 1 + i)
                    hits = [e for e in errors if e.startswith(prefix)]
                    self.assertEqual(len(hits), 1, "%s\n%s" % (prefix, out.stderr))
                    self.assertIn(why, hits[0])
            # And serve refuses the same zone (exit 3), it does not half-load it.
            with self.assertRaises(AssertionError):
                srv.start()
            self.assertEqual(srv.exit_code, 3)
        finally:
            srv.cleanup()

    def test_a_multiline_record_reports_its_first_line(self):
        zone = HEAD + "\n\nbad IN HTTPS 1 . (\n  alpn=h2\n  port=x )\nok IN A 192.0.2.9\n"
        srv = Server(BASE_CONFIG + CONFIG, {"example.com.zone": zone})
        try:
            out = srv.tool(os.environ.get("GEOACME_BIN"), "check", "-c", srv.config_path)
            self.assertEqual(out.returncode, 3)
            self.assertIn("%s:%d: HTTPS: port needs a number from 0 to 65535"
                          % (srv.path("example.com.zone"), HEAD.count("\n") + 3), out.stderr)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
