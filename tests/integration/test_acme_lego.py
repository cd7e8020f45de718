# SPDX-License-Identifier: MIT
"""Lego's rfc2136 provider against the ACME zone, with Pebble as the CA:
the operator's flow end to end.  A site delegates its challenge with
_acme-challenge.www.site.example CNAME www.site.example.acme.example.; Lego
follows the CNAME, finds the ACME zone with SOA queries, adds the TXT with a
TSIG-signed UPDATE (hmac-sha1 by default, as Lego does), Pebble validates it
through a recursive resolver (unbound with stub zones, as Let's Encrypt uses a
resolver that follows CNAMEs), and Lego removes the TXT afterwards."""
import base64
import os
import shutil
import subprocess
import tempfile
import unittest

import dns.rcode

from acme_helpers import Pebble, TsigKey, acme_files, acme_zone_toml, seed_zone
from harness import BASE_CONFIG, Server, free_port, main
from resolvers import Unbound

TOOLS = all(shutil.which(t) for t in ("lego", "pebble", "unbound", "openssl"))

SITE_ZONE = """$ORIGIN site.example.
$TTL 300
@    IN SOA ns1.example. hostmaster.example. 1 3600 600 86400 60
@    IN NS  ns1.example.
www  IN A   192.0.2.80
_acme-challenge.www IN CNAME www.site.example.acme.example.
"""

SHA1 = TsigKey("lego.acme.example.", "hmac-sha1", b"lego-secret-hmac-sha1-bytes!",
               key_file="lego-sha1.tsig")
SHA256 = TsigKey("lego256.acme.example.", "hmac-sha256", b"lego-secret-hmac-sha256-bytes-32",
                 key_file="lego-sha256.tsig")

CONFIG = BASE_CONFIG + """
[[zones]]
zone = "site.example"
zone_type = "Primary"
file = "site.zone"
""" + acme_zone_toml("acme.example", [SHA1, SHA256])
FILES = dict(acme_files(seed_zone("acme.example."), [SHA1, SHA256]), **{"site.zone": SITE_ZONE})


class LegoPebble(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # CI installs these (scripts/deps.sh): missing tools are a failure, not a skip.
        if not TOOLS:
            raise AssertionError("needs lego, pebble, unbound and openssl on PATH")
        cls.server = Server(CONFIG, FILES)
        cls.server.start()
        cls.unbound = Unbound([("site.example", cls.server.port),
                               ("acme.example", cls.server.port)], [])
        cls.unbound.start()
        cls.dir = tempfile.mkdtemp(prefix="geoacme-pebble-")
        cls.pebble = Pebble(cls.dir, cls.unbound.port).start(free_port)
        cls.pebble_port = cls.pebble.port

    @classmethod
    def tearDownClass(cls):
        cls.pebble.stop()
        cls.unbound.stop()
        cls.server.cleanup()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def lego(self, domain, key, secret, algorithm=None):
        env = dict(os.environ,
                   LEGO_CA_CERTIFICATES=os.path.join(self.dir, "ca.pem"),
                   RFC2136_NAMESERVER="127.0.0.1:%d" % self.server.port,
                   RFC2136_TSIG_KEY=key,
                   RFC2136_TSIG_SECRET=base64.b64encode(secret).decode(),
                   RFC2136_PROPAGATION_TIMEOUT="30",
                   RFC2136_POLLING_INTERVAL="1")
        if algorithm:
            env["RFC2136_TSIG_ALGORITHM"] = algorithm
        path = os.path.join(self.dir, "lego-" + domain)
        r = subprocess.run(
            ["lego", "--server", "https://127.0.0.1:%d/dir" % self.pebble_port, "--path", path,
             "--email", "acme@site.example", "--accept-tos", "--key-type", "ec256",
             "--domains", domain, "--dns", "rfc2136",
             "--dns.resolvers", "127.0.0.1:%d" % self.server.port, "--dns.disable-cp", "run"],
            capture_output=True, text=True, env=env, timeout=120, cwd=self.dir)
        return r, os.path.join(path, "certificates", domain + ".crt")

    def san(self, cert):
        r = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-ext", "subjectAltName"],
                           capture_output=True, text=True, check=True)
        return r.stdout

    def test_cname_delegated_challenge_sha1(self):
        """Lego's default: hmac-sha1, RFC2136_TSIG_ALGORITHM unset."""
        r, cert = self.lego("www.site.example", SHA1.name, SHA1.secret)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("DNS:www.site.example", self.san(cert))
        # The log names what each UPDATE changed.
        self.server.wait_log(r"update for acme\.example\. from key lego\.acme\.example\.: "
                             r"\+www\.site\.example\.acme\.example\. TXT; serial ")
        self.server.wait_log(r"update for acme\.example\. from key lego\.acme\.example\.: "
                             r"-www\.site\.example\.acme\.example\. TXT; serial ")
        # Cleaned up: the challenge name is gone again.
        q = self.server.query("www.site.example.acme.example.", "TXT")
        self.assertEqual(q.rcode(), dns.rcode.NXDOMAIN)

    def test_name_in_the_acme_zone_sha256(self):
        r, cert = self.lego("direct.acme.example", SHA256.name, SHA256.secret,
                            algorithm="hmac-sha256.")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("DNS:direct.acme.example", self.san(cert))
        q = self.server.query("_acme-challenge.direct.acme.example.", "TXT")
        self.assertEqual(q.rcode(), dns.rcode.NXDOMAIN)

    def test_wrong_secret_fails(self):
        r, cert = self.lego("wrong.acme.example", SHA1.name, b"not the secret")
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertFalse(os.path.exists(cert))
        self.server.wait_log(r"TSIG from key lego\.acme\.example\.: wrong MAC \(BADSIG\)")


if __name__ == "__main__":
    main()
