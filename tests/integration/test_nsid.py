# SPDX-License-Identifier: MIT
"""NSID (RFC 5001): with [server] nsid set, a query carrying an empty NSID
option gets the identity back in the OPT record (UDP and TCP, answers and
errors alike), so an operator can tell which instance answered; a query
without the option, or a server without nsid, gets none."""
import subprocess

import dns.edns
import dns.message

from harness import ServerTestCase, main

ZONE = """$ORIGIN example.com.
$TTL 300
@ IN SOA ns1.example.com. hostmaster.example.com. 1 3600 600 86400 60
@ IN NS ns1.example.com.
ns1 IN A 192.0.2.53
"""

CONFIG = """
[server]
nsid = "ns2.par.example.net"

[[zones]]
zone = "example.com"
file = "example.com.zone"
"""


def nsid_of(msg):
    for opt in msg.options:
        if opt.otype == dns.edns.NSID:
            return opt.to_wire() if hasattr(opt, "to_wire") else opt.data
    return None


def query(name, rdtype, nsid=True):
    opts = [dns.edns.GenericOption(dns.edns.NSID, b"")] if nsid else []
    q = dns.message.make_query(name, rdtype, use_edns=0, options=opts)
    return q


class Nsid(ServerTestCase):
    CONFIG = CONFIG
    FILES = {"example.com.zone": ZONE}

    def test_identity_returned_when_asked(self):
        for tcp in (False, True):
            with self.subTest(tcp=tcp):
                r = self.server.query(query("ns1.example.com", "A"), tcp=tcp)
                self.assertRcode(r, "NOERROR")
                self.assertEqual(nsid_of(r), b"ns2.par.example.net")
                self.assertEqual([rd.to_text() for rd in r.answer[0]], ["192.0.2.53"])

    def test_on_negative_and_refused_answers_too(self):
        r = self.server.query(query("nope.example.com", "A"))
        self.assertRcode(r, "NXDOMAIN")
        self.assertEqual(nsid_of(r), b"ns2.par.example.net")
        r = self.server.query(query("example.org", "A"))
        self.assertRcode(r, "REFUSED")
        self.assertEqual(nsid_of(r), b"ns2.par.example.net")

    def test_not_sent_unasked(self):
        r = self.server.query(query("ns1.example.com", "A", nsid=False))
        self.assertIsNone(nsid_of(r))

    def test_dig_shows_it(self):
        out = subprocess.run(["dig", "@127.0.0.1", "-p", str(self.server.port), "+nsid",
                              "+norec", "ns1.example.com", "A"], capture_output=True, text=True,
                             timeout=10)
        self.assertIn('NSID: 6e 73 32 2e 70 61 72 2e 65 78 61 6d 70 6c 65 2e 6e 65 74 '
                      '("ns2.par.example.net")', out.stdout)


class NoNsid(ServerTestCase):
    CONFIG = CONFIG.replace('[server]\nnsid = "ns2.par.example.net"\n', "")
    FILES = {"example.com.zone": ZONE}

    def test_none_configured_none_sent(self):
        r = self.server.query(query("ns1.example.com", "A"))
        self.assertRcode(r, "NOERROR")
        self.assertIsNone(nsid_of(r))


if __name__ == "__main__":
    main()
