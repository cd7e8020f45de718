"""Zonemaster's undelegated test of both demo zones, entirely on loopback.

The test runs in a network namespace of its own with only `lo` (see
harness.enter_private_netns): geoacme serves config.toml.example's zones
(example.com, the geo zone, and acme.example.net, the ACME zone) on port 53
of 127.0.0.53 (ns1.example.com) and 127.0.0.54 (ns2.example.com); BIND's
named serves a tiny root on 127.0.0.1 with `com.` and `net.` and
`example.net.` (the ACME zone's parent) and the delegations with DS; and
zonemaster-cli is given that root with --hints, the name servers with --ns
and the DS with --ds.  Zonemaster speaks to port 53 only, hence the
namespace: there port 53 is ours, and nothing can leave the machine.

The demo zone files are served as they are except ns1/ns2's addresses,
which are where the test's servers listen (and ns1's AAAA is dropped: the
run is IPv4-only, --no-ipv6, as ::1 cannot hold two name servers).

Any ERROR or CRITICAL message fails the test unless its tag is in
LOOPBACK_ONLY below, each with the reason it cannot happen on a real
deployment.  A run with a wrong DS must report DNSSEC errors (the check can
fail), and every query zonemaster sent must have gone to 127.0.0.0/8.
"""
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))

from harness import demo_server, ds_records, enter_private_netns, main  # noqa: E402
from resolvers import NamedAuth  # noqa: E402

NS = (("ns1.example.com", "127.0.0.53"), ("ns2.example.com", "127.0.0.54"))
ROOT = "127.0.0.1"       # the only address named binds without adding one to lo

# ERROR/CRITICAL tags that only the loopback set-up causes.
LOOPBACK_ONLY = {
    # ADDRESS01: the name servers' addresses are in 127.0.0.0/8 (RFC 1122
    # 3.2.1.3), which is where a test that sends nothing off the machine has
    # to run them; a real deployment gives them public addresses.
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
ns1.example.com. A {ns1}
ns2.example.com. A {ns2}
{ds}
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


def loopback_addresses(zone, text):
    """The demo zone with ns1/ns2 at the test's addresses."""
    if zone != "example.com":
        return text
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] in ("ns1", "ns2") and f[2] == "AAAA":
            continue
        if len(f) >= 4 and f[0] in ("ns1", "ns2") and f[2] == "A":
            line = "%s IN A %s" % (f[0], dict(NS)[f[0] + ".example.com"])
        out.append(line)
    return "\n".join(out) + "\n"


def ds_arg(ds):
    """'example.com. IN DS 1 13 2 AB' -> '1,13,2,AB' as --ds wants it."""
    f = ds.split()
    return ",".join(f[3:6] + ["".join(f[6:])])


class Zonemaster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="geoacme-zonemaster-")
        cls.server = demo_server(listen_v4=[a for _, a in NS], listen_v6=[], port=53,
                                 edit_zone=loopback_addresses)
        cls.server.start()
        cls.ds = dict(zip(("example.com", "acme.example.net"),
                          ds_records(cls.server, "example.com", "acme.example.net")))
        addrs = dict(NS)
        zones = [(".", ROOT_ZONE.format(root=ROOT)),
                 ("com", COM_ZONE.format(ns1=addrs["ns1.example.com"], ns2=addrs["ns2.example.com"],
                                         ds=cls.ds["example.com"])),
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
        # AS numbers up in an Internet database (meaningless for 127/8);
        # IPv4 only; short timeouts, as every server is on loopback.
        profile = json.loads(subprocess.run(["zonemaster-cli", "--dump-profile"], capture_output=True,
                                            text=True, check=True).stdout)
        cls.test_cases = [t for t in profile["test_cases"] if t != "connectivity03"]
        cls.profile = os.path.join(cls.tmp, "profile.json")
        with open(cls.profile, "w") as f:
            json.dump({"net": {"ipv4": True, "ipv6": False},
                       "resolver": {"defaults": {"timeout": 2, "retry": 2, "retrans": 1}},
                       "test_cases": cls.test_cases}, f)

    @classmethod
    def tearDownClass(cls):
        cls.root.stop()
        subprocess.run(["rm", "-rf", cls.tmp])
        cls.server.cleanup()

    def zonemaster(self, zone, ds):
        args = ["zonemaster-cli", "--json", "--level", "DEBUG", "--no-progress", "--no-ipv6",
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
        # Nothing was sent off the machine.
        for m in msgs:
            if m["tag"] == "EXTERNAL_QUERY":
                self.assertTrue(ipaddress.ip_address(m["args"]["ip"]).is_loopback, m)
        bad = ["%s %s %s %s" % (m["level"], m["testcase"], m["tag"], m["args"]) for m in msgs
               if m["level"] in ("ERROR", "CRITICAL") and m["tag"] not in LOOPBACK_ONLY]
        self.assertEqual(bad, [], "zonemaster errors for %s:\n%s\ngeoacme log:\n%s"
                         % (zone, "\n".join(bad), self.server.log()[-3000:]))
        # The allow-listed tags are still there (the set-up is what we think).
        self.assertTrue(LOOPBACK_ONLY <= tags)

    def test_geo_zone(self):
        self.check_zone("example.com")

    def test_acme_zone(self):
        self.check_zone("acme.example.net")

    def test_wrong_ds_is_an_error(self):
        f = ds_arg(self.ds["example.com"]).split(",")
        wrong = ",".join(f[:3] + ["%064X" % (int(f[3], 16) ^ 1)])
        msgs = self.zonemaster("example.com", wrong)
        errors = {m["tag"] for m in msgs if m["level"] in ("ERROR", "CRITICAL")}
        self.assertTrue(errors - LOOPBACK_ONLY, "a wrong DS raised no error")


if __name__ == "__main__":
    enter_private_netns()
    main()
