# SPDX-License-Identifier: MIT
"""A secondary takes a transfer apart a little each loop round (issue #26).

xfr/secondary.c reads the primary's response for at most a time budget a
round and goes on in the next, mid-message when the time is up.  Here the
budget is 0 (the test hook GEOACME_TEST_XFR_IN_BUDGET_US), so every record
of the transfer is taken in a round of its own: the AXFR of the first copy,
then an IXFR after an UPDATE of 200 records, both TSIG-signed over
several messages.  What the secondary then serves by AXFR must be the
primary's zone, record for record, and its log must say how many rounds
the response took (one a record at least).
"""
import base64
import os
import re
import time
import unittest

import dns.query
import dns.tsigkeyring

from acme_helpers import TsigKey, signed_update
from harness import BASE_CONFIG, Server, free_port, main, needs_test_hooks

NAMES = 1500   # three records each, in several 64 KiB messages
KEY = "xfr.rounds.example."
SECRET = base64.b64encode(b"a transfer read one record a round").decode()
UPDATER = TsigKey(KEY, "hmac-sha256", b"a transfer read one record a round")

PRIMARY = """
[[zones]]
zone = "rounds.example"
axfr_policy = "AllowSigned"
notify = ["127.0.0.1:{sp}"]
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "rounds.sqlite"
zone_path = "rounds.zone"
[[zones.stores.tsig_keys]]
name = "{key}"
algorithm = "hmac-sha256"
secret = "{secret}"
"""

SECONDARY = """
[[zones]]
zone = "rounds.example"
zone_type = "Secondary"
primaries = ["127.0.0.1:{pp}"]
allow_axfr = true
[zones.stores]
type = "sqlite"
journal_path = "rounds-copy.sqlite"
[[zones.stores.tsig_keys]]
name = "{key}"
algorithm = "hmac-sha256"
secret = "{secret}"
"""


def zone_text(serial):
    lines = ["$ORIGIN rounds.example.", "$TTL 300",
             "@ IN SOA ns1.rounds.example. hostmaster.rounds.example. %d 3600 600 86400 60"
             % serial,
             "@ IN NS ns1.rounds.example.", "ns1 IN A 192.0.2.53"]
    for i in range(NAMES):
        lines.append("h%d IN A 198.51.%d.%d" % (i, i // 256, i % 256))
        lines.append("h%d IN MX 10 mail%d.Rounds.Example." % (i, i % 7))
        lines.append('h%d 60 IN TXT "record %d"' % (i, i))
    return "\n".join(lines) + "\n"


def with_port(port):
    return BASE_CONFIG.replace("listen_port = 0", "listen_port = %d" % port)


@needs_test_hooks
class OneRecordARound(unittest.TestCase):

    def setUp(self):
        self.pp, self.sp = free_port(), free_port()
        fmt = dict(pp=self.pp, sp=self.sp, key=KEY, secret=SECRET)
        self.primary = Server(with_port(self.pp) + PRIMARY.format(**fmt),
                              {"rounds.zone": zone_text(1)})
        self.primary.start()
        env = dict(os.environ, GEOACME_TEST_XFR_IN_BUDGET_US="0")
        self.secondary = Server(with_port(self.sp) + SECONDARY.format(**fmt), env=env)

    def tearDown(self):
        try:
            if self.secondary.alive():
                self.assertEqual(self.secondary.stop(), 0, self.secondary.log()[-3000:])
        finally:
            self.secondary.cleanup()
            self.primary.cleanup()

    def axfr(self, port):
        keyring = dns.tsigkeyring.from_text({KEY: SECRET})
        msgs = list(dns.query.xfr("127.0.0.1", "rounds.example", port=port, timeout=10,
                                  lifetime=30, relativize=False, keyring=keyring,
                                  keyname=KEY, keyalgorithm="hmac-sha256"))
        records = sorted(rr for m in msgs for rrset in m.answer
                         for rr in rrset.to_text().splitlines())
        return records, len(msgs)

    def rounds(self, kind, serial):
        """The loop rounds the secondary read the transfer to `serial` in
        (logged before the copy is taken), and the log."""
        pattern = (r"rounds\.example\.: %s from 127\.0\.0\.1:\d+, serial \d+ -> %d: \d+ "
                   r"records in \d+ messages" % (kind, serial))
        self.secondary.wait_log(pattern, timeout=30)
        log = self.secondary.log_since_start()
        before = log[:re.search(pattern, log).start()]
        found = re.findall(r"rounds\.example\.: the response from 127\.0\.0\.1:\d+ was read "
                           r"in (\d+) loop rounds", before)
        self.assertTrue(found, log[-3000:])
        return int(found[-1]), log

    def wait_serial(self, serial):
        deadline = time.time() + 30
        while time.time() < deadline:
            r = self.secondary.query("rounds.example", "SOA", timeout=1)
            if r.answer and r.answer[0][0].serial == serial:
                return
            time.sleep(0.05)
        self.fail("serial %d never served:\n%s" % (serial, self.secondary.log_since_start()[-3000:]))

    def test_axfr_then_ixfr_read_one_record_a_round(self):
        self.secondary.start()
        n, log = self.rounds("AXFR", 1)
        m = re.search(r"AXFR from 127\.0\.0\.1:\d+, serial 0 -> 1: (\d+) records in (\d+) messages",
                      log)
        records, messages = int(m.group(1)), int(m.group(2))
        self.assertEqual(records, 3 * NAMES + 4)   # and the closing SOA
        self.assertGreater(messages, 1)
        self.assertGreaterEqual(n, records, log[-3000:])
        self.wait_serial(1)
        want, _ = self.axfr(self.pp)
        self.assertEqual(len(want), 3 * NAMES + 4)
        got, _ = self.axfr(self.sp)
        self.assertEqual(got, want)

        # An IXFR: one UPDATE of 200 TXT records (the difference is those and
        # its SOAs), NOTIFYed to the secondary.
        r = signed_update(self.primary, "rounds.example.", UPDATER,
                          add=[("_acme-challenge.u%d.rounds.example." % i, 60, "TXT",
                                '"token %d"' % i) for i in range(200)], tcp=True)
        self.assertEqual(r.rcode(), 0)
        serial = self.primary.query("rounds.example", "SOA").answer[0][0].serial
        n, log = self.rounds("IXFR", serial)
        self.assertGreaterEqual(n, 200, log[-3000:])
        self.wait_serial(serial)
        want, _ = self.axfr(self.pp)
        self.assertIn('_acme-challenge.u150.rounds.example. 60 IN TXT "token 150"', want)
        got, _ = self.axfr(self.sp)
        self.assertEqual(got, want)


if __name__ == "__main__":
    main()
