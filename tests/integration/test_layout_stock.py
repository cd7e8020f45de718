# SPDX-License-Identifier: MIT
"""Layout 2 of doc/operations.md, as a walkthrough: a geoacme primary of a
signed ACME zone with a stock Knot and a stock NSD secondary, plus a geoacme
secondary, each on its own loopback address, and every ACL naming exact
addresses only (issue #21.1, #21.6):

  ns1  127.0.0.11  geoacme, primary: axfr_from = the three secondaries,
                   notify = the three secondaries
  ns2  127.0.0.12  Knot: NOTIFY accepted from 127.0.0.11 only, asks via .12
  ns3  127.0.0.13  NSD: allow-notify 127.0.0.11 only, outgoing-interface .13
  ns4  127.0.0.14  geoacme, secondary: primaries = ["127.0.0.11:…"]

geoacme's NOTIFYs, SOA checks and transfer requests leave from its first
listen address (core/net/source.h), so nothing here is widened to
127.0.0.0/8.  Before that, its NOTIFYs left from 127.0.0.1 (the kernel's
pick for a loopback destination): Knot and NSD refused them, an UPDATE
reached them only at the next refresh (an hour), and the geoacme
secondary's transfer request was refused by the primary ("address not in
axfr_from").  A wrong source (127.0.0.15) is refused by every side, so the
ACLs are really exact."""
import base64
import socket
import struct
import subprocess
import time
import unittest

import dns.flags
import dns.message
import dns.opcode
import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update

from harness import BIN, Server, example_zone, free_port, main, make_key
from secondaries import Knot, Nsd

NS1, NS2, NS3, NS4, STRANGER = "127.0.0.11", "127.0.0.12", "127.0.0.13", "127.0.0.14", "127.0.0.15"

XFR_KEY = "xfr.acme.example."
XFR_SECRET = base64.b64encode(b"layout-two-transfer-secret").decode()
UPDATE_KEY = "update.acme.example."
UPDATE_SECRET = base64.b64encode(b"layout-two-update-secret").decode()

ACME = """$ORIGIN acme.example.
$TTL 300
@       IN SOA ns1.acme.example. hostmaster.acme.example. 100 3600 600 86400 60
@       IN NS  ns1.acme.example.
@       IN NS  ns2.acme.example.
@       IN NS  ns3.acme.example.
@       IN NS  ns4.acme.example.
ns1     IN A   127.0.0.11
ns2     IN A   127.0.0.12
ns3     IN A   127.0.0.13
ns4     IN A   127.0.0.14
"""

PRIMARY = """
listen_addrs_ipv4 = ["127.0.0.11"]
listen_port = 0
log_level = "debug"

[[zones]]
zone = "acme.example"
axfr_policy = "AllowSigned"
axfr_from = ["127.0.0.12", "127.0.0.13", "127.0.0.14"]
notify = ["127.0.0.12:{kp}", "127.0.0.13:{np}", "127.0.0.14:{gp}"]
[[zones.keys]]
key_path = "acme.pem"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.sqlite"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "{uk}"
algorithm = "hmac-sha256"
secret = "{us}"
allow_axfr = false
[[zones.stores.tsig_keys]]
name = "{xk}"
algorithm = "hmac-sha256"
secret = "{xs}"
allow_names = ["no-such-name"]
"""

SECONDARY = """
listen_addrs_ipv4 = ["127.0.0.14"]
listen_port = {gp}
log_level = "debug"

[[zones]]
zone = "acme.example"
zone_type = "Secondary"
primaries = ["127.0.0.11:{pp}"]
[zones.stores]
type = "sqlite"
journal_path = "acme-copy.sqlite"
[[zones.stores.tsig_keys]]
name = "{xk}"
algorithm = "hmac-sha256"
secret = "{xs}"
"""


def keyring(name, secret):
    return dns.tsigkeyring.from_text({name: ("hmac-sha256", secret)})


def notify(addr, port, source):
    """Sends a NOTIFY for acme.example, signed with the transfer key, from
    `source`; returns the answer's (opcode, rcode) from its header (a refusal
    may carry a TSIG error dnspython would raise on, e.g. Knot's BADKEY)."""
    q = dns.message.make_query("acme.example.", "SOA")
    q.flags = dns.flags.AA
    q.set_opcode(dns.opcode.NOTIFY)
    q.use_tsig(keyring(XFR_KEY, XFR_SECRET), keyname=XFR_KEY, algorithm="hmac-sha256")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind((source, 0))
        s.settimeout(3)
        s.sendto(q.to_wire(), (addr, port))
        wire = s.recv(65535)
    finally:
        s.close()
    flags = struct.unpack("!H", wire[2:4])[0]
    return (flags >> 11) & 0xF, flags & 0xF


def axfr():
    """An AXFR request signed with the transfer key (a new one each time:
    geoacme refuses a replayed signature)."""
    q = dns.message.make_query("acme.example.", "AXFR")
    q.use_tsig(keyring(XFR_KEY, XFR_SECRET), keyname=XFR_KEY, algorithm="hmac-sha256")
    return q


class Layout2(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kp, cls.np, cls.gp = free_port(), free_port(), free_port()
        fmt = dict(kp=cls.kp, np=cls.np, gp=cls.gp, uk=UPDATE_KEY, us=UPDATE_SECRET, xk=XFR_KEY,
                   xs=XFR_SECRET)
        cls.primary = Server(PRIMARY.format(**fmt), {"acme.zone": ACME})
        make_key(cls.primary.path("acme.pem"))
        cls.primary.start()
        key = (XFR_KEY, "hmac-sha256", XFR_SECRET)
        cls.knot = Knot(["acme.example"], cls.primary.port, key=key, port=cls.kp, addr=NS2,
                        primary_addr=NS1, notify_from=NS1, source=NS2)
        cls.nsd = Nsd(["acme.example"], cls.primary.port, key=key, port=cls.np, addr=NS3,
                      primary_addr=NS1, notify_from=NS1, source=NS3)
        cls.geo2 = Server(SECONDARY.format(pp=cls.primary.port, **fmt), {})
        for s in (cls.knot, cls.nsd, cls.geo2):
            s.start()

    @classmethod
    def tearDownClass(cls):
        for s in (getattr(cls, "knot", None), getattr(cls, "nsd", None)):
            if s:
                s.cleanup()
        if getattr(cls, "geo2", None):
            cls.geo2.cleanup()
        cls.primary.cleanup()

    def serial(self, server, addr):
        r = server.query("acme.example", "SOA", addr=addr)
        return r.answer[0][0].serial if r.answer else None

    def wait_geo2(self, serial, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.serial(self.geo2, NS4) == serial:
                return
            time.sleep(0.02)
        self.fail("the geoacme secondary never served serial %s (has %s):\n%s"
                  % (serial, self.serial(self.geo2, NS4), self.geo2.log()[-3000:]))

    def update(self, name, text):
        u = dns.update.UpdateMessage("acme.example", keyring=keyring(UPDATE_KEY, UPDATE_SECRET),
                                     keyname=UPDATE_KEY, keyalgorithm="hmac-sha256")
        u.add(name, 60, "TXT", text)
        r = dns.query.udp(u, NS1, port=self.primary.port, timeout=5)
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)

    def test_1_every_secondary_has_the_zone(self):
        serial = self.serial(self.primary, NS1)
        self.knot.wait_serial("acme.example", serial)
        self.nsd.wait_serial("acme.example", serial)
        self.wait_geo2(serial)
        # The start-up line says where outgoing DNS leaves from.
        self.assertIn("outgoing DNS (NOTIFY, SOA checks, transfers): from 127.0.0.11 "
                      "(IPv4, first listen address)", self.primary.log())
        self.assertIn("outgoing DNS (NOTIFY, SOA checks, transfers): from 127.0.0.14 "
                      "(IPv4, first listen address)", self.geo2.log())
        # Each transfer came from the secondary's own address, and none was refused.
        log = self.primary.log()
        self.assertNotIn("refused", log)
        for addr in (NS2, NS3, NS4):
            self.assertIn("AXFR of acme.example. (serial %d) to %s (key xfr.acme.example.)"
                          % (serial, addr), log)

    def test_2_update_reaches_all_by_notify(self):
        self.update("_acme-challenge.www.acme.example.", "token-one")
        serial = self.serial(self.primary, NS1)
        # The SOA refresh is an hour: only an accepted NOTIFY brings the change this soon.
        self.knot.wait_serial("acme.example", serial, timeout=15)
        self.nsd.wait_serial("acme.example", serial, timeout=15)
        self.wait_geo2(serial, timeout=15)
        for s, addr, port in ((self.knot, NS2, self.kp), (self.nsd, NS3, self.np),
                              (self.geo2, NS4, self.gp)):
            q = dns.message.make_query("_acme-challenge.www.acme.example.", "TXT")
            r = dns.query.udp(q, addr, port=port, timeout=3)
            self.assertEqual(r.rcode(), dns.rcode.NOERROR, s)
            self.assertEqual([rd.to_text() for rrset in r.answer for rd in rrset
                              if rrset.rdtype == 16], ['"token-one"'])
        self.assertRegex(self.knot.log(), r"\[acme\.example\.\] notify, incoming, remote "
                                          r"127\.0\.0\.11@\d+, serial %d" % serial)
        self.assertRegex(self.knot.log(), r"\[acme\.example\.\] IXFR, incoming")
        self.assertNotIn("refused", self.primary.log())
        self.assertNotRegex(self.knot.log(), r"ACL, denied")
        # Every NOTIFY target answered it with NOERROR.
        for addr, port in ((NS2, self.kp), (NS3, self.np), (NS4, self.gp)):
            self.assertRegex(self.primary.log(), r"acme\.example\.: NOTIFY serial %d answered by "
                             r"%s:%d \(rcode 0\)" % (serial, addr.replace(".", "\\."), port))

    def test_3_a_wrong_source_is_refused_everywhere(self):
        # The primary: the transfer key is right, the address is not in axfr_from.
        r = dns.query.tcp(axfr(), NS1, port=self.primary.port, source=STRANGER, timeout=5)
        self.assertEqual(r.rcode(), dns.rcode.REFUSED)
        self.primary.wait_log(r"AXFR of acme\.example\. from 127\.0\.0\.15 \(key "
                              r"xfr\.acme\.example\.\) refused: address not in axfr_from")
        # The same request from a secondary's address is served.
        r = dns.query.tcp(axfr(), NS1, port=self.primary.port, source=NS2, timeout=5)
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertEqual(r.answer[0].rdtype, 6)
        # Knot, NSD and the geoacme secondary: a signed NOTIFY from the wrong
        # address is refused, the same NOTIFY from the primary's is answered.
        # Knot answers an ACL refusal NOTAUTH (with TSIG error BADKEY), NSD and
        # geoacme REFUSED.
        for name, addr, port, refusal in (("knot", NS2, self.kp, dns.rcode.NOTAUTH),
                                          ("nsd", NS3, self.np, dns.rcode.REFUSED),
                                          ("geoacme", NS4, self.gp, dns.rcode.REFUSED)):
            self.assertEqual(notify(addr, port, STRANGER), (dns.opcode.NOTIFY, refusal), name)
            self.assertEqual(notify(addr, port, NS1), (dns.opcode.NOTIFY, dns.rcode.NOERROR), name)


class SourceAddress(unittest.TestCase):
    """[server] source_ipv4 overrides the first listen address; an address
    this host does not have stops serve and check alike, at its position."""

    def run_bin(self, server, *args):
        return subprocess.run([BIN] + list(args) + ["-c", server.config_path],
                              capture_output=True, text=True, timeout=30)

    def config(self, server_table):
        return ('listen_addrs_ipv4 = ["127.0.0.11"]\nlisten_port = 0\n\n[server]\n'
                + server_table + '\n[[zones]]\nzone = "example.com"\nfile = "example.com.zone"\n')

    def test_override_is_used(self):
        srv = Server(self.config('source_ipv4 = "127.0.0.16"\n'),
                     {"example.com.zone": example_zone()})
        try:
            srv.start()
            self.assertIn("outgoing DNS (NOTIFY, SOA checks, transfers): from 127.0.0.16 "
                          "(IPv4, source_ipv4), the kernel's choice (IPv6)", srv.log())
            self.assertEqual(self.run_bin(srv, "check").returncode, 0)
        finally:
            srv.cleanup()

    def test_an_address_not_here_is_refused(self):
        srv = Server(self.config('nsid = "ns1"\nsource_ipv4 = "192.0.2.77"\n'),
                     {"example.com.zone": example_zone()})
        try:
            want = ("%s:6:15: expected an address of this host for 'source_ipv4', found "
                    "'192.0.2.77': Cannot assign requested address" % srv.config_path)
            r = self.run_bin(srv, "check")
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
            self.assertIn(want, r.stderr)
            with self.assertRaises(AssertionError):
                srv.start()
            self.assertEqual(srv.exit_code, 3)
            self.assertIn(want, srv.log())
        finally:
            srv.cleanup()

    def test_not_an_address(self):
        srv = Server(self.config('source_ipv6 = "127.0.0.1"\n'),
                     {"example.com.zone": example_zone()})
        try:
            r = self.run_bin(srv, "check")
            self.assertEqual(r.returncode, 3)
            self.assertIn("%s:5:15: expected an IPv6 address for 'source_ipv6', found '127.0.0.1'"
                          % srv.config_path, r.stderr)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
