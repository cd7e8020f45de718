# SPDX-License-Identifier: MIT
"""The ACME zone against real UPDATE clients: BIND's nsupdate and Knot's
knsupdate (every prerequisite and update form, UDP and TCP, the five TSIG
algorithms), wrong keys and secrets, unsigned updates, a skewed clock
(crafted with dnspython), zones we refuse, large updates, and the stale
purge timer."""
import time

import dns.message
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.renderer
import dns.tsig
import dns.update

from acme_helpers import (TsigKey, acme_files, acme_zone_toml, knsupdate, nsupdate, nsupdate_rcode,
                          serial, signed_update, tsig_of, txt)
from harness import ServerTestCase, main

ZONE = """$ORIGIN acme.example.
$TTL 300
@       IN SOA ns1.example. hostmaster.example. 100 3600 600 86400 60
@       IN NS  ns1.example.
@       IN NS  ns2.example.
static  IN TXT "from the zone file"
www     IN A   192.0.2.1
"""

STATIC_ZONE = """$ORIGIN static.example.
$TTL 300
@  IN SOA ns1.example. hostmaster.example. 1 3600 600 86400 60
@  IN NS  ns1.example.
"""

SECRET_RAW = b"raw-secret-bytes-as-hickory-has"       # key_file, hmac-sha256

KEYS = {k.name: k for k in (
    TsigKey("update.acme.example.", "hmac-sha256", SECRET_RAW, key_file="update.tsig"),
    TsigKey("lego.acme.example.", "hmac-sha1", b"lego-default-is-hmac-sha1"),
    TsigKey("sub.acme.example.", "hmac-sha512", b"sub-key-secret-for-hmac-sha512-xxxxxxxx",
            policy='allow_names = ["sub"]\n'),
    TsigKey("wide.acme.example.", "hmac-sha384", b"wide-key-secret-for-hmac-sha384",
            policy='allow_types = ["TXT", "A"]\n'),
    TsigKey("k224.acme.example.", "hmac-sha224", b"sha224-key-secret"))}
UPDATE_KEY = KEYS["update.acme.example."]

CONFIG = acme_zone_toml("acme.example", KEYS.values(), store="max_records_per_name = 8\n") + """
[[zones]]
zone = "static.example"
zone_type = "Primary"
file = "static.zone"
"""

FILES = dict(acme_files(ZONE, KEYS.values()), **{"static.zone": STATIC_ZONE})


def tsig_key(name, secret=None):
    return KEYS[name].key(secret)


class AcmeUpdateTest(ServerTestCase):
    CONFIG = CONFIG
    FILES = FILES

    # --- helpers ---

    def nsupdate(self, key, lines, tcp=False, zone="acme.example."):
        """key: a key's name, or nsupdate's own "alg:name:secret" form."""
        return nsupdate(self.server, key if not key or ":" in key else KEYS[key].nsupdate_arg(), lines,
                        zone, tcp=tcp)

    def nsupdate_rcode(self, key, lines, tcp=False, zone="acme.example."):
        return nsupdate_rcode(self.server, key if not key or ":" in key else KEYS[key].nsupdate_arg(),
                              lines, zone, tcp=tcp)

    def knsupdate(self, key, lines, tcp=False):
        return knsupdate(self.server, KEYS[key], lines, "acme.example.", tcp=tcp)

    def txt(self, name):
        return txt(self.server, name)

    def serial(self):
        return serial(self.server, "acme.example.")

    def send_raw(self, msg, tcp=False, **kw):
        """dnspython UPDATE; returns the response message."""
        fn = dns.query.tcp if tcp else dns.query.udp
        return fn(msg, "127.0.0.1", port=self.server.port, timeout=5, **kw)

    # --- update forms ---

    def test_add_and_delete_forms(self):
        n = "bernat.ch.acme.example."
        s0 = self.serial()
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update add %s 60 TXT \"tok-1\"" % n]), "NOERROR")
        self.assertEqual(self.txt(n), ['"tok-1"'])
        self.assertEqual(self.serial(), s0 + 1)
        # Adding the same record again changes nothing, not even the serial.
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update add %s 60 TXT \"tok-1\"" % n]), "NOERROR")
        self.assertEqual(self.serial(), s0 + 1)
        # Two more in one UPDATE, over TCP.
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update add %s 60 TXT \"tok-2\"" % n,
                                              "update add %s 60 TXT \"tok-3\"" % n], tcp=True),
                         "NOERROR")
        self.assertEqual(self.txt(n), ['"tok-1"', '"tok-2"', '"tok-3"'])
        self.assertEqual(self.serial(), s0 + 2)
        # Delete one RR.
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update delete %s TXT \"tok-2\"" % n]), "NOERROR")
        self.assertEqual(self.txt(n), ['"tok-1"', '"tok-3"'])
        # Delete the RRset.
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update delete %s TXT" % n]), "NOERROR")
        self.assertEqual(self.txt(n), [])
        self.assertEqual(self.serial(), s0 + 4)
        r = self.server.query(n, "TXT")
        self.assertRcode(r, "NXDOMAIN")

    def test_delete_name(self):
        n = "both.acme.example."
        self.assertEqual(self.nsupdate_rcode("wide.acme.example.",
                                             ["update add %s 60 TXT \"t\"" % n,
                                              "update add %s 60 A 192.0.2.9" % n]), "NOERROR")
        self.assertEqual(len(self.server.query(n, "A").answer), 1)
        self.assertEqual(self.nsupdate_rcode("wide.acme.example.", ["update delete %s" % n]),
                         "NOERROR")
        self.assertRcode(self.server.query(n, "A"), "NXDOMAIN")

    def test_prerequisites(self):
        n = "pre.acme.example."
        key = "update.acme.example."
        self.assertEqual(self.nsupdate_rcode(key, ["prereq nxdomain %s" % n,
                                                   "update add %s 60 TXT \"v1\"" % n]), "NOERROR")
        self.assertEqual(self.nsupdate_rcode(key, ["prereq nxdomain %s" % n,
                                                   "update add %s 60 TXT \"no\"" % n]), "YXDOMAIN")
        self.assertEqual(self.nsupdate_rcode(key, ["prereq yxdomain nothere.acme.example.",
                                                   "update add %s 60 TXT \"no\"" % n]), "NXDOMAIN")
        self.assertEqual(self.nsupdate_rcode(key, ["prereq yxdomain %s" % n,
                                                   "update add %s 60 TXT \"v2\"" % n]), "NOERROR")
        self.assertEqual(self.nsupdate_rcode(key, ["prereq nxrrset %s TXT" % n,
                                                   "update add %s 60 TXT \"no\"" % n]), "YXRRSET")
        self.assertEqual(self.nsupdate_rcode(key, ["prereq yxrrset %s A" % n,
                                                   "update add %s 60 TXT \"no\"" % n]), "NXRRSET")
        self.assertEqual(self.nsupdate_rcode(key, ["prereq nxrrset %s A" % n,
                                                   "prereq yxrrset %s TXT" % n,
                                                   "update add %s 60 TXT \"v3\"" % n]), "NOERROR")
        # Value dependent: the whole RRset must match.
        self.assertEqual(self.nsupdate_rcode(key, ["prereq yxrrset %s TXT \"v1\"" % n,
                                                   "update add %s 60 TXT \"no\"" % n]), "NXRRSET")
        self.assertEqual(self.nsupdate_rcode(key, ["prereq yxrrset %s TXT \"v1\"" % n,
                                                   "prereq yxrrset %s TXT \"v2\"" % n,
                                                   "prereq yxrrset %s TXT \"v3\"" % n,
                                                   "update delete %s TXT \"v1\"" % n]), "NOERROR")
        self.assertEqual(self.txt(n), ['"v2"', '"v3"'])

    def test_all_algorithms_with_nsupdate(self):
        for i, key in enumerate(sorted(KEYS)):
            if key == "sub.acme.example.":
                n = "a%d.sub.acme.example." % i
            else:
                n = "alg%d.acme.example." % i
            self.assertEqual(self.nsupdate_rcode(key, ["update add %s 60 TXT \"%s\"" % (n, key)]),
                             "NOERROR", key)
            self.assertEqual(self.txt(n), ['"%s"' % key], key)

    def test_knsupdate(self):
        n = "knot.acme.example."
        for tcp in (False, True):
            r = self.knsupdate("lego.acme.example.", ["add %s 60 TXT \"k-%s\"" % (n, tcp)],
                               tcp=tcp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("NOERROR", r.stdout)
        self.assertEqual(self.txt(n), ['"k-False"', '"k-True"'])
        r = self.knsupdate("k224.acme.example.", ["prereq yxrrset %s TXT" % n,
                                                  "del %s TXT \"k-False\"" % n])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.txt(n), ['"k-True"'])
        r = self.knsupdate("k224.acme.example.", ["prereq nxdomain %s" % n, "add %s 60 TXT \"x\"" % n])
        self.assertIn("YXDOMAIN", r.stdout + r.stderr)
        r = self.knsupdate("wide.acme.example.", ["del %s" % n])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.txt(n), [])

    # --- refusals ---

    def test_unsigned_refused(self):
        n = "unsigned.acme.example."
        s0 = self.serial()
        self.assertEqual(self.nsupdate_rcode(None, ["update add %s 60 TXT \"x\"" % n]), "REFUSED")
        self.assertEqual(self.txt(n), [])
        self.assertEqual(self.serial(), s0)
        self.server.wait_log(r"update for acme\.example\. refused: not signed with TSIG")

    def assert_nsupdate_fails(self, n, key_arg):
        r = self.nsupdate(key_arg, ['update add %s 60 TXT "x"' % n])
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(self.txt(n), [])

    def assert_tsig_of(self, n, key, error):
        """An UPDATE signed with key (dnspython's) gets NOTAUTH with the TSIG
        error and no MAC; returns the UPDATE."""
        u = dns.update.UpdateMessage("acme.example.", keyring=key)
        u.add(n, 60, "TXT", "x")
        wire = self.server.raw_udp(u.to_wire())
        self.assertEqual(wire[3] & 0xF, dns.rcode.NOTAUTH)
        t = tsig_of(wire)
        self.assertEqual(t.error, error)
        self.assertEqual(t.mac, b"")
        return u

    def test_wrong_key_name(self):
        n = "wrongkey.acme.example."
        nobody = TsigKey("nobody.example.", "hmac-sha256", SECRET_RAW)
        self.assert_nsupdate_fails(n, nobody.nsupdate_arg())
        self.assert_tsig_of(n, nobody.key(), dns.rcode.BADKEY)
        self.server.wait_log(r"TSIG from key nobody\.example\.: unknown key or algorithm")

    def test_wrong_algorithm(self):
        self.assert_nsupdate_fails("wrongalg.acme.example.",
                                   TsigKey(UPDATE_KEY.name, "hmac-sha512", SECRET_RAW).nsupdate_arg())

    def test_wrong_secret(self):
        n = "wrongsecret.acme.example."
        self.assert_nsupdate_fails(n, TsigKey(UPDATE_KEY.name, "hmac-sha256", b"not the secret").nsupdate_arg())
        u = self.assert_tsig_of(n, UPDATE_KEY.key(b"not the secret"), dns.rcode.BADSIG)
        with self.assertRaises(dns.tsig.PeerBadSignature):
            self.send_raw(u)

    def test_skewed_clock(self):
        n = "skew.acme.example."

        class Skewed:
            @staticmethod
            def time():
                return time.time() - 1000

        u = dns.update.UpdateMessage("acme.example.", keyring=tsig_key("update.acme.example."))
        u.add(n, 60, "TXT", "x")
        # dnspython reads the clock in dns.message (and dns.renderer in some versions).
        real = (dns.message.time, dns.renderer.time)
        dns.message.time = dns.renderer.time = Skewed
        try:
            wire = u.to_wire()
        finally:
            dns.message.time, dns.renderer.time = real
        before = int(time.time())
        reply = self.server.raw_udp(wire)
        self.assertEqual(reply[3] & 0xF, dns.rcode.NOTAUTH)
        t = tsig_of(reply)
        self.assertEqual(t.error, dns.rcode.BADTIME)
        self.assertEqual(len(t.other), 6)
        server_time = int.from_bytes(t.other, "big")
        self.assertTrue(before - 2 <= server_time <= int(time.time()) + 2, server_time)
        self.assertTrue(abs(t.time_signed - (before - 1000)) <= 2)
        self.assertEqual(len(t.mac), 32)   # signed: a full hmac-sha256 MAC
        self.assertEqual(self.txt(n), [])

    def test_policy_refusals(self):
        s0 = self.serial()
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update add host.acme.example. 60 A 192.0.2.5"]),
                         "REFUSED")
        self.server.wait_log(r"update refused: key update\.acme\.example\., host\.acme\.example\. "
                             r"A: type not allowed for this key")
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update add acme.example. 60 TXT \"apex\""]),
                         "REFUSED")
        self.assertEqual(self.nsupdate_rcode("sub.acme.example.",
                                             ["update add other.acme.example. 60 TXT \"x\""]),
                         "REFUSED")
        self.assertEqual(self.nsupdate_rcode("wide.acme.example.",
                                             ["update delete acme.example. NS ns1.example."]),
                         "REFUSED")
        self.assertEqual(self.nsupdate_rcode("wide.acme.example.",
                                             ["update delete www.acme.example. A",
                                              "update add acme.example. 60 SOA ns1.example. h.example. 999 1 1 1 1"]),
                         "REFUSED")
        self.assertEqual(len(self.server.query("www.acme.example.", "A").answer), 1)
        # A refused UPDATE applies none of its records.
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update add fine.acme.example. 60 TXT \"ok\"",
                                              "update add host.acme.example. 60 A 192.0.2.5"]),
                         "REFUSED")
        self.assertEqual(self.txt("fine.acme.example."), [])
        self.assertEqual(self.serial(), s0)

    def test_caps(self):
        n = "cap.acme.example."
        lines = ["update add %s 60 TXT \"%d\"" % (n, i) for i in range(8)]
        self.assertEqual(self.nsupdate_rcode("update.acme.example.", lines), "NOERROR")
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update add %s 60 TXT \"9\"" % n]), "REFUSED")
        self.assertEqual(len(self.txt(n)), 8)
        self.assertEqual(self.nsupdate_rcode("update.acme.example.",
                                             ["update add long.acme.example. 60 TXT \"%s\" \"%s\" "
                                              "\"%s\" \"%s\" \"%s\"" % tuple(["x" * 250] * 5)]),
                         "REFUSED")

    def test_zones_we_refuse(self):
        r = self.nsupdate_rcode("update.acme.example.",
                                ["update add a.static.example. 60 TXT \"x\""],
                                zone="static.example.")
        self.assertEqual(r, "REFUSED")
        r = self.nsupdate_rcode("update.acme.example.",
                                ["update add a.other.example. 60 TXT \"x\""],
                                zone="other.example.")
        self.assertEqual(r, "NOTAUTH")

    def test_large_update_udp(self):
        """Updates are accepted up to 64 KiB on UDP too."""
        u = dns.update.UpdateMessage("acme.example.", keyring=tsig_key("lego.acme.example."))
        for i in range(120):
            u.add("big%d.acme.example." % i, 60, "TXT", "a" * 60)
        wire = u.to_wire()
        self.assertGreater(len(wire), 8000)
        r = self.send_raw(u)
        self.assertRcode(r, "NOERROR")
        self.assertEqual(self.txt("big119.acme.example."), ['"%s"' % ("a" * 60)])
        d = dns.update.UpdateMessage("acme.example.", keyring=tsig_key("lego.acme.example."))
        for i in range(120):
            d.delete("big%d.acme.example." % i, "TXT")
        self.assertRcode(self.send_raw(d, tcp=True), "NOERROR")
        self.assertEqual(self.txt("big0.acme.example."), [])

    def test_signed_query(self):
        q = dns.message.make_query("www.acme.example.", "A")
        q.use_tsig(tsig_key("update.acme.example."), algorithm="hmac-sha256")
        r = self.send_raw(q)   # dnspython verifies the response's TSIG
        self.assertRcode(r, "NOERROR")
        self.assertEqual(r.answer[0][0].to_text(), "192.0.2.1")
        self.assertIsNotNone(r.tsig)

    def test_lego_style_present_cleanup(self):
        """What Lego's rfc2136 provider sends: RemoveRRset + Insert, then Remove."""
        n = "www.example.com.acme.example."
        key = tsig_key("lego.acme.example.")
        u = dns.update.UpdateMessage("acme.example.", keyring=key)
        u.delete(n, "TXT")
        u.add(n, 120, "TXT", "LHDhK3oGRvkiefQnx7OOczTY5Tic_xZ6HcMOc_gmtoM")
        self.assertRcode(self.send_raw(u), "NOERROR")
        self.assertEqual(self.txt(n), ['"LHDhK3oGRvkiefQnx7OOczTY5Tic_xZ6HcMOc_gmtoM"'])
        u = dns.update.UpdateMessage("acme.example.", keyring=key)
        u.delete(n, "TXT", "LHDhK3oGRvkiefQnx7OOczTY5Tic_xZ6HcMOc_gmtoM")
        self.assertRcode(self.send_raw(u), "NOERROR")
        self.assertEqual(self.txt(n), [])


class AcmeStalePurgeTest(ServerTestCase):
    CONFIG = acme_zone_toml("acme.example", [UPDATE_KEY], store='stale_txt_age = "2s"\n')
    FILES = FILES

    def test_stale_txt_removed(self):
        n = "old.acme.example."
        r = signed_update(self.server, "acme.example.", UPDATE_KEY, add=[(n, 60, "TXT", "challenge")])
        self.assertRcode(r, "NOERROR")
        s0 = serial(self.server, "acme.example.")
        self.server.wait_log(r"removed 1 stale TXT records", timeout=10)
        r = self.server.query(n, "TXT")
        self.assertRcode(r, "NXDOMAIN")
        self.assertEqual(serial(self.server, "acme.example."), s0 + 1)
        # Records from the zone file are never stale.
        r = self.server.query("static.acme.example.", "TXT")
        self.assertEqual(r.answer[0][0].to_text(), '"from the zone file"')


if __name__ == "__main__":
    main()
