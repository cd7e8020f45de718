#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The operator's Hickory named.toml (tests/fixtures/hickory) loads unchanged.

It has no listen address, so geoacme listens where Hickory would: 0.0.0.0 and
:: (on a free port given with -p, as port 53 needs privileges); check says
ok, serve answers over IPv4 and IPv6 loopback with signed answers, Lego's
TSIG key updates the ACME zone, and ds prints the DS of both zones, equal to
the DS computed from the DNSKEY the server answers.
"""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from harness import BIN, FIXTURES, Server, free_port, have_ipv6, main, make_key  # noqa: E402

import dns.dnssec  # noqa: E402
import dns.flags  # noqa: E402
import dns.name  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.tsig  # noqa: E402
import dns.update  # noqa: E402

SEED = os.path.join(FIXTURES, "hickory")
SECRET = bytes(range(1, 33))      # raw key bytes, as Hickory's key_file holds them


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run(*args, env=None):
    return subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=60,
                          env=env)


class HickorySeedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="geoacme-hickory-")
        for f in os.listdir(SEED):
            shutil.copy(os.path.join(SEED, f), cls.dir)
        make_key(os.path.join(cls.dir, "example.com.pem"))
        make_key(os.path.join(cls.dir, "acme.example.net.pem"))
        with open(os.path.join(cls.dir, "update.acme.example.net.key"), "wb") as f:
            f.write(SECRET)
        # a secret others can read is refused, as a DNSSEC key is
        os.chmod(os.path.join(cls.dir, "update.acme.example.net.key"), 0o600)
        cls.config = os.path.join(cls.dir, "named.toml")
        with open(os.path.join(SEED, "named.toml"), "rb") as a, open(cls.config, "rb") as b:
            assert a.read() == b.read()      # the seed, byte for byte

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_1_check(self):
        r = run("check", "-c", self.config)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "%s: ok (2 zones)\n" % self.config)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "acme.example.net.jrnl")),
                         "check creates no database")

    def test_2_serve_on_the_wildcard_addresses(self):
        port = free_port()
        with open(os.path.join(SEED, "named.toml")) as f:
            seed = f.read()
        srv = Server(seed, keep_dir=self.dir, args=["-p", str(port)], config_name="named.toml")
        srv.start()
        try:
            self.assertEqual(srv.port, port, "-p overrides listen_port")
            log = srv.log_since_start()
            self.assertIn("ready: 2 zones, listening on port %d" % port, log)
            # Bound to the wildcards: reachable on every loopback address.
            for addr in ["127.0.0.1", "127.0.0.2"] + (["::1"] if have_ipv6() else []):
                r = srv.query("example.com", "SOA", addr=addr, dnssec=True)
                self.assertEqual(r.rcode(), dns.rcode.NOERROR, addr)
                self.assertTrue(r.flags & dns.flags.AA, addr)
                self.assertEqual([rr.rdtype for rr in r.answer],
                                 [dns.rdatatype.SOA, dns.rdatatype.RRSIG], addr)
            # Lego's update, signed with the Hickory key file's raw bytes.
            key = dns.tsig.Key("update.acme.example.net.", base64.b64encode(SECRET).decode(),
                               "hmac-sha256")
            up = dns.update.UpdateMessage("acme.example.net.", keyring={key.name: key},
                                          keyname=key.name, keyalgorithm=key.algorithm)
            up.add("_acme-challenge.www.example.com.acme.example.net.", 60, "TXT", "token-1")
            r = dns.query.tcp(up, "127.0.0.1", port=port, timeout=5)   # verifies the TSIG
            self.assertEqual(r.rcode(), dns.rcode.NOERROR)
            r = srv.query("_acme-challenge.www.example.com.acme.example.net.", "TXT")
            self.assertEqual([rr.to_text() for rrset in r.answer for rr in rrset],
                             ['"token-1"'])
            # The DS `ds` prints is the one the served DNSKEY gives.
            out = run("ds", "-c", self.config)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertEqual(len(lines), 2)
            for zone, line in zip(["example.com.", "acme.example.net."], lines):
                r = srv.query(zone, "DNSKEY")
                dnskey = r.answer[0][0]
                want = dns.dnssec.make_ds(zone, dnskey, "SHA256")
                self.assertEqual(line, "%s IN DS %d %d %d %s" % (
                    zone, want.key_tag, want.algorithm, want.digest_type,
                    want.digest.hex().upper()))
                tag = dns.dnssec.key_id(dnskey)
                self.assertTrue(line.startswith("%s IN DS %d 13 2 " % (zone, tag)), line)
        finally:
            rc = srv.stop()
        self.assertEqual(rc, 0, "a clean exit on SIGTERM")
        # The ACME database exists now, and check still says ok without writing to it.
        jrnl = os.path.join(self.dir, "acme.example.net.jrnl")
        before = sha256(jrnl)
        r = run("check", "-c", self.config)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sha256(jrnl), before, "check leaves the database as it is")

    def test_3_desec(self):
        env = dict(os.environ, DESEC_TOKEN="secret-token-value-123")
        r = run("ds", "-c", self.config, "--format", "desec", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("secret-token-value-123", r.stdout + r.stderr)
        # One array, for the ACME zone; example.com's DS goes to the registrar.
        body = json.loads(r.stdout)
        self.assertEqual(len(body), 1)
        self.assertEqual(sorted(body[0]), ["records", "subname", "ttl", "type"])
        self.assertEqual((body[0]["subname"], body[0]["type"], body[0]["ttl"]),
                         ("acme", "DS", 3600))
        text = run("ds", "-c", self.config, "acme.example.net").stdout.split(" IN DS ")[1]
        self.assertEqual(body[0]["records"], [text.strip().lower()])
        self.assertIn("geoacme ds: example.com: its parent is the top-level domain 'com', which "
                      "deSEC does not host: publish the DS at your registrar for example.com",
                      r.stderr)
        self.assertNotIn("desec.io/api/v1/domains/com/", r.stderr)
        cmd = ("geoacme ds -c %s acme.example.net --format desec | curl --fail-with-body -sS "
               "-X PATCH -H \"Authorization: Token $DESEC_TOKEN\" -H \"Content-Type: "
               "application/json\" --data-binary @- "
               "https://desec.io/api/v1/domains/example.net/rrsets/\n" % self.config)
        self.assertIn(cmd, r.stderr)
        r = run("ds", "-c", self.config, "--format", "desec", "example.com")
        self.assertEqual((r.returncode, r.stdout), (2, ""))


if __name__ == "__main__":
    main()
