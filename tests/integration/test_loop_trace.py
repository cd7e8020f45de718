# SPDX-License-Identifier: MIT
"""The slow-round trace of test builds (core/net/loop_trace.h): with
GEOACME_TEST_SLOW_ROUND_US set, a loop round at least that long is logged
with its CPU time and its longest callbacks, each an offset that addr2line
names in the binary.  It is how bench/stall.sh's long rounds are found
(issue #26), so it must name the right functions."""
import os
import re
import subprocess
import unittest

import dns.message

import harness

ZONE = harness.example_zone("www IN A 192.0.2.80\n")
CONFIG = harness.BASE_CONFIG + """
[[zones]]
zone = "example.com"
file = "example.com.zone"
"""
LINE = re.compile(r"warn: loop: slow round of (\d+) us \((\d+) us on the CPU; page faults: \d+ major, "
                  r"\d+ minor; blocked \d+, preempted \d+ times\), (\d+) callbacks:"
                  r"((?: 0x[0-9a-f]+ \(\S+\) \d+ us;)*)")


@harness.needs_test_hooks
class SlowRoundTrace(unittest.TestCase):
    def test_a_query_round_names_the_udp_reader(self):
        env = dict(os.environ, GEOACME_TEST_SLOW_ROUND_US="1")
        server = harness.Server(CONFIG, {"example.com.zone": ZONE}, env=env)
        try:
            server.start()
            r = server.query(dns.message.make_query("www.example.com", "A"))
            self.assertEqual([rd.to_text() for rd in r.answer[0]], ["192.0.2.80"])
            server.wait_log(r"slow round")
            rounds = [LINE.match(l) for l in server.log().splitlines() if "slow round" in l]
            self.assertTrue(rounds and all(rounds), server.log()[-2000:])
            named = set()
            for m in rounds:
                self.assertGreaterEqual(int(m.group(1)), 1)
                self.assertLessEqual(int(m.group(2)), int(m.group(1)) + 1000)
                for off in re.findall(r"0x[0-9a-f]+", m.group(4)):
                    out = subprocess.run(["addr2line", "-f", "-e", harness.BIN, off],
                                         capture_output=True, text=True, check=True)
                    named.add(out.stdout.split("\n")[0])
            # The query's round ran the UDP socket's reader (core/net/udp.c).
            self.assertIn("udp_read", named, sorted(named))
        finally:
            server.cleanup()


if __name__ == "__main__":
    harness.main()
