# SPDX-License-Identifier: MIT
"""Issue #26.4b: a TCP connection that makes progress is not cut by a fixed
lifetime.  Every connection used to be closed 120 s after accept, transfers
included, so a secondary on a slow link could never copy a big zone.  Now
each lifetime window (`[server] tcp_lifetime`, 1 s here) a connection whose
peer took at least 1 KiB a second on average starts another window; one that
did not is closed.

- An AXFR of a 5 MB zone (more than the 4 MB the kernel buffers on loopback,
  so the server's stream really waits on the reader), read 32 KiB every
  50 ms through a 4 KiB receive buffer, completes over several windows, and
  its records are exactly those of a fast AXFR.  With a fixed lifetime it
  was cut at the first one.
- A reader that takes 64 bytes every 0.5 s (128 B/s) is reset at a window's
  end, with the log line saying why.
- An idle connection is closed (the idle timeout is 30 s here, so it is the
  window that closes it)."""
import socket
import struct
import time

import dns.message
import dns.rdatatype

from harness import ServerTestCase, main

LIFETIME = 1   # seconds
N = 45000

ZONE = ("$ORIGIN big.example.\n$TTL 300\n"
        "@ IN SOA ns1.big.example. hostmaster.big.example. 42 3600 600 86400 60\n"
        "@ IN NS ns1.big.example.\nns1 IN A 192.0.2.53\n" +
        "".join('n%05d IN TXT "%s"\n' % (i, "x" * 100) for i in range(N)))

CONFIG = """tcp_request_timeout = 30
[server]
tcp_lifetime = "%ds"

[[zones]]
zone = "big.example"
zone_type = "Primary"
file = "big.zone"
axfr_policy = "AllowAll"
axfr_from = ["127.0.0.0/8"]
""" % LIFETIME


def records(messages):
    """Every answer record of an AXFR, as sorted text lines."""
    out = []
    for m in messages:
        for rrset in m.answer:
            for rd in rrset:
                out.append("%s %d %s %s" % (rrset.name, rrset.ttl,
                                            dns.rdatatype.to_text(rrset.rdtype), rd.to_text()))
    return sorted(out)


class TcpLifetime(ServerTestCase):
    CONFIG = CONFIG
    FILES = {"big.zone": ZONE}

    def connect(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # A small receive window: the zone waits on the server's side, not in our kernel.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(10)
        s.connect(("127.0.0.1", self.server.port))
        return s

    def axfr_request(self):
        wire = dns.message.make_query("big.example.", "AXFR").to_wire()
        return struct.pack("!H", len(wire)) + wire

    def fast(self):
        out = []
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        try:
            s.sendall(self.axfr_request())
            buf = b""
            soas = 0
            while soas < 2:
                chunk = s.recv(65536)
                self.assertTrue(chunk, "fast AXFR cut short")
                buf += chunk
                while len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
                    n = struct.unpack("!H", buf[:2])[0]
                    m = dns.message.from_wire(buf[2:2 + n])
                    buf = buf[2 + n:]
                    out.append(m)
                    soas += sum(1 for r in m.answer if r.rdtype == dns.rdatatype.SOA)
        finally:
            s.close()
        return out

    def test_slow_transfer_completes_past_the_lifetime(self):
        want = records(self.fast())
        self.assertEqual(len(want), N + 4)   # SOA twice, NS, A, the TXTs
        s = self.connect()
        start = time.monotonic()
        msgs, buf, soas = [], b"", 0
        try:
            s.sendall(self.axfr_request())
            while soas < 2:
                # 32 KiB, then a pause: about 640 KiB/s, through the small window.
                got = 0
                while got < 32768 and soas < 2:
                    chunk = s.recv(32768 - got)
                    self.assertTrue(chunk, "the server closed the transfer after %d messages"
                                    % len(msgs))
                    got += len(chunk)
                    buf += chunk
                    while len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
                        n = struct.unpack("!H", buf[:2])[0]
                        m = dns.message.from_wire(buf[2:2 + n])
                        buf = buf[2 + n:]
                        msgs.append(m)
                        soas += sum(1 for r in m.answer if r.rdtype == dns.rdatatype.SOA)
                time.sleep(0.05)
        finally:
            s.close()
        # Not a timing assertion: the reader's own pace makes it span several
        # windows, which is what the test needs to have exercised.
        self.assertGreater(time.monotonic() - start, 2 * LIFETIME)
        self.assertEqual(records(msgs), want)
        self.assertEqual(msgs[0].rcode(), 0)

    @staticmethod
    def established(s):
        """Our side's TCP state (struct tcp_info's first byte) is still
        ESTABLISHED: the server has neither reset nor closed its end.  What
        the server sent before an RST can still sit in our receive queue, so
        reading until EOF would wait for a slow reader's own backlog."""
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] == 1

    def closed_within(self, s, limit, read=0, pause=0.2):
        """Reads `read` bytes every `pause` seconds (none when 0) until the
        server closes or resets s; True when it does within limit seconds."""
        deadline = time.monotonic() + limit
        s.setblocking(False)
        while time.monotonic() < deadline:
            if not self.established(s):
                return True
            if read:
                try:
                    s.recv(read)
                except BlockingIOError:
                    pass
                except OSError:
                    return True
            time.sleep(pause)
        return False

    def test_reader_too_slow_is_closed(self):
        s = self.connect()
        try:
            s.sendall(self.axfr_request())
            self.assertTrue(self.closed_within(s, 25, read=64, pause=0.5),
                            "a 128 B/s reader still connected after 25 s")
        finally:
            s.close()
        self.server.wait_log(r"tcp: closing a connection that sent \d+ bytes in its last "
                             r"%d s window \(less than 1 KiB/s: tcp_lifetime\)" % LIFETIME)

    def test_idle_connection_is_closed(self):
        s = self.connect()
        try:
            self.assertTrue(self.closed_within(s, 25), "an idle connection still open after 25 s")
        finally:
            s.close()


if __name__ == "__main__":
    main()
