# SPDX-License-Identifier: MIT
"""AF_XDP replies that cannot go out at once wait; none is lost or changed.

core/net/xdp.c takes from an AF_XDP socket's rx ring no more queries than
its tx ring has room for their replies (tx_room): when the tx ring is full
even after a send, the queries behind stay on the rx ring until the loop
comes back, instead of being answered into a full ring and dropped.  On a
veth the kernel completes a send at once, so the ring never stays full by
itself: the test hook GEOACME_TEST_XDP_TX_RING=8 (core/test_hooks.h) makes
each socket's tx ring 8 descriptors, smaller than a batch (32), so every
burst fills it and waits.

The real geoacme serves the golden fixture in XDP mode (xdp_net.py draws
the network).  A client in the other namespace sends bursts of 300 queries
from one socket (one flow: one queue, one rx ring) without waiting, half a
static A and half a signed geo A with ECS and DO, then reads every reply.
Each reply must be the reference answer byte for byte but for the ID (the
reference: the same query asked alone over the sockets-only pair), every
ID answered exactly once, over IPv4 and IPv6; and once more while a UDP
socket is busy (120 queries over the sockets-only pair sent with the server
stopped, so it reads a full batch and the loop waits in that socket's
recvmmsg, loop.h), its replies checked too.  Self-checks: the queries
were counted as XDP, geoacme_xdp_tx_full_total rose (the wait happened),
geoacme_xdp_dropped_total did not, geoacme_udp_busy_total rose.

Root and a build with the test hooks only (exit 77 otherwise).  A few
seconds.
"""
import json
import os
import re
import signal
import subprocess
import sys
import unittest
import urllib.request

import dns.edns
import dns.message

import harness
import xdp_net

harness.enter_private_netns()
xdp_net.setup()

QUERIES, MMDB = xdp_net.golden_queries()
BURST = 300

# Run in the client namespace: per group (device, source, server, count),
# one UDP socket sends every query of the group (IDs 0..count-1, the
# queries taken in turn) at once; then, told to go on (a line on stdin),
# each socket reads replies until each ID has one or nothing came for 3 s.
# Prints per group the count of extra replies (an ID twice or out of range)
# and the replies' hex, one a line ("-": none).
_BURST = r"""
import json, select, socket, sys
groups, qs = json.loads(sys.stdin.readline())
qs = [bytes.fromhex(h) for h in qs]
socks = []
for dev, src, dst, n in groups:
    s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind((src, 0))
    for i in range(n):
        q = qs[i % len(qs)]
        s.sendto(i.to_bytes(2, "big") + q[2:], (dst, 53))
    socks.append(s)
print("sent", flush=True)
sys.stdin.readline()
got = [[None] * g[3] for g in groups]
extra = [0] * len(groups)
while any(x is None for g in got for x in g):
    ready = select.select(socks, [], [], 3)[0]
    if not ready:
        break
    for s in ready:
        k = socks.index(s)
        r = s.recv(65535)
        i = int.from_bytes(r[:2], "big")
        if i >= len(got[k]) or got[k][i] is not None:
            extra[k] += 1
        else:
            got[k][i] = r
for k in range(len(groups)):
    print(extra[k])
    for g in got[k]:
        print(g.hex() if g is not None else "-")
"""


def query(name, rdtype="A", **kw):
    q = dns.message.make_query(name, rdtype, **kw)
    q.flags &= ~0x0100   # no RD
    return q.to_wire()


def counter(text, name):
    return int(re.search(r"(?m)^%s (\d+)" % name, text).group(1))


def xdp_queries(text):
    return sum(int(v) for v in re.findall(r'geoacme_queries_total\{[^}]*transport="xdp"[^}]*\} (\d+)', text))


@unittest.skipIf(QUERIES is None, "no fixture database (libmaxmind-db-writer-perl)")
@harness.needs_test_hooks
class XdpDeferred(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = harness.Server(
            xdp_net.golden_config(MMDB, 'http_listen = ["127.0.0.1:0"]\nxdp_listen = ["%s"]\n' % xdp_net.XDP_S),
            env=dict(os.environ, GEOACME_TEST_XDP_TX_RING="8"))
        cls.server.write("key.pem", xdp_net.golden_key(), mode=0o600)
        cls.server.start()
        cls.server.wait_log(r"xdp %s: answering UDP" % xdp_net.XDP_S)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.server.http_port(), timeout=5) as r:
            return r.read().decode()

    def burst(self, v6, udp=0):
        """BURST queries over AF_XDP (and udp over the sockets-only pair,
        sent while the server is stopped, so that its socket reads a full
        batch and turns busy); every reply checked."""
        ecs = dns.edns.ECSOption("2001:db8:1::" if v6 else "192.0.2.0", 48 if v6 else 24, 0)
        qs = [query("www.example.com", "AAAA" if v6 else "A", use_edns=0),
              query("geo.example.com", "AAAA" if v6 else "A", use_edns=0, want_dnssec=True, options=[ecs])]
        refs = xdp_net.exchange([xdp_net.sock_job(q, v6) for q in qs])
        for q, ref in zip(qs, refs):
            self.assertIsNotNone(ref, "no reference answer over the sockets for %s" % q.hex())
            self.assertGreater(len(dns.message.from_wire(ref).answer), 0)
        client, server = (xdp_net.CLIENT6, xdp_net.SERVER6) if v6 else (xdp_net.CLIENT4, xdp_net.SERVER4)
        groups = [[xdp_net.XDP_C, client, server, BURST]]
        if udp:
            groups.append([xdp_net.SOCK_C, client, server, udp])
        before = self.metrics()
        p = subprocess.Popen(["ip", "netns", "exec", xdp_net.NETNS, sys.executable, "-c", _BURST],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if udp:
                self.server.send_signal(signal.SIGSTOP)
            p.stdin.write(json.dumps([groups, [q.hex() for q in qs]]) + "\n")
            p.stdin.flush()
            self.assertEqual(p.stdout.readline().strip(), "sent")
        finally:
            if udp:
                self.server.send_signal(signal.SIGCONT)
        out, _ = p.communicate("go\n", timeout=60)
        self.assertEqual(p.returncode, 0)
        lines = out.split()
        for dev, _, _, n in groups:
            self.assertEqual(lines[0], "0", "%s: replies to an ID twice or out of range" % dev)
            replies, lines = lines[1:n + 1], lines[n + 1:]
            missing, wrong = [], []
            for i, h in enumerate(replies):
                if h == "-":
                    missing.append(i)
                    continue
                got, ref = bytes.fromhex(h), refs[i % len(qs)]
                if got[2:] != ref[2:]:
                    wrong.append("%d: %s\n  want %s" % (i, got.hex(), ref.hex()))
            self.assertEqual(len(replies), n)
            self.assertEqual(missing, [], "%s: %d of %d queries got no reply" % (dev, len(missing), n))
            self.assertEqual(wrong, [], "%s: replies differ from the sockets' answer:\n" % dev + "\n".join(wrong[:5]))
        after = self.metrics()
        self.assertGreaterEqual(xdp_queries(after) - xdp_queries(before), BURST)
        self.assertGreater(counter(after, "geoacme_xdp_tx_full_total"),
                           counter(before, "geoacme_xdp_tx_full_total"), "the tx ring never filled")
        self.assertEqual(counter(after, "geoacme_xdp_dropped_total"), counter(before, "geoacme_xdp_dropped_total"))
        if udp:
            self.assertGreater(counter(after, "geoacme_udp_busy_total"), counter(before, "geoacme_udp_busy_total"),
                               "the UDP socket never turned busy")

    def test_burst_ipv4(self):
        self.burst(False)

    def test_burst_ipv6(self):
        self.burst(True)

    def test_burst_while_a_udp_socket_is_busy(self):
        """The loop waits in a busy UDP socket's recvmmsg (loop.h's waiter)
        instead of epoll_wait, whose poll would send what xdp_read left on
        the tx ring: the AF_XDP replies all go out all the same, exact, and
        so do the socket's."""
        self.burst(False, udp=120)


if __name__ == "__main__":
    harness.main()
