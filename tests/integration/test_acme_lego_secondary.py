# SPDX-License-Identifier: MIT
"""Lego obtains a certificate from Pebble through an ACME zone served by a
geoacme primary plus a stock secondary (Knot), with Lego's propagation check
left on: Lego asks *every* NS of the zone for the TXT, on port 53, by name.

So the whole test runs in a network and mount namespace of its own (it
re-executes itself under `unshare -n -m`): a private loopback, where port 53
is free whatever the machine runs (Debian starts the packaged named, nsd,
knot and unbound on install; the test neither uses nor collides with them),
and a private /etc/hosts naming ns1 and ns2.acme.example (a bind mount
nobody outside sees).  Both servers listen on port 53 of their own loopback
addresses, 127.0.53.1 (geoacme) and 127.0.53.2 (Knot).  Pebble validates through
unbound, whose stub for the zone is the secondary.  The negative case
stops the secondary: Lego's check then fails on ns2, which proves it asked
the secondary and not only the primary."""
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from acme_helpers import Pebble, run_in_own_namespaces
from harness import Server, free_port, main, make_key
from resolvers import Unbound
from secondaries import Knot

PRIMARY = "127.0.53.1"
SECONDARY = "127.0.53.2"

ACME_ZONE = """$ORIGIN acme.example.
$TTL 60
@    IN SOA ns1.acme.example. hostmaster.acme.example. 1 3600 600 86400 10
@    IN NS  ns1.acme.example.
@    IN NS  ns2.acme.example.
ns1  IN A   127.0.53.1
ns2  IN A   127.0.53.2
"""

LEGO_SECRET = b"lego-secret-hmac-sha256-bytes-32"
XFR_KEY = "xfr.acme.example."
XFR_SECRET = base64.b64encode(b"secondary-transfer-secret").decode()

CONFIG = """
listen_addrs_ipv4 = ["127.0.53.1"]
listen_port = 53
log_level = "debug"

[[zones]]
zone = "acme.example"
zone_type = "Primary"
axfr_policy = "AllowSigned"
notify = ["127.0.53.2:53"]
[[zones.keys]]
key_path = "acme.pem"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.sqlite"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "lego.acme.example."
algorithm = "hmac-sha256"
key_file = "lego.tsig"
allow_axfr = false
[[zones.stores.tsig_keys]]
name = "{xk}"
algorithm = "hmac-sha256"
secret = "{xs}"
allow_names = ["no-such-name"]
""".format(xk=XFR_KEY, xs=XFR_SECRET)


HOSTS = "127.0.0.1 localhost\n%s ns1.acme.example\n%s ns2.acme.example\n" % (PRIMARY, SECONDARY)


class LegoWithSecondary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("lego", "pebble", "unbound", "openssl", "knotd"):
            if not shutil.which(tool):
                raise AssertionError("needs %s on PATH (scripts/deps.sh)" % tool)
        if os.environ.get("GEOACME_TEST_NETNS") != "1":
            raise AssertionError("run this file directly: it sets up its own namespaces")
        cls.dir = tempfile.mkdtemp(prefix="geoacme-lego2-")
        cls.server = Server(CONFIG, {"acme.zone": ACME_ZONE, "lego.tsig": LEGO_SECRET})
        make_key(cls.server.path("acme.pem"))
        cls.server.start()
        cls.knot = Knot(["acme.example"], 53, key=(XFR_KEY, "hmac-sha256", XFR_SECRET), port=53,
                        addr=SECONDARY, primary_addr=PRIMARY)
        cls.knot.start()
        cls.knot.wait_serial("acme.example", cls.serial())
        cls.unbound = Unbound([], [], extra='\nstub-zone:\n  name: "acme.example"\n'
                              '  stub-addr: %s@53\n' % SECONDARY)
        cls.unbound.start()
        cls.pebble = Pebble(cls.dir, cls.unbound.port).start(free_port)
        cls.pebble_port = cls.pebble.port

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "pebble", None):
            cls.pebble.stop()
        if getattr(cls, "unbound", None):
            cls.unbound.stop()
        if getattr(cls, "knot", None):
            cls.knot.cleanup()
        cls.server.cleanup()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def serial(cls):
        return cls.server.query("acme.example", "SOA", addr=PRIMARY).answer[0][0].serial

    def lego(self, domain, timeout=30):
        env = dict(os.environ,
                   LEGO_CA_CERTIFICATES=os.path.join(self.dir, "ca.pem"),
                   RFC2136_NAMESERVER="%s:53" % PRIMARY,
                   RFC2136_TSIG_KEY="lego.acme.example.",
                   RFC2136_TSIG_ALGORITHM="hmac-sha256.",
                   RFC2136_TSIG_SECRET=base64.b64encode(LEGO_SECRET).decode(),
                   RFC2136_PROPAGATION_TIMEOUT=str(timeout),
                   RFC2136_POLLING_INTERVAL="1")
        path = os.path.join(self.dir, "lego-" + domain)
        # No --dns.disable-cp: the check asks ns1 and ns2, by name, on port 53.
        lego = ["lego", "--server", "https://127.0.0.1:%d/dir" % self.pebble_port, "--path", path,
                "--email", "acme@acme.example", "--accept-tos", "--key-type", "ec256",
                "--domains", domain, "--dns", "rfc2136", "--dns.resolvers", "%s:53" % PRIMARY,
                "run"]
        r = subprocess.run(lego, capture_output=True, text=True, env=env, timeout=180,
                           cwd=self.dir)
        return r, os.path.join(path, "certificates", domain + ".crt")

    def test_1_certificate_through_primary_and_secondary(self):
        r, cert = self.lego("www.acme.example")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        san = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-ext", "subjectAltName"],
                             capture_output=True, text=True, check=True).stdout
        self.assertIn("DNS:www.acme.example", san)
        # The TXT went to the secondary by NOTIFY + IXFR, and Lego's cleanup too.
        self.assertRegex(self.knot.log(), r"\[acme\.example\.\] IXFR, incoming")
        serial = self.serial()
        self.knot.wait_serial("acme.example", serial)
        r = self.knot.query("_acme-challenge.www.acme.example.", "TXT")
        self.assertEqual(r.rcode(), 3)   # NXDOMAIN: cleaned up there too

    def test_2_propagation_check_asks_the_secondary(self):
        self.knot.stop()
        try:
            r, cert = self.lego("down.acme.example", timeout=4)
        finally:
            self.knot.start()
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        # The check reached for the secondary (ns2 = 127.0.53.2) and found it gone.
        self.assertRegex(r.stdout + r.stderr, r"->127\.0\.53\.2:53: read: connection refused")
        self.assertFalse(os.path.exists(cert))


if __name__ == "__main__":
    rc = run_in_own_namespaces(os.path.abspath(__file__), HOSTS)
    if rc is not None:
        sys.exit(rc)
    main()
