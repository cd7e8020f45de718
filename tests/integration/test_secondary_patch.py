# SPDX-License-Identifier: MIT
"""A geoacme secondary patches its copy in place for each IXFR (issue #15:
time proportional to the difference, not to the zone), and serves exactly
what its geoacme primary serves.

After each UPDATE on the primary (names that join the NSEC chain, with an
empty non-terminal above them, and names that leave it), the secondary's
log says the copy was *patched* and its /metrics count it; its AXFR equals
the primary's record for record (RRSIG and NSEC included), and the same
questions with DO (a TXT, NXDOMAIN with its NSEC proofs, NODATA) get the
same answer sections from both.  The IXFR history the secondary keeps for
its own secondaries stays right: an IXFR from an old serial, applied to
the copy at that serial, gives the current copy.  Across kill -9 the
secondary serves the stored copy, then patches it again on the next IXFR.

The same with Knot as the primary, signing the zone itself (one ECDSA key,
NSEC): zone file changes reloaded on Knot reach geoacme by NOTIFY + IXFR
(Knot's own IXFR, its own NSEC chain and signatures), the copy is patched,
and geoacme's AXFR and answers are Knot's; a new delegation is patched too
(issue #26.1), and so is the next change.
"""
import os
import re
import subprocess
import time
import unittest
import urllib.request

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsig

from acme_helpers import signed_update
from harness import Server, free_port, main, make_key
from secondaries import sorted_records
from test_secondary import (ACME as ACME_SOA, ACME_PRIMARY, ACME_SECONDARY, LEGO, UPDATE_KEY,
                            UPDATE_SECRET, XFR_KEY, XFR_SECRET, KnotPrimaryCase, axfr_text,
                            listen)

ACME = ACME_SOA + "www     IN A   192.0.2.1\n"
PRIMARY = ACME_PRIMARY
SECONDARY = ACME_SECONDARY


def sections(r):
    """A response as the resolver sees it: rcode, AA, and each section's
    records (TTLs included) as sorted text."""
    def text(section):
        return sorted(rr for rrset in section for rr in rrset.to_text().splitlines())
    return (dns.rcode.to_text(r.rcode()), bool(r.flags & dns.flags.AA), text(r.answer),
            text(r.authority), text(r.additional))


class SecondaryPatches(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pp, cls.sp = free_port(), free_port()
        fmt = dict(pp=cls.pp, sp=cls.sp, uk=UPDATE_KEY, us=UPDATE_SECRET, xk=XFR_KEY,
                   xs=XFR_SECRET)
        cls.primary = Server(listen(cls.pp) + PRIMARY.format(**fmt), {"acme.zone": ACME})
        make_key(cls.primary.path("acme.pem"))
        cls.primary.start()
        cls.secondary = Server(listen(cls.sp) + SECONDARY.format(**fmt), {})
        cls.secondary.start()
        cls.wait_current()

    @classmethod
    def tearDownClass(cls):
        cls.secondary.cleanup()
        cls.primary.cleanup()

    @staticmethod
    def serial(server):
        try:
            r = server.query("acme.example", "SOA", timeout=1)
        except Exception:
            return None
        return r.answer[0][0].serial if r.rcode() == 0 and r.answer else None

    @classmethod
    def wait_current(cls, timeout=20):
        want = cls.serial(cls.primary)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cls.serial(cls.secondary) == want:
                return want
            time.sleep(0.02)
        raise AssertionError("the secondary never served serial %s:\n%s"
                             % (want, cls.secondary.log_since_start()[-3000:]))

    def update(self, add=(), delete=()):
        r = signed_update(self.primary, "acme.example.", LEGO, add=add, delete=delete, tcp=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        return self.wait_current()

    def metric(self, name):
        m = re.search(r"http: listening on \S+ \(port (\d+)\)", self.secondary.log_since_start())
        self.assertIsNotNone(m)
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % m.group(1), timeout=5) as r:
            text = r.read().decode()
        m = re.search(r"(?m)^%s (\d+)$" % re.escape(name), text)
        self.assertIsNotNone(m, text)
        return int(m.group(1))

    def assert_same_as_primary(self, names):
        """The whole copy, and the answers to these questions, are the primary's."""
        want = sorted_records(axfr_text(self.pp, "acme.example"))
        got = sorted_records(axfr_text(self.sp, "acme.example", key=False))
        self.assertGreater(len([l for l in want if " RRSIG " in l]), 5)
        self.assertEqual(got, want)
        for qname, qtype in names:
            p = self.primary.query(qname, qtype, dnssec=True)
            s = self.secondary.query(qname, qtype, dnssec=True)
            self.assertEqual(sections(s), sections(p), "%s %s" % (qname, qtype))

    def xfr_lines(self, rdtype, serial=0):
        """The secondary's AXFR, or IXFR from `serial`, as record lines in order
        (dnspython's text for both, so they compare)."""
        msgs = dns.query.xfr("127.0.0.1", "acme.example", rdtype=rdtype, serial=serial,
                             port=self.sp, timeout=10, lifetime=20)
        return [rr for m in msgs for rrset in m.answer for rr in rrset.to_text().splitlines()]

    def apply_ixfr(self, copy, lines):
        """RFC 1995 4: after the first SOA, each SOA starts the deletions or
        the additions of a difference, in turn; the last one closes."""
        out = set(copy)
        body = lines[1:-1]
        adding = True
        for line in body:
            if line.split()[3] == "SOA":
                adding = not adding
            (out.add if adding else out.discard)(line)
        return out
    def test_ixfr_patches_the_copy_and_serves_the_primarys_answers(self):
        log = self.secondary.log_since_start()
        self.assertRegex(log, r"acme\.example\.: AXFR from 127\.0\.0\.1:%d, serial 0 -> \d+: .*; "
                              r"copy built whole in [0-9.]+ ms" % self.pp)
        patched0 = self.metric("geoacme_transfers_in_patched_total")
        s0 = self.serial(self.secondary)
        copy0 = self.xfr_lines(dns.rdatatype.AXFR)[:-1]
        steps = [
            dict(add=[("_acme-challenge.a.acme.example.", 60, "TXT", '"one"')]),
            dict(add=[("_acme-challenge.m.n.acme.example.", 60, "TXT", '"two"'),
                      ("_acme-challenge.zz.acme.example.", 60, "TXT", '"last"')]),
            dict(add=[("_acme-challenge.a.acme.example.", 60, "TXT", '"three"')]),
            dict(delete=[("_acme-challenge.a.acme.example.", "TXT")]),
            dict(delete=[("_acme-challenge.m.n.acme.example.", "TXT")]),
        ]
        questions = [
            ("_acme-challenge.a.acme.example.", "TXT"),
            ("_acme-challenge.m.n.acme.example.", "TXT"),
            ("_acme-challenge.zz.acme.example.", "TXT"),
            ("n.acme.example.", "TXT"),            # an empty non-terminal while m.n exists
            ("nope.acme.example.", "A"),           # NXDOMAIN: NSEC proofs
            ("www.acme.example.", "TXT"),          # NODATA
            ("acme.example.", "SOA"),
        ]
        serials = [s0]
        for k, step in enumerate(steps):
            before = serials[-1]
            serial = self.update(**step)
            serials.append(serial)
            self.secondary.wait_log(r"acme\.example\.: IXFR from 127\.0\.0\.1:%d, serial %d -> "
                                    r"%d: .*; copy patched in [0-9.]+ ms" % (self.pp, before,
                                                                             serial))
            self.assert_same_as_primary(questions)
        self.assertEqual(self.metric("geoacme_transfers_in_patched_total") - patched0,
                         len(steps))
        # A name left: NXDOMAIN again, with the primary's proofs.
        r = self.secondary.query("_acme-challenge.a.acme.example.", "TXT", dnssec=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
        self.assertIn("NSEC", [dns.rdatatype.to_text(rr.rdtype) for rr in r.authority])

        # The IXFR history the secondary serves: from s0, applied to the copy at s0.
        ixfr = self.xfr_lines(dns.rdatatype.IXFR, s0)
        self.assertGreater(len(ixfr), 2, "an IXFR answered with the SOA alone")
        self.assertEqual(int(ixfr[1].split()[6]), s0, "not incremental: " + ixfr[1])
        self.assertTrue(any(" TXT " in l for l in ixfr), ixfr)
        now = self.xfr_lines(dns.rdatatype.AXFR)[:-1]
        self.assertEqual(sorted(self.apply_ixfr(copy0, ixfr)), sorted(now))

    def test_zz_kill9_then_patched_again(self):
        serial = self.serial(self.primary)
        self.secondary.kill9()
        self.secondary.start()
        self.secondary.wait_log(r"acme\.example\.: serving the copy from .*, serial %d" % serial)
        self.assertEqual(self.serial(self.secondary), serial)
        self.assert_same_as_primary([("nope.acme.example.", "A"),
                                     ("_acme-challenge.zz.acme.example.", "TXT")])
        new = self.update(add=[("_acme-challenge.after.acme.example.", 60, "TXT", '"kill"')])
        self.secondary.wait_log(r"acme\.example\.: IXFR from 127\.0\.0\.1:%d, serial %d -> %d: "
                                r".*; copy patched in" % (self.pp, serial, new))
        self.assert_same_as_primary([("_acme-challenge.after.acme.example.", "TXT"),
                                     ("after.acme.example.", "A"),
                                     ("nope.acme.example.", "A")])


KNOT_ZONE = """$ORIGIN knot.example.
$TTL 300
@ IN SOA ns1.knot.example. hostmaster.knot.example. {serial} 3600 600 86400 60
@ IN NS ns1.knot.example.
ns1 IN A 192.0.2.1
{extra}
"""


class SecondaryOfSigningKnot(KnotPrimaryCase):
    @classmethod
    def setUpClass(cls):
        cls.make_dir("geoacme-knotsigner-")
        cls.serial_n = 1
        cls.write_zone("www IN A 192.0.2.10")
        cls.start_knot("""policy:
  - id: csk
    algorithm: ecdsap256sha256
    single-type-signing: on
    nsec3: off
template:
  - id: default
    storage: "{d}"
    zonefile-load: difference-no-serial
    journal-content: all
    dnssec-signing: on
    dnssec-policy: csk
zone:
  - domain: knot.example
    notify: geoacme
    acl: xfr
""")
        cls.start_secondary('allow_axfr = true\n')

    @classmethod
    def write_zone(cls, extra):
        with open(os.path.join(cls.dir, "knot.example.zone"), "w") as f:
            f.write(KNOT_ZONE.format(serial=cls.serial_n, extra=extra))

    def knot_log(self):
        with open(os.path.join(self.dir, "knot.log"), errors="replace") as f:
            return f.read()

    def knot_query(self, qname, qtype):
        q = dns.message.make_query(qname, qtype, want_dnssec=True)
        return dns.query.udp(q, "127.0.0.1", port=self.kp, timeout=3)

    def serial_of(self, query):
        try:
            r = query("knot.example", "SOA")
        except Exception:
            return None
        return r.answer[0][0].serial if r.rcode() == 0 and r.answer else None

    def wait_same_serial(self, after=None, timeout=30):
        """Until geoacme serves Knot's serial, once Knot's is past `after`
        (knotc returns before Knot has loaded and signed the change)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            k = self.serial_of(self.knot_query)
            if k and k != after and self.serial_of(lambda n, t: self.secondary.query(n, t, dnssec=True)) == k:
                return k
            time.sleep(0.05)
        raise AssertionError("geoacme never caught up with Knot:\n%s\n%s" %
                             (self.secondary.log_since_start()[-2000:], self.knot_log()[-2000:]))

    def assert_same_as_knot(self, questions):
        want = sorted_records(subprocess.run(
            ["kdig", "@127.0.0.1", "-p", str(self.kp), "-y",
             "hmac-sha256:%s:%s" % (XFR_KEY, XFR_SECRET), "+nocomments", "+nostats",
             "+noheader", "+noquestion", "knot.example", "AXFR"],
            capture_output=True, text=True, timeout=20).stdout)
        got = sorted_records(axfr_text(self.sp, "knot.example", key=False))
        self.assertGreater(len([l for l in want if " NSEC " in l]), 2)
        self.assertEqual(got, want)
        for qname, qtype in questions:
            k = self.knot_query(qname, qtype)
            g = self.secondary.query(qname, qtype, dnssec=True)
            self.assertEqual(sections(g), sections(k), "%s %s" % (qname, qtype))

    def test_knot_signs_geoacme_patches(self):
        first = self.wait_same_serial()
        self.secondary.wait_log(r"knot\.example\.: AXFR from 127\.0\.0\.1:%d, serial 0 -> %d: "
                                r".*; copy built whole" % (self.kp, first))
        questions = [("www.knot.example.", "A"), ("new.deep.knot.example.", "TXT"),
                     ("deep.knot.example.", "TXT"), ("ns1.knot.example.", "TXT")]
        # (zone file's extra records, how geoacme applies Knot's IXFR): a
        # new delegation with nothing below it is patched too (issue #26.1).
        deleg = "sub IN NS ns.elsewhere.example.\n"
        steps = [("www IN A 192.0.2.10\nnew.deep IN TXT \"joined\"", "patched"),
                 ("www IN A 192.0.2.20\nnew.deep IN TXT \"joined\"", "patched"),
                 ("new.deep IN TXT \"www left\"", "patched"),
                 (deleg + "new.deep IN TXT \"www left\"", "patched"),
                 (deleg + "new.deep IN TXT \"again\"\nzzz IN TXT \"last\"", "patched")]
        serial = first
        for extra, how in steps:
            self.__class__.serial_n += 1
            self.write_zone(extra)
            subprocess.run(["knotc", "-c", self.conf, "zone-reload", "knot.example"],
                           capture_output=True, check=True, timeout=20)
            new = self.wait_same_serial(after=serial)
            self.secondary.wait_log(r"knot\.example\.: IXFR from 127\.0\.0\.1:%d, serial %d -> "
                                    r"%d: .*; copy %s in" % (self.kp, serial, new, how))
            self.assert_same_as_knot(questions)
            serial = new
        r = self.secondary.query("sub.knot.example.", "A", dnssec=True)
        self.assertEqual([rrset.to_text() for rrset in r.authority if rrset.rdtype == 2],
                         ["sub.knot.example. 300 IN NS ns.elsewhere.example."])
        r = self.secondary.query("www.knot.example.", "A", dnssec=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
        self.assertRegex(self.knot_log(), r"\[knot\.example\.\] IXFR, outgoing")


if __name__ == "__main__":
    main()
