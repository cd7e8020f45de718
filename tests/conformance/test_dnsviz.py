# SPDX-License-Identifier: MIT
"""DNSViz's analysis of both demo zones, entirely on loopback (issue #28).

Like test_zonemaster.py, this runs in a network namespace of its own with
only `lo`: the demo zone's name server addresses (ns1/ns2.example.com, RFC
5737 and RFC 3849 documentation addresses) are put on `lo` and geoacme serves
config.toml.example's zones on port 53 there, with the wildcards and DNAME of
tests/integration/wildcards.DEMO added to example.com.

`dnsviz probe -A` queries those servers directly: the delegation (NS, glue)
and the DS are handed to it with -N and -D, and -a stops the ancestry at the
zone itself, so nothing is asked of any other server.  The names probed are
the apex (all its types) plus, for A and AAAA (dnsviz's default for names below
the apex; restricting types with -R makes dnsviz 0.9.4's grok crash on the
DNAME), a wildcard NODATA, a wildcard CNAME, a DNAME and an NXDOMAIN, so the
signatures and NSEC proofs of each are analysed.  `dnsviz grok` then
assesses the probe with the zone's DS as the trust anchor: every name must be
SECURE, and there must be no error and no warning anywhere in its output.  A
run with a wrong DS must report errors (so the check can fail).

DNSVizMidRollover does the same for example.com caught mid-rollover
(harness.demo_mid_rollover): both keys published and signing everything,
CDS and CDNSKEY naming the new key, the parent still holding the old DS.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))

import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rdatatype  # noqa: E402

from harness import (demo_mid_rollover, demo_server, ds_records, enter_private_netns,  # noqa: E402
                     main, netns_add_address)
from wildcards import demo_with_wildcards  # noqa: E402

NS = (("ns1.example.com", "192.0.2.53"), ("ns1.example.com", "2001:db8::53"),
      ("ns2.example.com", "198.51.100.53"), ("ns2.example.com", "2001:db8::54"))

# The names asked about in each zone, beyond the apex: what they show.
NAMES = {
    "example.com": [
        "www.example.com",            # a static name (geo answers: signed ahead)
        "foo.wild.example.com",       # wildcard NODATA (A, AAAA): the wildcard's NSEC and the next closer's
        "x.alias.example.com",        # wildcard CNAME synthesis, with its wildcard proof
        "a.dn.example.com",           # DNAME, the synthesized CNAME, then the wildcard below wild
        "nothing-here.example.com",   # NXDOMAIN: NSEC for the name and for the wildcard
    ],
    "acme.example.net": [
        "nothing-here.acme.example.net",
    ],
}

def find_problems(node, path=""):
    """Every "errors" and "warnings" list in dnsviz grok's JSON, with where."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("errors", "warnings") and value:
                found.append("%s/%s: %s" % (path, key, json.dumps(value)))
            else:
                found += find_problems(value, "%s/%s" % (path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += find_problems(value, "%s[%d]" % (path, i))
    return found


def statuses(node, out=None):
    """Every "status" value in grok's JSON: a name's rcode (NOERROR,
    NXDOMAIN), a delegation's SECURE/INSECURE/BOGUS, an RRSIG's or a denial
    proof's VALID/INVALID..."""
    out = set() if out is None else out
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "status" and isinstance(value, str):
                out.add(value)
            else:
                statuses(value, out)
    elif isinstance(node, list):
        for value in node:
            statuses(value, out)
    return out


ADDED = []   # the namespace's addresses, put on lo once for every class


class DNSVizBase(unittest.TestCase):
    """A demo server on the name servers' addresses, port 53; no cases."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="geoacme-dnsviz-")
        for _, addr in NS:
            if addr not in ADDED:
                netns_add_address(addr)
                ADDED.append(addr)
        cls.server = demo_server(listen_v4=[a for _, a in NS if ":" not in a],
                                 listen_v6=[a for _, a in NS if ":" in a], port=53,
                                 edit_zone=demo_with_wildcards)
        cls.prepare()

    @classmethod
    def prepare(cls):
        cls.server.start()
        cls.ds = dict(zip(NAMES, ds_records(cls.server, *NAMES)))

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def grok(self, zone, ds):
        """Probes zone with ds as its delegation's DS and returns grok's JSON."""
        servers = ",".join("%s=%s" % (name, "[%s]" % addr if ":" in addr else addr) for name, addr in NS)
        ds_rdata = " ".join(ds.split()[3:])
        probe_out = os.path.join(self.tmp, zone + ".probe.json")
        probe = subprocess.run(
            ["dnsviz", "probe", "-t", "4", "-A", "-a", zone, "-N", "%s:%s" % (zone, servers),
             "-D", "%s:%s" % (zone, ds_rdata), "-o", probe_out]
            # The ACME zone's name servers are named in example.com: dnsviz
            # finds their addresses there, from the same servers.
            + ([] if zone == "example.com" else ["-x", "example.com:%s" % servers])
            + [zone] + NAMES[zone],
            capture_output=True, text=True, timeout=180)
        self.assertEqual(probe.returncode, 0, probe.stderr)
        anchor = os.path.join(self.tmp, zone + ".anchor")
        with open(anchor, "w") as f:
            f.write(ds + "\n")
        grok = subprocess.run(["dnsviz", "grok", "-r", probe_out, "-t", anchor],
                              capture_output=True, text=True, timeout=180)
        self.assertEqual(grok.returncode, 0, grok.stderr)
        return json.loads(grok.stdout)

    def check_zone(self, zone):
        result = self.grok(zone, self.ds[zone])
        # Every name probed is in the analysis; the delegation is SECURE from
        # the DS, every signature and denial proof is VALID, nothing else.
        for name in [zone] + NAMES[zone]:
            self.assertIn(name + ".", result)
        self.assertEqual(result[zone + "."]["delegation"]["status"], "SECURE")
        self.assertEqual(statuses(result) - {"NOERROR", "NXDOMAIN"}, {"SECURE", "VALID"},
                         json.dumps(result, indent=1)[:6000])
        self.assertEqual(find_problems(result), [],
                         "geoacme log:\n%s" % self.server.log()[-3000:])
        return result


class DNSViz(DNSVizBase):
    def test_geo_zone(self):
        result = self.check_zone("example.com")
        # What was analysed is what the names are for: a wildcard proof for
        # the synthesized CNAME, the DNAME, and an NXDOMAIN proof.
        alias = json.dumps(result["x.alias.example.com."])
        self.assertIn('"wildcard_proof"', alias)
        self.assertIn('"dname"', json.dumps(result["a.dn.example.com."]))
        self.assertEqual(result["nothing-here.example.com."]["status"], "NXDOMAIN")
        self.assertIn('"nxdomain"', json.dumps(result["nothing-here.example.com."]))

    def test_acme_zone(self):
        self.check_zone("acme.example.net")

    def test_wrong_ds_is_an_error(self):
        f = self.ds["example.com"].split()
        digest = "".join(f[6:])
        f[6:] = ["%0*X" % (len(digest), int(digest, 16) ^ 1)]
        result = self.grok("example.com", " ".join(f))
        self.assertNotEqual(find_problems(result), [])
        self.assertNotIn("SECURE", statuses(result.get("example.com.", {}).get("delegation", {})))


class DNSVizMidRollover(DNSVizBase):
    """example.com in the middle of a key rollover that a parent which never
    shows the new DS holds there: clean, from the DS the parent still has."""

    @classmethod
    def prepare(cls):
        old_ds, cls.old, cls.new = demo_mid_rollover(cls.server)
        cls.ds = {"example.com": old_ds}

    def test_geo_zone_mid_rollover(self):
        # The state is what the test is about: two keys, both signing, CDS
        # naming the new one, the old DS at the parent.
        def sets(name, rdtype):
            q = dns.message.make_query(name, rdtype, want_dnssec=True)
            r = dns.query.udp(q, NS[0][1], port=53, timeout=3)
            return {rrset.rdtype: sorted(rd.key_tag for rd in rrset) for rrset in r.answer
                    if rrset.rdtype in (dns.rdatatype.RRSIG, dns.rdatatype.CDS)}
        both = sorted([self.old, self.new])
        self.assertEqual(sets("www.example.com.", "A")[dns.rdatatype.RRSIG], both)
        self.assertEqual(sets("example.com.", "CDS"),
                         {dns.rdatatype.CDS: [self.new], dns.rdatatype.RRSIG: both})
        self.assertEqual(int(self.ds["example.com"].split()[3]), self.old)
        self.check_zone("example.com")


if __name__ == "__main__":
    enter_private_netns()
    main()
