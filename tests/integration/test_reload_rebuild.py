# SPDX-License-Identifier: MIT
"""Issue #26: an UPDATE during a reload's build that a patch cannot make.

A reload builds the new generation beside the loop (test_reload.py); the
UPDATEs the running one commits meanwhile are applied to it at the swap,
each as a patch.  Glue (a name below a zone cut) is one no patch makes
(core/zone/zone_patch.h): that zone used to be built whole there, on the
loop, seconds at 100 000 names.  Now the new generation is thrown away and
built again beside the loop, from the database that has the change.  The
test hook GEOACME_TEST_RELOAD_DELAY_MS holds each built generation before
its swap, so the UPDATE lands after the build read the database:

- the UPDATE is answered NOERROR and served by the running generation;
  the held generation is built again (one log line), the `geoacme reload`
  client waits for it, and the new generation serves the same answer at the
  same serial; no whole build on the loop;
- after three builds in a row sent back so, the fourth swap builds that
  zone on the loop as before (one warn line), so a stream of such UPDATEs
  cannot keep a reload from being served.
"""
import re
import signal
import subprocess

import dns.flags
import dns.rcode

from acme_helpers import TsigKey, seed_zone, signed_acme_server, signed_update
from harness import BIN, ServerPerTest, main, needs_test_hooks, rrs

# Long enough for an UPDATE sent once the build is logged; four are held in a row.
DELAY_MS = 1000

APEX = "rebuild.example."
KEY = TsigKey("lego." + APEX, "hmac-sha256", b"rebuild-test-secret-0123456789ab",
              policy='allow_types = ["A"]\n')
# A delegation with nothing below it yet: what an UPDATE adds below it is glue.
ZONE = seed_zone(APEX, serial=100, extra="child IN NS ns.child\n")
GLUE = "ns.child." + APEX
BUILT_AGAIN = (r"info: reload: a change committed during the build needs the zone built whole; "
               r"building the new configuration again\n")
BUILT = r"reload: the new configuration was built in \d+ ms"


@needs_test_hooks
class ReloadBuiltAgain(ServerPerTest):
    def make_server(self):
        return signed_acme_server(APEX, KEY, ZONE, zone_lines='axfr_policy = "AllowAll"\n',
                                  env={"GEOACME_TEST_RELOAD_DELAY_MS": str(DELAY_MS)})

    def serial(self):
        return self.srv.query(APEX, "SOA").answer[0][0].serial

    def add_glue(self, n):
        """One more address of the glue name, each in an UPDATE of its own."""
        r = signed_update(self.srv, APEX, KEY, add=[(GLUE, 300, "A", "192.0.2.%d" % n)])
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")

    def referral(self):
        """A query below the cut: a referral (no AA, the cut's NS, its NSEC
        proving no DS, signed), the glue in the additional, unsigned."""
        r = self.srv.query("www.child." + APEX, "A", dnssec=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertFalse(r.flags & dns.flags.AA)
        self.assertEqual(r.answer, [])
        self.assertEqual([x.split(" ", 4)[:4] for x in rrs(r, "authority")],
                         [["child." + APEX, "300", "IN", "NS"],
                          ["child." + APEX, "60", "IN", "NSEC"],
                          ["child." + APEX, "60", "IN", "RRSIG"]])
        self.assertIn("child.%s 300 IN NS %s" % (APEX, GLUE), rrs(r, "authority"))
        return rrs(r, "additional")

    def test_the_build_is_made_again_beside_the_loop(self):
        self.assertEqual(self.referral(), [])
        before = self.serial()
        client = subprocess.Popen([BIN, "reload", "--pid", str(self.srv.proc.pid), "--timeout",
                                   "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        self.srv.wait_log_count(BUILT, 1)
        self.add_glue(1)
        want = ["%s 300 IN A 192.0.2.1" % GLUE]
        self.assertEqual(self.referral(), want)
        during = self.serial()
        self.assertEqual(during, before + 1)
        # The held generation lacks it: not served, built again; the client waits.
        self.srv.wait_log_count(BUILT_AGAIN, 1)
        self.assertIsNone(client.poll())
        self.assertEqual(self.referral(), want)
        out = client.communicate(timeout=60)
        self.assertEqual((client.returncode, out[0]), (0, "geoacme reload: ok serving 1 zone\n"),
                         out)
        # The new generation read it from the database: same answer, same
        # serial (every signature from the signer's cache: no bump).
        self.assertEqual(self.referral(), want)
        self.assertEqual(self.serial(), during)
        log = self.srv.log_since_start()
        self.assertEqual(self.srv.log_count(BUILT), 2, log)
        self.assertEqual(self.srv.log_count(BUILT_AGAIN), 1, log)
        self.assertEqual(self.srv.log_count(r"info: reloading "), 1, log)
        self.assertEqual(self.srv.log_count(r"info: reloaded: 1 zone\n"), 1, log)
        self.assertEqual(self.srv.log_count(r"building the snapshot .*on the loop"), 0, log)
        self.assertEqual(self.srv.log_count(r"committed during the reload's build applied"), 0, log)

    def test_the_fourth_build_is_swapped_in_with_a_whole_build(self):
        self.srv.send_signal(signal.SIGHUP)
        want = []
        for n in range(1, 5):
            # Each build held, then one more glue address.
            self.srv.wait_log_count(BUILT, n)
            self.add_glue(n)
            want.append("%s 300 IN A 192.0.2.%d" % (GLUE, n))
            self.assertEqual(self.referral(), want)
        self.srv.wait_log(r"info: reloaded: 1 zone\n")
        self.assertEqual(self.referral(), want)
        serial = self.serial()
        log = self.srv.log_since_start()
        self.assertEqual(self.srv.log_count(BUILT_AGAIN), 3, log)
        self.assertEqual(self.srv.log_count(r"warn: %s: building the snapshot with a change committed "
                                    r"during the reload's build on the loop: " % re.escape(APEX)),
                         1, log)
        self.assertEqual(self.srv.log_count(r"info: %s: 1 change committed during the reload's build "
                                    r"applied to the new configuration, serial %d\n"
                                    % (re.escape(APEX), serial)), 1, log)
        self.assertEqual(self.srv.log_count(r"info: reloaded: 1 zone\n"), 1, log)


if __name__ == "__main__":
    main()
