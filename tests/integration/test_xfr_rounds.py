# SPDX-License-Identifier: MIT
"""Issue #26: a zone transfer out is sent over several loop rounds.

core/net/tcp.c hands the kernel at most 256 KiB of a stream per loop round
and takes the rest up in the next rounds (a primary sending a 1M-record
AXFR held its loop 5-55 ms a round before).  A zone of about 400 KiB on
the wire, with one TXT RRset of 2 000 records (about 340 KiB: split across
some 20 messages, and across rounds), must come out whole and in order:
the primary's AXFR read by dnspython equals the zone file record for
record, opens and closes with the SOA and keeps the big RRset's parts
together; a geoacme secondary's copy of it, transferred by AXFR again,
equals the zone file too.
"""
import re
import unittest

import dns.query
import dns.rdatatype
import dns.rrset
import dns.zone

from harness import Server, free_port, main, rrs
from test_secondary import listen

BIG = 2000        # TXT records at big.rounds.example.: one RRset over many messages
NAMES = 1500      # names with an A and a TXT record each

PRIMARY = """
[[zones]]
zone = "rounds.example"
file = "rounds.example.zone"
allow_axfr = true
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
"""


def zone_text():
    lines = ["$ORIGIN rounds.example.", "$TTL 300",
             "@ IN SOA ns1.rounds.example. hostmaster.rounds.example. 5 3600 600 86400 60",
             "@ IN NS ns1.rounds.example.", "ns1 IN A 192.0.2.53"]
    for i in range(BIG):
        lines.append('big 60 IN TXT "record %04d of one RRset that spans many messages, %s"'
                     % (i, "x" * 100))
    for i in range(NAMES):
        lines.append("h%d IN A 198.51.%d.%d" % (i, i // 256 % 256, i % 256))
        lines.append('h%d 60 IN TXT "name %d"' % (i, i))
    return "\n".join(lines) + "\n"


def records(rrsets):
    return sorted(rr for rrset in rrsets for rr in rrset.to_text().splitlines())


def zone_records():
    """The zone file's records as dnspython reads it, each once."""
    z = dns.zone.from_text(zone_text(), origin="rounds.example.", relativize=False)
    return records(dns.rrset.from_rdata(name, ttl, rdata) for name, ttl, rdata in z.iterate_rdatas())


def transferred(msgs, test):
    """An AXFR's records, checked to open and close with the same SOA
    (RFC 5936 2.2), the closing one left out."""
    answer = [rrset for m in msgs for rrset in m.answer]
    test.assertEqual(answer[0].rdtype, dns.rdatatype.SOA)
    test.assertEqual(answer[-1].rdtype, dns.rdatatype.SOA)
    test.assertEqual(records(answer[:1]), records(answer[-1:]))
    return records(answer[:-1])


class TransferOverRounds(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.pp = free_port()
        cls.primary = Server(listen(cls.pp) + PRIMARY, {"rounds.example.zone": zone_text()},
                             ready_timeout=60)
        cls.primary.start()

    @classmethod
    def tearDownClass(cls):
        cls.primary.cleanup()

    def setUp(self):
        self.secondary = None

    def tearDown(self):
        if self.secondary:
            try:
                if self.secondary.alive():
                    self.assertEqual(self.secondary.stop(), 0, self.secondary.log()[-3000:])
            finally:
                self.secondary.cleanup()

    def axfr(self, port):
        return list(dns.query.xfr("127.0.0.1", "rounds.example", port=port, timeout=30,
                                  lifetime=60, relativize=False))

    def test_primary_sends_the_zone_whole_and_in_order(self):
        msgs = self.axfr(self.pp)
        # Every record once, SOA first and last.
        self.assertEqual(transferred(msgs, self), zone_records())
        # The big RRset is split across messages, and its parts follow one
        # another.
        holding = [i for i, m in enumerate(msgs)
                   if any(r.name.to_text() == "big.rounds.example." for r in m.answer)]
        self.assertGreater(len(holding), 10)
        self.assertEqual(holding, list(range(holding[0], holding[-1] + 1)))
        # More than a round's 256 KiB as geoacme sent it (names uncompressed).
        pattern = (r"AXFR of rounds\.example\. \(serial 5\) to 127\.0\.0\.1: \d+ records in "
                   r"\d+ messages, (\d+) bytes")
        self.primary.wait_log(pattern)
        sent = re.search(pattern, self.primary.log())
        self.assertGreater(int(sent.group(1)), 256 * 1024)

    def test_secondary_copies_it_record_for_record(self):
        sp = free_port()
        self.secondary = Server(listen(sp) + SECONDARY.format(pp=self.pp))
        self.secondary.start()
        self.secondary.wait_log(r"rounds\.example\.: AXFR from 127\.0\.0\.1:\d+, serial 0 -> 5: "
                                r"%d records in \d+ messages" % (BIG + 2 * NAMES + 4),
                                timeout=60)
        self.assertEqual(transferred(self.axfr(sp), self), zone_records())
        r = self.secondary.query("h1499.rounds.example", "TXT")
        self.assertEqual(rrs(r, "answer"), ['h1499.rounds.example. 60 IN TXT "name 1499"'])


if __name__ == "__main__":
    main()
