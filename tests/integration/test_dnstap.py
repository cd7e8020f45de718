# SPDX-License-Identifier: MIT
"""dnstap: the real binary streams to the stock Frame Streams collector.

`fstrm_capture` (Debian fstrm-bin) listens on a Unix socket and writes what
it receives to a file; BIND's `dnstap-read -y` (bind9-dnsutils) decodes the
file.  The decoded messages are compared with the queries the test sent and
the answers it got: message types, protocol, family, the client's address
and port, the question, the rcode and the answer records.

A stopped collector (SIGSTOP) never holds the answers up: every query of a
burst far larger than the socket buffers and geoacme's 1 MiB queue is
answered exactly while the drop counter rises; a killed collector is
connected to again once a new one listens on the same path.
"""
import os
import re
import signal
import socket
import subprocess
import time
import unittest
import urllib.request

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.update
import yaml

from harness import BASE_CONFIG, Server, have_ipv6, main, make_mmdb, rrs
from test_geo import AMSTERDAM, ZONE, geo_config

CONTENT_TYPE = "protobuf:dnstap.Dnstap"
# A TXT answer of about 3 KB: few frames fill the collector's socket and the queue.
BIG_TXT = "big IN TXT " + " ".join('"%s"' % (chr(97 + i % 26) * 250) for i in range(12)) + "\n"


class Collector:
    """fstrm_capture on a Unix socket, writing to a file."""

    def __init__(self, directory, name):
        self.sock = os.path.join(directory, "dnstap.sock")
        self.out = os.path.join(directory, name)
        self.proc = None

    def start(self):
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        self.proc = subprocess.Popen(["fstrm_capture", "-t", CONTENT_TYPE, "-u", self.sock,
                                      "-w", self.out], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while not os.path.exists(self.sock):
            if time.time() > deadline or self.proc.poll() is not None:
                raise AssertionError("fstrm_capture did not listen: %s" % self.finish())
            time.sleep(0.02)
        return self

    def finish(self):
        """Stops it cleanly (it closes the file on SIGINT) and returns its output."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        out = self.proc.communicate(timeout=10)[0].decode(errors="replace")
        return out

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def messages(self):
        """The file decoded by dnstap-read, as a list of Dnstap documents."""
        self.finish()
        r = subprocess.run(["dnstap-read", "-y", self.out], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            raise AssertionError("dnstap-read failed: %s%s" % (r.stdout, r.stderr))
        return [d for d in yaml.safe_load_all(r.stdout) if d]


def metric(port, key):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(key + " "):
                return float(line.rsplit(" ", 1)[1])
    return None


SENT = 'geoacme_dnstap_frames_total{result="sent"}'
DROPPED = 'geoacme_dnstap_frames_total{result="dropped"}'


class DnstapTestCase(unittest.TestCase):
    settings = ""
    listen = BASE_CONFIG

    def setUp(self):
        self.server = Server(BASE_CONFIG, {"example.com.zone": ZONE + BIG_TXT})
        self.collector = Collector(self.server.dir, "capture.fstrm").start()
        self.addCleanup(self.cleanup)
        cfg = (self.listen + '[server]\nhttp_listen = ["127.0.0.1:0"]\ndnstap_socket = "%s"\n'
               'udp_max_size = 4096\n' % self.collector.sock + self.settings + geo_config(["city.mmdb"]))
        self.server.write("config.toml", cfg)
        make_mmdb(self.server.dir, "city")
        self.server.start()
        self.port = self.server.http_port()
        self.server.wait_log(r"info: dnstap: streaming to " + re.escape(self.collector.sock))

    def cleanup(self):
        rc = self.server.stop()
        log = self.server.log()
        if self.collector.proc and self.collector.proc.poll() is None:
            self.collector.proc.send_signal(signal.SIGCONT)
            self.collector.kill()
        self.server.cleanup()
        self.assertEqual(rc, 0, log[-3000:])

    def wait_metric(self, key, pred, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = metric(self.port, key)
            if v is not None and pred(v):
                return v
            time.sleep(0.05)
        self.fail("%s stayed %s:\n%s" % (key, metric(self.port, key), self.server.log()[-3000:]))

    def ask(self, name, rdtype, tcp=False, addr="127.0.0.1", to=None, **kw):
        """Sends a query from a socket of our own bound to addr, to the server at `to`
        (addr by default); returns (query, response, source port)."""
        to = to or addr
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM if tcp else socket.SOCK_DGRAM)
        s.bind((addr, 0))
        port = s.getsockname()[1]
        q = self.server.make_query(name, rdtype, **kw)
        try:
            if tcp:
                s.connect((to, self.server.port))
                r = dns.query.tcp(q, to, port=self.server.port, sock=s, timeout=5)
            else:
                r = dns.query.udp(q, to, port=self.server.port, sock=s, timeout=5)
        finally:
            s.close()
        return q, r, port


def question(q):
    return ["%s IN %s" % (q.question[0].name.to_text(), dns.rdatatype.to_text(q.question[0].rdtype))]


class OnAWildcardAddress(DnstapTestCase):
    """Listening on 0.0.0.0: each UDP datagram's packet info, and each TCP
    connection's own address, say which address the query came to."""
    listen = BASE_CONFIG.replace('listen_addrs_ipv4 = ["127.0.0.1"]',
                                 'listen_addrs_ipv4 = ["0.0.0.0"]')

    def test_response_address_is_the_one_asked(self):
        sent = [self.ask("www.example.com", "A", to="127.0.0.2"),
                self.ask("www.example.com", "A", tcp=True, to="127.0.0.3"),
                self.ask("example.org", "A", to="127.0.0.1")]
        self.wait_metric(SENT, lambda v: v == 2 * len(sent))
        got = [d["message"] for d in self.collector.messages()]
        self.assertEqual([(m["type"], m["socket_protocol"], m["query_address"],
                           m["query_port"], m["response_address"], m["response_port"])
                          for m in got],
                         [(kind, proto, "127.0.0.1", port, to, self.server.port)
                          for (_, _, port), proto, to in zip(sent, ("UDP", "TCP", "UDP"),
                                                             ("127.0.0.2", "127.0.0.3",
                                                              "127.0.0.1"))
                          for kind in ("AUTH_QUERY", "AUTH_RESPONSE")])


class Stream(DnstapTestCase):
    def test_decoded_messages_are_the_queries_and_answers(self):
        sent = []
        sent.append(("UDP", "127.0.0.1") + self.ask("www.example.com", "A", ecs=AMSTERDAM))
        sent.append(("TCP", "127.0.0.1") + self.ask("nope.example.com", "AAAA", tcp=True))
        sent.append(("UDP", "127.0.0.1") + self.ask("example.org", "A"))
        if have_ipv6():
            sent.append(("UDP", "::1") + self.ask("www.example.com", "AAAA", addr="::1"))
        self.wait_metric(SENT, lambda v: v == 2 * len(sent))
        got = self.collector.messages()
        self.assertEqual(len(got), 2 * len(sent), got)
        for i, (proto, addr, q, r, port) in enumerate(sent):
            for d, kind in ((got[2 * i], "AUTH_QUERY"), (got[2 * i + 1], "AUTH_RESPONSE")):
                with self.subTest(i=i, kind=kind):
                    self.assertEqual(d["type"], "MESSAGE")
                    self.assertEqual(d["version"], "geoacme 0.1.0")
                    m = d["message"]
                    self.assertEqual(m["type"], kind)
                    self.assertEqual(m["socket_protocol"], proto)
                    self.assertEqual(m["socket_family"], "INET6" if ":" in addr else "INET")
                    self.assertEqual(m["query_address"], addr)
                    self.assertEqual(m["query_port"], port)
                    # our side: the listen address and port the query came to
                    self.assertEqual(m["response_address"], addr)
                    self.assertEqual(m["response_port"], self.server.port)
            qd = got[2 * i]["message"]["query_message_data"]
            self.assertEqual(qd["id"], q.id)
            self.assertEqual(qd["QUESTION_SECTION"], question(q))
            rd = got[2 * i + 1]["message"]["response_message_data"]
            self.assertEqual(rd["id"], q.id)
            self.assertEqual(rd["status"], dns.rcode.to_text(r.rcode()))
            self.assertEqual(rd["QUESTION_SECTION"], question(q))
            self.assertEqual(rd.get("ANSWER_SECTION", []), rrs(r, "answer"))
            self.assertEqual(rd.get("AUTHORITY_SECTION", []), rrs(r, "authority"))
            self.assertIn("query_time", got[2 * i]["message"])
            self.assertIn("response_time", got[2 * i + 1]["message"])
        # the geo answer: the sites chosen for the ECS subnet, as the client got them
        self.assertEqual(len(sent[0][3].answer[0]), 2)
        self.assertEqual(metric(self.port, DROPPED), 0)

    def test_a_stopped_collector_never_holds_answers_up(self):
        self.ask("big.example.com", "TXT")
        self.wait_metric(SENT, lambda v: v == 2)
        os.kill(self.collector.proc.pid, signal.SIGSTOP)
        want = None
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(5)
        self.addCleanup(s.close)
        for i in range(1500):
            q = dns.message.make_query("big.example.com", "TXT", use_edns=0, payload=4096)
            s.sendto(q.to_wire(), ("127.0.0.1", self.server.port))
            r = dns.message.from_wire(s.recv(65535))
            self.assertEqual(r.id, q.id)
            answer = (r.rcode(), r.flags & dns.flags.TC, rrs(r, "answer"))
            if want is None:
                want = answer
                self.assertEqual(want[:2], (dns.rcode.NOERROR, 0))
                self.assertEqual(len(want[2]), 1)
            self.assertEqual(answer, want)
        dropped = metric(self.port, DROPPED)
        self.assertGreater(dropped, 0)
        sent = metric(self.port, SENT)
        self.assertLess(sent, 2 + 2 * 1500)
        os.kill(self.collector.proc.pid, signal.SIGCONT)
        # what was queued reaches the collector once it reads again; every
        # frame is sent or counted as dropped
        self.wait_metric(SENT, lambda v: v + dropped == 2 + 2 * 1500)
        self.assertEqual(metric(self.port, DROPPED), dropped)

    def test_a_killed_collector_is_connected_to_again(self):
        self.collector.kill()
        before = metric(self.port, DROPPED)
        q, r, _ = self.ask("www.example.com", "A")
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.wait_metric(DROPPED, lambda v: v >= before + 2)
        mark = len(self.server.log_since_start())
        self.collector = Collector(self.server.dir, "second.fstrm").start()
        deadline = time.time() + 15
        while "dnstap: streaming to" not in self.server.log_since_start()[mark:]:
            self.assertLess(time.time(), deadline, self.server.log_since_start())
            time.sleep(0.05)
        sent = metric(self.port, SENT)
        q, r, port = self.ask("static.example.com", "A")
        self.wait_metric(SENT, lambda v: v == sent + 2)
        got = self.collector.messages()
        self.assertEqual([d["message"]["type"] for d in got], ["AUTH_QUERY", "AUTH_RESPONSE"])
        self.assertEqual(got[0]["message"]["query_port"], port)
        self.assertEqual(got[1]["message"]["response_message_data"]["ANSWER_SECTION"],
                         rrs(r, "answer"))
        self.assertIn("warn: dnstap: %s: " % self.collector.sock, self.server.log())


class Switches(DnstapTestCase):
    """Responses off, UPDATEs off, one exchange in two."""
    settings = "dnstap_sample = 2\ndnstap_responses = false\ndnstap_updates = false\n"

    def test_queries_only_one_in_two_and_no_updates(self):
        ids = []
        for name in ("a.example.com", "b.example.com", "c.example.com", "d.example.com"):
            q, r, _ = self.ask(name, "A")
            ids.append(q.id)
        u = dns.update.UpdateMessage("example.com.")
        u.add("x.example.com.", 60, "A", "192.0.2.1")
        r = dns.query.udp(u, "127.0.0.1", port=self.server.port, timeout=5)
        self.assertEqual(r.rcode(), dns.rcode.REFUSED)   # unsigned
        self.wait_metric(SENT, lambda v: v == 2)
        got = self.collector.messages()
        self.assertEqual([(d["message"]["type"], d["message"]["query_message_data"]["id"])
                          for d in got], [("AUTH_QUERY", ids[1]), ("AUTH_QUERY", ids[3])])


class Updates(DnstapTestCase):
    def test_an_update_is_an_update_query_and_response(self):
        u = dns.update.UpdateMessage("example.com.")
        u.add("x.example.com.", 60, "A", "192.0.2.1")
        r = dns.query.udp(u, "127.0.0.1", port=self.server.port, timeout=5)
        self.assertEqual(r.rcode(), dns.rcode.REFUSED)   # unsigned
        self.wait_metric(SENT, lambda v: v == 2)
        got = self.collector.messages()
        self.assertEqual([d["message"]["type"] for d in got], ["UPDATE_QUERY", "UPDATE_RESPONSE"])
        self.assertEqual(got[1]["message"]["response_message_data"]["status"], "REFUSED")


if __name__ == "__main__":
    main()
