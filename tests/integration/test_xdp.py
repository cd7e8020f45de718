# SPDX-License-Identifier: MIT
"""The AF_XDP path ([server] xdp_listen, core/net/xdp.c): same answers, fails safe.

The real geoacme serves the golden fixture (tests/golden: signed zone,
geo name over five sites, cookies, NSID, a TXT too big for 512 bytes) on
a veth pair in XDP mode and on a second pair with its sockets only, to the
same client address (xdp_net.py draws the network and says why it uses
documentation addresses on namespaces of its own).  Every UDP query of the
golden set goes over both, over IPv4 and over IPv6, and the two answers
must be the same bytes: geo with ECS, DO and RRSIGs, cookies, NSID,
FORMERR / NOTIMP / REFUSED / BADVERS, truncation.  A pair may differ only
because a fresh server cookie carries the second it was made in: such a
pair is asked again (up to 3 times); a real difference stays.

Also: the server says it is in XDP mode (log line, `ip link` shows the
program, geoacme_xdp_sockets 1, queries counted with transport="xdp");
TCP, UPDATE and NOTIFY on the XDP interface are passed to the kernel and
answered by the sockets; after kill -9 the program is gone from the
interface and the next start attaches again; a reload keeps it; 64 flows
over the pair's 4 queues are all answered over AF_XDP, every queue taking
some; a query in a VLAN-tagged frame is left to the kernel; a program of ours left
attached the old way (ip link ... xdp obj) is replaced, someone else's
program is left alone (and the interface to the sockets); a missing
interface falls back to the sockets with one log line, and `geoacme
check` warns about it.

dnstap: a query answered through AF_XDP is logged with the frame's
addresses, our side (response_address/port) included, as the socket path
logs it.  Privileges: the capabilities contrib/geoacme-xdp.conf grants
(with the unit's own) are enough for a non-root server to attach, and are
dropped once it has; without CAP_BPF, or with an RLIMIT_MEMLOCK too small
for the UMEM and no CAP_IPC_LOCK, the server starts on its sockets and
says why once, and `geoacme check` warns.

Root only (exit 77 otherwise, or where a veth pair or a namespace cannot
be made).  About 10 s.
"""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import threading
import tempfile
import time
import unittest
import urllib.request

import dns.message
import dns.opcode
import dns.rcode
import dns.update

import harness
import xdp_net
from test_dnstap import Collector

harness.enter_private_netns()
xdp_net.setup()

QUERIES, MMDB = xdp_net.golden_queries()
BUILD = os.environ.get("BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))


def make_server(xdp_ifaces=(xdp_net.XDP_S,), extra="", wrapper=()):
    lines = 'http_listen = ["127.0.0.1:0"]\n'
    if xdp_ifaces is not None:
        lines += "xdp_listen = [%s]\n" % ", ".join('"%s"' % i for i in xdp_ifaces)
    server = harness.Server(xdp_net.golden_config(MMDB, lines + extra), wrapper=wrapper)
    server.write("key.pem", xdp_net.golden_key(), mode=0o600)
    return server


def metrics(server):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % server.http_port(), timeout=5) as r:
        return r.read().decode()


def xdp_queries(text):
    return sum(int(v) for v in re.findall(r'geoacme_queries_total\{[^}]*transport="xdp"[^}]*\} (\d+)', text))


def dropped(text):
    return int(re.search(r"(?m)^geoacme_xdp_dropped_total (\d+)", text).group(1))


def checksum(data):
    """The Internet checksum (RFC 1071) of data."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def query(name, rdtype="A", **kw):
    q = dns.message.make_query(name, rdtype, **kw)
    q.flags &= ~0x0100   # no RD
    return q.to_wire()


@unittest.skipIf(QUERIES is None, "no fixture database (libmaxmind-db-writer-perl)")
class XdpAnswers(unittest.TestCase):
    """One server, XDP on one pair and sockets on the other."""

    @classmethod
    def setUpClass(cls):
        cls.server = make_server()
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def test_attached(self):
        self.assertRegex(self.server.log(), r"xdp %s: answering UDP port 53 through AF_XDP "
                         r"\((native|generic) mode, 4 queues, MTU 1500\)" % xdp_net.XDP_S)
        self.assertRegex(xdp_net.link_xdp(), r"prog/xdp id \d+")
        self.assertIn("geoacme_xdp_sockets 4\n", metrics(self.server))

    def test_every_queue_answers(self):
        """Multi-queue: 64 flows spread over the pair's 4 queues by hash;
        each queue's frames reach a socket of ours (a queue without one
        would pass them to the kernel, whose reply takes the other pair)."""
        before, queued = xdp_queries(metrics(self.server)), xdp_net.queue_redirects()
        q = query("www.example.com")
        replies = xdp_net.exchange([xdp_net.xdp_job(q, v6=i % 2 == 1) for i in range(64)])
        self.assertEqual(sum(r is not None for r in replies), 64)
        self.assertEqual(xdp_queries(metrics(self.server)) - before, 64)
        per_queue = [a - b for a, b in zip(xdp_net.queue_redirects(), queued)]
        self.assertEqual(sum(per_queue), 64, per_queue)
        self.assertNotIn(0, per_queue, "a queue got none of 64 flows")

    def test_vlan_tagged_frames_go_to_the_kernel(self):
        """A query in an 802.1Q-tagged frame is not the program's: passed
        to the kernel (which has no VLAN 100 here and drops it), never
        redirected.  The same frame untagged is answered over AF_XDP."""
        def frame(tag):
            dns_msg = query("www.example.com")
            udp_len = 8 + len(dns_msg)
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0, 64, 17, 0,
                             socket.inet_aton(xdp_net.CLIENT4), socket.inet_aton(xdp_net.SERVER4))
            ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
            udp = struct.pack("!HHHH", 40100, 53, udp_len, 0) + dns_msg
            pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, udp_len)
            udp = udp[:6] + struct.pack("!H", checksum(pseudo + udp) or 0xffff) + udp[8:]
            eth = xdp_net.mac(xdp_net.XDP_S) + xdp_net.mac(xdp_net.XDP_C, ns=True)
            eth += (struct.pack("!HH", 0x8100, 100) if tag else b"") + struct.pack("!H", 0x0800)
            return eth + ip + udp
        text = metrics(self.server)
        before = (xdp_queries(text), dropped(text), sum(xdp_net.queue_redirects()))
        xdp_net.raw_frame(frame(tag=True))
        time.sleep(0.2)   # nothing to wait for: it must not come
        text = metrics(self.server)
        self.assertEqual((xdp_queries(text), dropped(text), sum(xdp_net.queue_redirects())), before)
        xdp_net.raw_frame(frame(tag=False))
        deadline = time.time() + 5
        while xdp_queries(metrics(self.server)) == before[0] and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(xdp_queries(metrics(self.server)), before[0] + 1)
        self.assertEqual(sum(xdp_net.queue_redirects()), before[2] + 1)

    def test_golden_set_same_bytes(self):
        """Every UDP golden query, over IPv4 and IPv6: AF_XDP == sockets."""
        before = xdp_queries(metrics(self.server))
        cases = [(name, data, v6) for name, _, data in QUERIES for v6 in (False, True)]

        def pair(data, v6):
            # Not a query (QR set, an opcode other than QUERY): the program
            # passes it to the kernel, whose reply takes the route back;
            # sent from the address routed over the XDP pair, it must be
            # answered all the same.
            to_kernel = len(data) < 3 or data[2] & 0xf8
            return [xdp_net.passed_job(data, v6) if to_kernel else xdp_net.xdp_job(data, v6),
                    xdp_net.sock_job(data, v6)]
        jobs = []
        for _, data, v6 in cases:
            jobs += pair(data, v6)
        replies = xdp_net.exchange(jobs, timeout=0.3)
        differ, answered = [], 0
        for i, (name, data, v6) in enumerate(cases):
            x, s = replies[2 * i], replies[2 * i + 1]
            tries = 0
            while x != s and tries < 3:   # a fresh cookie's timestamp: ask again
                x, s = xdp_net.exchange(pair(data, v6), timeout=0.3)
                tries += 1
            if x != s:
                differ.append("%s (%s): xdp %s\n  sockets %s" % (name, "IPv6" if v6 else "IPv4",
                              x.hex() if x else None, s.hex() if s else None))
            answered += s is not None
        self.assertEqual(differ, [], "answers differ:\n" + "\n".join(differ))
        # Most of the set is answered (some cases are drops by design), and
        # the XDP half was counted as XDP: the comparison compared two paths.
        self.assertGreater(answered, len(cases) * 3 // 4)
        self.assertGreaterEqual(xdp_queries(metrics(self.server)) - before, len(QUERIES))
        self.assertGreater(answered, 0)

    def test_truncation_and_ecs_answered(self):
        """The classes the issue names, answered over XDP with the exact
        flags: TC for the big TXT without EDNS, ECS scope, DO's RRSIG."""
        big = dns.message.from_wire(xdp_net.exchange([xdp_net.xdp_job(query("big.example.com", "TXT", use_edns=False))])[0])
        self.assertTrue(big.flags & dns.flags.TC)
        self.assertEqual(big.answer, [])
        ecs = dns.edns.ECSOption("192.0.2.0", 24, 0)
        r = dns.message.from_wire(xdp_net.exchange([xdp_net.xdp_job(
            query("geo.example.com", use_edns=0, want_dnssec=True, options=[ecs]), v6=True)])[0])
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertEqual(sorted(rr.rdtype for rr in r.answer), [dns.rdatatype.A, dns.rdatatype.RRSIG])
        self.assertTrue(any(isinstance(o, dns.edns.ECSOption) for o in r.options))

    def test_passed_to_the_kernel(self):
        """TCP over the XDP interface, and an UPDATE and a NOTIFY over UDP
        (opcodes the program leaves to the sockets), are answered."""
        before = xdp_queries(metrics(self.server))
        a = query("www.example.com", "A")
        upd = dns.update.UpdateMessage("example.com")
        upd.add("x", 300, "A", "192.0.2.9")
        notify = dns.message.make_query("example.com", "SOA")
        notify.set_opcode(dns.opcode.NOTIFY)
        notify.flags |= dns.flags.AA
        replies = xdp_net.exchange([xdp_net.passed_job(a, tcp=True), xdp_net.passed_job(a, v6=True, tcp=True),
                                    xdp_net.passed_job(upd.to_wire()), xdp_net.passed_job(notify.to_wire(), v6=True)])
        for r in replies[:2]:
            self.assertIsNotNone(r, "no TCP answer over the XDP interface")
            m = dns.message.from_wire(r)
            self.assertEqual(m.rcode(), dns.rcode.NOERROR)
            self.assertEqual([rr.to_text() for rr in m.answer[0]], ["192.0.2.80"])
        self.assertIsNotNone(replies[2], "no answer to an UPDATE over the XDP interface")
        self.assertEqual(dns.message.from_wire(replies[2]).opcode(), dns.opcode.UPDATE)
        self.assertEqual(dns.message.from_wire(replies[2]).rcode(), dns.rcode.REFUSED)
        self.assertIsNotNone(replies[3], "no answer to a NOTIFY over the XDP interface")
        self.assertEqual(dns.message.from_wire(replies[3]).opcode(), dns.opcode.NOTIFY)
        self.assertEqual(xdp_queries(metrics(self.server)), before, "TCP counted as XDP")


@unittest.skipIf(QUERIES is None, "no fixture database (libmaxmind-db-writer-perl)")
class XdpRecovery(unittest.TestCase):
    """Attach, detach, crash, leftovers, fallback."""

    def answered_over_xdp(self, server):
        before = xdp_queries(metrics(server))
        r = xdp_net.exchange([xdp_net.xdp_job(query("www.example.com"))])[0]
        self.assertIsNotNone(r, "no answer over the XDP interface")
        self.assertEqual(dns.message.from_wire(r).rcode(), dns.rcode.NOERROR)
        self.assertEqual(xdp_queries(metrics(server)), before + 1)

    def test_kill9_then_start_again(self):
        """Three crashes in a row, each start right after the last one's
        exit: the kernel lets go of a dead socket's queue late (a deferred
        release), and a start that finds it still bound waits for it
        rather than giving the interface up to the sockets."""
        server = make_server()
        try:
            server.start()
            self.answered_over_xdp(server)
            for _ in range(3):
                server.kill9()
                self.assertNotIn("prog/xdp", xdp_net.link_xdp(),
                                 "the program outlived the process")
                server.start()
                server.wait_log(r"xdp %s: answering UDP" % xdp_net.XDP_S)
                self.assertNotIn("stale geoacme XDP program", server.log_since_start())
                self.assertNotIn("answered by the sockets", server.log_since_start())
                self.answered_over_xdp(server)
            server.stop()
            self.assertIn("xdp %s: detached" % xdp_net.XDP_S, server.log_since_start())
            self.assertNotIn("prog/xdp", xdp_net.link_xdp(), "still attached after stop")
        finally:
            server.cleanup()

    def test_start_waits_for_a_busy_queue(self):
        """A start that finds the queues bound by another process's AF_XDP
        sockets (here a live server on another port, as a crashed one's
        are until the kernel lets go of them) waits for them; when that
        process dies, it binds them and answers through AF_XDP."""
        first = make_server()
        second = harness.Server(
            xdp_net.golden_config(MMDB, 'http_listen = ["127.0.0.1:0"]\nxdp_listen = ["%s"]\n'
                                  % xdp_net.XDP_S).replace("listen_port = 53", "listen_port = 5353"))
        second.write("key.pem", xdp_net.golden_key(), mode=0o600)
        started = []
        try:
            first.start()
            starter = threading.Thread(target=lambda: started.append(second.start()))
            starter.start()
            deadline = time.time() + 10
            while second.proc is None and time.time() < deadline:
                time.sleep(0.01)
            second.wait_log(r"xdp %s: queue 0 is bound by another AF_XDP socket; waiting up to "
                            r"5000 ms" % xdp_net.XDP_S, timeout=10)
            first.kill9()
            starter.join(15)
            self.assertEqual(started, [second], second.log())
            log = second.log_since_start()
            self.assertIn("xdp %s: answering UDP port 5353 through AF_XDP" % xdp_net.XDP_S, log)
            self.assertNotIn("answered by the sockets", log)
            before = xdp_queries(metrics(second))
            r = xdp_net.exchange([xdp_net.xdp_job(query("www.example.com"), port=5353)])[0]
            self.assertIsNotNone(r, "no answer over the XDP interface")
            self.assertEqual(dns.message.from_wire(r).rcode(), dns.rcode.NOERROR)
            self.assertEqual(xdp_queries(metrics(second)), before + 1)
        finally:
            first.cleanup()
            second.cleanup()

    def test_reload_keeps_it(self):
        """SIGHUP: the same program stays attached, the same sockets answer."""
        server = make_server()
        try:
            server.start()
            prog = re.search(r"prog/xdp id (\d+)", xdp_net.link_xdp()).group(1)
            server.send_signal(signal.SIGHUP)
            server.wait_log(r"info: reloaded: 2 zones")
            self.assertIn("prog/xdp id %s " % prog, xdp_net.link_xdp())
            self.assertIn("geoacme_xdp_sockets 4\n", metrics(server))
            self.answered_over_xdp(server)
        finally:
            server.cleanup()

    def test_stale_program_replaced(self):
        """A geoacme program attached without a link (ip link ... xdp obj,
        as an older build or a hand would leave it) is replaced at start."""
        obj = os.path.join(BUILD, "core/xdp_prog.bpf.o")
        subprocess.run(["ip", "link", "set", "dev", xdp_net.XDP_S, "xdpgeneric", "obj", obj, "sec", "xdp"],
                       check=True, capture_output=True)
        self.assertIn("prog/xdp", xdp_net.link_xdp())
        server = make_server()
        try:
            server.start()
            self.assertRegex(server.log(), r"xdp %s: replaced a stale geoacme XDP program" % xdp_net.XDP_S)
            self.answered_over_xdp(server)
        finally:
            server.cleanup()
        self.assertNotIn("prog/xdp", xdp_net.link_xdp())

    def test_someone_elses_program_left_alone(self):
        """Another XDP program on the interface (not geoacme's) is neither
        replaced nor detached: the interface is left to the sockets, with
        one line naming the program, and keeps that program after stop."""
        tmp = tempfile.mkdtemp(prefix="geoacme-xdp-other-")
        self.addCleanup(shutil.rmtree, tmp, True)
        src, obj = os.path.join(tmp, "other.c"), os.path.join(tmp, "other.o")
        with open(src, "w") as f:
            f.write('struct xdp_md;\n'
                    '__attribute__((section("xdp"), used)) int other_pass(struct xdp_md *ctx)\n'
                    '{ return 2; /* XDP_PASS */ }\n'
                    '__attribute__((section("license"), used)) char LICENSE[] = "GPL";\n')
        subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-c", src, "-o", obj],
                       check=True, capture_output=True)
        subprocess.run(["ip", "link", "set", "dev", xdp_net.XDP_S, "xdpgeneric", "obj", obj, "sec", "xdp"],
                       check=True, capture_output=True)
        self.addCleanup(subprocess.run, ["ip", "link", "set", "dev", xdp_net.XDP_S, "xdpgeneric", "off"],
                        capture_output=True)
        prog = re.search(r"prog/xdp id (\d+)", xdp_net.link_xdp()).group(1)
        server = make_server()
        try:
            server.start()
            log = server.log()
            self.assertEqual(log.count("xdp %s:" % xdp_net.XDP_S), 1, log)
            self.assertIn('xdp %s: another XDP program ("other_pass", id %s) is attached; not '
                          'replaced; UDP on it is answered by the sockets' % (xdp_net.XDP_S, prog), log)
            self.assertIn("geoacme_xdp_sockets 0\n", metrics(server))
            r = xdp_net.exchange([xdp_net.passed_job(query("www.example.com"))])[0]
            self.assertEqual(dns.message.from_wire(r).rcode(), dns.rcode.NOERROR)
            self.assertEqual(server.stop(), 0)
        finally:
            server.cleanup()
        self.assertIn("prog/xdp id %s " % prog, xdp_net.link_xdp())

    def test_missing_interface_falls_back(self):
        missing = "gxno%d" % os.getpid()
        server = make_server(xdp_ifaces=(missing,))
        try:
            server.start()
            log = server.log()
            self.assertEqual(log.count("xdp %s:" % missing), 1, log)
            self.assertIn("xdp %s: no such interface; UDP on it is answered by the sockets" % missing, log)
            self.assertIn("geoacme_xdp_sockets 0\n", metrics(server))
            r = xdp_net.exchange([xdp_net.sock_job(query("www.example.com"))])[0]
            self.assertEqual(dns.message.from_wire(r).rcode(), dns.rcode.NOERROR)
            check = subprocess.run([harness.BIN, "check", "-c", server.config_path],
                                   capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stderr)
            self.assertIn('warning: xdp_listen: no interface "%s" here' % missing, check.stderr)
            self.assertIn("1 warning", check.stdout)
        finally:
            server.cleanup()


@unittest.skipIf(QUERIES is None, "no fixture database (libmaxmind-db-writer-perl)")
class XdpDnstap(unittest.TestCase):
    """dnstap of queries answered through AF_XDP: the addresses and ports
    come from the frame, and are those the socket path logs."""

    def test_addresses_from_the_frame(self):
        tmp = tempfile.mkdtemp(prefix="geoacme-xdp-dnstap-")
        self.addCleanup(shutil.rmtree, tmp, True)
        collector = Collector(tmp, "capture.fstrm").start()
        self.addCleanup(lambda: collector.proc.poll() is None and collector.kill())
        server = make_server(extra='dnstap_socket = "%s"\n' % collector.sock)
        self.addCleanup(server.cleanup)
        server.start()
        server.wait_log(r"info: dnstap: streaming to ")
        before = xdp_queries(metrics(server))
        sent = [("xdp", False, 40001), ("xdp", True, 40002), ("sockets", False, 40003),
                ("sockets", True, 40004)]
        msgs = [dns.message.make_query("www.example.com", "A") for _ in sent]
        jobs = [(xdp_net.xdp_job if path == "xdp" else xdp_net.sock_job)(m.to_wire(), v6)
                for (path, v6, _), m in zip(sent, msgs)]
        for job, (_, _, sport) in zip(jobs, sent):
            job[6:] = [sport]
        replies = xdp_net.exchange(jobs)
        self.assertNotIn(None, replies)
        self.assertEqual(xdp_queries(metrics(server)) - before, 2)
        deadline = time.time() + 10
        while 'geoacme_dnstap_frames_total{result="sent"} 8\n' not in metrics(server):
            self.assertLess(time.time(), deadline, metrics(server))
            time.sleep(0.05)
        got = [d["message"] for d in collector.messages()]
        want = []
        for (_, v6, sport), m in zip(sent, msgs):
            for kind in ("AUTH_QUERY", "AUTH_RESPONSE"):
                want.append((kind, "INET6" if v6 else "INET", "UDP",
                             xdp_net.CLIENT6 if v6 else xdp_net.CLIENT4, sport,
                             xdp_net.SERVER6 if v6 else xdp_net.SERVER4, 53, m.id))
        self.assertEqual([(g["type"], g["socket_family"], g["socket_protocol"], g["query_address"],
                           g["query_port"], g["response_address"], g["response_port"],
                           (g.get("query_message_data") or g.get("response_message_data"))["id"])
                          for g in got], want)
        for g, reply in zip(got[1::2], replies):
            self.assertEqual(g["response_message_data"]["status"],
                             dns.rcode.to_text(dns.message.from_wire(reply).rcode()))


CAP_BITS = {"CAP_NET_BIND_SERVICE": 10, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13,
            "CAP_IPC_LOCK": 14, "CAP_SYS_ADMIN": 21, "CAP_BPF": 39}


def unit_setting(path, key):
    """The words of every KEY= line of a unit file, in order."""
    with open(path) as f:
        return [w for line in f for w in (line.split("=", 1)[1].split()
                                          if line.startswith(key + "=") else [])]


def proc_caps(pid):
    """CapPrm, CapEff, CapAmb of a process as sets of names (CAP_BITS')."""
    caps = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("CapPrm", "CapEff", "CapAmb"):
                bits = int(value, 16)
                caps[key] = {n for n, b in CAP_BITS.items() if bits >> b & 1}
                caps[key + "_other"] = bits & ~sum(1 << b for b in CAP_BITS.values())
    return caps


@unittest.skipIf(QUERIES is None, "no fixture database (libmaxmind-db-writer-perl)")
class XdpPrivileges(unittest.TestCase):
    """What AF_XDP needs from the process, and what happens without it."""

    def check(self, server, wrapper):
        return subprocess.run(wrapper + [harness.BIN, "check", "-c", server.config_path],
                              capture_output=True, text=True)

    def falls_back(self, server, reason):
        """Started on the sockets, the reason said once, nothing attached;
        UDP over the XDP interface answered by the kernel's sockets."""
        log = server.log()
        self.assertEqual(log.count("xdp %s:" % xdp_net.XDP_S), 1, log)
        self.assertIn("xdp %s: %s" % (xdp_net.XDP_S, reason), log)
        self.assertIn("; UDP on it is answered by the sockets\n", log)
        self.assertIn("geoacme_xdp_sockets 0\n", metrics(server))
        self.assertNotIn("prog/xdp", xdp_net.link_xdp())
        r = xdp_net.exchange([xdp_net.passed_job(query("www.example.com"))])[0]
        self.assertIsNotNone(r, "no answer from the sockets over the XDP interface")
        self.assertEqual(dns.message.from_wire(r).rcode(), dns.rcode.NOERROR)
        self.assertEqual(xdp_queries(metrics(server)), 0)

    def test_drop_in_capabilities_suffice_and_are_dropped(self):
        """As a non-root user with the unit's and the drop-in's capabilities
        (as systemd's AmbientCapabilities= gives them): attached, answering,
        and after start only CAP_NET_BIND_SERVICE is left."""
        caps = unit_setting(os.path.join(harness.REPO, "contrib/geoacme.service.in"),
                            "AmbientCapabilities")
        caps += unit_setting(os.path.join(harness.REPO, "contrib/geoacme-xdp.conf"),
                             "AmbientCapabilities")
        self.assertEqual(sorted(caps), ["CAP_BPF", "CAP_IPC_LOCK", "CAP_NET_ADMIN",
                                        "CAP_NET_BIND_SERVICE", "CAP_NET_RAW"])
        names = ",".join("+" + c[4:].lower() for c in caps)
        wrapper = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                   "--inh-caps=-all," + names, "--ambient-caps=-all," + names,
                   "--bounding-set=-all," + names, "--"]
        server = make_server(wrapper=wrapper)
        self.addCleanup(server.cleanup)
        for d, _, files in os.walk(server.dir):
            for name in [d] + [os.path.join(d, f) for f in files]:
                os.chown(name, 65534, 65534)
        server.start()
        self.assertRegex(server.log(), r"xdp %s: answering UDP port 53 through AF_XDP" % xdp_net.XDP_S)
        self.assertIn("info: xdp: set up; capabilities dropped: CAP_BPF CAP_NET_ADMIN CAP_NET_RAW "
                      "CAP_IPC_LOCK\n", server.log())
        got = proc_caps(server.proc.pid)
        for key in ("CapPrm", "CapEff", "CapAmb"):
            self.assertEqual((got[key], got[key + "_other"]), ({"CAP_NET_BIND_SERVICE"}, 0), key)
        r = xdp_net.exchange([xdp_net.xdp_job(query("www.example.com"))])[0]
        self.assertEqual(dns.message.from_wire(r).rcode(), dns.rcode.NOERROR)
        self.assertEqual(xdp_queries(metrics(server)), 1)
        self.assertEqual(server.stop(), 0)
        self.assertIn("xdp %s: detached" % xdp_net.XDP_S, server.log())
        self.assertNotIn("prog/xdp", xdp_net.link_xdp())

    def test_without_cap_bpf_falls_back(self):
        wrapper = ["setpriv", "--inh-caps=-bpf,-sys_admin", "--bounding-set=-bpf,-sys_admin", "--"]
        server = make_server(wrapper=wrapper)
        self.addCleanup(server.cleanup)
        server.start()
        self.falls_back(server, "cannot load the XDP program: Operation not permitted (needs "
                                "CAP_BPF and CAP_NET_ADMIN, or root)")
        check = self.check(server, wrapper)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertIn("warning: xdp_listen: needs CAP_BPF (or CAP_SYS_ADMIN), CAP_NET_ADMIN and "
                      "CAP_NET_RAW, which this process lacks", check.stderr)

    def test_memlock_too_small_falls_back(self):
        """RLIMIT_MEMLOCK of 1 MiB and no CAP_IPC_LOCK: the 4 queues' UMEMs
        (8 MiB each) do not fit."""
        wrapper = ["prlimit", "--memlock=1048576:1048576", "setpriv", "--inh-caps=-ipc_lock",
                   "--bounding-set=-ipc_lock", "--"]
        server = make_server(wrapper=wrapper)
        self.addCleanup(server.cleanup)
        server.start()
        why = ("locked memory: its AF_XDP sockets need 32 MiB, RLIMIT_MEMLOCK is 1 MiB and the "
               "process lacks CAP_IPC_LOCK (raise the limit, systemd's LimitMEMLOCK=, or grant "
               "CAP_IPC_LOCK)")
        self.falls_back(server, why + "; UDP on it is answered by the sockets")
        check = self.check(server, wrapper)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertIn("warning: xdp_listen: %s; the sockets will answer" % why, check.stderr)
        self.assertIn("1 warning", check.stdout)


if __name__ == "__main__":
    harness.main()
