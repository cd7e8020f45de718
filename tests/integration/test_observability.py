# SPDX-License-Identifier: MIT
"""Observability: /metrics, /status.json and the status page of the real binary.

The server runs with `http_listen = ["127.0.0.1:0"]`; the port is read from
its log.  Counters are checked against exactly the queries a test sent, the
exposition is checked by promtool (Debian package prometheus), and the page
is loaded in headless Chromium (Debian package chromium) with its network
log kept, to show it renders, has one marker per site, changes colour when
a site goes down, and makes no request beyond 127.0.0.1.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import dns.message
import dns.query
import dns.rcode
import dns.tsig
import dns.update

from harness import BASE_CONFIG, BIN, Server, ecs_option, have_ipv6, main, make_key, make_mmdb, rrs
from acme_helpers import TsigKey, acme_files, acme_zone_toml, seed_zone, signed_update
from harness import SITES_TOML, geo_toml, zone_toml
from test_geo import (AMSTERDAM, SITES, ZONE, decide, geo_config, health_listeners, parse_sites,
                      start_geo_server)

HTTP = '[server]\nhttp_listen = ["127.0.0.1:0"]\n'

ZONES = geo_toml((1.29, 103.85)) + zone_toml(signing_key="example.com.pem", body="""[[zones.geo]]
name = "www"
[[zones.geo]]
name = "eu"
sites = ["hp", "hn"]
""")

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-default-apps",
                  "--disable-extensions", "--mute-audio",
                  # Chromium's own background requests (time, updates, accounts) must
                  # not leave the machine either: every host but 127.0.0.1 resolves
                  # to nothing, and any proxy use goes to a closed port.
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                  "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1"]


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
        return r.status, dict(r.headers), r.read().decode()


def samples(text):
    """{'name{labels}': value} of every sample line."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def page_requests(netlog):
    """URLs of every request the page made (its site is 127.0.0.1), from the net log."""
    with open(netlog, encoding="utf-8") as f:
        log = json.load(f)
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = set()
    for e in log["events"]:
        p = e.get("params", {})
        if e["type"] == start and "site=http://127.0.0.1" in str(p.get("site_for_cookies")):
            urls.add(p["url"])
    return urls


class ObsTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hp, cls.hn, sites_toml = health_listeners()
        cls.sites = parse_sites(sites_toml)
        cls.server = Server(BASE_CONFIG + HTTP + sites_toml + ZONES, {"example.com.zone": ZONE})
        make_mmdb(cls.server.dir, "city")
        make_key(cls.server.path("example.com.pem"))
        cls.server.start()
        cls.port = cls.server.http_port()

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.server.stop()
            log = cls.server.log()
            cls.server.cleanup()
            if rc != 0:
                raise AssertionError("geoacme exited with %s:\n%s" % (rc, log[-4000:]))
        finally:
            cls.hp.close()
            cls.hn.close()

    def metrics(self):
        status, headers, body = get(self.port, "/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"))
        return body

    def wait_metric(self, key, value, timeout=30):
        deadline = time.time() + timeout
        got = None
        while time.time() < deadline:
            got = samples(self.metrics()).get(key)
            if got == value:
                return
            time.sleep(0.05)
        self.fail("%s stayed %s, wanted %s:\n%s" % (key, got, value, self.server.log()[-3000:]))

    def ensure_up(self):
        for listener in (self.hp, self.hn):
            if listener.sock is None:
                listener.open()
        self.wait_metric('geoacme_site_up{site="hp"}', 1)
        self.wait_metric('geoacme_site_up{site="hn"}', 1)


class Counters(ObsTestCase):
    def test_counters_equal_the_queries_sent(self):
        self.ensure_up()
        before = samples(self.metrics())
        s = self.server
        for _ in range(3):
            s.query("www.example.com", "A", ecs=AMSTERDAM)
        for _ in range(2):
            s.query("www.example.com", "TXT", tcp=True)
        s.query("nope.example.com", "A")
        s.query("example.org", "A")
        if have_ipv6():
            s.query("example.com", "SOA", addr="::1")
        # a header that promises no question: FORMERR, not a query of any zone
        s.raw_udp(bytes.fromhex("abcd0000" "0000" "0000" "0000" "0000"))
        s.raw_udp(b"\x01\x02\x03")   # shorter than a header: dropped
        after = samples(self.metrics())

        def delta(key):
            return after.get(key, 0) - before.get(key, 0)

        q = 'geoacme_queries_total{zone="%s",qtype="%s",transport="%s",family="%s"}'
        self.assertEqual(delta(q % ("example.com.", "A", "udp", "ipv4")), 4)
        self.assertEqual(delta(q % ("example.com.", "TXT", "tcp", "ipv4")), 2)
        self.assertEqual(delta(q % ("", "A", "udp", "ipv4")), 1)
        if have_ipv6():
            self.assertEqual(delta(q % ("example.com.", "SOA", "udp", "ipv6")), 1)
        self.assertEqual(delta('geoacme_responses_total{rcode="NOERROR"}'),
                         6 if have_ipv6() else 5)
        self.assertEqual(delta('geoacme_responses_total{rcode="NXDOMAIN"}'), 1)
        self.assertEqual(delta('geoacme_responses_total{rcode="REFUSED"}'), 1)
        self.assertEqual(delta('geoacme_responses_total{rcode="FORMERR"}'), 1)
        self.assertEqual(delta("geoacme_dropped_total"), 1)
        self.assertEqual(delta("geoacme_ecs_queries_total"), 3)
        # geo decisions: the independent rule says which sites, nearest first
        ttl, addrs = decide(52.37, 4.90, "A", sites=self.sites, alive=None)
        by_addr = {s["ipv4"]: s["name"] for s in self.sites}
        d = 'geoacme_geo_decisions_total{name="www.example.com.",site="%s",rank="%d"}'
        for rank, addr in enumerate(addrs, 1):
            self.assertEqual(delta(d % (by_addr[addr], rank)), 3)
        total = sum(v - before.get(k, 0) for k, v in after.items()
                    if k.startswith("geoacme_geo_decisions_total"))
        self.assertEqual(total, 3 * len(addrs))
        # scraping resets nothing
        again = samples(self.metrics())
        self.assertEqual(again[q % ("example.com.", "A", "udp", "ipv4")],
                         after[q % ("example.com.", "A", "udp", "ipv4")])

    def test_promtool_accepts_the_exposition(self):
        body = self.metrics()
        r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for family in ("geoacme_queries_total", "geoacme_responses_total", "geoacme_site_up",
                       "geoacme_site_health_state",
                       "geoacme_zone_serial", "geoacme_zone_signature_expiry_timestamp_seconds",
                       "geoacme_geo_database_build_timestamp_seconds", "geoacme_build_info",
                       "geoacme_signatures_made_total", "process_resident_memory_bytes"):
            self.assertIn("# TYPE %s " % family, body)
        m = samples(body)
        self.assertEqual(m['geoacme_zone_serial{zone="example.com."}'], 2026113001)
        expiry = m['geoacme_zone_signature_expiry_timestamp_seconds{zone="example.com."}']
        # 14 days of validity by default; the earliest signature was made at start
        self.assertGreater(expiry, time.time() + 13 * 86400)
        self.assertLess(expiry, time.time() + 15 * 86400)
        self.assertGreater(m["geoacme_signatures_made_total"], 0)

    def test_build_info_is_what_geoacme_version_prints(self):
        out = subprocess.run([BIN, "version"], capture_output=True, text=True, timeout=10)
        m = re.fullmatch(r"geoacme (\S+) \(commit (\S+)\)( test-hooks)?\n", out.stdout)
        self.assertIsNotNone(m, out.stdout)
        self.assertNotEqual(m.group(2), "unknown")   # the suite runs in a git checkout
        info = {k: v for k, v in samples(self.metrics()).items()
                if k.startswith("geoacme_build_info")}
        self.assertEqual(info, {'geoacme_build_info{version="%s",commit="%s"}' % m.groups()[:2]: 1})

    def test_unchecked_sites_are_not_reported_as_checked_and_up(self):
        self.ensure_up()
        m = samples(self.metrics())
        up = {k: v for k, v in m.items() if k.startswith("geoacme_site_up{")}
        self.assertEqual(up, {'geoacme_site_up{site="hp"}': 1, 'geoacme_site_up{site="hn"}': 1})
        states = {k: v for k, v in m.items() if k.startswith("geoacme_site_health_state{")}
        want = {}
        for site, state in (("hp", "up"), ("hn", "up"), ("ha", "unchecked"),
                            ("off", "unchecked")):
            for k in ("up", "down", "unchecked"):
                key = 'geoacme_site_health_state{site="%s",family="ipv4",state="%s"}' % (site, k)
                want[key] = 1 if k == state else 0
        self.assertEqual(states, want)

    def test_every_family_says_what_it_counts(self):
        body = self.metrics()
        helps = dict(re.findall(r"^# HELP (\S+) (.*)$", body, re.M))
        types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M))
        self.assertEqual(set(helps), set(types))
        for name in {k.split("{")[0] for k in samples(body)}:
            self.assertIn(name, helps)
        for name, text in helps.items():
            self.assertGreater(len(text.split()), 3, name)
            self.assertTrue(text.endswith((".", ")")), name)

    def test_status_json(self):
        status, headers, body = get(self.port, "/status.json")
        self.assertEqual(headers["Content-Type"], "application/json")
        data = json.loads(body)
        self.assertEqual([s["name"] for s in data["sites"]], ["hp", "hn", "ha", "off"])
        self.assertEqual(data["zones"][0]["zone"], "example.com.")
        self.assertEqual(data["zones"][0]["serial"], 2026113001)
        self.assertEqual(data["geo_names"], ["www.example.com.", "eu.example.com."])
        hp = data["sites"][0]
        self.assertTrue(hp["checked"])
        self.assertFalse(data["sites"][2]["checked"])


class Health(ObsTestCase):
    def test_site_up_follows_a_real_site(self):
        self.ensure_up()
        self.hp.close()
        self.wait_metric('geoacme_site_up{site="hp"}', 0)
        state = 'geoacme_site_health_state{site="hp",family="ipv4",state="%s"}'
        m = samples(self.metrics())
        self.assertEqual([m[state % k] for k in ("up", "down", "unchecked")], [0, 1, 0])
        self.hp.open()
        self.wait_metric('geoacme_site_up{site="hp"}', 1)
        m = samples(self.metrics())
        self.assertGreater(m['geoacme_site_probes_total{site="hp"}'], 0)
        self.assertGreater(m['geoacme_health_probes_total{result="failed"}'], 0)

    def test_fail_open_is_logged_once_per_episode(self):
        self.ensure_up()
        mark = len(self.server.log())
        episodes = samples(self.metrics())["geoacme_geo_fail_open_episodes_total"]
        self.hp.close()
        self.hn.close()
        self.wait_metric('geoacme_site_up{site="hp"}', 0)
        self.wait_metric('geoacme_site_up{site="hn"}', 0)
        for _ in range(20):
            self.server.query("eu.example.com", "A", ecs=AMSTERDAM)
        self.ensure_up()
        log = self.server.log()[mark:]
        started = re.findall(r"error: geo: eu\.example\.com\.: no site is alive", log)
        ended = re.findall(r"warn: geo: eu\.example\.com\.: a site is alive again", log)
        self.assertEqual((len(started), len(ended)), (1, 1), log)
        self.assertNotIn("www.example.com.: no site is alive", log)   # ha stayed up
        m = samples(self.metrics())
        self.assertEqual(m["geoacme_geo_fail_open_episodes_total"], episodes + 1)
        self.assertGreaterEqual(m["geoacme_geo_fail_open_answers_total"], 20)


class Page(ObsTestCase):
    def chromium(self, path, *extra):
        """Runs headless Chromium on the page; returns (dom, [urls it requested])."""
        work = tempfile.mkdtemp(prefix="geoacme-chromium-")
        try:
            netlog = os.path.join(work, "net.json")
            r = subprocess.run(["chromium"] + CHROMIUM_FLAGS +
                               ["--user-data-dir=" + os.path.join(work, "profile"),
                                "--log-net-log=" + netlog] + list(extra) +
                               ["http://127.0.0.1:%d%s" % (self.port, path)],
                               capture_output=True, text=True, timeout=90)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            return r.stdout, page_requests(netlog)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def cells(self, dom):
        return re.findall(r'<rect class="cell"[^>]*data-first="([^"]*)"', dom)

    def test_page_renders_markers_and_follows_health(self):
        self.ensure_up()
        status, headers, _ = get(self.port, "/")
        self.assertIn("default-src 'none'", headers["Content-Security-Policy"])
        dom, urls = self.chromium("/", "--dump-dom")
        self.assertIn("<svg", dom)
        markers = re.findall(r'<circle class="site (up|down)" data-site="([^"]+)"', dom)
        self.assertEqual(sorted(n for _, n in markers), ["ha", "hn", "hp", "off"])
        self.assertIn("hp", self.cells(dom))
        # issue #25.8: reloads itself without script, has a legend, tells an
        # unchecked and a disabled site from one that is up.
        self.assertIn('<meta http-equiv="refresh" content="30">', dom)
        self.assertIn('id="legend"', dom)
        self.assertIn("a white marker is a site that is down", dom)
        states = dict(re.findall(r'data-site="([^"]+)"><td>.*?</td><td class="(\w+)"', dom))
        self.assertEqual(states, {"hp": "up", "hn": "up", "ha": "unchecked", "off": "off"})
        if not any("ipv6" in site for site in SITES_TOML.split("[[sites]]")):
            self.assertNotIn("family=6", dom)   # no IPv6 site: no AAAA map linked
        self.assertIn("http://127.0.0.1:%d/" % self.port, urls)
        for url in urls:
            self.assertTrue(url.startswith("http://127.0.0.1:%d/" % self.port), url)

        self.hp.close()
        self.wait_metric('geoacme_site_up{site="hp"}', 0)
        dom2, urls2 = self.chromium("/", "--dump-dom")
        markers2 = dict((n, state) for state, n in
                        re.findall(r'<circle class="site (up|down)" data-site="([^"]+)"', dom2))
        self.assertEqual(markers2["hp"], "down")
        self.assertNotIn("hp", self.cells(dom2))          # its region went to others
        self.assertIn("hn", self.cells(dom2))
        for url in urls2:
            self.assertTrue(url.startswith("http://127.0.0.1:%d/" % self.port), url)
        shot = os.path.join(self.server.dir, "page.png")
        self.chromium("/", "--screenshot=" + shot, "--window-size=1200,900")
        with open(shot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.hp.open()


class BadRequests(ObsTestCase):
    def raw(self, data, read=True):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        try:
            s.sendall(data)
            if not read:
                return s
            out = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return out.decode("latin-1")
                out += chunk
        finally:
            if read:
                s.close()

    def assertDnsAnswers(self):
        r = self.server.query("example.com", "SOA")
        self.assertEqual(r.rcode(), 0)

    def test_errors_and_dns_keeps_answering(self):
        cases = [
            (b"BLAH\r\n\r\n", "400"),
            (b"GET nothing HTTP/1.1\r\n\r\n", "400"),
            (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "405"),
            (b"DELETE / HTTP/1.1\r\n\r\n", "405"),
            (b"GET /nope HTTP/1.1\r\n\r\n", "404"),
            (b"GET / HTTP/1.1\r\nX: " + b"a" * 5000 + b"\r\n\r\n", "431"),
            (b"GET / HTTP/1.1\r\nX: \x00\r\n\r\n", "400"),
        ]
        for data, code in cases:
            reply = self.raw(data)
            self.assertTrue(reply.startswith("HTTP/1.1 %s " % code), (data[:40], reply[:80]))
            self.assertDnsAnswers()

    def test_connection_cap_and_idle_clients(self):
        # more idle connections than the cap: the extra ones are closed at once,
        # DNS answers meanwhile, and once they go a real request is served
        idle = [self.raw(b"GET / HTTP/1.1\r\n", read=False) for _ in range(12)]
        self.assertDnsAnswers()
        closed = 0
        for s in idle:
            s.settimeout(0.5)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except ConnectionResetError:
                closed += 1   # closed at once with our request unread: RST
            except socket.timeout:
                pass
        self.assertGreaterEqual(closed, 12 - 8)
        for s in idle:
            s.close()
        deadline = time.time() + 5
        while True:
            try:
                status, _, _ = get(self.port, "/metrics")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.assertEqual(status, 200)

    def test_one_client_cannot_hold_every_slot(self):
        # 127.0.0.1 opens more connections than there are slots and keeps them
        # idle: it holds at most HTTP_CONN_PER_CLIENT (2) of the 8, each new
        # one closing its own oldest, and 127.0.0.2 still gets /metrics.
        held = [self.raw(b"GET / HTTP/1.1\r\n", read=False) for _ in range(10)]
        self.assertDnsAnswers()
        open_ = []
        for i, s in enumerate(held):
            s.settimeout(0.5)
            try:
                if s.recv(1) != b"":
                    self.fail("an idle client got bytes")
            except ConnectionResetError:
                pass
            except socket.timeout:
                open_.append(i)
            else:
                pass
        self.assertEqual(open_, [8, 9])   # the two newest, the others closed
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.settimeout(5)
        c.bind(("127.0.0.2", 0))
        c.connect(("127.0.0.1", self.port))
        c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        out = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            out += chunk
        c.close()
        self.assertTrue(out.startswith(b"HTTP/1.1 200 OK\r\n"), out[:80])
        self.assertIn(b"geoacme_queries_total", out)
        for s in held:
            s.close()

    def test_partial_request_times_out(self):
        # Timed from before the connection exists, so the server's idle
        # timer (armed at accept) cannot have started earlier: a loaded
        # machine can only make the measured time longer, never shorter.
        start = time.monotonic()
        s = self.raw(b"GET / HTT", read=False)
        s.settimeout(30)
        self.assertEqual(s.recv(1), b"")   # closed by the idle deadline, not by us
        self.assertGreater(time.monotonic() - start, 1)
        s.close()
        self.assertDnsAnswers()


class QueryLog(unittest.TestCase):
    """query_log_sample = N logs one query in N, at most query_log_rate lines a second."""

    def run_server(self, every, rate):
        cfg = (BASE_CONFIG + "[server]\nquery_log_sample = %d\nquery_log_rate = %d\n" % (every, rate)
               + geo_config(["city.mmdb"]))
        server = Server(cfg, {"example.com.zone": ZONE})
        make_mmdb(server.dir, "city")
        server.start()
        self.addCleanup(server.cleanup)
        self.addCleanup(server.stop)
        return server

    def wait_lines(self, server, pattern, count, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            lines = re.findall(pattern, server.log_since_start())
            if len(lines) >= count:
                time.sleep(1.2)   # one more flush: nothing beyond `count` may follow
                return re.findall(pattern, server.log_since_start())
            time.sleep(0.1)
        self.fail("wanted %d lines matching %r:\n%s" % (count, pattern, server.log_since_start()))

    def test_one_in_n_with_the_geo_decision(self):
        server = self.run_server(3, 100)
        ttl, addrs = decide(52.37, 4.90, "A")
        names = {s["ipv4"]: s["name"] for s in SITES}
        for _ in range(9):
            server.query("www.example.com", "A", ecs=AMSTERDAM)
        lines = self.wait_lines(server, r"info: query: (.*)", 3)
        self.assertEqual(len(lines), 3, lines)
        geo = ",".join(names[a] for a in addrs)
        for line in lines:
            self.assertEqual(line, "subnet=192.0.2.0/26 from=ecs resolver=127.0.0.1 "
                             "www.example.com. type=A rcode=NOERROR udp sites=%s" % geo)

    def test_each_line_names_subnet_resolver_type_rcode_transport_and_sites(self):
        """The reader's subnet as the answer used it (ECS, else the source's /24 or
        /56), the resolver, the type's mnemonic, the rcode's name, the transport and
        the sites the answer came from (read back from the answer itself)."""
        server = self.run_server(1, 100)
        by_addr = {}
        for s in SITES:
            by_addr[s["ipv4"]] = s["name"]
            if s.get("ipv6"):
                by_addr[s["ipv6"]] = s["name"]

        def sites(r):
            return ",".join(by_addr[rd.address] for rd in r.answer[0])

        want = []
        r = server.query("www.example.com", "AAAA", ecs=("2001:db8:1::", 48), tcp=True,
                         source="127.0.0.7")
        want.append("subnet=2001:db8:1::/48 from=ecs resolver=127.0.0.7 www.example.com. "
                    "type=AAAA rcode=NOERROR tcp sites=" + sites(r))
        r = server.query("www.example.com", "A", source="127.9.8.7")
        want.append("subnet=127.9.8.0/24 from=source resolver=127.9.8.7 www.example.com. "
                    "type=A rcode=NOERROR udp sites=" + sites(r))
        # ECS /0 asks for no tailoring (RFC 7871 7.1.2): the source is what was used
        server.query("www.example.com", "A", ecs=("0.0.0.0", 0))
        want.append("subnet=127.0.0.0/24 from=source resolver=127.0.0.1 www.example.com. "
                    "type=A rcode=NOERROR udp sites=" + sites(r))
        server.query("nope.example.com", "TXT", ecs=("198.51.100.0", 24))
        want.append("subnet=198.51.100.0/24 from=ecs resolver=127.0.0.1 nope.example.com. "
                    "type=TXT rcode=NXDOMAIN udp sites=-")
        server.query("example.org", "TYPE65280")
        want.append("subnet=127.0.0.0/24 from=source resolver=127.0.0.1 example.org. "
                    "type=TYPE65280 rcode=REFUSED udp sites=-")
        if have_ipv6():
            server.query("example.com", "SOA", addr="::1")
            want.append("subnet=::/56 from=source resolver=::1 example.com. type=SOA "
                        "rcode=NOERROR udp sites=-")
        lines = self.wait_lines(server, r"info: query: (subnet=.*)", len(want))
        self.assertEqual(lines, want)

    def test_rate_limit_says_what_it_skipped(self):
        server = self.run_server(1, 2)
        for _ in range(10):
            server.query("static.example.com", "A")
        self.wait_lines(server, r"info: query: \d+ sampled queries not logged", 1)
        log = server.log_since_start()
        lines = re.findall(r"info: query: (subnet=.*)", log)
        skipped = [int(n) for n in re.findall(r"info: query: (\d+) sampled queries not", log)]
        # ten queries take a few ms: one flush window, or two if a flush fell between
        self.assertIn((len(lines), len(skipped)), [(2, 1), (4, 2)], log)
        self.assertEqual(len(lines) + sum(skipped), 10)
        self.assertEqual(set(lines), {"subnet=127.0.0.0/24 from=source resolver=127.0.0.1 "
                                      "static.example.com. type=A rcode=NOERROR udp sites=-"})


class Reload(unittest.TestCase):
    def test_reload_summary_names_what_changed(self):
        server = Server(BASE_CONFIG + geo_config(["city.mmdb"]), {"example.com.zone": ZONE})
        make_mmdb(server.dir, "city")
        server.start()
        self.addCleanup(server.cleanup)
        self.addCleanup(server.stop)
        sydney = SITES_TOML[SITES_TOML.index('[[sites]]\nname = "sydney"'):]
        server.write("config.toml", BASE_CONFIG + geo_config(["city.mmdb"]).replace(sydney, ""))
        server.write("example.com.zone", ZONE.replace("2026113001", "2026113002"))
        mark = len(server.log())
        server.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while "reload: 6 sites" not in server.log()[mark:] and time.time() < deadline:
            time.sleep(0.05)
        log = server.log()[mark:]
        self.assertIn("info: reload: site sydney removed\n", log)
        self.assertIn("info: reload: zone example.com. serial 2026113001 -> 2026113002\n", log)
        self.assertRegex(log, r"info: reload: database \S+city.mmdb \(GeoAcme-Test-City\) "
                              r"built \d{4}-\d\d-\d\d \d\d:\d\d UTC\n")
        self.assertIn("info: reload: 6 sites (0 added, 1 removed), 1 zone\n", log)


class Updates(unittest.TestCase):
    """geoacme_updates_total counts every UPDATE by its outcome, exactly."""

    def test_updates_by_result(self):
        key = TsigKey("update.acme.example.", "hmac-sha256", b"update secret bytes")
        stranger = TsigKey("stranger.acme.example.", "hmac-sha256", b"not a key we know")
        forged = TsigKey("update.acme.example.", "hmac-sha256", b"a wrong secret here")
        server = Server(BASE_CONFIG + HTTP + acme_zone_toml("acme.example", [key]),
                        acme_files(seed_zone("acme.example."), [key]))
        server.start()
        self.addCleanup(server.cleanup)
        self.addCleanup(server.stop)
        port = server.http_port()
        rcodes = []
        txt = ("_acme-challenge.acme.example.", 60, "TXT", '"token"')
        rcodes.append(signed_update(server, "acme.example.", key, add=[txt]).rcode())
        rcodes.append(signed_update(server, "acme.example.", key, delete=[(txt[0], "TXT")]).rcode())
        # dnspython raises on the server's BADKEY and BADSIG answers
        with self.assertRaises(dns.tsig.PeerBadKey):
            signed_update(server, "acme.example.", stranger, add=[txt])
        with self.assertRaises(dns.tsig.PeerBadSignature):
            signed_update(server, "acme.example.", forged, add=[txt])
        # the key may add TXT only: an A record is refused by policy
        rcodes.append(signed_update(server, "acme.example.", key,
                                    add=[("a.acme.example.", 60, "A", "192.0.2.1")]).rcode())
        # a prerequisite that does not hold
        u = dns.update.UpdateMessage("acme.example.", keyring=key.key())
        u.present("nothing.acme.example.")
        u.add(*txt)
        rcodes.append(dns.query.udp(u, "127.0.0.1", port=server.port, timeout=5).rcode())
        self.assertEqual([dns.rcode.to_text(r) for r in rcodes],
                         ["NOERROR", "NOERROR", "REFUSED", "NXDOMAIN"])
        _, _, body = get(port, "/metrics")
        m = samples(body)
        got = {k[len('geoacme_updates_total{result="'):-2]: v for k, v in m.items()
               if k.startswith("geoacme_updates_total")}
        self.assertEqual(got, {"accepted": 2, "badkey": 1, "badsig": 1, "badtime": 0,
                               "policy": 1, "prereq": 1, "formerr": 0, "other": 0})
        # an UPDATE acknowledged after its commit was answered, not dropped
        self.assertEqual(m["geoacme_dropped_total"], 0)
        log = server.log()
        self.assertIn("+_acme-challenge.acme.example. TXT; serial", log)
        self.assertIn("-_acme-challenge.acme.example. TXT; serial", log)


class Explain(unittest.TestCase):
    """`geoacme explain --client SUBNET` answers as the server does for that ECS;
    `--map` prints the rule's decision at world cities and on a grid."""

    @classmethod
    def setUpClass(cls):
        cls.server = start_geo_server()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    def explain(self, *args, rc=0):
        out = subprocess.run([BIN, "explain", "-c", self.server.config_path, *args],
                             capture_output=True, text=True, timeout=20)
        self.assertEqual(out.returncode, rc, out.stderr)
        return out.stdout

    def test_client_subnet_matches_server(self):
        for name, rdtype, net in [("www.example.com", "A", "192.0.2.0/24"),
                                  ("www.example.com", "A", "192.0.2.128/25"),
                                  ("www.example.com", "A", "203.0.113.32/28"),
                                  ("api.example.com", "A", "192.0.2.64/26"),
                                  ("www.example.com", "AAAA", "2001:db8:2::/48"),
                                  ("www.example.com", "A", "10.0.0.0/8")]:
            with self.subTest(net=net, name=name):
                addr, plen = net.split("/")
                text = self.explain(name, rdtype, "--client", net)
                r = self.server.query(name, rdtype, ecs=(addr, int(plen)))
                self.assertEqual(text.split("\nanswer:\n", 1)[1].strip().splitlines(),
                                 rrs(r, "answer"))
                self.assertIn("client:   ECS %s (source prefix /%s" % (net, plen), text)
                self.assertRegex(text, r"ECS scope: /%d " % ecs_option(r).scopelen)
        self.explain("www.example.com", "A", "--client", "192.0.2.0/0", rc=2)
        self.explain("www.example.com", "A", "--client", "192.0.2.0/33", rc=2)
        # Issue #27.6: digits only (strtol took a sign and blanks).
        for bad in ("192.0.2.0/-8", "192.0.2.0/+24", "192.0.2.0/ 24", "192.0.2.0/024",
                    "2001:db8::/129"):
            with self.subTest(bad=bad):
                out = subprocess.run([BIN, "explain", "-c", self.server.config_path,
                                      "www.example.com", "A", "--client", bad],
                                     capture_output=True, text=True, timeout=20)
                self.assertEqual(out.returncode, 2, out.stdout)
                self.assertIn("geoacme explain: '%s' is not an IP address or subnet" % bad,
                              out.stderr)

    def test_map_cities_follow_the_rule(self):
        text = self.explain("www.example.com", "A", "--map")
        rows = [l for l in text.splitlines()[1:] if l.strip()]
        self.assertGreaterEqual(len(rows), 25)
        for line in rows:
            m = re.match(r"(.+?)\s+(-?[\d.]+),\s*(-?[\d.]+)\s+(\S+)\s+(\S+)\s+(.*)$", line)
            self.assertIsNotNone(m, line)
            lat, lon = float(m.group(2)), float(m.group(3))
            ttl, addrs = decide(lat, lon, "A")
            by_addr = {s["ipv4"]: s["name"] for s in SITES}
            self.assertEqual(m.group(4), by_addr[addrs[0]], line)
            self.assertEqual(m.group(6), "%s, TTL %d" % ("nearest alone" if len(addrs) == 1
                                                         else "both", ttl), line)

    def test_map_grid(self):
        text = self.explain("www.example.com", "A", "--map=grid")
        grid = text.splitlines()[1:19]
        self.assertEqual([len(row) for row in grid], [36] * 18)
        ttl, addrs = decide(45, 5, "A")        # the cell of row 4, column 18
        index = [s["ipv4"] for s in SITES].index(addrs[0])
        mark = grid[4][18]
        self.assertEqual(mark.lower(), chr(ord("a") + index))
        self.assertEqual(mark.isupper(), len(addrs) == 1)


if __name__ == "__main__":
    main()
