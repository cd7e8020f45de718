# SPDX-License-Identifier: MIT
"""Issue #28: wildcards (RFC 4592) and DNAME (RFC 6672) served from a zone
file, signed (RFC 4035 3.1.3), and the same zone served by Knot and by
secondaries.

- Knot differential: knotd serves the same zone file, signing it with its
  own key; for every question of wildcards.QUESTIONS, with and without DO,
  the rcode, AA and answer RRsets (records and TTLs; RRSIGs by owner,
  type covered, labels and TTL) are identical, the authority's NSECs prove
  the same (owner and next name) and every RRSIG of ours verifies
  (dnspython's dns.dnssec) with the zone's DNSKEY.
- Transfers: Knot and NSD secondaries of geoacme serve byte-identical
  records (our signatures travel) for every question, and geoacme as
  Knot's secondary serves what Knot serves.
- A geo name that is a wildcard is refused at its config line."""
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import dns.dnssec
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype

import secondaries
import wildcards
from harness import (BASE_CONFIG, SITES_TOML, Server, free_port, geo_toml, main, make_key,
                     make_mmdb, zone_toml)
from test_badinput import serve_once

ZONE = "example.com."
CONFIG = BASE_CONFIG + zone_toml(body='axfr_policy = "AllowAll"\n',
                                 signing_key="example.com.pem")

KNOT = """server:
  rundir: "{d}"
  listen: 127.0.0.1@{port}
log:
  - target: "{d}/knot.log"
    any: info
database:
  storage: "{d}"
policy:
  - id: p256
    algorithm: ecdsap256sha256
    single-type-signing: on
    nsec3: off
acl:
  - id: xfr
    address: 127.0.0.0/8
    action: transfer
template:
  - id: default
    storage: "{d}"
    zonefile-sync: -1
    journal-content: none
zone:
  - domain: example.com
    file: "{d}/example.com.zone"
    dnssec-signing: {signing}
    dnssec-policy: p256
    acl: xfr
"""

# geoacme as a secondary of that Knot.
SECONDARY = """
[[zones]]
zone = "example.com"
zone_type = "Secondary"
primaries = ["127.0.0.1:{kp}"]
[zones.stores]
type = "sqlite"
journal_path = "copy.sqlite"
"""


def fqdn(rel):
    return "%s.%s" % (rel, ZONE)


def query(port, name, rdtype, do):
    q = dns.message.make_query(name, rdtype, want_dnssec=do, payload=4096)
    q.flags &= ~dns.flags.RD
    r = dns.query.udp(q, "127.0.0.1", port=port, timeout=3)
    if r.flags & dns.flags.TC:
        r = dns.query.tcp(q, "127.0.0.1", port=port, timeout=3)
    return r


def records(section, with_sigs=True):
    """Sorted 'owner ttl type rdata' of a section; RRSIGs as owner, TTL,
    covered type and labels only (the keys differ)."""
    out = []
    for rrset in section:
        for rd in rrset:
            if rrset.rdtype == dns.rdatatype.RRSIG:
                if with_sigs:
                    out.append("%s %d RRSIG %s %d" % (rrset.name, rrset.ttl,
                                                      dns.rdatatype.to_text(rd.type_covered),
                                                      rd.labels))
            else:
                out.append("%s %d %s %s" % (rrset.name, rrset.ttl,
                                            dns.rdatatype.to_text(rrset.rdtype), rd.to_text()))
    return sorted(out)


def nsec_proofs(msg):
    """The authority's NSECs as (owner, next): what they prove."""
    return sorted("%s -> %s" % (rrset.name, rd.next) for rrset in msg.authority
                  for rd in rrset if rrset.rdtype == dns.rdatatype.NSEC)


def verify_all(test, msg, keys, what):
    """Every RRSIG in answer and authority verifies with the zone's keys."""
    n = 0
    for section in (msg.answer, msg.authority):
        sigs = [s for s in section if s.rdtype == dns.rdatatype.RRSIG]
        for sig in sigs:
            covered = [s for s in section if s.name == sig.name and s.rdtype == sig.covers]
            test.assertEqual(len(covered), 1, "%s: RRSIG without its RRset: %s" % (what, sig))
            try:
                dns.dnssec.validate(covered[0], sig, keys)
            except dns.dnssec.ValidationFailure as e:
                test.fail("%s: %s %s does not verify: %s" % (what, sig.name,
                                                            dns.rdatatype.to_text(sig.covers), e))
            n += 1
    return n


def start_knot(directory, port):
    """knotd serving wildcards.ZONE from `directory`, signed; returns the
    process and the serial it serves once signed."""
    if not shutil.which("knotd"):
        raise AssertionError("needs knotd (scripts/deps.sh: knot)")
    with open(os.path.join(directory, "example.com.zone"), "w") as f:
        f.write(wildcards.ZONE)
    with open(os.path.join(directory, "knot.conf"), "w") as f:
        f.write(KNOT.format(d=directory, port=port, signing="on"))
    knot = subprocess.Popen(["knotd", "-c", os.path.join(directory, "knot.conf")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while True:
        try:
            r = query(port, ZONE, "DNSKEY", True)
            if r.answer:
                return knot, query(port, ZONE, "SOA", False).answer[0][0].serial
        except Exception:
            pass
        if time.time() > deadline or knot.poll() is not None:
            raise AssertionError("knotd did not serve the zone signed")
        time.sleep(0.1)


def dnskeys(port):
    r = query(port, ZONE, "DNSKEY", True)
    rrset = r.find_rrset(r.answer, dns.name.from_text(ZONE), dns.rdataclass.IN,
                         dns.rdatatype.DNSKEY)
    return {dns.name.from_text(ZONE): rrset}


class KnotDifferential(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(CONFIG, {"example.com.zone": wildcards.ZONE})
        make_key(cls.server.path("example.com.pem"))
        cls.server.start()
        cls.dir = tempfile.mkdtemp(prefix="geoacme-knot-wild-")
        cls.kport = free_port()
        cls.knot, _ = start_knot(cls.dir, cls.kport)
        cls.keys = dnskeys(cls.server.port)
        cls.knot_keys = dnskeys(cls.kport)

    @classmethod
    def tearDownClass(cls):
        if cls.knot.poll() is None:
            cls.knot.terminate()
            cls.knot.wait(10)
        shutil.rmtree(cls.dir, ignore_errors=True)
        rc = cls.server.stop()
        cls.server.cleanup()
        assert rc == 0, "geoacme exited with %s" % rc

    def test_same_answers_as_knot(self):
        verified = 0
        for rel, rdtype, what in wildcards.QUESTIONS:
            for do in (False, True):
                with self.subTest(q="%s %s" % (rel, rdtype), do=do, what=what):
                    ours = query(self.server.port, fqdn(rel), rdtype, do)
                    knot = query(self.kport, fqdn(rel), rdtype, do)
                    self.assertEqual(dns.rcode.to_text(ours.rcode()),
                                     dns.rcode.to_text(knot.rcode()))
                    self.assertEqual(bool(ours.flags & dns.flags.AA),
                                     bool(knot.flags & dns.flags.AA))
                    self.assertEqual(records(ours.answer), records(knot.answer))
                    if not do:
                        self.assertEqual(records(ours.authority, False),
                                         records(knot.authority, False))
                        continue
                    self.assertEqual(nsec_proofs(ours), nsec_proofs(knot))
                    verified += verify_all(self, ours, self.keys, "geoacme")
                    verify_all(self, knot, self.knot_keys, "knot")
        self.assertGreater(verified, 40)

    def test_synthesized_answer_shape(self):
        """The signed wildcard answer, asserted whole: the TXT with the
        wildcard's RRSIG (labels 2 < 3) and the NSEC covering the name."""
        r = query(self.server.port, fqdn("foo"), "TXT", True)
        self.assertEqual(records(r.answer), [
            'foo.example.com. 3600 RRSIG TXT 2',
            'foo.example.com. 3600 TXT "apex wildcard"'])
        self.assertEqual(nsec_proofs(r), ["a.ent.example.com. -> inside.example.com."])
        self.assertEqual([s.rdtype for s in r.authority],
                         [dns.rdatatype.NSEC, dns.rdatatype.RRSIG])

    def test_dname_cname_is_unsigned_with_the_dname_ttl(self):
        r = query(self.server.port, fqdn("a.inside"), "A", True)
        self.assertEqual(records(r.answer), [
            "a.inside.example.com. 3600 CNAME a.web.example.com.",
            "a.web.example.com. 3600 A 192.0.2.90",
            "a.web.example.com. 3600 RRSIG A 4",
            "inside.example.com. 3600 DNAME web.example.com.",
            "inside.example.com. 3600 RRSIG DNAME 3"])


class Transfers(unittest.TestCase):
    """geoacme's signed zone copied by Knot and NSD: the same answers."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(CONFIG, {"example.com.zone": wildcards.ZONE})
        make_key(cls.server.path("example.com.pem"))
        cls.server.start()
        cls.secs = []
        for kind in (secondaries.Knot, secondaries.Nsd):
            sec = kind([ZONE.rstrip(".")], cls.server.port)
            cls.secs.append(sec)
            sec.start()
        serial = query(cls.server.port, ZONE, "SOA", False).answer[0][0].serial
        for sec in cls.secs:
            sec.wait_serial(ZONE, serial)

    @classmethod
    def tearDownClass(cls):
        for sec in cls.secs:
            sec.cleanup()
        rc = cls.server.stop()
        cls.server.cleanup()
        assert rc == 0, "geoacme exited with %s" % rc

    def test_secondaries_serve_the_same_answers(self):
        for sec in self.secs:
            for rel, rdtype, what in wildcards.QUESTIONS:
                with self.subTest(secondary=sec.NAME, q="%s %s" % (rel, rdtype), what=what):
                    ours = query(self.server.port, fqdn(rel), rdtype, True)
                    theirs = query(sec.port, fqdn(rel), rdtype, True)
                    self.assertEqual(dns.rcode.to_text(theirs.rcode()),
                                     dns.rcode.to_text(ours.rcode()))
                    self.assertEqual(sorted(map(str, theirs.answer)), sorted(map(str, ours.answer)))
                    if sec.NAME == "nsd" and any(r.rdtype == dns.rdatatype.DNAME
                                                 for r in ours.answer):
                        # NSD 4.6 proves the NXDOMAIN after a DNAME with one
                        # NSEC, which covers the wildcard but not the name
                        # (ours and Knot's carry both, RFC 4035 3.1.3.2).
                        continue
                    self.assertEqual(nsec_proofs(theirs), nsec_proofs(ours))


class SecondaryOfKnot(unittest.TestCase):
    """geoacme as the secondary of Knot, which signs the zone: the copy,
    wildcards and DNAME included, is served as Knot serves it (the same
    signatures and NSECs, so every section compares whole)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="geoacme-knot-primary-wild-")
        cls.kport = free_port()
        cls.knot, cls.serial = start_knot(cls.dir, cls.kport)
        cls.server = Server(BASE_CONFIG + SECONDARY.format(kp=cls.kport), {})
        cls.server.start()
        deadline = time.time() + 20
        while True:
            r = query(cls.server.port, ZONE, "SOA", False)
            if r.answer and r.answer[0][0].serial == cls.serial:
                break
            if time.time() > deadline:
                raise AssertionError("the copy never reached serial %d:\n%s"
                                     % (cls.serial, cls.server.log()[-3000:]))
            time.sleep(0.1)

    @classmethod
    def tearDownClass(cls):
        if cls.knot.poll() is None:
            cls.knot.terminate()
            cls.knot.wait(10)
        shutil.rmtree(cls.dir, ignore_errors=True)
        rc = cls.server.stop()
        cls.server.cleanup()
        assert rc == 0, "geoacme exited with %s" % rc

    def test_copy_serves_what_knot_serves(self):
        for rel, rdtype, what in wildcards.QUESTIONS:
            for do in (False, True):
                with self.subTest(q="%s %s" % (rel, rdtype), do=do, what=what):
                    ours = query(self.server.port, fqdn(rel), rdtype, do)
                    knot = query(self.kport, fqdn(rel), rdtype, do)
                    self.assertEqual(dns.rcode.to_text(ours.rcode()),
                                     dns.rcode.to_text(knot.rcode()))
                    self.assertEqual(sorted(map(str, ours.answer)), sorted(map(str, knot.answer)))
                    if do:
                        self.assertEqual(nsec_proofs(ours), nsec_proofs(knot))


class GeoWildcard(unittest.TestCase):
    def test_geo_name_wildcard_refused_at_its_line(self):
        config = SITES_TOML + geo_toml() + zone_toml(body='[[zones.geo]]\nname = "*"\n')
        line = (BASE_CONFIG + config).splitlines().index('[[zones.geo]]') + 1
        rc, log = serve_once(config, {"example.com.zone": wildcards.ZONE},
                             setup=lambda srv: make_mmdb(srv.dir))
        self.assertEqual(rc, 3, log)
        self.assertRegex(log, r"config\.toml:%d:\d+: geo name '\*' cannot be a wildcard" % line)


if __name__ == "__main__":
    main()
