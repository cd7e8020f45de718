# SPDX-License-Identifier: MIT
"""Issue #26: a large AXFR into a geoacme secondary is copied whole.

The secondary reads the AXFR on its loop into one change list (grown by
mremap, its records kept in blocks: core/wire/change.h) and builds and
stores the copy beside the loop (xfr/copy_build.h).  A primary serving a
zone file of 50 003 records; the secondary's AXFR (dnspython) must equal
the primary's, record for record, and a name near the end answers.
Labelled slow: two dnspython AXFRs of 50 000 records take most of its
half minute.
"""
import unittest

import dns.query

from harness import Server, free_port, main, rrs
from test_secondary import listen


LARGE_NAMES = 25000   # two records each: 50 000 and the apex's

LARGE_PRIMARY = """
[[zones]]
zone = "large.example"
file = "large.example.zone"
allow_axfr = true
"""

LARGE_SECONDARY = """
[[zones]]
zone = "large.example"
zone_type = "Secondary"
primaries = ["127.0.0.1:{pp}"]
allow_axfr = true
[zones.stores]
type = "sqlite"
journal_path = "large-copy.sqlite"
"""


def large_zone():
    lines = ["$ORIGIN large.example.", "$TTL 300",
             "@ IN SOA ns1.large.example. hostmaster.large.example. 7 3600 600 86400 60",
             "@ IN NS ns1.large.example.", "ns1 IN A 192.0.2.53"]
    for i in range(LARGE_NAMES):
        lines.append("h%d IN A 198.51.%d.%d" % (i, i // 256 % 256, i % 256))
        lines.append('h%d 60 IN TXT "record %d of a large zone"' % (i, i))
    return "\n".join(lines) + "\n"


class LargeCopy(unittest.TestCase):

    def setUp(self):
        self.pp, self.sp = free_port(), free_port()
        self.primary = Server(listen(self.pp) + LARGE_PRIMARY,
                              {"large.example.zone": large_zone()}, ready_timeout=60)
        self.primary.start()
        self.secondary = Server(listen(self.sp) + LARGE_SECONDARY.format(pp=self.pp))

    def tearDown(self):
        try:
            if self.secondary.alive():
                self.assertEqual(self.secondary.stop(), 0, self.secondary.log()[-3000:])
        finally:
            self.secondary.cleanup()
            self.primary.cleanup()

    def axfr(self, port):
        msgs = dns.query.xfr("127.0.0.1", "large.example", port=port, timeout=30, lifetime=120,
                             relativize=False)
        return sorted(rr for m in msgs for rrset in m.answer
                      for rr in rrset.to_text().splitlines())

    def test_every_record_copied(self):
        self.secondary.start()
        self.secondary.wait_log(r"large\.example\.: AXFR from 127\.0\.0\.1:\d+, serial 0 -> 7: "
                                r"50004 records in \d+ messages", timeout=120)
        want = self.axfr(self.pp)
        # Every record once, and the SOA twice (it opens and closes the AXFR).
        self.assertEqual(len(want), 2 * LARGE_NAMES + 3 + 1)
        self.assertEqual(self.axfr(self.sp), want)
        r = self.secondary.query("h24999.large.example", "TXT")
        self.assertEqual(rrs(r, "answer"),
                         ['h24999.large.example. 60 IN TXT "record 24999 of a large zone"'])


if __name__ == "__main__":
    main()
