#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Zone-file edits of an ACME (sqlite) zone apply as a difference (issue #21
point 2, acme/file_diff.h, doc/zones.md): an NS set grown from one name to
three by editing the file reaches a stock NSD secondary by IXFR with the
UPDATE-made TXT kept; `check` prints the difference first; bad edits (no NS,
no SOA, a syntax error) are refused at their file:line and change nothing; a
restart after an applied edit does not apply it again."""
import os
import re
import signal
import subprocess
import time
import unittest

import dns.rcode

from acme_helpers import TsigKey, acme_files, acme_zone_toml, ixfr_soas, signed_update
from harness import BASE_CONFIG, BIN, Server, free_port, main, make_key, needs_test_hooks
from harness import rrs as section
from secondaries import Nsd, sorted_records

XFR = ("xfr.example.", "hmac-sha256", "eGZyLXNlY3JldC1mb3ItdGhlLXNlY29uZGFyeQ==")
LEGO = TsigKey("update.acme.example.", "hmac-sha256", b"update-secret-for-lego-only")

HEAD = """$ORIGIN acme.example.
$TTL 300
@ IN SOA ns1.example.com. hostmaster.example.com. %d 3600 600 86400 60
"""
ONE_NS = HEAD % 100 + "@ IN NS ns1.example.com.\n"
# The operator adds two nameservers and forgets the serial.
THREE_NS = ONE_NS + "@ IN NS ns2.example.com.\n@ IN NS ns3.example.com.\n"

CONFIG = """
[[zones]]
zone = "acme.example"
zone_type = "Primary"
axfr_policy = "AllowSigned"
notify = ["127.0.0.1:{sec}"]
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
allow_types = ["A"]
allow_names = ["nothing-at-all"]
"""


class ZoneFileEdit(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        sec_port = free_port()
        cfg = BASE_CONFIG.replace("listen_port = 0", "listen_port = %d" % free_port()) + \
            CONFIG.format(sec=sec_port, uk=LEGO.name, us=LEGO.b64, xk=XFR[0], xs=XFR[2])
        cls.server = Server(cfg, {"acme.zone": ONE_NS})
        cls.server.start()
        cls.nsd = Nsd(["acme.example"], cls.server.port, key=XFR, port=sec_port)
        try:
            cls.nsd.start()
            cls.nsd.wait_serial("acme.example", 100)
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.nsd.cleanup()
        rc = cls.server.stop()
        log = cls.server.log()
        cls.server.cleanup()
        if rc != 0:
            raise AssertionError("geoacme exited with %s:\n%s" % (rc, log[-3000:]))

    def ns(self, query):
        r = query("acme.example.", "NS")
        return sorted(rd.to_text() for rrset in r.answer for rd in rrset)

    def serial(self):
        return self.server.query("acme.example.", "SOA").answer[0][0].serial

    def check(self):
        return subprocess.run([BIN, "check", "-c", self.server.config_path], capture_output=True,
                              text=True, timeout=60, cwd=self.server.dir)

    def ctl(self, *args):
        return subprocess.run([BIN, "ctl", "-c", self.server.config_path] + list(args),
                              capture_output=True, text=True, timeout=60, cwd=self.server.dir)

    def reload(self, ok=True):
        """SIGHUP; the log lines of this reload once its outcome is logged."""
        before = len(self.server.log())
        self.server.send_signal(signal.SIGHUP)
        pattern = (r"reloaded: 1 zone\b" if ok
                   else r"reload failed; still serving the previous configuration")
        deadline = time.time() + 20
        while time.time() < deadline:
            log = self.server.log()[before:]
            if re.search(pattern, log):
                return log
            time.sleep(0.02)
        self.fail("no %r after SIGHUP:\n%s" % (pattern, self.server.log()[before:]))

    def copy(self):
        return sorted_records(self.nsd.axfr_text("acme.example"))

    def test_edit_reaches_the_secondary_by_ixfr_and_is_applied_once(self):
        # An UPDATE first: the record the edit must keep.
        r = signed_update(self.server, "acme.example.", LEGO,
                          add=[("_acme-challenge.www.acme.example.", 60, "TXT", '"tok"')])
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertEqual(self.serial(), 101)
        self.nsd.wait_serial("acme.example", 101)

        # Unchanged file: check prints no difference.
        out = self.check()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, "%s: ok (1 zone)\n" % self.server.config_path)

        self.server.write("acme.zone", THREE_NS)
        out = self.check()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.splitlines(), [
            "zone acme.example: %s changed since it was applied; serve applies this "
            "difference (0 removed, 2 added, serial 101 -> 102):" % self.server.path("acme.zone"),
            "+ acme.example. 300 IN NS ns2.example.com.",
            "+ acme.example. 300 IN NS ns3.example.com.",
            "- acme.example. 300 IN SOA ns1.example.com. hostmaster.example.com. "
            "101 3600 600 86400 60",
            "+ acme.example. 300 IN SOA ns1.example.com. hostmaster.example.com. "
            "102 3600 600 86400 60",
            "%s: ok (1 zone)" % self.server.config_path,
        ])
        self.assertEqual(self.serial(), 101, "check changes nothing")

        log = self.reload()
        self.assertRegex(log, r"acme\.example\.: zone file \S*acme\.zone applied as a "
                              r"difference: 0 records removed, 2 added, serial 101 -> 102")
        self.assertEqual(self.serial(), 102)
        three = ["ns1.example.com.", "ns2.example.com.", "ns3.example.com."]
        self.assertEqual(self.ns(self.server.query), three)
        r = self.server.query("_acme-challenge.www.acme.example.", "TXT")
        self.assertEqual([rd.to_text() for rd in r.answer[0]], ['"tok"'])

        # NOTIFY, then an IXFR of the difference alone, as the primary logs it:
        # new SOA, old SOA, new SOA, the 2 NS, new SOA (RFC 1995 4).
        self.nsd.wait_serial("acme.example", 102)
        self.assertEqual(self.ns(self.nsd.query), three)
        self.server.wait_log(r"IXFR of acme\.example\. \(serial 102\) to %s: 6 records"
                             % re.escape(Nsd.SOURCE))
        copy = self.copy()
        self.assertIn('_acme-challenge.www.acme.example. 60 IN TXT "tok"', copy)
        self.assertEqual(len([l for l in copy if " NS " in l]), 3)

        # A second reload and a restart with the same file: applied once.
        out = self.check()
        self.assertEqual(out.stdout, "%s: ok (1 zone)\n" % self.server.config_path)
        log = self.reload()
        self.assertNotIn("applied as a difference", log)
        self.assertEqual(self.serial(), 102)
        self.server.stop()
        self.server.start()
        self.assertNotIn("applied as a difference", self.server.log_since_start())
        self.assertEqual(self.serial(), 102)
        self.assertEqual(self.ns(self.server.query), three)

        # --- bad edits: refused at their line, nothing changed ---
        bad = {
            "no NS": (HEAD % 103 + "www IN A 192.0.2.1\n",
                      r"acme\.zone:3: expected NS records at the apex acme\.example\."),
            "no SOA": ("$ORIGIN acme.example.\n@ 300 IN NS ns1.example.com.\n",
                       r"acme\.zone:1: expected an SOA record at the apex acme\.example\."),
            "syntax": (THREE_NS + "www IN A 192.0.2.300\n",
                       r"acme\.zone:7: "),
        }
        for what, (text, where) in bad.items():
            with self.subTest(edit=what):
                self.server.write("acme.zone", text)
                out = self.check()
                self.assertEqual(out.returncode, 3, out.stdout + out.stderr)   # a config problem
                self.assertRegex(out.stderr, where)
                self.assertNotIn("serve applies", out.stdout)
                log = self.reload(ok=False)
                self.assertRegex(log, where)
                self.assertEqual(self.serial(), 102)
                self.assertEqual(self.ns(self.server.query), three)
        self.server.write("acme.zone", THREE_NS)
        out = self.check()
        self.assertEqual(out.stdout, "%s: ok (1 zone)\n" % self.server.config_path)

        # `geoacme ctl reload` takes the same path: a bad edit is refused with
        # its line, a good one applied.
        self.server.write("acme.zone", bad["no NS"][0])
        out = self.ctl("reload")
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertRegex(out.stdout + out.stderr, bad["no NS"][1])
        self.assertEqual(self.serial(), 102)
        self.server.write("acme.zone", THREE_NS + "www IN A 192.0.2.80\n")
        out = self.ctl("reload")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(self.serial(), 103)
        self.assertEqual([rd.to_text() for rd in self.server.query("www.acme.example.").answer[0]],
                         ["192.0.2.80"])
        self.nsd.wait_serial("acme.example", 103)


class SignedZoneFileEdit(unittest.TestCase):
    """The same edit of a signed zone: the changed RRsets and the NSEC chain
    are signed with it, and the whole zone verifies."""

    def test_edit_is_signed(self):
        cfg = BASE_CONFIG + acme_zone_toml("acme.example", [LEGO], signing_key="acme.pem") \
            .replace('zone_type = "Primary"\n', 'zone_type = "Primary"\naxfr_policy = "AllowAll"\n', 1)
        server = Server(cfg, acme_files(ONE_NS, [LEGO]))
        make_key(server.path("acme.pem"))
        try:
            server.start()
            r = signed_update(server, "acme.example.", LEGO,
                              add=[("_acme-challenge.acme.example.", 60, "TXT", '"tok"')])
            self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
            before = server.query("acme.example.", "SOA").answer[0][0].serial
            server.write("acme.zone", THREE_NS + "www IN A 192.0.2.9\n")
            server.send_signal(signal.SIGHUP)
            # The reload takes every signature from the signer's cache, so it
            # makes no serial bump of its own: the edit is the next serial, and
            # goes out as a difference (it used to be the whole zone).
            # An apex NS set in a signed zone is no patch: committed, built
            # beside the loop and swapped in a moment after the reload, its
            # difference journaled then.
            server.wait_log(r"applied as a difference: 0 records removed, 3 added, serial %d -> %d"
                            r"; committed, served once built beside the loop" % (before, before + 1))
            server.wait_log(r"reloaded: 1 zone\b")
            server.wait_log(r"built with the committed change beside the loop: .* serial %d -> %d "
                            r"\(the IXFR history goes on: \d+ bytes of difference\)"
                            % (before, before + 1))
            self.assertEqual(server.query("acme.example.", "SOA").answer[0][0].serial, before + 1)
            soas, _ = ixfr_soas(server, "acme.example", before)
            self.assertEqual(soas, [before + 1, before, before + 1, before + 1])
            out = subprocess.run(["kdig", "@127.0.0.1", "-p", str(server.port), "+nocomments",
                                  "+nostats", "+noheader", "+noquestion", "acme.example.", "AXFR"],
                                 capture_output=True, text=True, timeout=30)
            lines = [l for l in out.stdout.splitlines() if len(l.split()) > 3]
            soa = [l for l in lines if l.split()[3] == "SOA"][:1]
            rest = [l for l in lines if l.split()[3] != "SOA"]
            rrs = sorted_records("\n".join(rest))
            self.assertEqual([l for l in rrs if l.split()[3] == "NS"], [
                "acme.example. 300 IN NS ns1.example.com.", "acme.example. 300 IN NS ns2.example.com.",
                "acme.example. 300 IN NS ns3.example.com."])
            self.assertIn('_acme-challenge.acme.example. 60 IN TXT "tok"', rrs)
            self.assertIn("www.acme.example. 300 IN A 192.0.2.9", rrs)
            self.assertTrue(any(l.split()[3:5] == ["RRSIG", "A"] and l.startswith("www.")
                                for l in rrs), "the new A is signed")
            path = server.path("verify.zone")
            with open(path, "w") as f:
                f.write("\n".join(soa + rest) + "\n")
            v = subprocess.run(["ldns-verify-zone", path], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
            self.assertIn("Zone is verified and complete", v.stdout + v.stderr)

            # An edit found at start comes after the start's serial bump (new
            # signatures), with a serial of its own: the file's, raised by the
            # operator.  (It was refused, "the zone needs exactly one SOA
            # record at its apex": the edit deleted the SOA of before the bump
            # and added its own; with the serial left alone it repeated the
            # bump's serial.)
            server.stop()
            server.write("acme.zone", (THREE_NS + "www IN A 192.0.2.10\n").replace(" 100 ", " 500 "))
            server.start()
            log = server.log_since_start()
            self.assertIn("applied as a difference: 1 record removed, 1 added, serial %d -> 500"
                          % (before + 2), log)
            self.assertNotIn("exactly one SOA", log)
            r = server.query("acme.example.", "SOA")
            self.assertEqual(section(r, "answer"), ["acme.example. 300 IN SOA ns1.example.com. "
                                                    "hostmaster.example.com. 500 3600 600 86400 60"])
            r = server.query("www.acme.example.", "A")
            self.assertEqual(section(r, "answer"), ["www.acme.example. 300 IN A 192.0.2.10"])

            # `check` prints the serials serve will serve: at a reload that
            # reuses every signature the edit is 500 -> 501; at a start serve
            # first raises 500 to 501 for its new signatures, so the edit is
            # 501 -> 502.  (check used to say 500 -> 501 alone, one lower than
            # a start served.)
            server.stop()
            server.write("acme.zone", (THREE_NS + "www IN A 192.0.2.11\n").replace(" 100 ", " 500 "))
            out = subprocess.run([BIN, "check", "-c", server.config_path], capture_output=True,
                                 text=True, timeout=60, cwd=server.dir)
            self.assertEqual(out.returncode, 0, out.stderr)
            soa = "acme.example. 300 IN SOA ns1.example.com. hostmaster.example.com. " \
                  "%d 3600 600 86400 60"
            self.assertEqual(out.stdout.splitlines(), [
                "zone acme.example: %s changed since it was applied; serve applies this "
                "difference (1 removed, 1 added, serial 500 -> 501):" % server.path("acme.zone"),
                "- www.acme.example. 300 IN A 192.0.2.10",
                "+ www.acme.example. 300 IN A 192.0.2.11",
                "- " + soa % 500,
                "+ " + soa % 501,
                "zone acme.example: serve signs it anew at start (and at a reload that makes "
                "new signatures), raising the serial 500 -> 501 first; the difference then "
                "gets serial 501 -> 502",
                "%s: ok (1 zone)" % server.config_path,
            ])
            server.start()
            self.assertIn("applied as a difference: 1 record removed, 1 added, serial 501 -> 502",
                          server.log_since_start())
            r = server.query("acme.example.", "SOA")
            self.assertEqual(section(r, "answer"), [soa % 502])
        finally:
            server.cleanup()


@needs_test_hooks
class EditBuiltBesideTheLoop(unittest.TestCase):
    """Issue #26: an edit a patch cannot make (here a delegation with its glue) is committed
    at the reload, built beside the loop while the previous snapshot answers
    (GEOACME_TEST_COMPACT_DELAY_MS holds the built one), and swapped in with
    its difference journaled: an IXFR from before it is that difference,
    after a restart too (read from the journal)."""

    def test_delegation_edit(self):
        cfg = BASE_CONFIG + acme_zone_toml("acme.example", [LEGO]).replace(
            'zone_type = "Primary"\n', 'zone_type = "Primary"\naxfr_policy = "AllowAll"\n', 1)
        server = Server(cfg, acme_files(ONE_NS, [LEGO]),
                        env=dict(os.environ, GEOACME_TEST_COMPACT_DELAY_MS="1500"))
        try:
            server.start()
            self.assertEqual(server.query("acme.example.", "SOA").answer[0][0].serial, 100)
            server.write("acme.zone", ONE_NS + "sub IN NS ns.sub\nns.sub IN A 192.0.2.53\n")
            server.send_signal(signal.SIGHUP)
            server.wait_log(r"applied as a difference: 0 records removed, 2 added, serial 100 -> "
                            r"101; committed, served once built beside the loop")
            server.wait_log(r"reloaded: 1 zone\b")
            # Reloaded, the build held: the previous snapshot answers.
            swapped = (r"acme\.example\.: built with the committed change beside the loop: .* "
                       r"serial 100 -> 101 \(the IXFR history goes on: \d+ bytes of difference\)")
            r = server.query("ns.sub.acme.example.", "A")
            self.assertNotRegex(server.log_since_start(), swapped, "swapped in before the query")
            self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
            self.assertEqual(server.query("acme.example.", "SOA").answer[0][0].serial, 100)
            server.wait_log(swapped)
            r = server.query("ns.sub.acme.example.", "A")
            self.assertEqual((section(r, "answer"), section(r, "authority"),
                              section(r, "additional")),
                             ([], ["sub.acme.example. 300 IN NS ns.sub.acme.example."],
                              ["ns.sub.acme.example. 300 IN A 192.0.2.53"]))
            soa = "acme.example. 300 IN SOA ns1.example.com. hostmaster.example.com. " \
                  "%d 3600 600 86400 60"
            ixfr = ["acme.example. 300 IN SOA " + (soa % 101).split(" IN SOA ")[1],
                    soa % 100, soa % 101, "ns.sub.acme.example. 300 IN A 192.0.2.53",
                    "sub.acme.example. 300 IN NS ns.sub.acme.example.", soa % 101]
            for when in ("after the swap", "after a restart"):
                with self.subTest(when=when):
                    soas, r = ixfr_soas(server, "acme.example", 100)
                    self.assertEqual(soas, [101, 100, 101, 101])
                    got = [rrset.to_text() for rrset in r.answer]
                    self.assertEqual(got[:3], ixfr[:3])
                    self.assertEqual(sorted(got[3:5]), ixfr[3:5])
                    self.assertEqual(got[5:], ixfr[5:])
                server.stop()
                server.start()
            self.assertNotIn("applied as a difference", server.log_since_start())
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
