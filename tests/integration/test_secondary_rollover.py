# SPDX-License-Identifier: MIT
"""geoacme as the secondary of a Knot primary caught mid-rollover (issue
#22.4): Knot signs knot.example with two KSKs (a double-KSK rollover, RFC
7583 section 3.3.2: DNSKEY carries two RRSIGs) and three ZSKs (a
double-signature ZSK rollover with a standby that already signs: every
other RRset carries three RRSIGs).  The copy must serve every RRSIG as
received: the answers with DO carry exactly Knot's RRSIG sets (DNSKEY,
SOA, an A set, an NSEC denial), each verifies with ldns, and unbound
validates them (AD).  Then Knot moves on (a KSK and a ZSK retired, their
DNSKEYs and RRSIGs removed) and the copy follows by IXFR, exactly."""
import os
import subprocess
import time

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

from harness import main
from resolvers import Unbound
from test_secondary import KNOT_ZONE, KnotPrimaryCase

ZONE = "knot.example."


def rrsets(msg, section):
    """A section as a sorted list of record lines (owner TTL class type rdata)."""
    out = []
    for rrset in getattr(msg, section):
        for line in rrset.to_text().splitlines():
            out.append(" ".join(line.split()))
    return sorted(out)


def sigs(msg, section, covered):
    """The RRSIG lines of a section that cover `covered`."""
    return [l for l in rrsets(msg, section) if l.split()[3] == "RRSIG" and l.split()[4] == covered]


class OfKnotMidRollover(KnotPrimaryCase):

    @classmethod
    def keymgr(cls, *args):
        out = subprocess.run(["keymgr", "-c", cls.conf, ZONE] + list(args), capture_output=True,
                             text=True, timeout=30)
        if out.returncode != 0:
            raise AssertionError("keymgr %s: %s" % (" ".join(args), out.stdout + out.stderr))
        return out.stdout.strip()

    @classmethod
    def setUpClass(cls):
        cls.make_dir("geoacme-knotroll-")
        with open(os.path.join(cls.dir, "knot.example.zone"), "w") as f:
            f.write(KNOT_ZONE.format(serial=1, last=10))
        # Manual key management: Knot signs with every key keymgr made
        # active, publishes every key it made published.
        cls.start_knot("""policy:
  - id: manual
    manual: on
    algorithm: ecdsap256sha256
    nsec3: off
template:
  - id: default
    storage: "{d}"
    zonefile-load: difference
    journal-content: changes
zone:
  - domain: knot.example
    notify: geoacme
    acl: xfr
    dnssec-signing: on
    dnssec-policy: manual
""")
        # knotd has its configuration; keymgr reads the same one (the KASP
        # database under storage).  Keys are made before knotd loads the zone.
        cls.knot.terminate()
        cls.knot.wait(10)
        t = "publish=-1h ready=-1h active=-1h"
        cls.ksk = [cls.keymgr("generate", "algorithm=13", "ksk=yes", *t.split()) for _ in range(2)]
        cls.zsk = [cls.keymgr("generate", "algorithm=13", *t.split()) for _ in range(3)]
        listing = cls.keymgr("list")
        cls.tag = {}
        for line in listing.splitlines():
            f = line.split()
            cls.tag[f[0]] = f[1]
        cls.knot = subprocess.Popen(["knotd", "-c", cls.conf], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.start_secondary()
        cls.unbound = None

    @classmethod
    def tearDownClass(cls):
        if cls.unbound:
            cls.unbound.stop()
        super().tearDownClass()

    def knot_query(self, name, rdtype):
        q = dns.message.make_query(name, rdtype, want_dnssec=True)
        q.flags &= ~dns.flags.RD
        return dns.query.tcp(q, "127.0.0.1", port=self.kp, timeout=3)

    def geo_query(self, name, rdtype):
        q = dns.message.make_query(name, rdtype, want_dnssec=True)
        q.flags &= ~dns.flags.RD
        return dns.query.tcp(q, "127.0.0.1", port=self.sp, timeout=3)

    def serial(self, query):
        try:
            r = query(ZONE, "SOA")
            return r.answer[0][0].serial if r.answer else None
        except Exception:
            return None

    def wait_same_serial(self, at_least, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            k, g = self.serial(self.knot_query), self.serial(self.geo_query)
            if k is not None and k >= at_least and k == g:
                return k
            time.sleep(0.1)
        raise AssertionError("the copy never reached Knot's serial (Knot %s, geoacme %s):\n%s" %
                             (self.serial(self.knot_query), self.serial(self.geo_query),
                              self.secondary.log_since_start()[-3000:]))

    def kdig_sig_tags(self, name, rdtype):
        """The key tags of the RRSIGs Knot serves over `name` `rdtype` (kdig)."""
        out = subprocess.run(["kdig", "@127.0.0.1", "-p", str(self.kp), "+dnssec", "+norec",
                              "+tcp", name, rdtype], capture_output=True, text=True, timeout=20)
        tags = []
        for line in out.stdout.splitlines():
            f = line.split()
            if len(f) > 10 and f[3] == "RRSIG" and f[4] == rdtype and not line.startswith(";"):
                tags.append(f[10])
        return sorted(tags)

    def ldns_verify(self, resp, dnskey):
        keyfile = os.path.join(self.dir, "dnskey.txt")
        with open(keyfile, "w") as f:
            f.write("\n".join(l for l in rrsets(dnskey, "answer") if l.split()[3] == "DNSKEY") + "\n")
        path = os.path.join(self.dir, "resp.bin")
        with open(path, "wb") as f:
            f.write(resp.to_wire())
        out = subprocess.run([os.environ["LDNS_VERIFY"], keyfile, path], capture_output=True,
                             text=True, timeout=20)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertNotIn("BAD", out.stdout)

    QUESTIONS = ((ZONE, "DNSKEY"), (ZONE, "SOA"), ("www." + ZONE, "A"),
                 ("nope." + ZONE, "A"), ("www." + ZONE, "TXT"))

    def assert_copy_matches(self, ksks, zsks):
        dnskey = self.geo_query(ZONE, "DNSKEY")
        for name, t in self.QUESTIONS:
            with self.subTest(name=name, type=t):
                k, g = self.knot_query(name, t), self.geo_query(name, t)
                self.assertEqual(g.rcode(), k.rcode())
                self.assertTrue(g.flags & dns.flags.AA)
                # Every record, RRSIGs included, with its TTL.
                self.assertEqual(rrsets(g, "answer"), rrsets(k, "answer"))
                self.assertEqual(rrsets(g, "authority"), rrsets(k, "authority"))
                if t == "DNSKEY":
                    self.assertEqual(len(sigs(g, "answer", "DNSKEY")), ksks)
                elif name.startswith("nope") or t == "TXT":
                    self.assertEqual(len(sigs(g, "authority", "NSEC")), zsks * len(
                        [l for l in rrsets(g, "authority") if l.split()[3] == "NSEC"]))
                    self.assertEqual(len(sigs(g, "authority", "SOA")), zsks)
                else:
                    self.assertEqual(len(sigs(g, "answer", t)), zsks)
                self.ldns_verify(g, dnskey)
        if self.unbound:
            for name, t in self.QUESTIONS:
                with self.subTest(resolver="unbound", name=name, type=t):
                    r = self.unbound.query(name, t)
                    want = dns.rcode.NXDOMAIN if name.startswith("nope") else dns.rcode.NOERROR
                    self.assertEqual(r.rcode(), want, self.unbound.log()[-2000:])
                    self.assertTrue(r.flags & dns.flags.AD, "%s %s not validated:\n%s" %
                                    (name, t, self.unbound.log()[-2000:]))

    def test_rollover_followed_exactly(self):
        # Once Knot serves the zone (knotd was just started: it may still be
        # loading it) and the secondary has copied it:
        serial = self.wait_same_serial(1)
        # Knot really serves two RRSIGs over DNSKEY and three over the rest.
        self.assertEqual(self.kdig_sig_tags(ZONE, "DNSKEY"),
                         sorted(self.tag[k] for k in self.ksk))
        for name, t in ((ZONE, "SOA"), ("www." + ZONE, "A")):
            self.assertEqual(self.kdig_sig_tags(name, t), sorted(self.tag[k] for k in self.zsk))
        self.secondary.wait_log(r"knot\.example\.: AXFR from 127\.0\.0\.1:%d" % self.kp)
        self.assertNotIn("RRSIG records ignored", self.secondary.log_since_start())

        # A validating resolver that trusts only the KSK that stays.
        ds = subprocess.run(["keymgr", "-c", self.conf, ZONE, "ds", self.ksk[0]],
                            capture_output=True, text=True, timeout=20).stdout.splitlines()
        anchor = [l for l in ds if " DS " in l and " 13 2 " in l][0]
        type(self).unbound = Unbound([("knot.example", self.sp)], [anchor]).start()
        self.assert_copy_matches(2, 3)

        # Knot moves on: the second KSK and the third ZSK are retired and
        # removed, their DNSKEYs and RRSIGs go; the copy follows by IXFR.
        for key in (self.ksk[1], self.zsk[2]):
            self.keymgr("set", key, "retire=-1", "remove=-1")
        subprocess.run(["knotc", "-c", self.conf, "zone-keys-load", "knot.example"],
                       capture_output=True, check=True, timeout=20)
        deadline = time.time() + 30
        while time.time() < deadline and len(self.kdig_sig_tags(ZONE, "DNSKEY")) != 1:
            time.sleep(0.1)
        self.assertEqual(self.kdig_sig_tags(ZONE, "DNSKEY"), [self.tag[self.ksk[0]]])
        self.assertEqual(self.kdig_sig_tags("www." + ZONE, "A"),
                         sorted(self.tag[k] for k in self.zsk[:2]))
        self.wait_same_serial(serial + 1)
        self.secondary.wait_log(r"knot\.example\.: IXFR from 127\.0\.0\.1:%d, serial %d -> "
                                % (self.kp, serial))
        self.assert_copy_matches(1, 2)
        self.assertNotIn("RRSIG records ignored", self.secondary.log_since_start())


if __name__ == "__main__":
    main()
