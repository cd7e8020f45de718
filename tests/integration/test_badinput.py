# SPDX-License-Identifier: MIT
"""The bad-input catalogue of doc/hardening.md, against the real binary:
what each kind of bad packet, config, zone file, key file and UPDATE gets.

Cases already proven elsewhere are not repeated here; doc/hardening.md
points at them (tests/integration/test_core.py BadInput and Lifecycle,
test_limits.py Cookies, the unit tests of key.c, update.c and tsig.c).
"""
import base64
import hashlib
import hmac
import os
import signal
import socket
import sqlite3
import struct
import subprocess
import time
import unittest

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update

from harness import (BASE_CONFIG, BIN, REPO, Server, ServerTestCase, example_zone, header, main,
                     make_key, qname, rrs)

ZONE = example_zone("""www     600 IN A 192.0.2.80
""")

ACME_ZONE = """$ORIGIN acme.example.net.
$TTL 300
@ IN SOA ns1.example.com. hostmaster.example.com. 100 7200 3600 1209600 60
@ IN NS ns1.example.com.
_acme-challenge IN TXT "seeded"
"""

SECRET = b"0123456789abcdef0123456789abcdef"
KEYNAME = "lego.acme.example.net."
KEYRING = dns.tsigkeyring.from_text({KEYNAME: base64.b64encode(SECRET).decode()})

ZONE_CONFIG = """
[[zones]]
zone = "example.com"
file = "example.com.zone"
"""

ACME_CONFIG = ZONE_CONFIG + """
[[zones]]
zone = "acme.example.net"
[[zones.keys]]
key_path = "acme.pem"
[zones.stores]
type = "sqlite"
zone_path = "acme.zone"
journal_path = "acme.sqlite"
allow_update = true
max_txt_len = 100
[[zones.stores.tsig_keys]]
name = "%s"
algorithm = "hmac-sha256"
secret = "%s"
""" % (KEYNAME, base64.b64encode(SECRET).decode())

WWW = ["www.example.com. 600 IN A 192.0.2.80"]
FUZZ = os.path.join(REPO, "tests/fuzz")


def serve_once(config, files, setup=None, wait=8):
    """Runs `geoacme serve` on a config that should not start.  Returns
    (exit code, log); the code is None when it started anyway (then it is
    stopped)."""
    srv = Server(BASE_CONFIG + config, files)
    try:
        if setup:
            setup(srv)
        log = open(srv.log_path, "wb")
        p = subprocess.Popen([BIN, "serve", "-c", srv.config_path], stdout=log, stderr=log,
                             stdin=subprocess.DEVNULL, cwd=srv.dir)
        try:
            rc = p.wait(wait)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            p.wait(10)
            rc = None
        log.close()
        return rc, srv.log()
    finally:
        srv.cleanup()


class Packets(ServerTestCase):
    """Malformed packets not already in test_core.BadInput: FORMERR (the ID
    echoed) or dropped, and the server keeps serving."""
    CONFIG = ZONE_CONFIG
    FILES = {"example.com.zone": ZONE}

    def still_serving(self):
        self.assertEqual(rrs(self.server.query("www.example.com"), "answer"), WWW)

    def formerr(self, data):
        raw = self.server.raw_udp(data)
        self.assertIsNotNone(raw, "no answer")
        self.assertEqual(raw[:2], data[:2])
        self.assertEqual(raw[3] & 0xF, dns.rcode.FORMERR)
        self.still_serving()

    QUESTION = qname("www.example.com") + b"\0\1\0\1"

    def test_opt_option_longer_than_rdata(self):
        opt = b"\0\0\x29\x04\xd0\0\0\0\0\0\x08" + b"\0\x0a\0\x20" + b"\1\2\3\4"
        self.formerr(header(ar=1) + self.QUESTION + opt)

    def test_opt_truncated_option_header(self):
        opt = b"\0\0\x29\x04\xd0\0\0\0\0\0\x02" + b"\0\x0a"
        self.formerr(header(ar=1) + self.QUESTION + opt)

    def test_opt_owner_not_root(self):
        opt = qname("example.com") + b"\0\x29\x04\xd0\0\0\0\0\0\0"
        self.formerr(header(ar=1) + self.QUESTION + opt)

    def test_opt_outside_additional(self):
        opt = b"\0\0\x29\x04\xd0\0\0\0\0\0\0"
        self.formerr(header(an=1) + self.QUESTION + opt)
        self.formerr(header(ns=1) + self.QUESTION + opt)

    def test_rdlength_past_the_end(self):
        rr = b"\xc0\x0c\0\1\0\1\0\0\0\1\0\x40\1\2\3\4"
        self.formerr(header(ar=1) + self.QUESTION + rr)

    def test_tsig_not_last(self):
        q = dns.message.make_query("www.example.com", "A")
        q.use_tsig(KEYRING, keyname=KEYNAME)
        wire = bytearray(q.to_wire())
        extra = b"\0\0\x10\0\1\0\0\0\0\0\1\0"     # a root TXT after the TSIG
        wire[10:12] = struct.pack("!H", struct.unpack("!H", wire[10:12])[0] + 1)
        self.formerr(bytes(wire) + extra)

    def test_tsig_on_a_server_without_keys(self):
        q = dns.message.make_query("www.example.com", "A")
        q.use_tsig(KEYRING, keyname=KEYNAME)
        raw = self.server.raw_udp(q.to_wire())
        self.assertIsNotNone(raw)
        self.assertEqual(raw[3] & 0xF, dns.rcode.NOTAUTH)
        self.still_serving()

    def test_fuzz_corpus_against_the_live_server(self):
        """Every seed and regression input of the query fuzz target, over
        UDP and TCP: each UDP answer echoes the ID and parses, and the
        server is alive at the end."""
        inputs = []
        for d in ("corpus/fuzz_query", "regressions/fuzz_query"):
            path = os.path.join(FUZZ, d)
            for name in sorted(os.listdir(path)) if os.path.isdir(path) else []:
                if not name.startswith("."):
                    with open(os.path.join(path, name), "rb") as f:
                        inputs.append((name, f.read()))
        self.assertGreater(len(inputs), 20)
        for name, data in inputs:
            if len(data) > 65535:
                continue
            raw = self.server.raw_udp(data, timeout=0.3)
            if raw is not None:
                self.assertEqual(raw[:2], data[:2], name)
                self.assertTrue(raw[2] & 0x80, name)
                if len(data) >= 12 and raw[3] & 0xF != dns.rcode.FORMERR:
                    try:
                        dns.message.from_wire(raw)
                    except dns.message.UnknownTSIGKey:
                        pass    # a signed error answer to a signed query
            s = socket.create_connection(("127.0.0.1", self.server.port), timeout=3)
            try:
                s.sendall(struct.pack("!H", len(data)) + data)
                s.shutdown(socket.SHUT_WR)
                got = b""
                while True:
                    try:
                        chunk = s.recv(65535)
                    except (ConnectionResetError, socket.timeout):
                        break
                    if not chunk:
                        break
                    got += chunk
                if len(got) >= 2:
                    n = struct.unpack("!H", got[:2])[0]
                    self.assertEqual(len(got), 2 + n, name)
                    self.assertEqual(got[2:4], data[:2], name)
            finally:
                s.close()
        self.still_serving()
        self.assertTrue(self.server.alive())


class Config(unittest.TestCase):
    """A bad config: every problem as file:line:col, exit 3, nothing bound."""

    def test_serve_reports_every_problem_and_exits_3(self):
        bad = ('listen_prot = 53\n'
               'tcp_request_timeout = 0\n'
               '[server]\n'
               'udp_max_size = 100000\n'
               '[[zones]]\n'
               'zone = "example.com"\n'
               'file = "example.com.zone"\n'
               'allow_update = true\n')
        rc, log = serve_once(bad, {"example.com.zone": ZONE})
        self.assertEqual(rc, 3, log)
        lines = [l for l in log.splitlines() if "config.toml:" in l]
        self.assertRegex(log, r"config\.toml:\d+:1: .*listen_prot.*listen_port")
        self.assertRegex(log, r"config\.toml:\d+:\d+: .*tcp_request_timeout")
        self.assertRegex(log, r"config\.toml:\d+:\d+: .*udp_max_size")
        self.assertGreaterEqual(len(lines), 3)
        self.assertNotIn("ready:", log)

    def test_toml_syntax_errors(self):
        for text, what in (('a = """multi\nline"""\n', "multi-line"),
                           ('when = 1979-05-27\n', "date"),
                           ('x = "unterminated\n', None),
                           ('[[zones]\n', None),
                           ('x = 1\nx = 2\n', None),
                           ('\x00\xff\xfe = 1\n', None)):
            rc, log = serve_once(text, {})
            self.assertEqual(rc, 3, "%r: %s" % (text, log))
            self.assertRegex(log, r"config\.toml:\d+:\d+: ", text)
            if what:
                self.assertIn(what, log.lower())

    def test_tsig_key_file_problems_name_the_file(self):
        cfg = ACME_CONFIG.replace('secret = "%s"' % base64.b64encode(SECRET).decode(),
                                  'key_file = "missing.key"')
        rc, log = serve_once(cfg, {"example.com.zone": ZONE, "acme.zone": ACME_ZONE},
                             setup=lambda s: make_key(s.path("acme.pem")))
        self.assertEqual(rc, 3, log)
        self.assertRegex(log, r"config\.toml:\d+:\d+: .*missing\.key")

    def test_not_a_config_file(self):
        rc, log = serve_once("", {}, setup=lambda s: s.write("config.toml", os.urandom(2000)))
        self.assertEqual(rc, 3, log)


class ZoneFiles(unittest.TestCase):
    """A bad zone file: file:line: at start with exit 3 (a reload keeps the
    old zone: test_core.Lifecycle.test_reload_and_stop)."""

    def start_with_zone(self, zone):
        return serve_once(ZONE_CONFIG, {"example.com.zone": zone})

    def test_errors_named_by_line_exit_3(self):
        zone = ZONE + "bad IN A not-an-address\nx IN MX\nout.example.org. IN A 192.0.2.1\n"
        rc, log = self.start_with_zone(zone)
        self.assertEqual(rc, 3, log)
        n = len(ZONE.splitlines())
        for line in (n + 1, n + 2, n + 3):
            self.assertRegex(log, r"example\.com\.zone:%d:" % line)

    def test_refused_contents(self):
        for extra, what in (("$INCLUDE /etc/passwd\n", "$INCLUDE"),
                            ("www IN CNAME ns1\n", None),              # CNAME beside data
                            ("x IN RRSIG A 13 2 300 20300101000000 20200101000000 1 example.com. AA==\n",
                             "DNSSEC records"),
                            ("y CH A 192.0.2.1\n", None)):
            rc, log = self.start_with_zone(ZONE + extra)
            self.assertEqual(rc, 3, "%r: %s" % (extra, log))
            self.assertIn("example.com.zone", log)
            if what:
                self.assertIn(what, log)

    def test_no_soa(self):
        rc, log = self.start_with_zone("$ORIGIN example.com.\nwww IN A 192.0.2.1\n")
        self.assertEqual(rc, 3, log)
        self.assertIn("SOA", log)

    def test_names_longer_than_255_octets_refused(self):
        """ldns builds owner names past 255 octets from a relative name plus
        $ORIGIN; they must be refused, not copied into 255-byte buffers
        (tests/fuzz/regressions/fuzz_zonefile/owner-longer-than-255) nor
        served as rdata no resolver can parse."""
        long_rel = ".".join(["a" * 63, "a" * 63, "a" * 53, "a" * 63])
        for extra in ("%s IN A 192.0.2.1\n" % long_rel, "c IN CNAME %s\n" % long_rel):
            rc, log = self.start_with_zone(ZONE + extra)
            self.assertEqual(rc, 3, "%s: %s" % (extra[:20], log))
            self.assertRegex(log, r"example\.com\.zone:%d:" % (len(ZONE.splitlines()) + 1))


class KeyFiles(unittest.TestCase):
    """A bad DNSSEC key file: refused at start, naming the file (and the
    fix when it is the mode).  key_load's messages are asserted exactly in
    tests/unit/test_dnssec_key.c."""
    CONFIG = ZONE_CONFIG + '[[zones.keys]]\nkey_path = "example.com.pem"\n'

    def start_with_key(self, make):
        return serve_once(self.CONFIG, {"example.com.zone": ZONE},
                          setup=lambda s: make(s.path("example.com.pem")))

    def test_world_readable(self):
        def make(p):
            make_key(p)
            os.chmod(p, 0o644)
        rc, log = self.start_with_key(make)
        self.assertEqual(rc, 3, log)
        self.assertRegex(log, r"example\.com\.pem.*0644.*chmod 600")

    def test_not_p256(self):
        def make(p):
            subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                            "ec_paramgen_curve:P-384", "-out", p], check=True,
                           stderr=subprocess.DEVNULL)
            os.chmod(p, 0o600)
        rc, log = self.start_with_key(make)
        self.assertEqual(rc, 3, log)
        self.assertIn("example.com.pem", log)
        self.assertIn("P-256", log)

    def test_garbage_and_missing(self):
        def garbage(p):
            with open(p, "wb") as f:
                f.write(b"-----BEGIN PRIVATE KEY-----\n" + base64.b64encode(os.urandom(90)) +
                        b"\n-----END PRIVATE KEY-----\n")
            os.chmod(p, 0o600)
        for make in (garbage, lambda p: None):
            rc, log = self.start_with_key(make)
            self.assertEqual(rc, 3, log)
            self.assertIn("example.com.pem", log)


class Updates(ServerTestCase):
    """Bad UPDATEs to an ACME zone: the right rcode, and nothing written
    (the database's rows and the SOA serial are unchanged).  The RFC 2136
    rules one by one are in tests/unit/test_update.c; unsigned, wrong key,
    wrong secret, skewed clock and zones we do not update are in
    test_acme_nsupdate.py."""
    CONFIG = ACME_CONFIG
    FILES = {"example.com.zone": ZONE, "acme.zone": ACME_ZONE}

    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + cls.CONFIG, cls.FILES)
        make_key(cls.server.path("acme.pem"))
        cls.server.start()

    def rows(self):
        db = sqlite3.connect("file:%s?mode=ro" % self.server.path("acme.sqlite"), uri=True)
        try:
            return sorted(db.execute("SELECT hex(name), type, ttl, hex(rdata) FROM records"))
        finally:
            db.close()

    def serial(self):
        r = self.server.query("acme.example.net", "SOA")
        return r.answer[0][0].serial

    def send(self, wire, tcp=False):
        if tcp:
            s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
            try:
                s.sendall(struct.pack("!H", len(wire)) + wire)
                n = struct.unpack("!H", s.recv(2))[0]
                data = b""
                while len(data) < n:
                    data += s.recv(n - len(data))
                return data
            finally:
                s.close()
        return self.server.raw_udp(wire, timeout=2)

    def update(self, keyring=KEYRING, **tsig):
        u = dns.update.UpdateMessage("acme.example.net")
        u.add("_acme-challenge", 60, "TXT", '"token"')
        if keyring is not None:
            u.use_tsig(keyring, keyname=KEYNAME, **tsig)
        return u

    def assert_nothing_written(self, wire, rcodes, tcp=False):
        rows, serial = self.rows(), self.serial()
        raw = self.send(wire, tcp=tcp)
        self.assertIsNotNone(raw, "no answer")
        self.assertEqual(raw[:2], wire[:2])
        self.assertIn(raw[3] & 0xF, [getattr(dns.rcode, r) for r in rcodes],
                      "rcode %d" % (raw[3] & 0xF))
        self.assertEqual(self.rows(), rows)
        self.assertEqual(self.serial(), serial)
        return raw

    def test_good_update_is_written(self):
        """The control: the same UPDATE, well formed and signed, does write."""
        rows, serial = self.rows(), self.serial()
        r = dns.query.udp(self.update(), "127.0.0.1", port=self.server.port, timeout=3)
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertNotEqual(self.rows(), rows)
        self.assertEqual(self.serial(), serial + 1)
        u = dns.update.UpdateMessage("acme.example.net")
        u.delete("_acme-challenge", "TXT", '"token"')
        u.use_tsig(KEYRING, keyname=KEYNAME)
        dns.query.udp(u, "127.0.0.1", port=self.server.port, timeout=3)

    def test_lying_counts(self):
        wire = bytearray(self.update().to_wire())
        for field, delta in ((6, 1), (8, 1), (8, -1), (10, 1)):   # PRCOUNT, UPCOUNT, ADCOUNT
            w = bytearray(wire)
            w[field:field + 2] = struct.pack("!H", struct.unpack("!H", w[field:field + 2])[0] + delta)
            self.assert_nothing_written(bytes(w), ["FORMERR"])

    def test_bad_rdata(self):
        u = self.update(keyring=None)
        wire = bytearray(u.to_wire())
        # The TXT's rdata: its first length byte claims more than there is.
        i = wire.rfind(b"\x05token")
        wire[i] = 0x30
        signed = self.sign_raw(bytes(wire))
        self.assert_nothing_written(signed, ["FORMERR"])

    def test_tsig_not_last(self):
        wire = bytearray(self.update().to_wire())
        extra = b"\0\0\x10\0\1\0\0\0\0\0\1\0"
        wire[10:12] = struct.pack("!H", struct.unpack("!H", wire[10:12])[0] + 1)
        self.assert_nothing_written(bytes(wire) + extra, ["FORMERR"])

    def test_two_tsigs(self):
        wire = self.update().to_wire()
        # Append the same TSIG record again.
        tsig = wire[len(self.update(keyring=None).to_wire()):]
        w = bytearray(wire + tsig)
        w[10:12] = struct.pack("!H", struct.unpack("!H", w[10:12])[0] + 1)
        self.assert_nothing_written(bytes(w), ["FORMERR"])

    def test_oversized_txt_refused(self):
        u = dns.update.UpdateMessage("acme.example.net")
        u.add("_acme-challenge", 60, "TXT", '"%s"' % ("x" * 101))    # max_txt_len = 100
        u.use_tsig(KEYRING, keyname=KEYNAME)
        self.assert_nothing_written(u.to_wire(), ["REFUSED"])

    def test_oversized_update_over_tcp(self):
        """An UPDATE of about 64 KiB: answered (REFUSED by the caps or
        FORMERR), nothing written, the server still serving."""
        u = dns.update.UpdateMessage("acme.example.net")
        for i in range(240):
            u.add("_acme-challenge", 60, "TXT", '"%s"' % (("%03d" % i) * 33)[:99])
        u.use_tsig(KEYRING, keyname=KEYNAME)
        wire = u.to_wire()
        self.assertGreater(len(wire), 24000)
        self.assert_nothing_written(wire, ["REFUSED", "FORMERR"], tcp=True)
        self.assertEqual(rrs(self.server.query("www.example.com"), "answer"), WWW)

    def test_update_outside_the_zone(self):
        u = dns.update.UpdateMessage("acme.example.net")
        u.add("www.example.org.", 60, "TXT", '"x"')
        u.use_tsig(KEYRING, keyname=KEYNAME)
        self.assert_nothing_written(u.to_wire(), ["NOTZONE"])

    def sign_raw(self, wire):
        """Signs arbitrary bytes with the key (dnspython cannot parse them)."""
        now = int(time.time())
        keyname = dns.name.from_text(KEYNAME).canonicalize().to_wire()
        alg = dns.name.from_text("hmac-sha256.").to_wire()
        variables = (keyname + struct.pack("!HI", 255, 0) + alg +
                     struct.pack("!HIH", now >> 32, now & 0xFFFFFFFF, 300) + struct.pack("!HH", 0, 0))
        mac = hmac.new(SECRET, wire + variables, hashlib.sha256).digest()
        rdata = (alg + struct.pack("!HIH", now >> 32, now & 0xFFFFFFFF, 300) +
                 struct.pack("!H", len(mac)) + mac + wire[:2] + struct.pack("!HH", 0, 0))
        rr = keyname + struct.pack("!HHIH", 250, 255, 0, len(rdata)) + rdata
        out = bytearray(wire + rr)
        out[10:12] = struct.pack("!H", struct.unpack("!H", out[10:12])[0] + 1)
        return bytes(out)


if __name__ == "__main__":
    main()
