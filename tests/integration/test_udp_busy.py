# SPDX-License-Identifier: MIT
"""A UDP socket under load is waited on in recvmmsg, and nothing else starves.

With the default udp_io = "epoll", a full batch takes the socket out of the
epoll set and the loop blocks in its recvmmsg instead (core/net/udp.c,
busy_enter; loop_set_waiter in core/net/loop.h), looking at the epoll set
every 200 µs, until the socket goes quiet and goes back to epoll.  This
test makes the real server busy and checks, with exact answers:

- every flood query gets its exact reply (same bytes as the reference
  answer, but for the ID), before, while and after the socket is busy;
- while it stays busy (geoacme_udp_busy_sockets 1 and the number of busy
  episodes unchanged across the check): a TCP query, a UDP query over IPv6
  (the other socket), an HTTP scrape and a SIGHUP reload are all served;
- once the flood stops the socket goes back to epoll (the gauge is 0) and a
  single query is answered.

The flood is a separate process (no GIL shared with the checks): it sends a
burst while the server is stopped (SIGSTOP, so the first read is a full
batch), then keeps 64 queries in flight until told to stop.  A check is
retried (up to 8 times) when the server left the busy state during it (a
scheduling stall of the flood longer than the idle timeout on a loaded
machine); a server that does not serve the others while busy fails every
time.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import dns.message
import dns.query

from harness import ServerTestCase, demo_server, have_ipv6, main, rrs

FLOOD = r"""
import os, socket, sys, time
port, ref_path, stop_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ref = open(ref_path, "rb").read()          # the reference reply
query = bytearray(open(ref_path + ".q", "rb").read())
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind(("127.0.0.1", 0))
s.connect(("127.0.0.1", port))
s.settimeout(5)
sent = good = bad = 0
MIN_SENT = 2000
def send():
    global sent
    query[0:2] = (sent & 0xFFFF).to_bytes(2, "big")
    s.send(bytes(query))
    sent += 1
for _ in range(100):                        # the burst: the server is stopped
    send()
print("burst", flush=True)
inflight = 100
while True:
    try:
        r = s.recv(4096)
    except socket.timeout:
        print("timeout sent=%d good=%d bad=%d" % (sent, good, bad), flush=True)
        sys.exit(1)
    inflight -= 1
    if r[2:] == ref[2:]:
        good += 1
    else:
        bad += 1
    # Told to stop, it stops once MIN_SENT went out: how many the checks
    # above needed depends on the machine's speed, the flood's size must not.
    if os.path.exists(stop_path) and sent >= MIN_SENT:
        if inflight == 0:
            break
        continue
    while inflight < 64:
        send()
        inflight += 1
print("done sent=%d good=%d bad=%d" % (sent, good, bad), flush=True)
"""

MAIL = ["mail.example.com. 3600 IN A 192.0.2.25"]


class UdpBusy(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = demo_server()
        cls.server.start()
        cls.port = cls.server.http_port()
        cls.tmp = tempfile.mkdtemp(prefix="geoacme-busy-")

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=5) as r:
            self.assertEqual(r.status, 200)
            body = r.read().decode()
        out = {}
        for line in body.splitlines():
            if line.startswith("geoacme_udp_busy"):
                key, value = line.split(" ")
                out[key] = int(float(value))
        return out["geoacme_udp_busy_total"], out["geoacme_udp_busy_sockets"]

    def assert_mail(self, r):
        self.assertRcode(r, "NOERROR")
        self.assertFlags(r, "QR", "AA", "RD")
        self.assertEqual(rrs(r, "answer"), MAIL)

    def while_busy(self, what, action):
        """Runs action() and returns its result once it ran start to end
        with the socket busy the whole time (same episode)."""
        for _ in range(8):
            deadline = time.time() + 5
            total, busy = self.metrics()
            while busy != 1 and time.time() < deadline:
                time.sleep(0.01)
                total, busy = self.metrics()
            if busy != 1:
                continue
            result = action()
            after = self.metrics()
            if after == (total, 1):
                return result
        self.fail("%s: never served while the socket stayed busy" % what)

    def test_busy_socket_serves_everything(self):
        q = dns.message.make_query("mail.example.com", "A", use_edns=0, payload=1232)
        q.id = 0
        ref = dns.query.udp(q, "127.0.0.1", port=self.server.port, timeout=3)
        self.assert_mail(ref)
        ref_path = os.path.join(self.tmp, "ref")
        with open(ref_path, "wb") as f:
            f.write(ref.to_wire())
        with open(ref_path + ".q", "wb") as f:
            f.write(q.to_wire())
        self.assertEqual(self.metrics(), (0, 0), "busy before any load")

        stop_path = os.path.join(self.tmp, "stop")
        self.server.send_signal(signal.SIGSTOP)
        flood = subprocess.Popen([sys.executable, "-c", FLOOD, str(self.server.port), ref_path,
                                  stop_path], stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(flood.stdout.readline().strip(), "burst")
        finally:
            self.server.send_signal(signal.SIGCONT)
        try:
            r = self.while_busy("TCP query", lambda: dns.query.tcp(
                dns.message.make_query("mail.example.com", "A"), "127.0.0.1",
                port=self.server.port, timeout=3))
            self.assert_mail(r)
            if have_ipv6():
                r = self.while_busy("UDP query over IPv6", lambda: dns.query.udp(
                    dns.message.make_query("mail.example.com", "A"), "::1",
                    port=self.server.port, timeout=3))
                self.assert_mail(r)

            def reload():
                mark = len(self.server.log())
                self.server.send_signal(signal.SIGHUP)
                deadline = time.time() + 5
                while "reloaded" not in self.server.log()[mark:] and time.time() < deadline:
                    time.sleep(0.01)
                return "reloaded" in self.server.log()[mark:]
            self.assertTrue(self.while_busy("SIGHUP reload", reload), "no reload logged")
        finally:
            with open(stop_path, "w"):
                pass
            out, _ = flood.communicate(timeout=30)
        m = re.match(r"done sent=(\d+) good=(\d+) bad=(\d+)", out.strip())
        self.assertTrue(m, "the flood ended with: %r" % out)
        sent, good, bad = map(int, m.groups())
        self.assertEqual((good, bad), (sent, 0), "flood replies: %s" % out)
        self.assertGreaterEqual(sent, 2000)

        # Quiet again: back in the epoll set, and a lone query is answered.
        deadline = time.time() + 5
        total, busy = self.metrics()
        while busy != 0 and time.time() < deadline:
            time.sleep(0.01)
            total, busy = self.metrics()
        self.assertEqual(busy, 0, "the socket stayed out of epoll after the load")
        self.assertGreaterEqual(total, 1)
        self.assert_mail(dns.query.udp(dns.message.make_query("mail.example.com", "A"),
                                       "127.0.0.1", port=self.server.port, timeout=3))


if __name__ == "__main__":
    main()
