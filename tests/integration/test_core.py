# SPDX-License-Identifier: MIT
"""The authoritative core against the real binary: flags, sections, TTLs, rcodes."""
import os
import random
import signal
import socket
import struct
import unittest

import dns.edns
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdatatype

from harness import (BASE_CONFIG, Server, ServerTestCase, ecs_option, header, main, qname,
                     rrs)

ZONE = """$ORIGIN example.com.
$TTL 3600
@       IN SOA  ns1.example.com. hostmaster.example.com. 2026113001 7200 3600 1209600 300
@       IN NS   ns1.example.com.
@       IN NS   ns2.example.com.
ns1     IN A    192.0.2.53
ns1     IN AAAA 2001:db8::53
ns2     IN A    198.51.100.53
@       IN MX   10 mail.example.com.
mail    IN A    192.0.2.25
www     600 IN A 192.0.2.80
www     600 IN AAAA 2001:db8::80
blog    IN CNAME alias.example.com.
alias   IN CNAME www.example.com.
ext     IN CNAME www.example.org.
loop1   IN CNAME loop2.example.com.
loop2   IN CNAME loop1.example.com.
dangling IN CNAME nothing.example.com.
sub     IN NS   ns.sub.example.com.
sub     IN NS   ns.elsewhere.net.
ns.sub  IN A    192.0.2.99
_sip._tcp IN SRV 10 60 5060 sip.example.com.
sip     IN A    192.0.2.60
@       IN CAA  0 issue "letsencrypt.org"
@       IN TXT  "v=spf1 mx -all"
svc     IN HTTPS 1 . alpn="h2,h3"
svc     IN SVCB 1 www.example.com. port=8443
secure  IN DS   12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF
secure  IN NS   ns1.example.com.
80.2.0.192.in-addr IN PTR www.example.com.
a.b.c   IN TXT  "deep"
big     IN TXT  "%s"
big     IN TXT  "%s"
big     IN TXT  "%s"
big     IN TXT  "%s"
big     IN TXT  "%s"
big     IN TXT  "%s"
""" % tuple(("%d" % i) * 200 for i in range(6))

CHILD = """$ORIGIN child.example.com.
$TTL 60
@ IN SOA ns1.example.com. hostmaster.example.com. 7 7200 3600 1209600 30
@ IN NS ns1.example.com.
www IN A 192.0.2.7
"""

CONFIG = """
[[zones]]
zone = "example.com"
zone_type = "Primary"
file = "example.com.zone"

[[zones]]
zone = "child.example.com"
zone_type = "Primary"
file = "child.example.com.zone"
"""

SOA_NEG = "example.com. 300 IN SOA ns1.example.com. hostmaster.example.com. 2026113001 7200 3600 1209600 300"


class CoreAnswers(ServerTestCase):
    CONFIG = CONFIG
    FILES = {"example.com.zone": ZONE, "child.example.com.zone": CHILD}

    def test_positive_answer(self):
        r = self.server.query("www.example.com", "A")
        self.assertRcode(r, "NOERROR")
        self.assertFlags(r, "QR", "AA")
        self.assertEqual(rrs(r, "answer"), ["www.example.com. 600 IN A 192.0.2.80"])
        self.assertEqual(rrs(r, "authority"), [])
        self.assertEqual(rrs(r, "additional"), [])

    def test_aaaa_over_ipv6(self):
        # IPv6 is first-class: the server listens on ::1 in every test.
        r = self.server.query("www.example.com", "AAAA", addr="::1")
        self.assertEqual(rrs(r, "answer"), ["www.example.com. 600 IN AAAA 2001:db8::80"])
        r = self.server.query("www.example.com", "AAAA", addr="::1", tcp=True)
        self.assertEqual(rrs(r, "answer"), ["www.example.com. 600 IN AAAA 2001:db8::80"])

    def test_nxdomain_and_nodata(self):
        for name, rdtype, rcode in (("nope.example.com", "A", "NXDOMAIN"),
                                    ("mail.example.com", "AAAA", "NOERROR")):
            with self.subTest(name=name, type=rdtype):
                r = self.server.query(name, rdtype)
                self.assertRcode(r, rcode)
                self.assertFlags(r, "QR", "AA")
                self.assertEqual(rrs(r, "answer"), [])
                self.assertEqual(rrs(r, "authority"), [SOA_NEG])

    def test_empty_non_terminal_is_nodata(self):
        r = self.server.query("b.c.example.com", "A")
        self.assertRcode(r, "NOERROR")
        self.assertEqual(rrs(r, "authority"), [SOA_NEG])
        r = self.server.query("a.b.c.example.com", "TXT")
        self.assertEqual(rrs(r, "answer"), ['a.b.c.example.com. 3600 IN TXT "deep"'])

    def test_cname_chain_followed(self):
        r = self.server.query("blog.example.com", "A")
        self.assertRcode(r, "NOERROR")
        self.assertFlags(r, "QR", "AA")
        self.assertEqual(rrs(r, "answer"), [
            "blog.example.com. 3600 IN CNAME alias.example.com.",
            "alias.example.com. 3600 IN CNAME www.example.com.",
            "www.example.com. 600 IN A 192.0.2.80",
        ])

    def test_cname_query_type_not_followed(self):
        r = self.server.query("blog.example.com", "CNAME")
        self.assertEqual(rrs(r, "answer"), ["blog.example.com. 3600 IN CNAME alias.example.com."])

    def test_cname_out_of_zone(self):
        r = self.server.query("ext.example.com", "A")
        self.assertRcode(r, "NOERROR")
        self.assertEqual(rrs(r, "answer"), ["ext.example.com. 3600 IN CNAME www.example.org."])
        self.assertEqual(rrs(r, "authority"), [])

    def test_cname_to_nxdomain(self):
        r = self.server.query("dangling.example.com", "A")
        self.assertRcode(r, "NXDOMAIN")
        self.assertEqual(rrs(r, "answer"), ["dangling.example.com. 3600 IN CNAME nothing.example.com."])
        self.assertEqual(rrs(r, "authority"), [SOA_NEG])

    def test_cname_loop_terminates(self):
        r = self.server.query("loop1.example.com", "A")
        self.assertRcode(r, "NOERROR")
        self.assertEqual(rrs(r, "answer"), [
            "loop1.example.com. 3600 IN CNAME loop2.example.com.",
            "loop2.example.com. 3600 IN CNAME loop1.example.com.",
        ])

    def test_delegation_referral(self):
        r = self.server.query("host.sub.example.com", "A")
        self.assertRcode(r, "NOERROR")
        self.assertFlags(r, "QR")
        self.assertEqual(rrs(r, "answer"), [])
        self.assertEqual(sorted(rrs(r, "authority")), [
            "sub.example.com. 3600 IN NS ns.elsewhere.net.",
            "sub.example.com. 3600 IN NS ns.sub.example.com.",
        ])
        self.assertEqual(rrs(r, "additional"), ["ns.sub.example.com. 3600 IN A 192.0.2.99"])

    def test_referral_at_cut_and_for_glue(self):
        r = self.server.query("sub.example.com", "NS")
        self.assertFlags(r, "QR")
        self.assertEqual(len(r.authority[0]), 2)
        r = self.server.query("ns.sub.example.com", "A")
        self.assertFlags(r, "QR")
        self.assertEqual(rrs(r, "answer"), [])

    def test_ds_at_cut_answered_by_parent(self):
        r = self.server.query("secure.example.com", "DS")
        self.assertFlags(r, "QR", "AA")
        self.assertEqual(len(rrs(r, "answer")), 1)
        self.assertIn("IN DS 12345 13 2", rrs(r, "answer")[0])

    def test_refused_outside_zones(self):
        r = self.server.query("www.example.org", "A")
        self.assertRcode(r, "REFUSED")
        self.assertFlags(r, "QR")
        self.assertEqual(rrs(r, "answer") + rrs(r, "authority"), [])

    def test_longest_suffix_zone(self):
        r = self.server.query("www.child.example.com", "A")
        self.assertFlags(r, "QR", "AA")
        self.assertEqual(rrs(r, "answer"), ["www.child.example.com. 60 IN A 192.0.2.7"])
        r = self.server.query("nope.child.example.com", "A")
        self.assertRcode(r, "NXDOMAIN")
        self.assertEqual(rrs(r, "authority"),
                         ["child.example.com. 30 IN SOA ns1.example.com. hostmaster.example.com. 7 7200 3600 1209600 30"])

    def test_rd_set_still_authoritative(self):
        r = self.server.query("example.com", "SOA", rd=True)
        self.assertFlags(r, "QR", "AA", "RD")
        self.assertEqual(len(r.answer), 1)

    def test_mx_with_additional(self):
        r = self.server.query("example.com", "MX")
        self.assertEqual(rrs(r, "answer"), ["example.com. 3600 IN MX 10 mail.example.com."])
        self.assertEqual(rrs(r, "additional"), ["mail.example.com. 3600 IN A 192.0.2.25"])

    def test_ns_with_glue_at_apex(self):
        r = self.server.query("example.com", "NS")
        self.assertEqual(sorted(rrs(r, "answer")), ["example.com. 3600 IN NS ns1.example.com.",
                                                     "example.com. 3600 IN NS ns2.example.com."])
        self.assertEqual(sorted(rrs(r, "additional")), [
            "ns1.example.com. 3600 IN A 192.0.2.53",
            "ns1.example.com. 3600 IN AAAA 2001:db8::53",
            "ns2.example.com. 3600 IN A 198.51.100.53",
        ])

    def test_record_types(self):
        cases = [
            ("_sip._tcp.example.com", "SRV", "_sip._tcp.example.com. 3600 IN SRV 10 60 5060 sip.example.com."),
            ("example.com", "CAA", 'example.com. 3600 IN CAA 0 issue "letsencrypt.org"'),
            ("svc.example.com", "HTTPS", 'svc.example.com. 3600 IN HTTPS 1 . alpn="h2,h3"'),
            ("svc.example.com", "SVCB", 'svc.example.com. 3600 IN SVCB 1 www.example.com. port="8443"'),
            ("80.2.0.192.in-addr.example.com", "PTR", "80.2.0.192.in-addr.example.com. 3600 IN PTR www.example.com."),
            ("example.com", "TXT", 'example.com. 3600 IN TXT "v=spf1 mx -all"'),
        ]
        for name, t, want in cases:
            with self.subTest(t=t):
                r = self.server.query(name, t)
                self.assertEqual(rrs(r, "answer"), [want])

    def test_question_case_preserved(self):
        q = self.server.make_query("WwW.ExAmPlE.cOm", "A")
        wire = q.to_wire()
        raw = self.server.raw_udp(wire)
        self.assertIsNotNone(raw)
        self.assertIn(b"\x03WwW\x07ExAmPlE\x03cOm\x00", raw)
        r = dns.message.from_wire(raw)
        self.assertEqual(rrs(r, "answer"), ["www.example.com. 600 IN A 192.0.2.80"])
        # The answer's owner is a compression pointer to the question.
        self.assertIn(b"\xc0\x0c\x00\x01\x00\x01", raw)

    def test_name_compression_in_rdata(self):
        raw = self.server.raw_udp(self.server.make_query("example.com", "NS").to_wire())
        # ns1.example.com compresses its example.com suffix to the question.
        self.assertIn(b"\x03ns1\xc0\x0c", raw)

    def test_any_is_minimal(self):
        r = self.server.query("example.com", "ANY")
        self.assertRcode(r, "NOERROR")
        self.assertEqual(len(r.answer), 1)
        self.assertEqual(len(r.answer[0]), 1 if r.answer[0].rdtype != dns.rdatatype.NS else 2)

    def test_edns_response(self):
        r = self.server.query("www.example.com", "A")
        self.assertEqual(r.edns, 0)
        self.assertEqual(r.payload, 1232)
        r = self.server.query("www.example.com", "A", edns=False)
        self.assertEqual(r.edns, -1)

    def test_badvers(self):
        q = self.server.make_query("www.example.com", "A")
        q.use_edns(1, 0, 1232)
        r = self.server.query(q)
        self.assertRcode(r, "BADVERS")
        self.assertEqual(r.edns, 0)
        self.assertEqual(rrs(r, "answer"), [])

    def test_truncation_and_tcp(self):
        r = self.server.query("big.example.com", "TXT")
        self.assertIn("TC", dns.flags.to_text(r.flags))
        self.assertEqual(rrs(r, "answer"), [])
        r = self.server.query("big.example.com", "TXT", payload=4096)
        # The server caps UDP at 1232 whatever the client offers.
        self.assertIn("TC", dns.flags.to_text(r.flags))
        r = self.server.query("big.example.com", "TXT", tcp=True)
        self.assertNotIn("TC", dns.flags.to_text(r.flags))
        self.assertEqual(len(r.answer[0]), 6)

    def test_no_edns_512_limit(self):
        r = self.server.query("big.example.com", "TXT", edns=False)
        self.assertIn("TC", dns.flags.to_text(r.flags))
        raw = self.server.raw_udp(self.server.make_query("www.example.com", "A", edns=False).to_wire())
        self.assertLessEqual(len(raw), 512)

    def test_ecs_on_static_name_scope_zero(self):
        r = self.server.query("www.example.com", "A", ecs=("198.51.100.0", 24))
        opt = ecs_option(r)
        self.assertIsNotNone(opt)
        self.assertEqual((opt.address, opt.srclen, opt.scopelen), ("198.51.100.0", 24, 0))
        r = self.server.query("www.example.com", "A")
        self.assertIsNone(ecs_option(r))

    def test_malformed_ecs_formerr(self):
        # Family 1 with a source prefix of 33 bits.
        opt = dns.edns.GenericOption(8, struct.pack("!HBB", 1, 33, 0) + b"\xc6\x33\x64\x00\x00")
        q = self.server.make_query("www.example.com", "A")
        q.use_edns(0, 0, 1232, options=[opt])
        self.assertRcode(self.server.query(q), "FORMERR")
        # Bits set beyond the prefix.
        opt = dns.edns.GenericOption(8, struct.pack("!HBB", 1, 20, 0) + b"\xc6\x33\x64")
        q.use_edns(0, 0, 1232, options=[opt])
        self.assertRcode(self.server.query(q), "FORMERR")
        # Unknown family.
        opt = dns.edns.GenericOption(8, struct.pack("!HBB", 3, 8, 0) + b"\x01")
        q.use_edns(0, 0, 1232, options=[opt])
        self.assertRcode(self.server.query(q), "FORMERR")

    def test_opcodes(self):
        raw = self.server.raw_udp(header(flags=3 << 11) + qname("example.com") + b"\0\6\0\1")
        self.assertEqual((raw[2] >> 3) & 0xF, 3, "opcode echoed")
        self.assertEqual(raw[3] & 0xF, 4, "NOTIMP")
        for opcode, want in ((dns.opcode.IQUERY, "NOTIMP"), (dns.opcode.STATUS, "NOTIMP"),
                             (dns.opcode.NOTIFY, "NOTIMP")):
            q = self.server.make_query("example.com", "SOA")
            q.set_opcode(opcode)
            r = self.server.query(q)
            self.assertRcode(r, want)
            self.assertEqual(r.opcode(), opcode)

    def test_qtype_and_qclass_edges(self):
        self.assertRcode(self.server.query("example.com", "AXFR", tcp=True), "REFUSED")
        self.assertRcode(self.server.query("example.com", "SOA", rdclass="CH"), "REFUSED")
        self.assertRcode(self.server.query("example.com", "MAILB"), "NOTIMP")
        raw = self.server.raw_udp(header() + qname("example.com") + struct.pack("!HH", 0, 1))
        self.assertEqual(dns.message.from_wire(raw).rcode(), dns.rcode.FORMERR)
        r = self.server.query("example.com", "SOA", rdclass="ANY")
        self.assertRcode(r, "NOERROR")
        self.assertEqual(len(r.answer), 1)
        r = self.server.query("www.example.com", "TYPE65000")
        self.assertRcode(r, "NOERROR")
        self.assertEqual(rrs(r, "authority"), [SOA_NEG])

    def test_kdig_agrees(self):
        out = self.server.kdig("+norec", "www.example.com", "A")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("status: NOERROR", out.stdout)
        self.assertIn("Flags: qr aa;", out.stdout)
        self.assertRegex(out.stdout, r"www\.example\.com\.\s+600\s+IN\s+A\s+192\.0\.2\.80")


class BadInput(ServerTestCase):
    CONFIG = CONFIG
    FILES = CoreAnswers.FILES

    def still_serving(self):
        r = self.server.query("www.example.com", "A")
        self.assertEqual(rrs(r, "answer"), ["www.example.com. 600 IN A 192.0.2.80"])

    def formerr(self, data):
        raw = self.server.raw_udp(data)
        self.assertIsNotNone(raw, "no answer")
        self.assertEqual(raw[3] & 0xF, 1, "rcode not FORMERR")
        self.assertEqual(raw[:2], data[:2])
        self.still_serving()

    def dropped(self, data):
        self.assertIsNone(self.server.raw_udp(data, timeout=0.3))
        self.still_serving()

    def test_truncated_header_dropped(self):
        for n in (0, 1, 5, 11):
            self.dropped(header()[:n])

    def test_responses_dropped(self):
        self.dropped(header(flags=0x8000) + qname("example.com") + b"\0\1\0\1")

    def test_truncated_question(self):
        self.formerr(header() + qname("example.com")[:5])
        self.formerr(header() + qname("example.com") + b"\0")

    def test_counts_that_lie(self):
        self.formerr(header(qd=2) + qname("example.com") + b"\0\1\0\1")
        self.formerr(header(ar=3) + qname("example.com") + b"\0\1\0\1")
        self.formerr(header(qd=0))
        self.formerr(header(an=1) + qname("example.com") + b"\0\1\0\1" + b"\xc0\x0c\0\1\0\1\0\0\0\1\0\x10\1\2\3\4")

    def test_compression_loops(self):
        self.formerr(header() + b"\xc0\x0c" + b"\0\1\0\1")
        self.formerr(header() + b"\x03www\xc0\x0c" + b"\0\1\0\1")
        self.formerr(header() + b"\x03www\xc0\x20" + b"\0\1\0\1")

    def test_label_too_long(self):
        self.formerr(header() + bytes([64]) + b"a" * 64 + b"\0\0\1\0\1")
        self.formerr(header() + bytes([0x40]) + b"a" * 10 + b"\0\0\1\0\1")

    def test_name_too_long(self):
        name = (bytes([63]) + b"a" * 63) * 4 + b"\0"  # 257 bytes
        self.formerr(header() + name + b"\0\1\0\1")

    def test_trailing_garbage(self):
        self.formerr(header() + qname("example.com") + b"\0\1\0\1" + b"junk")

    def test_two_opt_records(self):
        opt = b"\0\0\x29\x04\xd0\0\0\0\0\0\0"
        self.formerr(header(ar=2) + qname("example.com") + b"\0\1\0\1" + opt + opt)

    def test_random_bytes(self):
        rnd = random.Random(42)
        for _ in range(300):
            data = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 80)))
            raw = self.server.raw_udp(data, timeout=0.05)
            if raw is not None:
                self.assertEqual(raw[:2], data[:2])
                self.assertTrue(raw[2] & 0x80)
        self.still_serving()

    def test_oversized_and_garbage_tcp(self):
        for payload in (b"\xff\xff" + b"x" * 100, b"\x00\x05hello", b"\x00\x00"):
            s = socket.create_connection(("127.0.0.1", self.server.port), timeout=3)
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            try:
                s.recv(65535)
            except (ConnectionResetError, socket.timeout):
                pass
            s.close()
        self.still_serving()
        r = self.server.query("www.example.com", "A", tcp=True)
        self.assertEqual(rrs(r, "answer"), ["www.example.com. 600 IN A 192.0.2.80"])

    def test_tcp_pipelined(self):
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=3)
        msgs = [self.server.make_query(n, "A") for n in ("www.example.com", "mail.example.com", "nope.example.com")]
        data = b"".join(struct.pack("!H", len(m.to_wire())) + m.to_wire() for m in msgs)
        s.sendall(data)
        got = []
        buf = b""
        while len(got) < 3:
            chunk = s.recv(65535)
            self.assertTrue(chunk)
            buf += chunk
            while len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
                n = struct.unpack("!H", buf[:2])[0]
                got.append(dns.message.from_wire(buf[2:2 + n]))
                buf = buf[2 + n:]
        s.close()
        self.assertEqual([m.id for m in got], [m.id for m in msgs])
        self.assertEqual(rrs(got[1], "answer"), ["mail.example.com. 3600 IN A 192.0.2.25"])
        self.assertEqual(dns.rcode.to_text(got[2].rcode()), "NXDOMAIN")


class Lifecycle(unittest.TestCase):
    def test_reload_and_stop(self):
        srv = Server(BASE_CONFIG + CONFIG, CoreAnswers.FILES)
        try:
            srv.start()
            self.assertEqual(rrs(srv.query("www.example.com"), "answer"),
                             ["www.example.com. 600 IN A 192.0.2.80"])
            srv.write("example.com.zone", ZONE.replace("192.0.2.80", "192.0.2.81"))
            srv.send_signal(signal.SIGHUP)
            srv.wait_log(r"reloaded")
            self.assertEqual(rrs(srv.query("www.example.com"), "answer"),
                             ["www.example.com. 600 IN A 192.0.2.81"])
            # A broken zone file: the old data keeps being served.
            srv.write("example.com.zone", ZONE + "\nbroken IN A not-an-address\n")
            srv.send_signal(signal.SIGHUP)
            srv.wait_log(r"reload failed")
            self.assertIn("example.com.zone:", srv.log_since_start())
            self.assertEqual(rrs(srv.query("www.example.com"), "answer"),
                             ["www.example.com. 600 IN A 192.0.2.81"])
            # New listen settings cannot apply without new sockets: said, not ignored.
            srv.write("example.com.zone", ZONE.replace("192.0.2.80", "192.0.2.81"))
            srv.write("config.toml", (BASE_CONFIG + CONFIG).replace("listen_port = 0", "listen_port = 5"))
            srv.send_signal(signal.SIGHUP)
            srv.wait_log(r"warn: listen addresses, port or user changed \(port 5: .*take effect on restart")
            self.assertEqual(rrs(srv.query("www.example.com"), "answer"),
                             ["www.example.com. 600 IN A 192.0.2.81"])
            self.assertEqual(srv.stop(), 0)
            self.assertIn("stopping", srv.log())
        finally:
            srv.cleanup()

    def test_check_and_bad_config(self):
        srv = Server("listen_prot = 53\n" + BASE_CONFIG + CONFIG, CoreAnswers.FILES)
        try:
            out = srv.tool(os.environ.get("GEOACME_BIN"), "check", "-c", srv.config_path)
            self.assertEqual(out.returncode, 3)
            self.assertRegex(out.stderr, r"config\.toml:\d+:\d+: .*listen_prot.*listen_port")
            srv.write("config.toml", BASE_CONFIG + CONFIG)
            out = srv.tool(os.environ.get("GEOACME_BIN"), "check", "-c", srv.config_path)
            self.assertEqual(out.returncode, 0, out.stderr)
            srv.write("example.com.zone", ZONE + "\nbroken IN A not-an-address\nalso IN MX x\n")
            out = srv.tool(os.environ.get("GEOACME_BIN"), "check", "-c", srv.config_path)
            self.assertEqual(out.returncode, 3)
            self.assertEqual(len([l for l in out.stderr.splitlines() if "example.com.zone:" in l]), 2,
                             out.stderr)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
