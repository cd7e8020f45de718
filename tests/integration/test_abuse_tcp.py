# SPDX-License-Identifier: MIT
"""Issue #16 item 8: at the TCP connection cap the connection idle longest
was closed, so one host's connect flood closed every honest client idle
for 50 ms (and with them the TCP retry RRL's slip asks for).  Now a
prefix's flood closes its own connections (tcp_max_connections_per_prefix)
and, at the cap, connections that never completed a query go first.

The flood comes from 127.0.0.1; the honest clients from 127.0.1.2 (another
/24) and 127.0.0.2 (the flood's own /24)."""
import socket
import struct
import time

import dns.message

from harness import ServerTestCase, main, rrs

ZONE = """$ORIGIN example.com.
$TTL 3600
@       IN SOA  ns1.example.com. hostmaster.example.com. 2026113001 7200 3600 1209600 300
@       IN NS   ns1.example.com.
ns1     IN A    192.0.2.53
www     600 IN A 192.0.2.80
"""

CONFIG = """
tcp_request_timeout = 60
[server]
tcp_max_connections = 20
[[zones]]
zone = "example.com"
file = "example.com.zone"
"""

WWW = ["www.example.com. 600 IN A 192.0.2.80"]


class Client:
    """A TCP connection from a chosen loopback address, asking www.example.com."""

    def __init__(self, port, source):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5,
                                          source_address=(source, 0))

    def ask(self):
        """The answer's records, or None when the server closed the connection."""
        wire = dns.message.make_query("www.example.com", "A").to_wire()
        try:
            self.s.sendall(struct.pack("!H", len(wire)) + wire)
            head = self.s.recv(2)
            if len(head) < 2:
                return None
            n = struct.unpack("!H", head)[0]
            data = b""
            while len(data) < n:
                chunk = self.s.recv(n - len(data))
                if not chunk:
                    return None
                data += chunk
        except (ConnectionResetError, BrokenPipeError, socket.timeout, OSError):
            return None
        return rrs(dns.message.from_wire(data), "answer")

    def close(self):
        self.s.close()


def still_open(s):
    """False when the server has closed s (EOF or reset)."""
    s.setblocking(False)
    try:
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)


class TcpFlood(ServerTestCase):
    CONFIG = CONFIG
    FILES = {"example.com.zone": ZONE}

    def honest(self):
        clients = [Client(self.server.port, "127.0.1.2"), Client(self.server.port, "127.0.0.2")]
        for c in clients:
            self.assertEqual(c.ask(), WWW)
        time.sleep(0.2)   # idle: the old cap closed these first
        return clients

    def test_idle_connect_flood(self):
        """400 connections from one host that never send a query (some half a message)."""
        clients = self.honest()
        flood = []
        try:
            for i in range(400):
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5,
                                             source_address=("127.0.0.1", 0))
                if i % 3 == 1:
                    s.sendall(b"\x00")
                elif i % 3 == 2:
                    s.sendall(b"\x00\x40\x12\x34\x00")
                flood.append(s)
            for c in clients:
                self.assertEqual(c.ask(), WWW, "an honest client lost its connection")
            other = Client(self.server.port, "127.0.2.3")
            self.assertEqual(other.ask(), WWW, "a new client answered")
            other.close()
            time.sleep(0.3)
            open_ones = sum(still_open(s) for s in flood)
            self.assertLessEqual(open_ones, 16, "the flood kept at most its prefix's share")
        finally:
            for s in flood:
                s.close()
            for c in clients:
                c.close()

    def test_busy_flood_from_one_host(self):
        """100 connections from one host, each completing a query: that host's /24
        keeps 16 (tcp_max_connections_per_prefix), everyone else keeps theirs."""
        clients = self.honest()
        flood = []
        try:
            for _ in range(100):
                c = Client(self.server.port, "127.0.0.1")
                self.assertEqual(c.ask(), WWW)
                flood.append(c)
            self.assertEqual(clients[0].ask(), WWW, "the other /24's client lost its connection")
            time.sleep(0.3)
            open_ones = sum(still_open(c.s) for c in flood)
            self.assertLessEqual(open_ones, 16)
            self.assertEqual(flood[-1].ask(), WWW, "the host's newest connection works")
        finally:
            for c in flood + clients:
                c.close()


if __name__ == "__main__":
    main()
