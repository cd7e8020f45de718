#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The service manager's side: sd_notify, `geoacme reload`, the installed files.

A Python AF_UNIX datagram socket plays systemd's NOTIFY_SOCKET: READY=1
after the sockets are bound, RELOADING=1 (with MONOTONIC_USEC) then READY=1
on SIGHUP, a failed reload reported in STATUS and by `geoacme reload`'s exit
code, STOPPING=1 on SIGTERM.  `cmake --install` into a staging folder lays
out the expected files; `systemd-analyze verify` accepts the installed unit
and `systemd-analyze security --offline` rates its exposure 2.0 or lower.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from harness import BASE_CONFIG, BIN, REPO, Server  # noqa: E402

ZONE = """$ORIGIN example.com.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300
@ IN NS ns1.example.com.
ns1 IN A 192.0.2.53
"""
CONFIG = BASE_CONFIG + """
[[zones]]
zone = "example.com"
file = "example.com.zone"
"""


class Notify:
    """A datagram socket standing in for systemd's notify socket."""

    def __init__(self, path, abstract=False):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + path if abstract else path)
        self.env = "@" + path if abstract else path

    def next(self, timeout=30):
        """The next message as a dict of its KEY=VALUE lines."""
        self.sock.settimeout(timeout)
        data = self.sock.recv(4096).decode()
        return dict(line.split("=", 1) for line in data.split("\n") if line)

    def none(self, wait=0.3):
        self.sock.settimeout(wait)
        try:
            return self.sock.recv(4096)
        except socket.timeout:
            return None

    def close(self):
        self.sock.close()


def monotonic_usec():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


class NotifyTest(unittest.TestCase):
    def start(self, abstract=False):
        self.tmp = tempfile.mkdtemp(prefix="geoacme-notify-")
        self.notify = Notify(os.path.join(self.tmp, "notify") if not abstract
                             else "geoacme-test-notify-%d" % os.getpid(), abstract)
        env = dict(os.environ, NOTIFY_SOCKET=self.notify.env)
        self.srv = Server(CONFIG, files={"example.com.zone": ZONE}, env=env)
        self.srv.start()
        self.addCleanup(self.cleanup)

    def cleanup(self):
        self.srv.cleanup()
        self.notify.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def reload(self):
        return subprocess.run([BIN, "reload", "--pid", str(self.srv.proc.pid), "--timeout", "60"],
                              capture_output=True, text=True, timeout=90)

    def test_ready_reload_stop(self):
        self.start()
        m = self.notify.next()
        self.assertEqual(m, {"READY": "1",
                             "STATUS": "serving 1 zone on port %d" % self.srv.port})
        # The server answers once READY came.
        self.assertEqual(self.srv.query("example.com", "SOA").rcode(), 0)

        # SIGHUP (kill): RELOADING=1 with the monotonic time, then READY=1.
        before = monotonic_usec()
        self.srv.send_signal(signal.SIGHUP)
        m = self.notify.next()
        self.assertEqual(sorted(m), ["MONOTONIC_USEC", "RELOADING", "STATUS"])
        self.assertEqual((m["RELOADING"], m["STATUS"]), ("1", "reloading"))
        self.assertGreaterEqual(int(m["MONOTONIC_USEC"]), before)
        self.assertLessEqual(int(m["MONOTONIC_USEC"]), monotonic_usec())
        self.assertEqual(self.notify.next(), {"READY": "1", "STATUS": "serving 1 zone"})

        # geoacme reload: the same, and it exits 0 with the outcome.
        r = self.reload()
        self.assertEqual((r.returncode, r.stdout), (0, "geoacme reload: ok serving 1 zone\n"),
                         r.stderr)
        self.assertEqual(self.notify.next()["RELOADING"], "1")
        self.assertEqual(self.notify.next(), {"READY": "1", "STATUS": "serving 1 zone"})

        # A failed reload: reported by the exit code and in STATUS; still serving.
        with open(self.srv.path("example.com.zone"), "a") as f:
            f.write("bad line here\n")
        r = self.reload()
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertTrue(r.stderr.startswith("geoacme reload: failed 1 problem\n"), r.stderr)
        self.assertIn("example.com.zone:6:", r.stderr)
        self.assertEqual(self.notify.next()["RELOADING"], "1")
        self.assertEqual(self.notify.next(),
                         {"READY": "1", "STATUS": "reload failed, serving the previous "
                                                  "configuration: 1 problem"})
        self.assertEqual(self.srv.query("example.com", "SOA").rcode(), 0)

        # SIGTERM: STOPPING=1, and nothing after it.
        self.srv.send_signal(signal.SIGTERM)
        self.assertEqual(self.notify.next(), {"STOPPING": "1", "STATUS": "stopping"})
        # Wait for the exit: stop() would send a second SIGTERM to a server
        # still shutting down (slow under ASan), and with it a second STOPPING.
        self.srv.proc.wait(60)
        self.assertEqual(self.srv.stop(), 0)
        self.assertIsNone(self.notify.none())

    def test_abstract_socket(self):
        # systemd may name an abstract socket: "@name".
        self.start(abstract=True)
        self.assertEqual(self.notify.next()["READY"], "1")

    def test_reload_without_a_server(self):
        # A process that never answers: reload gives up and fails.
        p = subprocess.Popen(["sleep", "30"])
        try:
            r = subprocess.run([BIN, "reload", "--pid", str(p.pid), "--timeout", "1"],
                               capture_output=True, text=True, timeout=30)
        finally:
            p.kill()
            p.wait()
        self.assertEqual(r.returncode, 1)
        self.assertIn("no answer from process %d within 1 s" % p.pid, r.stderr)
        r = subprocess.run([BIN, "reload"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, "usage error without --pid")


class InstallTest(unittest.TestCase):
    # Every doc/*.md (and the images they show) is installed beside README.md and LICENSE.
    EXPECTED = sorted([
        "usr/bin/geoacme",
        "usr/lib/systemd/system/geoacme.service",
        "usr/lib/sysusers.d/geoacme.conf",
        "usr/share/doc/geoacme/LICENSE",
        "usr/share/doc/geoacme/README.md",
        "usr/share/doc/geoacme/examples/config.toml",
        "usr/share/doc/geoacme/examples/config.toml.example",
        "usr/share/man/man8/geoacme.8",
    ] + ["usr/share/doc/geoacme/" + f for f in os.listdir(os.path.join(REPO, "doc"))
         if f.endswith((".md", ".png"))])

    @classmethod
    def setUpClass(cls):
        cls.build = os.environ.get("BUILD_DIR", os.path.join(REPO, "build"))
        cls.tmp = tempfile.mkdtemp(prefix="geoacme-install-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def install(self, *args, env=None):
        r = subprocess.run(["cmake", "--install", self.build] + list(args), capture_output=True,
                           text=True, timeout=120, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_staging_layout(self):
        stage = os.path.join(self.tmp, "stage")
        self.install("--prefix", "/usr", env=dict(os.environ, DESTDIR=stage))
        got = sorted(os.path.relpath(os.path.join(d, f), stage)
                     for d, _, fs in os.walk(stage) for f in fs)
        self.assertEqual(got, self.EXPECTED)
        with open(os.path.join(stage, "usr/lib/systemd/system/geoacme.service")) as f:
            unit = f.read()
        self.assertIn("\nExecStart=/usr/bin/geoacme serve -c /etc/geoacme/config.toml\n", unit)
        self.assertIn("\nExecReload=/usr/bin/geoacme reload --pid $MAINPID\n", unit)
        for line in ["Type=notify", "StateDirectory=geoacme", "User=geoacme",
                     "AmbientCapabilities=CAP_NET_BIND_SERVICE"]:
            self.assertIn("\n%s\n" % line, unit)
        self.assertNotIn("@", re.sub(r"(?m)^#.*$", "", unit).replace("@system-service", "")
                         .replace("@privileged", "").replace("@resources", ""),
                         "every @VAR@ filled in")
        # The binary is the one built, with the version and commit.
        r = subprocess.run([os.path.join(stage, "usr/bin/geoacme"), "version"],
                           capture_output=True, text=True, timeout=30)
        self.assertRegex(r.stdout, r"^geoacme \d+\.\d+\.\d+ \(commit [0-9a-f]{12}(-dirty)?\)( test-hooks)?\n$")
        with open(os.path.join(REPO, "CMakeLists.txt")) as f:
            version = re.search(r"project\(geoacme VERSION (\S+)", f.read()).group(1)
        self.assertTrue(r.stdout.startswith("geoacme %s " % version))
        # debian/changelog must say the same (dpkg takes the version from there).
        with open(os.path.join(REPO, "debian/changelog")) as f:
            self.assertEqual(re.match(r"geoacme \((\S+)\)", f.read()).group(1), version)
        # The man page renders.
        r = subprocess.run(["man", "-l", os.path.join(stage, "usr/share/man/man8/geoacme.8")],
                           capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, MANWIDTH="80"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"geoacme\s+-\s+authoritative\s+DNS\s+server")
        self.assertIn("geoacme %s" % version, r.stdout)

    def test_systemd_analyze(self):
        # Installed for real under a prefix, so ExecStart= names an existing binary
        # and man:geoacme(8) resolves through MANPATH.
        root = os.path.join(self.tmp, "root", "usr")
        self.install("--prefix", root)
        unit = os.path.join(root, "lib/systemd/system/geoacme.service")
        env = dict(os.environ, MANPATH=os.path.join(root, "share/man"))
        r = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True,
                           timeout=60, env=env, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "")
        # Exposure: --threshold counts tenths (20 = 2.0).
        r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--threshold=20",
                            unit], capture_output=True, text=True, timeout=60, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        m = re.search(r"Overall exposure level for geoacme.service: (\d+\.\d)", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertLessEqual(float(m.group(1)), 2.0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
