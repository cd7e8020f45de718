# SPDX-License-Identifier: MIT
"""IXFR across a kill -9 of the primary of a signed ACME zone.

A restart signs the zone anew (ECDSA signatures are randomised, RFC 6605
section 4, and the previous process's are kept nowhere), so the start-up
serial bump replaces every RRSIG a secondary holds.  An IXFR difference
must list the records it deletes (RFC 1995 section 4), which are gone: the
journal starts over at that bump, and an IXFR from a serial before it is
answered with the whole zone (RFC 1995 section 4: "the server may reply
with an AXFR-style answer").  Every change after the bump is a difference.
This pins both halves with exact SOA sequences (doc/operations.md)."""
import base64
import unittest

import dns.rcode

from acme_helpers import TsigKey, ixfr_soas, serial, signed_update
from harness import BASE_CONFIG, Server, main, make_key

UPDATE_KEY = "update.acme.example."
UPDATE_SECRET = base64.b64encode(b"update-secret-restart").decode()
LEGO = TsigKey(UPDATE_KEY, "hmac-sha256", b"update-secret-restart")
ACME = """$ORIGIN acme.example.
$TTL 300
@       IN SOA ns1.example.com. hostmaster.example.com. 100 3600 600 86400 60
@       IN NS  ns1.example.com.
@       IN NS  ns2.example.com.
"""
CONFIG = """
[[zones]]
zone = "acme.example"
zone_type = "Primary"
allow_axfr = true
ixfr_max_changes = 8
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
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
"""


class SignedRestart(unittest.TestCase):
    def setUp(self):
        self.server = Server(BASE_CONFIG + CONFIG.format(uk=UPDATE_KEY, us=UPDATE_SECRET),
                             {"acme.zone": ACME})
        make_key(self.server.path("acme.pem"))
        self.server.start()

    def tearDown(self):
        self.server.cleanup()

    def update(self, name, text):
        r = signed_update(self.server, "acme.example.", LEGO, add=[(name, 300, "TXT", text)],
                          tcp=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")

    def serial(self):
        return serial(self.server, "acme.example")

    def ixfr(self, serial):
        soas, r = ixfr_soas(self.server, "acme.example", serial)
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        return soas, r

    def restart_kill9(self):
        port = self.server.port
        self.server.kill9()
        with open(self.server.config_path) as f:
            cfg = f.read()
        with open(self.server.config_path, "w") as f:
            f.write(cfg.replace("listen_port = 0", "listen_port = %d" % port, 1))
        try:
            self.server.start()
        finally:
            with open(self.server.config_path, "w") as f:
                f.write(cfg)

    def test_ixfr_across_kill9_and_the_startup_bump(self):
        s0 = self.serial()
        self.update("_acme-challenge.a.acme.example.", '"before-kill"')
        s1 = self.serial()
        self.assertEqual(s1, s0 + 1)
        soas, _ = self.ixfr(s0)
        self.assertEqual(soas, [s1, s0, s1, s1])
        self.restart_kill9()
        # The restart signed anew: one bump, committed before serving on.
        s2 = self.serial()
        self.assertEqual(s2, s1 + 1)
        self.update("_acme-challenge.b.acme.example.", '"after-restart"')
        s3 = self.serial()
        self.assertEqual(s3, s2 + 1)
        # From the start-up bump on: the difference alone, the new TXT with
        # its RRSIG, the SOA and the SOA's RRSIG each side.
        soas, r = self.ixfr(s2)
        self.assertEqual(soas, [s3, s2, s3, s3])
        text = "\n".join(rr.to_text() for rr in r.answer)
        self.assertIn('"after-restart"', text)
        self.assertNotIn('"before-kill"', text)
        self.assertNotIn(" DNSKEY ", text)
        self.server.wait_log(r"IXFR of acme\.example\. \(serial %d\) to 127\.0\.0\.1: \d+ "
                             r"records" % s3)
        # From before the restart: the previous signatures are unknown, so
        # the whole zone in AXFR form (first and last record the SOA of s3).
        soas, r = self.ixfr(s1)
        self.assertEqual(soas, [s3, s3])
        text = "\n".join(rr.to_text() for rr in r.answer)
        self.assertIn('"before-kill"', text)
        self.assertIn('"after-restart"', text)
        self.assertIn(" DNSKEY ", text)
        self.server.wait_log(r"IXFR \(whole zone, AXFR form\) of acme\.example\. \(serial %d\) "
                             r"to 127\.0\.0\.1" % s3)


if __name__ == "__main__":
    main()
