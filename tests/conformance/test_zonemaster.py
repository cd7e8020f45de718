# SPDX-License-Identifier: MIT
"""Zonemaster's undelegated test of both demo zones, entirely on loopback.

The test runs in a network namespace of its own with only `lo` (see
harness.enter_private_netns).  There the demo zone's own name server
addresses (ns1.example.com 192.0.2.53 and 2001:db8::53, ns2.example.com
198.51.100.53 and 2001:db8::54: documentation addresses) are put on `lo`, so geoacme serves
config.toml.example's zones (example.com, the geo zone, with only the wildcards and DNAME
of tests/integration/wildcards.DEMO added, issue #28; and
acme.example.net, the ACME zone) on port 53 of those addresses, over IPv4
and IPv6.  BIND's named serves a tiny root on 127.0.0.1 with `com.`,
`net.` and `example.net.` (the ACME zone's parent) and the delegations with
glue and DS; zonemaster-cli is given that root with --hints, the name
servers with --ns and the DS with --ds.  Zonemaster speaks to port 53 only,
hence the namespace: there port 53 is ours, and nothing can leave the
machine.

Any ERROR or CRITICAL message fails the test unless its tag is in
LOOPBACK_ONLY below, each with the reason it cannot happen on a real
deployment.  A run with a wrong DS must report DNSSEC errors (the check can
fail), and every query zonemaster sent must have gone to an address of the
namespace.

ZonemasterMidRollover does the same for example.com caught mid-rollover
(harness.demo_mid_rollover): both keys published and signing everything,
CDS and CDNSKEY naming the new key, com. still holding the old key's DS.
"""
import ipaddress
import json
import os
import shutil
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
from resolvers import NamedAuth  # noqa: E402
from wildcards import demo_with_wildcards  # noqa: E402

# The demo zone's name servers, at the addresses its zone file gives them.
NS = (("ns1.example.com", "192.0.2.53"), ("ns1.example.com", "2001:db8::53"),
      ("ns2.example.com", "198.51.100.53"), ("ns2.example.com", "2001:db8::54"))
ROOT = "127.0.0.1"       # the root server's address (lo's own)
ADDRESSES = {ROOT} | {a for _, a in NS}

# ERROR/CRITICAL tags that only the test's set-up causes.
LOOPBACK_ONLY = {
    # ADDRESS01: the demo zone's name servers have documentation addresses
    # (RFC 5737, RFC 3849), which the test puts on its namespace's loopback;
    # a real deployment gives them public addresses.
    "NAMESERVER_IP_PRIVATE_NETWORK",
}

# Test cases that log nothing when their condition does not hold.
CONDITIONAL = {
    "basic03",       # runs only when basic02 failed (no name server answered NS)
    "address03",     # compares PTR targets; runs only for addresses with PTRs (127/8 has none)
}

ROOT_ZONE = """$TTL 3600
. SOA a.root-servers.net. hostmaster.root-servers.net. 1 7200 3600 1209600 300
. NS a.root-servers.net.
com. NS a.root-servers.net.
net. NS a.root-servers.net.
a.root-servers.net. A {root}
"""
COM_ZONE = """$TTL 3600
com. SOA a.root-servers.net. hostmaster.root-servers.net. 1 7200 3600 1209600 300
com. NS a.root-servers.net.
example.com. NS ns1.example.com.
example.com. NS ns2.example.com.
{glue}{ds}
"""
NET_ZONE = """$TTL 3600
net. SOA a.root-servers.net. hostmaster.root-servers.net. 1 7200 3600 1209600 300
net. NS a.root-servers.net.
a.root-servers.net. A {root}
example.net. NS a.root-servers.net.
"""
EXAMPLE_NET_ZONE = """$TTL 3600
example.net. SOA a.root-servers.net. hostmaster.root-servers.net. 1 7200 3600 1209600 300
example.net. NS a.root-servers.net.
acme.example.net. NS ns1.example.com.
acme.example.net. NS ns2.example.com.
{ds}
"""


def ds_arg(ds):
    """'example.com. IN DS 1 13 2 AB' -> '1,13,2,AB' as --ds wants it."""
    f = ds.split()
    return ",".join(f[3:6] + ["".join(f[6:])])


ADDED = []   # the namespace's addresses, put on lo once for every class


class ZonemasterBase(unittest.TestCase):
    """The demo server, the root, com. and net. with the DS; no cases."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="geoacme-zonemaster-")
        for _, addr in NS:
            if addr not in ADDED:
                netns_add_address(addr)
                ADDED.append(addr)
        cls.server = demo_server(listen_v4=[a for _, a in NS if ":" not in a],
                                 listen_v6=[a for _, a in NS if ":" in a], port=53,
                                 edit_zone=demo_with_wildcards)
        cls.ds = dict(zip(("example.com", "acme.example.net"),
                          ds_records(cls.server, "example.com", "acme.example.net")))
        cls.prepare()
        glue = "".join("%s. %s %s\n" % (name, "AAAA" if ":" in addr else "A", addr) for name, addr in NS)
        zones = [(".", ROOT_ZONE.format(root=ROOT)),
                 ("com", COM_ZONE.format(glue=glue, ds=cls.ds["example.com"])),
                 ("net", NET_ZONE.format(root=ROOT)),
                 ("example.net", EXAMPLE_NET_ZONE.format(ds=cls.ds["acme.example.net"]))]
        cls.root = NamedAuth(zones, address=ROOT, port=53)
        try:
            cls.root.start()
        except Exception:
            cls.server.cleanup()
            raise
        cls.hints = os.path.join(cls.tmp, "hints")
        with open(cls.hints, "w") as f:
            f.write(". 3600000 NS a.root-servers.net.\na.root-servers.net. 3600000 A %s\n" % ROOT)
        # The stock profile less connectivity03, which looks the addresses'
        # AS numbers up in an Internet database (meaningless here); short
        # timeouts, as every server is on loopback.
        profile = json.loads(subprocess.run(["zonemaster-cli", "--dump-profile"], capture_output=True,
                                            text=True, check=True).stdout)
        cls.test_cases = [t for t in profile["test_cases"] if t != "connectivity03"]
        cls.profile = os.path.join(cls.tmp, "profile.json")
        with open(cls.profile, "w") as f:
            json.dump({"net": {"ipv4": True, "ipv6": True},
                       "resolver": {"defaults": {"timeout": 2, "retry": 2, "retrans": 1}},
                       "test_cases": cls.test_cases}, f)

    @classmethod
    def tearDownClass(cls):
        cls.root.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        cls.server.cleanup()

    def zonemaster(self, zone, ds):
        args = ["zonemaster-cli", "--json", "--level", "DEBUG", "--no-progress", "--ipv4", "--ipv6",
                "--profile", self.profile, "--hints", self.hints]
        for name, addr in NS:
            args += ["--ns", "%s/%s" % (name, addr)]
        args += ["--ds", ds, zone]
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        start = out.stdout.find("[")
        self.assertGreaterEqual(start, 0, "no JSON from zonemaster:\n%s\n%s" % (out.stdout, out.stderr))
        return json.loads(out.stdout[start:])

    def check_zone(self, zone):
        msgs = self.zonemaster(zone, ds_arg(self.ds[zone]))
        # It really ran: every test case of the profile logged something
        # (at least the queries it sent), and the DS matched a key.
        ran = {m["testcase"].lower() for m in msgs}
        self.assertEqual(sorted(set(self.test_cases) - ran - CONDITIONAL), [])
        tags = {m["tag"] for m in msgs}
        self.assertIn("ALGORITHM_OK", tags)
        self.assertIn("DS10_HAS_NSEC", tags)
        # Nothing was sent anywhere but to the namespace's own addresses,
        # and both IP versions were used.
        sent = {m["args"]["ip"] for m in msgs if m["tag"] == "EXTERNAL_QUERY"}
        self.assertEqual(sent - ADDRESSES, set())
        self.assertEqual({ipaddress.ip_address(a).version for a in sent}, {4, 6})
        # Warnings and notices do not fail the test; they are printed for
        # whoever reads the log (ctest -V).
        for m in msgs:
            if m["level"] in ("WARNING", "NOTICE"):
                print("%s: %s %s %s %s" % (zone, m["level"], m["testcase"], m["tag"], m["args"]))
        bad = ["%s %s %s %s" % (m["level"], m["testcase"], m["tag"], m["args"]) for m in msgs
               if m["level"] in ("ERROR", "CRITICAL")
               and m["tag"] not in LOOPBACK_ONLY]
        self.assertEqual(bad, [], "zonemaster errors for %s:\n%s\ngeoacme log:\n%s"
                         % (zone, "\n".join(bad), self.server.log()[-3000:]))
        # The allow-listed tags are still there (the set-up is what we think).
        self.assertTrue(LOOPBACK_ONLY <= tags)

    @classmethod
    def prepare(cls):
        cls.server.start()


class Zonemaster(ZonemasterBase):
    def test_geo_zone(self):
        self.check_zone("example.com")

    def test_acme_zone(self):
        self.check_zone("acme.example.net")

    def test_wrong_ds_is_an_error(self):
        f = ds_arg(self.ds["example.com"]).split(",")
        wrong = ",".join(f[:3] + ["%0*X" % (len(f[3]), int(f[3], 16) ^ 1)])
        msgs = self.zonemaster("example.com", wrong)
        errors = {m["tag"] for m in msgs if m["level"] in ("ERROR", "CRITICAL")}
        self.assertEqual(errors - LOOPBACK_ONLY, {"DS02_NO_MATCH_DS_DNSKEY"})


class ZonemasterMidRollover(ZonemasterBase):
    """example.com in the middle of a key rollover that a parent which never
    shows the new DS holds there: no error, from the DS com. still has."""

    @classmethod
    def prepare(cls):
        old_ds, cls.old, cls.new = demo_mid_rollover(cls.server)
        assert old_ds == cls.ds["example.com"]

    def test_geo_zone_mid_rollover(self):
        def tags(name, rdtype):
            q = dns.message.make_query(name, rdtype, want_dnssec=True)
            r = dns.query.udp(q, NS[0][1], port=53, timeout=3)
            return {rrset.rdtype: sorted(rd.key_tag for rd in rrset) for rrset in r.answer
                    if rrset.rdtype in (dns.rdatatype.RRSIG, dns.rdatatype.CDS)}
        both = sorted([self.old, self.new])
        self.assertEqual(tags("www.example.com.", "A")[dns.rdatatype.RRSIG], both)
        self.assertEqual(tags("example.com.", "CDS"),
                         {dns.rdatatype.CDS: [self.new], dns.rdatatype.RRSIG: both})
        self.assertEqual(int(self.ds["example.com"].split()[3]), self.old)
        self.check_zone("example.com")


if __name__ == "__main__":
    enter_private_netns()
    main()
