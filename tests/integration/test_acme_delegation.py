# SPDX-License-Identifier: MIT
"""Delegations in a signed ACME zone (issue #26.1).

- A DS at a name that is not a delegation is refused (RFC 4035 2.4: "A DS
  RRset MUST NOT appear at a non-delegation point or at a zone's apex"): an
  UPDATE adding one (at a plain name, at a new name), or deleting a cut's NS
  but not its DS, is answered REFUSED and changes nothing (serial, answers);
  a zone file holding one is refused with file:line by `check` and `serve`.
- An UPDATE adding NS below the apex (with a DS, then changing and removing
  the DS) is patched, not rebuilt, and the delegation answers exactly:
  referrals (no AA, NS in the authority with the DS and its RRSIG, or the
  NSEC that proves there is none), the DS itself answered with AA, and the
  parent's data unchanged."""
import re
import subprocess
import unittest

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsigkeyring
import dns.update

from harness import BASE_CONFIG, BIN, Server, main, make_key

SECRET = "ZGVsZWdhdGlvbi1zZWNyZXQtZGVsZWdhdGlvbi0xMjM0NTY="
APEX = "deleg.example.net"

ZONE = """$ORIGIN deleg.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
www IN A 192.0.2.1
plain IN TXT "no delegation here"
"""

CONFIG = """
[[zones]]
zone = "deleg.example.net"
zone_type = "Primary"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.sqlite"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "deleg.example.net."
algorithm = "hmac-sha256"
secret = "%s"
allow_types = ["TXT", "NS", "DS"]
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "acme.pem"
""" % SECRET

DS1 = "12345 13 2 " + "ab" * 32
DS2 = "54321 13 2 " + "cd" * 32


def fq(rel):
    return APEX + "." if not rel else "%s.%s." % (rel, APEX)


def section(msg, which):
    """A section as sorted 'name ttl type rdata' lines (RRSIGs by type covered)."""
    out = []
    for rrset in getattr(msg, which):
        for rd in rrset:
            text = ("RRSIG %s" % dns.rdatatype.to_text(rd.type_covered)
                    if rrset.rdtype == dns.rdatatype.RRSIG else
                    "%s %s" % (dns.rdatatype.to_text(rrset.rdtype), rd.to_text()))
            out.append("%s %d %s" % (rrset.name, rrset.ttl, text))
    return sorted(out)


class Delegations(unittest.TestCase):

    def update(self, srv, add=(), delete=()):
        keyring = dns.tsigkeyring.from_text({APEX + ".": SECRET})
        up = dns.update.UpdateMessage(APEX, keyring=keyring, keyalgorithm="hmac-sha256")
        for rel, rdtype, data in add:
            up.add(fq(rel), 3600, rdtype, data)
        for d in delete:
            up.delete(fq(d[0]), *d[1:])
        r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=10)
        return dns.rcode.to_text(r.rcode())

    def ask(self, srv, rel, rdtype):
        q = dns.message.make_query(fq(rel), rdtype, want_dnssec=True, payload=4096)
        q.flags &= ~dns.flags.RD
        return dns.query.tcp(q, "127.0.0.1", port=srv.port, timeout=5)

    def snapshot(self, srv):
        out = {}
        for rel in ("", "www", "plain", "child", "x.child"):
            for t in ("SOA", "A", "TXT", "NS", "DS"):
                m = self.ask(srv, rel, t)
                out[(rel, t)] = (dns.rcode.to_text(m.rcode()), dns.flags.to_text(m.flags),
                                 section(m, "answer"), section(m, "authority"))
        return out

    def serial(self, srv):
        return self.ask(srv, "", "SOA").answer[0][0].serial

    def test_ds_refused_and_ns_patched(self):
        srv = Server(BASE_CONFIG + CONFIG, {"acme.zone": ZONE})
        make_key(srv.path("acme.pem"))
        try:
            srv.start()
            s0 = self.serial(srv)
            before = self.snapshot(srv)
            # A DS at a plain name and at the apex: REFUSED, nothing changes.
            self.assertEqual(self.update(srv, add=[("plain", "DS", DS1)]), "REFUSED")
            self.assertEqual(self.update(srv, add=[("", "DS", DS1)]), "REFUSED")
            self.assertEqual(self.update(srv, add=[("nothing", "DS", DS1)]), "REFUSED")
            self.assertEqual(self.serial(srv), s0)
            self.assertEqual(self.snapshot(srv), before)
            log = srv.log_since_start()
            for name in ("plain", "nothing"):
                self.assertIn("change refused: it leaves a DS record at %s.deleg.example.net., "
                              "which is not a delegation" % name, log)
            # The apex is not the key's to change (allow_names) before it is a DS's.
            self.assertIn("deleg.example.net. DS: name not allowed for this key", log)

            # NS and DS below the apex in one UPDATE: a delegation, patched.
            self.assertEqual(self.update(srv, add=[("child", "NS", "ns.child.example.org."),
                                                   ("child", "DS", DS1)]), "NOERROR")
            self.assertEqual(self.serial(srv), s0 + 1)
            for rel, t in (("child", "A"), ("x.child", "TXT"), ("child", "NS")):
                m = self.ask(srv, rel, t)
                self.assertEqual(dns.rcode.to_text(m.rcode()), "NOERROR", (rel, t))
                self.assertFalse(m.flags & dns.flags.AA, (rel, t))
                self.assertEqual(section(m, "answer"), [], (rel, t))
                self.assertEqual(section(m, "authority"), [
                    "child.deleg.example.net. 3600 DS " + DS1.lower(),
                    "child.deleg.example.net. 3600 NS ns.child.example.org.",
                    "child.deleg.example.net. 3600 RRSIG DS",
                ], (rel, t))
            m = self.ask(srv, "child", "DS")
            self.assertTrue(m.flags & dns.flags.AA)
            self.assertEqual(section(m, "answer"), ["child.deleg.example.net. 3600 DS " + DS1.lower(),
                                                    "child.deleg.example.net. 3600 RRSIG DS"])
            # The parent's own data is as it was.
            for key in (("www", "A"), ("plain", "TXT")):
                self.assertEqual(self.snapshot(srv)[key][2], before[key][2])

            # Deleting the cut's NS but not its DS: REFUSED, the cut stays.
            self.assertEqual(self.update(srv, delete=[("child", "NS")]), "REFUSED")
            self.assertEqual(self.serial(srv), s0 + 1)

            # The DS changes, then goes: the referral proves there is none.
            self.assertEqual(self.update(srv, add=[("child", "DS", DS2)],
                                         delete=[("child", "DS", DS1)]), "NOERROR")
            m = self.ask(srv, "x.child", "A")
            self.assertIn("child.deleg.example.net. 3600 DS " + DS2.lower(), section(m, "authority"))
            self.assertEqual(self.update(srv, delete=[("child", "DS")]), "NOERROR")
            m = self.ask(srv, "x.child", "A")
            self.assertFalse(m.flags & dns.flags.AA)
            self.assertEqual(section(m, "authority"), [
                "child.deleg.example.net. 3600 NS ns.child.example.org.",
                "child.deleg.example.net. 60 NSEC plain.deleg.example.net. NS RRSIG NSEC",
                "child.deleg.example.net. 60 RRSIG NSEC",
            ])
            self.assertEqual(self.serial(srv), s0 + 3)
            log = srv.log_since_start()
            self.assertEqual(len(re.findall(r"snapshot patched in", log)), 3, log[-3000:])
            self.assertNotIn("snapshot rebuilt", log)

            # After a restart (the zone built whole from SQLite): the same answers.
            patched = self.snapshot(srv)
            srv.kill9()
            srv.start()
            self.assertEqual(self.snapshot(srv), patched)
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()

    def test_ds_in_zone_file_refused_with_its_line(self):
        for body, line, what in (
                ("plain IN DS %s\n" % DS1, 7, "plain.deleg.example.net."),
                ("@ IN DS %s\n" % DS1, 7, "deleg.example.net."),
                ("cut IN DS %s\ncut IN NS ns.cut.example.org.\nbad IN DS %s\n" % (DS1, DS1), 9,
                 "bad.deleg.example.net.")):
            srv = Server(BASE_CONFIG + CONFIG, {"acme.zone": ZONE + body})
            make_key(srv.path("acme.pem"))
            try:
                want = "%s:%d: %s: a DS record belongs at a delegation" % (
                    srv.path("acme.zone"), line, what)
                c = subprocess.run([BIN, "check", "-c", srv.config_path], capture_output=True,
                                   text=True, timeout=60, cwd=srv.dir)
                self.assertEqual(c.returncode, 3, c.stdout + c.stderr)
                self.assertIn(want, c.stdout + c.stderr)
                self.assertEqual((c.stdout + c.stderr).count("a DS record belongs"), 1)
                with self.assertRaises(AssertionError) as e:
                    srv.start()
                self.assertEqual(srv.exit_code, 3)
                self.assertIn(want, str(e.exception))
            finally:
                srv.cleanup()


if __name__ == "__main__":
    main()
