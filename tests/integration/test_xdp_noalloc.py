# SPDX-License-Identifier: MIT
"""The AF_XDP path allocates nothing per query, counted in the whole process.

test_noalloc.py's counter (tests/tools/alloc_count.c, preloaded) in the
real geoacme serving the golden fixture in XDP mode on a veth pair
(xdp_net.py draws the network): every UDP query of the golden set goes to
it over AF_XDP, IPv4 and IPv6, once to warm up and once counted; the count
of allocations must not move during the second pass.  Self-checks: the
start was counted (the preload works), the queries were counted as XDP
(transport="xdp"), so the pass went through the AF_XDP path.

Root only (exit 77 otherwise).  Not run under AddressSanitizer, like
test_noalloc.py (ASan replaces malloc itself): registered there as
disabled.
"""
import os
import re
import struct
import tempfile
import unittest
import urllib.request

import harness
import xdp_net

harness.enter_private_netns()
xdp_net.setup()

LIB = os.environ.get("ALLOC_COUNT_LIB")
QUERIES, MMDB = xdp_net.golden_queries()


def counted(path):
    with open(path, "rb") as f:
        return struct.unpack("=QQ", f.read(16))


@unittest.skipIf(QUERIES is None, "no fixture database (libmaxmind-db-writer-perl)")
class XdpNoAlloc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not LIB:
            raise AssertionError("ALLOC_COUNT_LIB is not set: run this test through ctest")
        fd, cls.count_path = tempfile.mkstemp(prefix="geoacme-alloc-")
        os.close(fd)
        cls.server = harness.Server(
            xdp_net.golden_config(MMDB, 'http_listen = ["127.0.0.1:0"]\nxdp_listen = ["%s"]\n' % xdp_net.XDP_S),
            env=dict(os.environ, LD_PRELOAD=LIB, ALLOC_COUNT_FILE=cls.count_path))
        cls.server.write("key.pem", xdp_net.golden_key(), mode=0o600)
        cls.server.start()
        cls.server.wait_log(r"xdp %s: answering UDP" % xdp_net.XDP_S)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()
        os.unlink(cls.count_path)

    def xdp_count(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.server.http_port(), timeout=5) as r:
            text = r.read().decode()
        return sum(int(v) for v in re.findall(r'geoacme_queries_total\{[^}]*transport="xdp"[^}]*\} (\d+)', text))

    def test_xdp_query_path_allocates_nothing(self):
        # Queries only: what the program passes to the kernel (other
        # opcodes, QR set) is the socket path's, which test_noalloc covers.
        jobs = [xdp_net.xdp_job(data, v6) for _, _, data in QUERIES
                if len(data) >= 3 and not data[2] & 0xf8 for v6 in (False, True)]
        allocs, _ = counted(self.count_path)
        self.assertGreater(allocs, 1000, "the server's start was not counted: preload not active?")
        xdp_net.exchange(jobs, timeout=0.3)          # warm-up
        before_xdp = self.xdp_count()
        before = counted(self.count_path)[0]
        replies = xdp_net.exchange(jobs, timeout=0.3)
        after = counted(self.count_path)[0]
        self.assertEqual(after - before, 0, "allocations while answering %d queries over AF_XDP" % len(jobs))
        self.assertGreater(sum(r is not None for r in replies), len(jobs) // 2)
        self.assertGreaterEqual(self.xdp_count() - before_xdp, len(jobs) // 2, "not answered over AF_XDP?")


if __name__ == "__main__":
    harness.main()
