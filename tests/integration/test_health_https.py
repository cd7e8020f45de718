# SPDX-License-Identifier: MIT
"""Health checks as operators run them: HTTPS, redirects, status lists, IPv6, start-up.

The sites are Python http.server listeners on loopback (127.0.0.2x and
::1), HTTPS ones with certificates from a test CA made in a temporary
directory (python3-cryptography, i.e. OpenSSL).  Each site under test has
its own geo name `t-<site>` with two candidates: the site itself, placed
exactly on the client (Amsterdam, via ECS), and `ref`, an unchecked site on
the other side of the world.  So the answer says the site's state: the
site alone when it is alive, `ref` alone when it is dead.

Checks run every 10 s with the default rise 2 / fall 3: every verdict seen
here comes from the first round, which the server finishes before it says
"ready".  Before that round existed, every site counted as alive at start,
so a dead site was answered for its first fall x interval (30 s).
"""
import datetime
import http.server
import os
import shutil
import socket
import ssl
import tempfile
import threading
import unittest

import dns.rcode

from harness import BASE_CONFIG, Server, main, make_mmdb, rrs

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

AMSTERDAM = ("192.0.2.0", 26)          # the fixture places it at 52.37, 4.90
AMSTERDAM6 = ("2001:db8:1::", 48)
REF4, REF6 = "192.0.2.250", "2001:db8:250::1"


# --- a test CA -------------------------------------------------------------

def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class TestCA:
    def __init__(self, directory):
        self.dir = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (x509.CertificateBuilder()
                     .subject_name(_name("geoacme test CA")).issuer_name(_name("geoacme test CA"))
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(days=1))
                     .not_valid_after(now + datetime.timedelta(days=30))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                                  crl_sign=True, content_commitment=False,
                                                  key_encipherment=False, data_encipherment=False,
                                                  key_agreement=False, encipher_only=False,
                                                  decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.ca_file = os.path.join(directory, "ca.pem")
        with open(self.ca_file, "wb") as f:
            f.write(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, label, dns_name, expired=False):
        """Writes <label>.crt/.key for dns_name; returns (certfile, keyfile)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        if expired:
            start, end = now - datetime.timedelta(days=30), now - datetime.timedelta(days=1)
        else:
            start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)
        cert = (x509.CertificateBuilder()
                .subject_name(_name(dns_name)).issuer_name(self.cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]),
                               critical=False)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                               critical=False)
                .sign(self.key, hashes.SHA256()))
        crt = os.path.join(self.dir, label + ".crt")
        kf = os.path.join(self.dir, label + ".key")
        with open(crt, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(kf, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        return crt, kf


# --- the sites -------------------------------------------------------------

class Site:
    """An HTTP(S) server on one loopback address answering every GET with `status`."""

    def __init__(self, addr, status=200, cert=None):
        self.addr = addr
        self.status = status
        self.hosts = []            # Host headers received
        self.sni = []              # TLS server names received
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                site.hosts.append(self.headers.get("Host"))
                self.send_response(site.status)
                if 300 <= site.status < 400:
                    self.send_header("Location", "https://elsewhere.test/")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        class V6Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6

        cls = V6Server if ":" in addr else http.server.ThreadingHTTPServer
        cls.daemon_threads = True
        self.httpd = cls((addr, 0), Handler)
        self.httpd.handle_error = lambda *a: None   # failed handshakes are expected
        self.port = self.httpd.server_address[1]
        if cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*cert)
            ctx.sni_callback = lambda sock, name, c: self.sni.append(name)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def site_toml(name, ipv4, health, ipv6=None, lat=52.37, lon=4.90):
    out = '[[sites]]\nname = "%s"\nipv4 = "%s"\n' % (name, ipv4)
    if ipv6:
        out += 'ipv6 = "%s"\n' % ipv6
    out += "latitude = %s\nlongitude = %s\n" % (lat, lon)
    if health:
        out += "[sites.health]\n" + health
    return out


ZONE = """$ORIGIN example.com.
$TTL 3600
@       IN SOA  ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300
@       IN NS   ns1.example.com.
ns1     IN A    192.0.2.53
"""

TESTED = ["good", "expired", "wrongname", "noverify", "redirect", "strict", "listed", "v6only",
          "closed"]


class HttpsHealth(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="geoacme-ca-")
        ca = TestCA(cls.tmp)
        cls.sites = {
            "good": Site("127.0.0.21", cert=ca.issue("good", "good.test")),
            "expired": Site("127.0.0.22", cert=ca.issue("expired", "expired.test", expired=True)),
            "wrongname": Site("127.0.0.23", cert=ca.issue("other", "other.test")),
            "noverify": Site("127.0.0.24", cert=ca.issue("nv", "nv.test", expired=True)),
            "redirect": Site("127.0.0.25", status=301),
            "strict": Site("127.0.0.26", status=301),
            "listed": Site("127.0.0.28", status=204),
            "v6only": Site("::1"),
        }
        # A port where nothing listens on 127.0.0.29.
        s = socket.socket()
        s.bind(("127.0.0.29", 0))
        closed_port = s.getsockname()[1]
        s.close()
        every = 'interval = "10s"\ntimeout = "2s"\n'
        p = {k: v.port for k, v in cls.sites.items()}
        ca_line = 'ca_file = "%s"\n' % ca.ca_file
        toml = "".join([
            site_toml("good", "127.0.0.21", 'port = %d\ntls = true\nhttp_path = "/health"\n'
                      'http_host = "good.test"\n%s%s' % (p["good"], ca_line, every)),
            site_toml("expired", "127.0.0.22", 'port = %d\ntls = true\nhttp_path = "/"\n'
                      'http_host = "expired.test"\n%s%s' % (p["expired"], ca_line, every)),
            site_toml("wrongname", "127.0.0.23", 'port = %d\ntls = true\nhttp_path = "/"\n'
                      'http_host = "wrong.test"\n%s%s' % (p["wrongname"], ca_line, every)),
            site_toml("noverify", "127.0.0.24", 'port = %d\ntls = true\nverify = false\n'
                      'http_path = "/"\nhttp_host = "nv.test"\n%s' % (p["noverify"], every)),
            site_toml("redirect", "127.0.0.25", 'port = %d\nhttp_path = "/"\n%s'
                      % (p["redirect"], every)),
            site_toml("strict", "127.0.0.26", 'port = %d\nhttp_path = "/"\nhttp_status = [200]\n%s'
                      % (p["strict"], every)),
            site_toml("listed", "127.0.0.28", 'port = %d\nhttp_path = "/"\n'
                      'http_status = [200, "2xx"]\n%s' % (p["listed"], every)),
            # IPv4 127.0.0.27 has no listener on that port; ::1 has.
            site_toml("v6only", "127.0.0.27", 'port = %d\nhttp_path = "/"\n%s'
                      % (p["v6only"], every), ipv6="::1"),
            site_toml("closed", "127.0.0.29", 'port = %d\n%s' % (closed_port, every)),
            site_toml("ref", REF4, None, ipv6=REF6, lat=-33.87, lon=151.21),
        ])
        toml += '[geo]\ndatabases = ["city.mmdb"]\n'
        toml += '[[zones]]\nzone = "example.com"\nfile = "example.com.zone"\n'
        for name in TESTED:
            toml += '[[zones.geo]]\nname = "t-%s"\nsites = ["%s", "ref"]\n' % (name, name)
        # Both sites checked and up, but checked after "good": while the first
        # round runs they are not yet known, which is no reason to fail open.
        toml += '[[zones.geo]]\nname = "pair"\nsites = ["listed", "redirect"]\n'
        cls.server = Server(BASE_CONFIG + toml, {"example.com.zone": ZONE})
        make_mmdb(cls.server.dir, "city")
        cls.server.start()
        # Right after "ready": what every name answers before any second round.
        cls.first = {name: cls.answer(name, "A") for name in TESTED}

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.server.stop()
            if rc != 0:
                raise AssertionError("geoacme exited with %s:\n%s" % (rc, cls.server.log()))
            cls.server.cleanup()
        finally:
            for s in cls.sites.values():
                s.close()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def answer(cls, name, rdtype):
        ecs = AMSTERDAM if rdtype == "A" else AMSTERDAM6
        r = cls.server.query("t-%s.example.com" % name, rdtype, ecs=ecs)
        assert r.rcode() == dns.rcode.NOERROR, r
        return [l.split()[4] for l in rrs(r, "answer")]

    def up(self, name, addr):
        self.assertEqual(self.first[name], [addr], "%s should be up:\n%s"
                         % (name, self.server.log_since_start()))

    def down(self, name):
        self.assertEqual(self.first[name], [REF4], "%s should be down:\n%s"
                         % (name, self.server.log_since_start()))

    def log_has(self, pattern):
        self.assertRegex(self.server.log_since_start(), pattern)

    def test_https_with_a_valid_certificate_is_up(self):
        self.up("good", "127.0.0.21")
        self.log_has(r"info: health: site good is in service: first check passed "
                     r"\(IPv4 127\.0\.0\.21 port \d+ tls\)")
        # SNI and the Host header carry http_host.
        self.assertIn("good.test", self.sites["good"].sni)
        self.assertIn("good.test", self.sites["good"].hosts)

    def test_expired_certificate_is_down(self):
        self.down("expired")
        self.log_has(r"warn: health: site expired is down: IPv4 127\.0\.0\.22 port \d+ tls: "
                     r"TLS certificate: certificate has expired \(first check\)")

    def test_wrong_name_is_down(self):
        self.down("wrongname")
        self.log_has(r"warn: health: site wrongname is down: IPv4 127\.0\.0\.23 port \d+ tls: "
                     r"TLS certificate: [Hh]ostname mismatch \(first check\)")

    def test_verify_false_accepts_the_certificate(self):
        # The same kind of expired certificate, checks not verified.
        self.up("noverify", "127.0.0.24")

    def test_a_redirect_is_up_by_default(self):
        self.up("redirect", "127.0.0.25")

    def test_a_status_list_is_honoured(self):
        self.down("strict")
        self.log_has(r"warn: health: site strict is down: IPv4 127\.0\.0\.26 port \d+: "
                     r"HTTP status line \"HTTP/1\.[01] 301 Moved Permanently\" \(first check\)")
        self.up("listed", "127.0.0.28")   # 204 through "2xx"

    def test_families_are_checked_apart(self):
        # Alive over IPv6 only: AAAA answers it, A does not.
        self.down("v6only")
        self.assertEqual(self.answer("v6only", "AAAA"), ["::1"])
        self.log_has(r"info: health: site v6only is in service: first check passed \(IPv6 ::1 port \d+\)")
        self.log_has(r"warn: health: site v6only is down: IPv4 127\.0\.0\.27 port \d+: connect: "
                     r"Connection refused \(first check\)")

    def test_dead_at_start_is_never_answered(self):
        # fall = 3 and 10 s apart, yet the first answer after ready is right.
        self.down("closed")
        self.log_has(r"info: health: first round of checks done in \d+ ms")
        log = self.server.log_since_start()
        self.assertLess(log.index("first round of checks done"), log.index("ready:"))
        # Site states are logged once the round is done, and no name was
        # judged to fail open while its sites were still being checked.
        self.assertIn("health: site closed: state down (health-checked)", log)
        self.assertLess(log.index("first round of checks done"),
                        log.index("health: site closed: state down (health-checked)"))
        self.assertIn("health: site ref: state up (not checked)", log)
        self.assertIn("health: site v6only: state down over IPv4, up over IPv6 (health-checked)",
                      log)
        self.assertNotIn("fail open", log)


if __name__ == "__main__":
    main()
