# SPDX-License-Identifier: MIT
"""The control channel (`geoacme ctl`, doc/operations.md "The control channel")
against the real binary: every command, its failures, the socket's life
(stale after kill -9, live, off), and site drains seen in exact geo
answers and kept across a restart.

Geo answers are for a client in Amsterdam (ECS 192.0.2.0/26 in the fixture
database); the expected answers come from test_geo.decide, the rule written
again in Python, so a drain is checked against what the rule gives with the
site taken out.
"""
import json
import os
import pwd
import re
import socket
import stat
import subprocess
import unittest
import urllib.request

from harness import (BASE_CONFIG, BIN, Server, example_zone, free_port, geo_toml, main,
                     make_mmdb, zone_toml)
from test_geo import decide, parse_sites

AMSTERDAM = ("192.0.2.0", 26)
AMSTERDAM_AT = (52.37, 4.90)


def sites_toml(dead_port):
    """paris, nuremberg and ashburn are not checked; "dead" sits on the
    client, is checked on a port nobody listens on, and so is down."""
    return """
[[sites]]
name = "paris"
ipv4 = "45.90.160.60"
latitude = 48.88
longitude = 2.22
[[sites]]
name = "nuremberg"
ipv4 = "116.203.18.48"
latitude = 49.45
longitude = 11.08
[[sites]]
name = "ashburn"
ipv4 = "5.161.44.145"
latitude = 39.04
longitude = -77.49
[[sites]]
name = "dead"
ipv4 = "127.0.0.12"
latitude = 52.37
longitude = 4.90
[sites.health]
port = %d
interval = "200ms"
timeout = "200ms"
rise = 1
fall = 1
""" % dead_port


def ctl(server_or_config, *args, user=None, socket_path=None):
    """Runs `geoacme ctl`; user runs it as another user (setpriv, as root)."""
    config = getattr(server_or_config, "config_path", server_or_config)
    cmd = [BIN, "ctl"]
    cmd += ["-s", socket_path] if socket_path else ["-c", config]
    cmd += list(args)
    if user:
        pw = pwd.getpwnam(user)
        cmd = ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
               "--clear-groups"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def set_server_key(server, line):
    """Adds `line` to the [server] table."""
    with open(server.config_path) as f:
        text = f.read()
    with open(server.config_path, "w") as f:
        f.write(text.replace("\n[server]\n", "\n[server]\n%s\n" % line, 1))


def new_server(server_keys="", extra_zones=""):
    dead_port = free_port()
    config = (BASE_CONFIG + "\n[server]\n" + server_keys + sites_toml(dead_port)
              + geo_toml((48.86, 2.35)) + zone_toml(body='[[zones.geo]]\nname = "www"\n')
              + extra_zones)
    server = Server(config, {"example.com.zone": example_zone()})
    make_mmdb(server.dir)
    server.sites = parse_sites(sites_toml(dead_port))
    return server


class CtlTestCase(unittest.TestCase):
    def ok(self, out):
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stderr, "")
        return out.stdout

    def fails(self, out, message):
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertEqual(out.stdout, "")
        self.assertEqual(out.stderr, "geoacme ctl: %s\n" % message)

    def www(self, server):
        r = server.query("www.example.com", "A", ecs=AMSTERDAM)
        rrset = r.answer[0]
        return rrset.ttl, [rd.address for rd in rrset]

    def expect(self, server, alive):
        return decide(*AMSTERDAM_AT, "A", sites=server.sites, alive=alive)


class Commands(CtlTestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = new_server('http_listen = ["127.0.0.1:0"]\n').start()
        cls.server.wait_log(r"site dead: state down")

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def http(self, path):
        url = "http://127.0.0.1:%d%s" % (self.server.http_port(), path)
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode()

    def admin_metrics(self):
        return [l for l in self.http("/metrics").splitlines()
                if l.startswith("geoacme_site_admin_state{")]

    def tearDown(self):
        for site in ("paris", "nuremberg", "ashburn", "dead"):
            self.ok(ctl(self.server, "site-auto", site))

    def test_default_socket_is_next_to_the_config_owner_only(self):
        # no sqlite zone: the default is control.sock in `directory` (the config's folder)
        path = self.server.path("control.sock")
        st = os.stat(path)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertEqual(st.st_uid, os.geteuid())
        self.assertIn("control: listening on %s" % path, self.server.log())

    def test_status(self):
        out = self.ok(ctl(self.server, "status")).splitlines()
        version = subprocess.run([BIN, "version"], capture_output=True, text=True).stdout
        m = re.match(r"geoacme (\S+) \(commit (\S+)\)", version)
        self.assertEqual(out[0], "version %s commit %s" % m.groups())
        self.assertRegex(out[1], r"^uptime \d+$")
        self.assertEqual(out[2:], [
            "zone example.com. serial 2026113001 role primary",
            "site paris health unchecked admin auto",
            "site nuremberg health unchecked admin auto",
            "site ashburn health unchecked admin auto",
            "site dead health down admin auto",
        ])

    def test_zone_status_of_a_primary(self):
        for name in ("example.com", "example.com.", "EXAMPLE.com"):
            out = self.ok(ctl(self.server, "zone-status", name))
            self.assertEqual(out, "zone example.com.\nrole primary\nserial 2026113001\n"
                             "signature_expiry 0\nnotify_targets 0\n")

    def test_unknown_zone_site_and_command(self):
        self.fails(ctl(self.server, "zone-status", "nope.example"), "unknown zone 'nope.example'")
        self.fails(ctl(self.server, "site-drain", "atlantis"), "unknown site 'atlantis'")
        self.fails(ctl(self.server, "frobnicate"), "unknown command 'frobnicate' (try: help)")
        self.fails(ctl(self.server, "zone-status"), "usage: zone-status ZONE")
        self.fails(ctl(self.server, "status", "extra"), "usage: status")

    def test_help_lists_the_table(self):
        out = self.ok(ctl(self.server, "help"))
        for usage in ("status", "zone-status ZONE", "site-drain SITE", "site-undrain SITE",
                      "site-auto SITE", "reload", "help"):
            self.assertRegex(out, r"(?m)^  %s +\S" % re.escape(usage))
        local = subprocess.run([BIN, "ctl", "--help"], capture_output=True, text=True)
        self.assertEqual(local.returncode, 0)
        self.assertIn(out.split("commands:\n")[1].splitlines()[0], local.stdout)

    def test_drain_undrain_auto_in_exact_answers(self):
        everyone = ["paris", "nuremberg", "ashburn", "dead"]
        healthy = ["paris", "nuremberg", "ashburn"]
        self.assertEqual(self.www(self.server), self.expect(self.server, healthy))
        self.assertEqual(self.www(self.server), (3600, ["45.90.160.60", "116.203.18.48"]))

        out = self.ok(ctl(self.server, "site-drain", "paris"))
        self.assertEqual(out, "site paris: drained (was auto): out of every geo answer\n")
        self.assertEqual(self.www(self.server), self.expect(self.server, ["nuremberg", "ashburn"]))
        self.assertEqual(self.www(self.server), (120, ["116.203.18.48"]))
        self.assertIn("site paris health unchecked admin drained",
                      self.ok(ctl(self.server, "status")))
        self.server.wait_log(r"warn: site paris: admin state drained \(was auto\)")
        metrics = self.admin_metrics()
        self.assertEqual(metrics[:3], [
            'geoacme_site_admin_state{site="paris",state="auto"} 0',
            'geoacme_site_admin_state{site="paris",state="drained"} 1',
            'geoacme_site_admin_state{site="paris",state="undrained"} 0'])
        self.assertEqual(len(metrics), 12)
        self.assertIn('geoacme_site_admin_state{site="nuremberg",state="auto"} 1', metrics)
        sites = json.loads(self.http("/status.json"))["sites"]
        self.assertEqual([(x["name"], x["admin"]) for x in sites],
                         [("paris", "drained"), ("nuremberg", "auto"), ("ashburn", "auto"),
                          ("dead", "auto")])
        self.assertRegex(self.http("/"), r'data-site="paris">.*?</td><td class="unchecked">'
                         r'unchecked</td><td class="admin-drained">drained: out of every '
                         r'answer</td>')

        # undrained: the dead site is answered although its checks fail
        self.ok(ctl(self.server, "site-undrain", "dead"))
        self.assertEqual(self.www(self.server), self.expect(self.server, ["nuremberg", "ashburn",
                                                                          "dead"]))
        self.assertEqual(self.www(self.server)[1][0], "127.0.0.12")
        self.assertIn("site dead health down admin undrained", self.ok(ctl(self.server, "status")))
        self.assertIn('geoacme_site_admin_state{site="dead",state="undrained"} 1',
                      self.admin_metrics())

        self.ok(ctl(self.server, "site-auto", "paris"))
        self.ok(ctl(self.server, "site-auto", "dead"))
        self.assertEqual(self.www(self.server), self.expect(self.server, healthy))
        self.assertNotEqual(self.expect(self.server, healthy), self.expect(self.server, everyone))

    def test_state_file(self):
        self.ok(ctl(self.server, "site-drain", "nuremberg"))
        self.ok(ctl(self.server, "site-undrain", "dead"))
        path = self.server.path("control.sock.sites")
        with open(path) as f:
            lines = [l for l in f.read().splitlines() if not l.startswith("#")]
        self.assertEqual(lines, ["drained nuremberg", "undrained dead"])
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        self.ok(ctl(self.server, "site-auto", "nuremberg"))
        self.ok(ctl(self.server, "site-auto", "dead"))
        with open(path) as f:
            self.assertEqual([l for l in f.read().splitlines() if not l.startswith("#")], [])

    def test_reload(self):
        out = self.ok(ctl(self.server, "reload"))
        self.assertEqual(out, "reloaded: serving 1 zone\n")
        self.server.wait_log(r"reloaded: 1 zone")
        # a drain holds across a reload
        self.ok(ctl(self.server, "site-drain", "paris"))
        self.ok(ctl(self.server, "reload"))
        self.assertEqual(self.www(self.server), (120, ["116.203.18.48"]))

    def test_bad_requests_on_the_socket(self):
        path = self.server.path("control.sock")

        def raw(data, shut=True):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(path)
            s.sendall(data)
            if shut:
                s.shutdown(socket.SHUT_WR)
            out = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                out += chunk
            s.close()
            return out

        self.assertEqual(raw(b"\n"), b"error\nempty command (try: help)\n")
        self.assertEqual(raw(b"status\0\n"), b"error\nNUL byte in the request\n")
        self.assertEqual(raw(b"x" * 2000), b"error\nrequest too long (at most 1024 bytes)\n")
        self.assertEqual(raw(b" ".join([b"w"] * 17) + b"\n"),
                         b"error\ntoo many words (at most 16)\n")
        self.assertTrue(raw(b"status\n").startswith(b"ok\nversion "))
        # the server still answers DNS
        self.assertEqual(self.www(self.server)[0], 3600)


class SocketLife(CtlTestCase):
    def setUp(self):
        self.server = new_server()

    def tearDown(self):
        self.server.cleanup()

    def test_no_server_running(self):
        path = self.server.path("control.sock")
        self.fails(ctl(self.server, "status"), "no server is listening on %s" % path)
        self.fails(ctl(self.server, "site-drain", "paris"), "no server is listening on %s" % path)

    def test_stale_socket_after_kill9_is_replaced_and_drain_survives(self):
        self.server.start()
        self.server.wait_log(r"site dead: state down")
        self.ok(ctl(self.server, "site-drain", "paris"))
        self.assertEqual(self.www(self.server), (120, ["116.203.18.48"]))
        self.server.kill9()
        path = self.server.path("control.sock")
        self.assertTrue(stat.S_ISSOCK(os.stat(path).st_mode))   # left behind
        self.fails(ctl(self.server, "status"), "no server is listening on %s" % path)
        self.server.start()
        self.assertIn("control: removed a stale socket at %s" % path,
                      self.server.log_since_start())
        self.assertIn("warn: site paris: admin state drained", self.server.log_since_start())
        self.assertIn("site paris health unchecked admin drained",
                      self.ok(ctl(self.server, "status")))
        self.assertEqual(self.www(self.server), (120, ["116.203.18.48"]))
        # a clean stop removes the socket, the state stays
        self.assertEqual(self.server.stop(), 0)
        self.assertFalse(os.path.exists(path))
        self.assertTrue(os.path.exists(path + ".sites"))

    def test_live_socket_is_a_startup_error(self):
        self.server.start()
        path = self.server.path("control.sock")
        second = new_server()
        try:
            # the same socket path, from another folder
            set_server_key(second, 'control_socket = "%s"' % path)
            with self.assertRaises(AssertionError) as cm:
                second.start()
            self.assertEqual(second.exit_code, 1)
            self.assertIn("control_socket %s: another server is listening on it" % path,
                          str(cm.exception))
        finally:
            second.cleanup()
        # the first server is untouched
        self.assertTrue(self.ok(ctl(self.server, "status")).startswith("version "))

    def test_not_a_socket_is_a_startup_error(self):
        path = self.server.write("control.sock", "a file\n")
        with self.assertRaises(AssertionError) as cm:
            self.server.start()
        self.assertIn("control_socket %s: exists and is not a socket" % path, str(cm.exception))
        with open(path) as f:
            self.assertEqual(f.read(), "a file\n")   # not removed

    def test_off(self):
        set_server_key(self.server, 'control_socket = ""')
        self.server.start()
        self.assertFalse(os.path.exists(self.server.path("control.sock")))
        self.assertNotIn("control: listening", self.server.log())
        out = ctl(self.server, "status")
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stderr, "geoacme ctl: the control channel is off in %s "
                         "(control_socket = \"\")\n" % self.server.config_path)

    def test_explicit_path_and_bad_state_file(self):
        set_server_key(self.server, 'control_socket = "run/ctl"')
        os.makedirs(self.server.path("run"))
        self.server.write("run/ctl.sites", "drained paris\nsideways dead\n")
        with self.assertRaises(AssertionError) as cm:
            self.server.start()
        self.assertIn("%s:2:1: expected \"drained SITE\" or \"undrained SITE\""
                      % self.server.path("run/ctl.sites"), str(cm.exception))
        self.server.write("run/ctl.sites", "drained paris\n")
        self.server.start()
        self.assertIn("site paris health unchecked admin drained",
                      self.ok(ctl(self.server, "status")))

    def test_reload_failure_is_reported(self):
        self.server.start()
        # the config loads (the client reads it for the socket); the zone file does not
        self.server.write("example.com.zone", example_zone("www2 IN A 300.1.2.3\n"))
        out = ctl(self.server, "reload")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertRegex(out.stderr, r"^geoacme ctl: reload failed, still serving the previous "
                         r"configuration: 1 problem\n.*example.com.zone:\d+")
        self.assertEqual(self.www(self.server)[0], 3600)   # still serving
        self.server.write("example.com.zone", example_zone())
        self.assertEqual(self.ok(ctl(self.server, "reload")), "reloaded: serving 1 zone\n")


if __name__ == "__main__":
    main()
