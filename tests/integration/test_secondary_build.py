# SPDX-License-Identifier: MIT
"""Issue #26.1: a secondary builds a copy whole beside the loop.

An AXFR (and an IXFR the served copy cannot be patched with) is built into a
snapshot and stored on a helper thread (xfr/copy_build.h); the loop only
swaps it in.  The test hook GEOACME_TEST_XFR_BUILD_DELAY_MS holds a built
copy on its thread for a while before the swap, so these cases can act in
that window:

- during the first copy's build the zone is not served yet: REFUSED, as
  before any copy (RFC 1034 4.3.2: not authoritative for it), and the
  server answers its other zone meanwhile;
- during a later build the old copy answers (its serial, its records, and
  NXDOMAIN for a name only the new copy has), and after the swap the new
  one does; the IXFR history it serves goes on from the old copy (the
  difference is made beside the loop too);
- a NOTIFY and a `ctl zone-refresh` during a build start no second
  transfer: one check follows the build;
- the server stops cleanly (exit 0, and so no leak under ASan) during a
  build;
- the stored copy is read and built beside the loop too: after SIGHUP the
  previous configuration's copy answers (same serial, same records) until
  it is read again, then the same; after a restart the zone is REFUSED
  until it is read (nothing is loaded yet).

A large copy is test_secondary_large.py.
"""
import os
import re
import signal
import time
import unittest

import dns.flags
import dns.message
import dns.opcode
import dns.query
import dns.rcode
import dns.rdatatype

from acme_helpers import signed_update
from harness import Server, example_zone, free_port, main, make_key, needs_test_hooks, rrs
from test_ctl import ctl
from test_secondary import (ACME, LEGO, UPDATE_KEY, UPDATE_SECRET, XFR_KEY, XFR_SECRET,
                            listen)

DELAY_MS = 3000

# The primary: no notify, so the secondary learns of a change only when asked.
PRIMARY = """
[[zones]]
zone = "acme.example"
axfr_policy = "AllowSigned"
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
[[zones]]
zone = "acme.example"
zone_type = "Secondary"
primaries = ["127.0.0.1:{pp}"]
allow_axfr = true
[zones.stores]
type = "sqlite"
journal_path = "acme-copy.sqlite"
[[zones.stores.tsig_keys]]
name = "{xk}"
algorithm = "hmac-sha256"
secret = "{xs}"

[[zones]]
zone = "example.com"
file = "example.com.zone"
"""

BUILDING = r"acme\.example\.: AXFR from 127\.0\.0\.1:\d+, serial (\d+): \d+ records received; " \
           r"building the copy whole beside the loop \((.*?) meanwhile\)"
BUILT = r"acme\.example\.: AXFR from 127\.0\.0\.1:\d+, serial \d+ -> (\d+): .*; copy built " \
        r"whole in [0-9.]+ ms \(beside the loop: built in [0-9.]+ ms, stored in [0-9.]+ ms; " \
        r"swapped in on the loop in [0-9.]+ ms\)"


@needs_test_hooks
class CopyBuiltBesideTheLoop(unittest.TestCase):
    def setUp(self):
        self.pp, self.sp = free_port(), free_port()
        fmt = dict(pp=self.pp, uk=UPDATE_KEY, us=UPDATE_SECRET, xk=XFR_KEY, xs=XFR_SECRET)
        self.primary = Server(listen(self.pp) + PRIMARY.format(**fmt), {"acme.zone": ACME})
        make_key(self.primary.path("acme.pem"))
        self.primary.start()
        self.secondary = Server(listen(self.sp) + SECONDARY.format(**fmt),
                                {"example.com.zone": example_zone("www IN A 192.0.2.1\n")},
                                env=dict(os.environ,
                                         GEOACME_TEST_XFR_BUILD_DELAY_MS=str(DELAY_MS)))

    def tearDown(self):
        try:
            if self.secondary.alive():
                self.assertEqual(self.secondary.stop(), 0, self.secondary.log()[-3000:])
        finally:
            self.secondary.cleanup()
            self.primary.cleanup()

    def log(self):
        return self.secondary.log_since_start()

    def soa_serial(self, server):
        r = server.query("acme.example", "SOA")
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        return r.answer[0][0].serial

    def during_build(self, n):
        """Waits for the n-th build to start and checks it has not ended."""
        self.secondary.wait_log(r"(?s)(%s.*){%d}" % (BUILDING, n), timeout=30)
        self.assertEqual(len(re.findall(BUILT, self.log())), n - 1, self.log())

    def wait_built(self, n):
        self.secondary.wait_log(r"(?s)(%s.*){%d}" % (BUILT, n), timeout=30)

    def test_first_copy_then_a_new_copy_old_answers_meanwhile(self):
        self.secondary.start()
        want = self.soa_serial(self.primary)
        # The first copy is building: not served yet, as before any copy.
        self.during_build(1)
        self.assertEqual(re.findall(BUILDING, self.log())[0], (str(want), "not served"))
        r = self.secondary.query("acme.example", "SOA")
        self.assertEqual(dns.rcode.to_text(r.rcode()), "REFUSED")
        self.assertEqual(r.answer, [])
        # ... while the loop answers the zone it serves.
        self.assertEqual(rrs(self.secondary.query("www.example.com"), "answer"),
                         ["www.example.com. 3600 IN A 192.0.2.1"])
        self.wait_built(1)
        self.assertEqual(self.soa_serial(self.secondary), want)
        r = self.secondary.query("_acme-challenge.new.acme.example", "TXT")
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")

        # A change the secondary is not told of; then a whole transfer asked for.
        r = signed_update(self.primary, "acme.example.", LEGO,
                          add=[("_acme-challenge.new.acme.example.", 60, "TXT", '"token"')],
                          tcp=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        new = self.soa_serial(self.primary)
        self.assertGreater(new, want)
        self.assertEqual(ctl(self.secondary, "zone-retransfer", "acme.example").returncode, 0)
        self.during_build(2)
        self.assertEqual(re.findall(BUILDING, self.log())[1], (str(new), "the old copy answers"))
        # The old copy answers meanwhile: its serial, and no new name.
        self.assertEqual(self.soa_serial(self.secondary), want)
        r = self.secondary.query("_acme-challenge.new.acme.example", "TXT")
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
        self.assertEqual(r.answer, [])
        # A NOTIFY and a refresh asked for during the build start no transfer.
        notify = dns.message.make_query("acme.example", "SOA")
        notify.set_opcode(dns.opcode.NOTIFY)
        notify.flags |= dns.flags.AA
        reply = dns.query.udp(notify, "127.0.0.1", port=self.sp, timeout=3)
        self.assertEqual(dns.rcode.to_text(reply.rcode()), "NOERROR")
        self.assertIn("acme.example.: NOTIFY from 127.0.0.1; checking once the copy under way "
                      "is built", self.log())
        self.assertEqual(ctl(self.secondary, "zone-refresh", "acme.example").returncode, 0)
        self.assertEqual(len(re.findall(BUILT, self.log())), 1, self.log())
        self.assertEqual(len(re.findall(r"acme\.example\.: (AXFR|IXFR) from 127\.0\.0\.1:\d+ "
                                        r"\(our serial", self.log())), 2, self.log())
        # The new copy after the swap.
        self.wait_built(2)
        self.assertEqual(self.soa_serial(self.secondary), new)
        r = self.secondary.query("_acme-challenge.new.acme.example", "TXT")
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertEqual(rrs(r, "answer"), ['_acme-challenge.new.acme.example. 60 IN TXT "token"'])
        # The IXFR history the secondary serves its own secondaries goes on
        # from the old copy: the difference made beside the loop (RFC 1995 4).
        msgs = dns.query.xfr("127.0.0.1", "acme.example", rdtype="IXFR", serial=want,
                             port=self.sp, timeout=10, lifetime=20, relativize=False)
        lines = [rr for m in msgs for rrset in m.answer for rr in rrset.to_text().splitlines()]
        soas = [int(l.split()[6]) for l in lines if l.split()[3] == "SOA"]
        self.assertEqual(soas[:3], [new, want, new], lines)
        self.assertEqual(soas[-1], new, lines)
        self.assertIn('_acme-challenge.new.acme.example. 60 IN TXT "token"', lines)
        self.assertLess(len(lines), 40, lines)   # a difference, not the zone
        # One check follows the build (the NOTIFY and the refresh, coalesced):
        # the copy is current, and no third build starts.
        self.secondary.wait_log(r"acme\.example\.: serial %d is current" % new, timeout=10)
        self.assertEqual(len(re.findall(r"acme\.example\.: (AXFR|IXFR) from 127\.0\.0\.1:\d+ "
                                        r"\(our serial", self.log())), 3, self.log())
        time.sleep(0.5)
        self.assertEqual(len(re.findall(BUILDING, self.log())), 2, self.log())

    def answers(self):
        """What the secondary answers for a few questions of the copy."""
        out = []
        for name, rdtype in (("acme.example", "SOA"), ("acme.example", "NS"),
                             ("_acme-challenge.new.acme.example", "TXT")):
            r = self.secondary.query(name, rdtype)
            out.append((dns.rcode.to_text(r.rcode()), rrs(r, "answer")))
        return out

    def test_reload_serves_the_old_copy_until_it_is_read(self):
        self.secondary.start()
        self.wait_built(1)
        want = self.soa_serial(self.secondary)
        before = self.answers()
        self.assertEqual(before[0][0], "NOERROR")
        loaded = r"acme\.example\.: serving the copy from .*, serial %d, .*read beside the loop" \
                 % want
        self.assertEqual(len(re.findall(loaded, self.log())), 0, self.log())
        # SIGHUP: the new configuration is swapped in at once; its copy is
        # read and built beside the loop, held there DELAY_MS by the hook.
        self.secondary.send_signal(signal.SIGHUP)
        self.secondary.wait_log(r"reloaded: 2 zones")
        self.assertEqual(len(re.findall(loaded, self.log())), 0, self.log())
        # Meanwhile the previous configuration's copy answers: same serial,
        # same records.
        self.assertEqual(self.soa_serial(self.secondary), want)
        self.assertEqual(self.answers(), before)
        self.assertEqual(rrs(self.secondary.query("www.example.com"), "answer"),
                         ["www.example.com. 3600 IN A 192.0.2.1"])
        # Then the copy read again: the same.
        self.secondary.wait_log(loaded)
        self.assertEqual(self.answers(), before)
        # A restart has no previous copy to serve: REFUSED until it is read.
        self.assertEqual(self.secondary.stop(), 0, self.secondary.log()[-3000:])
        self.secondary.start()
        r = self.secondary.query("acme.example", "SOA")
        self.assertEqual(dns.rcode.to_text(r.rcode()), "REFUSED")
        self.assertEqual(len(re.findall(loaded, self.log())), 0, self.log())
        self.secondary.wait_log(loaded)
        self.assertEqual(self.answers(), before)

    def test_stop_during_a_build(self):
        self.secondary.start()
        self.during_build(1)
        # SIGTERM while the copy is held on its thread: joined, freed, exit 0.
        self.assertEqual(self.secondary.stop(), 0, self.secondary.log()[-3000:])
        self.assertNotRegex(self.secondary.log(), BUILT)


if __name__ == "__main__":
    main()
