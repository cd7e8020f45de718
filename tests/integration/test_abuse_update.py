# SPDX-License-Identifier: MIT
"""Issue #16, what an UPDATE, a zone file or a database row may put in a
zone: every record's rdata is checked against its type's wire format
(items 1 and 3).

Each refusal is asserted exactly (the rcode, nothing written, the name
still absent), and every answer is parsed by dnspython and by kdig, which
drop a whole response over one malformed record."""
import base64
import hashlib
import hmac
import sqlite3
import struct
import time
import unittest

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsigkeyring
import dns.update

from harness import BASE_CONFIG, Server, ServerTestCase, main, make_key, qname, rrs
from test_badinput import serve_once

ZONE = """$ORIGIN acme.example.net.
$TTL 300
@ IN SOA ns1.example.com. hostmaster.example.com. 100 7200 3600 1209600 60
@ IN NS ns1.example.com.
@ IN NS ns2.example.com.
www IN A 192.0.2.1
"""

SECRET = b"admin-secret-for-the-abuse-tests-0123456789"
KEYNAME = "admin."
KEYRING = dns.tsigkeyring.from_text({KEYNAME: base64.b64encode(SECRET).decode()})

CONFIG = """
[[zones]]
zone = "acme.example.net"
[[zones.keys]]
key_path = "acme.pem"
[zones.stores]
type = "sqlite"
zone_path = "acme.zone"
journal_path = "acme.sqlite"
allow_update = true
[[zones.stores.tsig_keys]]
name = "%s"
algorithm = "hmac-sha256"
secret = "%s"
allow_types = ["A", "TXT", "CNAME", "NS", "MX", "PTR", "SRV", "DS", "CAA", "DNAME"]
""" % (KEYNAME, base64.b64encode(SECRET).decode())

TYPES = {"A": 1, "NS": 2, "CNAME": 5, "PTR": 12, "MX": 15, "TXT": 16, "SRV": 33, "DNAME": 39,
         "DS": 43, "CAA": 257}
APEX = "acme.example.net."


def sign(wire, now=None):
    """Appends a TSIG (hmac-sha256, the admin key) to raw UPDATE bytes."""
    now = int(time.time()) if now is None else now
    keyname = dns.name.from_text(KEYNAME).to_wire()
    alg = dns.name.from_text("hmac-sha256.").to_wire()
    times = struct.pack("!HIH", now >> 32, now & 0xFFFFFFFF, 300)
    variables = keyname + struct.pack("!HI", 255, 0) + alg + times + struct.pack("!HH", 0, 0)
    mac = hmac.new(SECRET, wire + variables, hashlib.sha256).digest()
    rdata = alg + times + struct.pack("!H", len(mac)) + mac + wire[:2] + struct.pack("!HH", 0, 0)
    out = bytearray(wire + keyname + struct.pack("!HHIH", 250, 255, 0, len(rdata)) + rdata)
    out[10:12] = struct.pack("!H", struct.unpack("!H", out[10:12])[0] + 1)
    return bytes(out)


_qid = [0x4000]


def raw_update(updates):
    """An UPDATE of acme.example.net adding (name, type, rdata bytes) records, signed."""
    _qid[0] += 1
    wire = struct.pack("!HHHHHH", _qid[0], 5 << 11, 1, 0, len(updates), 0)
    wire += qname(APEX) + struct.pack("!HH", 6, 1)
    for name, rtype, rd in updates:
        wire += qname(name) + struct.pack("!HHIH", TYPES.get(rtype, rtype), 1, 300, len(rd)) + rd
    return sign(wire)


class AcmeServer(ServerTestCase):
    """A signed ACME zone and a key that may change many types."""
    CONFIG = CONFIG
    FILES = {"acme.zone": ZONE}

    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + cls.CONFIG, cls.FILES)
        make_key(cls.server.path("acme.pem"))
        cls.server.start()

    def rows(self):
        db = sqlite3.connect("file:%s?mode=ro" % self.server.path("acme.sqlite"), uri=True)
        try:
            return sorted(db.execute("SELECT hex(name), type, ttl, hex(rdata) FROM records"))
        finally:
            db.close()

    def serial(self):
        return self.server.query(APEX, "SOA").answer[0][0].serial

    def send(self, wire):
        raw = self.server.raw_udp(wire, timeout=3)
        self.assertIsNotNone(raw, "no answer")
        self.assertEqual(raw[:2], wire[:2])
        return raw[3] & 0xF

    def assert_refused(self, updates, rcode="FORMERR"):
        rows, serial = self.rows(), self.serial()
        self.assertEqual(dns.rcode.to_text(self.send(raw_update(updates))), rcode)
        self.assertEqual(self.rows(), rows, "a refused UPDATE wrote to the database")
        self.assertEqual(self.serial(), serial)
        for name, rtype, _ in updates:
            self.assert_answer_parses(name, rtype)
            r = self.server.query(name, rtype, dnssec=True)
            self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN", name)

    def assert_answer_parses(self, name, rtype):
        """dnspython (strict, no trailing bytes) and kdig both read the answer, UDP and TCP."""
        for tcp in (False, True):
            q = self.server.make_query(name, rtype, dnssec=True)
            if tcp:
                r = dns.query.tcp(q, "127.0.0.1", port=self.server.port, timeout=3)
            else:
                raw = self.server.raw_udp(q.to_wire(), timeout=3)
                self.assertIsNotNone(raw)
                r = dns.message.from_wire(raw, ignore_trailing=False)
            self.assertEqual(r.id, q.id)
        out = self.server.kdig("+dnssec", "+tcp", name, rtype)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertNotIn("malformed", (out.stdout + out.stderr).lower())
        self.assertIn("->>HEADER<<-", out.stdout)
        return r


class Rdata(AcmeServer):
    """Items 1 and 3: UPDATEs whose rdata does not match the type's format."""

    def test_empty_name_rdata_formerr(self):
        """Item 1: CNAME, NS, MX and PTR with RDLENGTH 0 (the answer path read them as
        names past their end and sent adjacent memory); FORMERR as BIND answers."""
        for rtype in ("CNAME", "NS", "MX", "PTR", "SRV"):
            self.assert_refused([("empty-%s.acme.example.net." % rtype.lower(), rtype, b"")])

    def test_names_that_run_out_formerr(self):
        self.assert_refused([("cut.acme.example.net.", "CNAME", b"\x03www\x07exam")])
        self.assert_refused([("mx.acme.example.net.", "MX", b"\x00\x0a")])
        self.assert_refused([("extra.acme.example.net.", "PTR", b"\x01a\x00\x00")])

    def test_opaque_types_checked(self):
        """Item 3: an empty DS and a 1-byte CAA were signed and served, and then kdig
        and dnspython rejected the whole response."""
        self.assert_refused([("ds.acme.example.net.", "DS", b"")])
        self.assert_refused([("caa.acme.example.net.", "CAA", b"\x00")])
        self.assert_refused([("ds2.acme.example.net.", "DS", b"\x12\x34\x0d\x02" + b"\x01" * 10)])
        self.assert_refused([("caa2.acme.example.net.", "CAA", b"\x00\x05is-ue;")])

    def test_one_bad_record_refuses_the_update(self):
        self.assert_refused([("fine.acme.example.net.", "TXT", b"\x02ok"),
                             ("fine.acme.example.net.", "CNAME", b"")])

    def test_well_formed_records_served(self):
        """The control: the same types, well formed, are stored, signed and parse."""
        u = dns.update.UpdateMessage(APEX, keyring=KEYRING, keyname=KEYNAME)
        u.add("alias.acme.example.net.", 60, "CNAME", "www.acme.example.net.")
        u.add("mx.acme.example.net.", 60, "MX", "10 mail.example.com.")
        u.add("ptr.acme.example.net.", 60, "PTR", "host.example.com.")
        u.add("child.acme.example.net.", 60, "NS", "ns.example.com.")
        u.add("child.acme.example.net.", 60, "DS",
              "60485 13 2 D4B7D520E7BB5F0F67674A0CCEB1E3E0614B93C4F9E99B8383F6A1E4469DA50A")
        u.add("caa.acme.example.net.", 60, "CAA", '0 issue "letsencrypt.org"')
        r = dns.query.udp(u, "127.0.0.1", port=self.server.port, timeout=5)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        for name, rtype, want in (("alias", "CNAME", "www.acme.example.net."),
                                  ("mx", "MX", "10 mail.example.com."),
                                  ("ptr", "PTR", "host.example.com."),
                                  ("caa", "CAA", '0 issue "letsencrypt.org"')):
            r = self.assert_answer_parses("%s.acme.example.net." % name, rtype)
            self.assertEqual([rd.to_text() for rs in r.answer for rd in rs
                              if rs.rdtype == dns.rdatatype.from_text(rtype)], [want])
        r = self.assert_answer_parses("child.acme.example.net.", "DS")
        self.assertEqual(len(r.answer), 2)   # the DS and its RRSIG
        r = self.assert_answer_parses("x.child.acme.example.net.", "A")
        self.assertEqual(rrs(r, "authority")[0], "child.acme.example.net. 60 IN NS ns.example.com.")


class Semantics(AcmeServer):
    """Item 6: '*' labels, prerequisites on the DNSSEC records the zone serves, DNAME."""

    def update(self, *forms):
        u = dns.update.UpdateMessage(APEX, keyring=KEYRING, keyname=KEYNAME)
        for f in forms:
            getattr(u, f[0])(*f[1:])
        r = dns.query.udp(u, "127.0.0.1", port=self.server.port, timeout=5)
        return dns.rcode.to_text(r.rcode())

    def test_star_label_anywhere_refused(self):
        """x.*.y passed the leftmost-label check, then the snapshot did not build: SERVFAIL
        and an error logged on every try.  Any '*' label is refused by policy now."""
        for name in ("x.*.acme.example.net.", "a.b.*.c.acme.example.net.", "*.acme.example.net."):
            rows, serial = self.rows(), self.serial()
            self.assertEqual(self.update(("add", name, 60, "TXT", '"w"')), "REFUSED", name)
            self.assertEqual(self.rows(), rows)
            self.assertEqual(self.serial(), serial)
        self.server.wait_log(r"update refused: key admin\., x\.\*\.acme\.example\.net\. TXT: "
                             r"wildcard names are not allowed")
        self.assertNotIn("cannot be served", self.server.log_since_start())
        self.assertNotIn("the change was not applied", self.server.log_since_start())

    def test_prerequisites_see_dnssec_records(self):
        """yxrrset apex DNSKEY answered NXRRSET: prerequisites looked at the stored
        records only, not at what the signer adds to the zone."""
        t = ("add", "pre.acme.example.net.", 60, "TXT", '"p"')
        self.assertEqual(self.update(("present", APEX, "DNSKEY"), t), "NOERROR")
        self.assertEqual(self.update(("absent", APEX, "DNSKEY"), t), "YXRRSET")
        self.assertEqual(self.update(("present", "www.acme.example.net.", "RRSIG"), t), "NOERROR")
        self.assertEqual(self.update(("present", "www.acme.example.net.", "NSEC"), t), "NOERROR")
        self.assertEqual(self.update(("absent", "www.acme.example.net.", "NSEC"), t), "YXRRSET")
        self.assertEqual(self.update(("present", APEX, "CDS"), t), "NXRRSET")
        # Value dependent: the DNSKEY RRset as served matches; another key does not.
        dnskey = self.server.query(APEX, "DNSKEY").answer[0][0].to_text()
        self.assertEqual(self.update(("present", APEX, "DNSKEY", dnskey), t), "NOERROR")
        other = dnskey.rsplit(" ", 1)[0] + " " + base64.b64encode(b"\1" * 64).decode()
        self.assertEqual(self.update(("present", APEX, "DNSKEY", other), t), "NXRRSET")
        # A name with nothing but an empty non-terminal below it is not in use.
        self.assertEqual(self.update(("add", "a.ent.acme.example.net.", 60, "TXT", '"e"')),
                         "NOERROR")
        self.assertEqual(self.update(("present", "ent.acme.example.net."), t), "NXDOMAIN")

    def test_dname_refused(self):
        """DNAME was stored and served but never followed when answering; now
        served from zone files, still refused by policy even for a key whose
        allow_types lists it (doc/zones.md)."""
        rows, serial = self.rows(), self.serial()
        self.assertEqual(self.update(("add", "d.acme.example.net.", 60, "DNAME", "example.org.")),
                         "REFUSED")
        self.assertEqual(self.rows(), rows)
        self.assertEqual(self.serial(), serial)
        self.server.wait_log(r"update refused: key admin\., d\.acme\.example\.net\. DNAME: "
                             r"DNAME is not allowed by UPDATE")


class ZoneFileRdata(unittest.TestCase):
    """Item 3 at zone-file load: ldns reads generic rdata (RFC 3597 \\#) of known types
    without checking it against their format; the file's line is named."""

    def start_with(self, extra):
        zone = ZONE.replace("acme.example.net.", "example.com.")
        files = {"example.com.zone": zone + extra}
        return serve_once('[[zones]]\nzone = "example.com"\nfile = "example.com.zone"\n', files)

    def test_bad_rdata_refused_at_its_line(self):
        line = len(ZONE.splitlines()) + 1
        for extra, what in (("ds IN DS \\# 0\n", "DS"),
                            ("caa IN CAA \\# 1 00\n", "CAA"),
                            ("c IN CNAME \\# 0\n", "CNAME"),
                            ("mx IN MX \\# 2 000a\n", "MX"),
                            ("ns IN NS \\# 0\n", "NS")):
            rc, log = self.start_with(extra)
            self.assertEqual(rc, 3, "%r: %s" % (extra, log))
            self.assertRegex(log, r"example\.com\.zone:%d: .*the %s record data does not match "
                                  r"its format" % (line, what), extra)


    def test_dname_and_wildcard_conflicts_refused_at_their_line(self):
        """Wildcards and DNAME are served (issue #28, doc/zones.md); what
        RFC 6672 2.4 and RFC 4592 4.2/4.4 forbid is refused at the line
        that makes the conflict."""
        line = len(ZONE.splitlines()) + 1
        for extra, at, why in (
                ("d IN DNAME example.org.\na.d IN A 192.0.2.1\n", 1,
                 r"a\.d\.example\.com\.: no name may exist below a DNAME"),
                ("a.d IN A 192.0.2.1\nd IN DNAME example.org.\n", 1,
                 r"d\.example\.com\.: no name may exist below a DNAME"),
                ("d IN DNAME example.org.\nd IN CNAME example.org.\n", 1,
                 r"d\.example\.com\.: a DNAME and a CNAME cannot share an owner"),
                ("d IN DNAME example.org.\nd IN DNAME example.net.\n", 1,
                 r"d\.example\.com\.: a name owns at most one DNAME"),
                ("* IN NS ns1.example.com.\n", 0,
                 r"\*\.example\.com\.: a wildcard cannot own NS"),
                ("*.x IN DNAME example.org.\n", 0,
                 r"\*\.x\.example\.com\.: a wildcard cannot own a DNAME")):
            rc, log = self.start_with(extra)
            self.assertEqual(rc, 3, "%r: %s" % (extra, log))
            self.assertRegex(log, r"example\.com\.zone:%d: %s" % (line + at, why), extra)

    def test_acme_seed_takes_no_wildcard_or_dname(self):
        """An ACME zone's seed keeps to what its UPDATE policy allows."""
        line = len(ZONE.splitlines()) + 1
        for extra, why in (("* IN TXT \"w\"\n", r"\*\.acme\.example\.net\.: an ACME zone "
                                                   r"takes no wildcard or '\*' label"),
                           ("x.*.y IN TXT \"w\"\n", r"x\.\*\.y\.acme\.example\.net\.: an "
                                                       r"ACME zone takes no wildcard"),
                           ("d IN DNAME example.org.\n", r"d\.acme\.example\.net\.: an ACME "
                                                          r"zone takes no DNAME")):
            rc, log = serve_once(CONFIG, {"acme.zone": ZONE + extra},
                                 setup=lambda srv: make_key(srv.path("acme.pem")))
            self.assertEqual(rc, 3, "%r: %s" % (extra, log))
            self.assertRegex(log, r"acme\.zone:%d: %s" % (line, why), extra)


class DatabaseRows(unittest.TestCase):
    """Item 3 when reading SQLite: a row edited by hand is skipped with a warning,
    never served (the answer path would read past its rdata)."""

    def test_hand_edited_rows_skipped(self):
        srv = Server(BASE_CONFIG + CONFIG, {"acme.zone": ZONE})
        make_key(srv.path("acme.pem"))
        try:
            srv.start()
            self.assertEqual(srv.stop(), 0)
            db = sqlite3.connect(srv.path("acme.sqlite"))
            bad = (("bad-cname", 5, b""), ("bad-mx", 15, b"\x00\x0a\x03www"),
                   ("bad-ds", 43, b""), ("bad-a", 1, b"\x01\x02\x03"))
            with db:
                for label, rtype, rd in bad:
                    name = dns.name.from_text("%s.acme.example.net." % label).to_wire()
                    db.execute("INSERT INTO records (name, type, class, ttl, rdata, created_at) "
                               "VALUES (?, ?, 1, 300, ?, 0)", (name, rtype, rd))
            db.close()
            srv.start()
            log = srv.log_since_start()
            for label, rtype, _ in bad:
                t = dns.rdatatype.to_text(rtype)
                self.assertRegex(log, r"skipping a malformed %s record at %s\.acme\.example\.net\. "
                                      r"in .*acme\.sqlite" % (t, label))
                q = srv.make_query("%s.acme.example.net." % label, t, dnssec=True)
                raw = srv.raw_udp(q.to_wire(), timeout=3)
                r = dns.message.from_wire(raw, ignore_trailing=False)
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN", label)
                self.assertEqual(rrs(r, "answer"), [])
            self.assertEqual(rrs(srv.query("www.acme.example.net."), "answer"),
                             ["www.acme.example.net. 300 IN A 192.0.2.1"])
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
