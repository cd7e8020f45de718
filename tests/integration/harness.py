# SPDX-License-Identifier: MIT
"""Integration test rig: runs the real geoacme binary on loopback.

Each Server gets a temporary directory with its config and zone files,
listens on 127.0.0.1 and ::1 on a port the kernel picks (listen_port = 0;
the port is read back from the "ready" log line), and is stopped by PID.
Queries go through dnspython (Debian's python3-dnspython) or real tools
(kdig, dig, delv, nsupdate) found on PATH.

The waits (start, log lines, a clean stop) are long on purpose: CI's two
cores run two test files at once and the sanitizer build is several times
slower, so a wait for what must come is generous; a test never asserts how
long something took.
"""
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype

BIN = os.environ.get("GEOACME_BIN", os.path.join(os.path.dirname(__file__), "../../build/cmd/geoacme"))
FIXTURES = os.environ.get("FIXTURES", os.path.join(os.path.dirname(__file__), "../fixtures"))
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
BASE_CONFIG = """
listen_addrs_ipv4 = ["127.0.0.1"]
listen_addrs_ipv6 = ["::1"]
listen_port = 0
log_level = "debug"
"""


def example_zone(records=""):
    """The example.com zone file most tests start from: SOA, NS and ns1's
    address, then records."""
    return ("$ORIGIN example.com.\n$TTL 3600\n"
            "@       IN SOA  ns1.example.com. hostmaster.example.com. 2026113001 7200 3600 1209600 300\n"
            "@       IN NS   ns1.example.com.\n"
            "ns1     IN A    192.0.2.53\n" + records)


def geo_toml(default_location=(48.86, 2.35), databases=("city.mmdb",)):
    """The [geo] table with the fixture database (make_mmdb)."""
    return "\n[geo]\ndatabases = %s\ndefault_location = [%s, %s]\n" % (
        json.dumps(list(databases)), default_location[0], default_location[1])


def zone_toml(zone="example.com", file="example.com.zone", body="", signing_key=None):
    """A [[zones]] table served from a zone file; body adds TOML after its
    head (e.g. [[zones.geo]] tables); signing_key is a key_path to sign with."""
    out = '\n[[zones]]\nzone = "%s"\nzone_type = "Primary"\nfile = "%s"\n%s' % (zone, file, body)
    if signing_key:
        out += '[[zones.keys]]\nalgorithm = "ECDSAP256SHA256"\nkey_path = "%s"\n' % signing_key
    return out


class Listener:
    """A TCP listener on a loopback address that accepts and closes, in a
    thread: what a site's health check connects to.  close() makes it
    refuse; open() again listens on the same port."""

    def __init__(self, addr):
        self.addr = addr
        self.port = 0
        self.sock = None
        self.thread = None
        self.stopping = False

    def open(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.addr, self.port))
        s.listen(16)
        s.settimeout(0.05)
        self.port = s.getsockname()[1]
        self.sock = s
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()
        return self

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
                conn.close()
            except socket.timeout:
                continue
            except OSError:
                return

    def close(self):
        if self.sock is None:
            return
        self.stopping = True
        self.thread.join()
        self.sock.close()
        self.sock = None


def checked_site(name, ipv4, latitude, longitude, port, interval, timeout, rise, fall):
    """A [[sites]] table with a TCP health check (port may be a "{p1}"
    placeholder for str.format, filled once a Listener has its port)."""
    return ('[[sites]]\nname = "%s"\nipv4 = "%s"\nlatitude = %s\nlongitude = %s\n[sites.health]\n'
            'port = %s\ninterval = "%s"\ntimeout = "%s"\nrise = %d\nfall = %d\n'
            % (name, ipv4, latitude, longitude, port, interval, timeout, rise, fall))


def have_ipv6():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


class Server:
    """A geoacme process with its own directory."""

    def __init__(self, config, files=None, keep_dir=None, ready_timeout=60, args=(), env=None,
                 config_name="config.toml", wrapper=()):
        self.dir = keep_dir or tempfile.mkdtemp(prefix="geoacme-test-")
        self.files = files or {}
        for name, content in self.files.items():
            path = os.path.join(self.dir, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(path, mode) as f:
                f.write(content)
            if name.endswith(".tsig"):
                os.chmod(path, 0o600)   # geoacme refuses secrets others can read
        self.config_path = os.path.join(self.dir, config_name)
        self.args = list(args)      # extra `serve` arguments, e.g. ["-p", "5300"]
        self.env = env              # the environment, when not inherited
        self.wrapper = list(wrapper)   # a command that execs the server (setpriv, prlimit)
        with open(self.config_path, "w") as f:
            f.write(config)
        self.log_path = os.path.join(self.dir, "server.log")
        self.proc = None
        self.port = None
        self.exit_code = None       # set when the server exits before it is ready
        self.ready_timeout = ready_timeout

    def write(self, name, content, mode=None):
        path = os.path.join(self.dir, name)
        with open(path, "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content)
        if mode is not None:
            os.chmod(path, mode)
        return path

    def path(self, name):
        return os.path.join(self.dir, name)

    def start(self):
        self.log_file = open(self.log_path, "ab")
        self._log_offset = os.path.getsize(self.log_path)
        self.proc = subprocess.Popen(self.wrapper + [BIN, "serve", "-c", self.config_path] + self.args,
                                     stdout=self.log_file, stderr=self.log_file,
                                     stdin=subprocess.DEVNULL, cwd=self.dir, env=self.env)
        deadline = time.time() + self.ready_timeout
        while time.time() < deadline:
            m = re.search(r"ready: .* port (\d+)", self.log_since_start())
            if m:
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                rc = self.exit_code = self.proc.returncode
                self.proc = None
                self.log_file.close()
                raise AssertionError("geoacme exited with %s before it was ready:\n%s"
                                     % (rc, self.log_since_start()))
            time.sleep(0.02)
        self.stop()
        raise AssertionError("geoacme was not ready in time:\n" + self.log())

    def log(self):
        with open(self.log_path, "r", errors="replace") as f:
            return f.read()

    def log_since_start(self):
        with open(self.log_path, "r", errors="replace") as f:
            f.seek(self._log_offset)
            return f.read()

    def log_count(self, pattern):
        """How many times pattern matches the log since the last start."""
        return len(re.findall(pattern, self.log_since_start()))

    def wait_log_count(self, pattern, n, timeout=30):
        """Waits until pattern has matched n times since the last start."""
        self.wait_log(r"(?s)(%s.*){%d}" % (pattern, n), timeout=timeout)

    def wait_log(self, pattern, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if re.search(pattern, self.log_since_start()):
                return True
            time.sleep(0.05)
        raise AssertionError("log never matched %r:\n%s" % (pattern, self.log_since_start()))

    def http_port(self):
        """The port of the HTTP endpoint (http_listen with port 0), from the
        latest start's log line."""
        ports = re.findall(r"http: listening on \S+ \(port (\d+)\)", self.log())
        if not ports:
            raise AssertionError("no http listening line:\n" + self.log())
        return int(ports[-1])

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        self.log_file.close()
        return rc

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def cleanup(self):
        """Stops a still running server (it must exit 0: under ASan a leak
        makes it fail) and removes the directory."""
        rc = self.stop()
        log = self.log() if rc not in (None, 0) else ""
        shutil.rmtree(self.dir, ignore_errors=True)
        if rc not in (None, 0):
            raise AssertionError("geoacme exited with %s on SIGTERM:\n%s" % (rc, log[-4000:]))

    # --- queries ---

    def make_query(self, name, rdtype="A", dnssec=False, ecs=None, payload=1232, edns=True,
                   rd=False, rdclass="IN"):
        q = dns.message.make_query(name, rdtype, rdclass=rdclass, use_edns=0 if edns else False,
                                   want_dnssec=dnssec, payload=payload)
        if not rd:
            q.flags &= ~dns.flags.RD
        if ecs is not None:
            addr, prefix = ecs
            q.use_edns(0, q.ednsflags, payload, options=[dns.edns.ECSOption(addr, prefix, 0)])
        return q

    def query(self, name, rdtype="A", tcp=False, addr="127.0.0.1", source=None, timeout=3, **kw):
        q = name if isinstance(name, dns.message.Message) else self.make_query(name, rdtype, **kw)
        fn = dns.query.tcp if tcp else dns.query.udp
        args = dict(timeout=timeout, port=self.port)
        if source:
            args["source"] = source
        return fn(q, addr, **args)

    def raw_udp(self, data, addr="127.0.0.1", timeout=1.0):
        """Sends raw bytes; returns the raw reply or None when nothing came."""
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(timeout)
        try:
            s.sendto(data, (addr, self.port))
            return s.recv(65535)
        except socket.timeout:
            return None
        finally:
            s.close()

    def tool(self, *args, timeout=20):
        return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)

    def kdig(self, *args, addr="127.0.0.1"):
        return self.tool("kdig", "@" + addr, "-p", str(self.port), *args)


def header(qid=0x1234, flags=0, qd=1, an=0, ns=0, ar=0):
    """A raw DNS header, for hand-made (often malformed) messages."""
    return struct.pack("!HHHHHH", qid, flags, qd, an, ns, ar)


def qname(name):
    """A name in uncompressed wire form."""
    out = b""
    for label in name.split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def rrs(msg, section):
    """Section as sorted list of 'name ttl class type rdata' strings."""
    sec = getattr(msg, section)
    out = []
    for rrset in sec:
        for rd in rrset:
            out.append("%s %d %s %s %s" % (rrset.name.to_text().lower(), rrset.ttl,
                                           dns.rdataclass.to_text(rrset.rdclass),
                                           dns.rdatatype.to_text(rrset.rdtype), rd.to_text()))
    return out


def rr_types(msg, section):
    return [dns.rdatatype.to_text(r.rdtype) for r in getattr(msg, section)]


def ecs_option(msg):
    for opt in msg.options:
        if isinstance(opt, dns.edns.ECSOption):
            return opt
    return None


class ServerTestCase(unittest.TestCase):
    """Starts one server per test class from CONFIG and FILES."""
    CONFIG = ""
    FILES = {}

    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + cls.CONFIG, cls.FILES)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        # A clean shutdown exits 0; under ASan a leak makes it non-zero.
        rc = cls.server.stop()
        log = cls.server.log()
        cls.server.cleanup()
        if rc != 0:
            raise AssertionError("geoacme exited with %s on SIGTERM:\n%s" % (rc, log[-4000:]))

    def assertRcode(self, msg, rcode):
        self.assertEqual(dns.rcode.to_text(msg.rcode()), rcode)

    def assertFlags(self, msg, *flags):
        want = set(flags)
        got = set(dns.flags.to_text(msg.flags).split())
        self.assertEqual(got, want)


class ServerPerTest(unittest.TestCase):
    """A fresh server for each test: make_server() returns it (not started);
    it is started before the test, and after it must stop cleanly (exit 0;
    under ASan a leak makes it non-zero)."""

    def make_server(self):
        raise NotImplementedError

    def setUp(self):
        self.srv = self.make_server()
        self.srv.start()

    def tearDown(self):
        try:
            self.assertEqual(self.srv.stop(), 0, self.srv.log()[-3000:])
        finally:
            self.srv.cleanup()


# Test-only hooks (core/test_hooks.h: GEOACME_TEST_SYNC, GEOACME_TEST_CLOCK_FILE)
# are compiled in only with -DGEOACME_TEST_HOOKS=ON, and then `geoacme version`
# ends in "test-hooks".  A case that needs one is decorated with
# @needs_test_hooks: without them it is skipped, and main() exits 77 (ctest:
# skipped, never passed) once the other cases of the file have passed.
TEST_HOOKS_SKIP = "needs a test build (cmake -DGEOACME_TEST_HOOKS=ON; scripts/test.sh)"
_test_hooks = None


def have_test_hooks():
    global _test_hooks
    if _test_hooks is None:
        try:
            r = subprocess.run([BIN, "version"], capture_output=True, text=True, timeout=30)
            _test_hooks = r.returncode == 0 and r.stdout.rstrip().endswith(" test-hooks")
        except OSError:
            _test_hooks = False
    return _test_hooks


def needs_test_hooks(case):
    """Decorates a test case (class or method) that drives a test-only hook."""
    return unittest.skipUnless(have_test_hooks(), TEST_HOOKS_SKIP)(case)


def main():
    """Runs the file's cases.  Exit 1 when one failed; else 77 when any was
    skipped (no test hooks in this build, not root, ...), which ctest reports
    as skipped (SKIP_RETURN_CODE): a file whose cases did not all run is
    never counted as passed; else 0."""
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped:
        reasons = sorted({why for _, why in result.skipped})
        print("skipped: %d case(s): %s" % (len(result.skipped), "; ".join(reasons)))
        sys.exit(77)
    sys.exit(0)


def free_port():
    """A port free for both UDP and TCP on 127.0.0.1 right now."""
    for _ in range(50):
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.bind(("127.0.0.1", 0))
        port = t.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            u.close()
            t.close()
    raise RuntimeError("no free port")


# The operator's seven sites (documentation addresses where the real ones are
# unknown; Ashburn and San José have no IPv6 here, to exercise that case).
SITES_TOML = """
[[sites]]
name = "paris"
ipv4 = "45.90.160.60"
ipv6 = "2a0c:8881:5:100::1"
latitude = 48.88
longitude = 2.22
[[sites]]
name = "nuremberg"
ipv4 = "116.203.18.48"
ipv6 = "2a01:4f8:1c0c:5eb5::1"
latitude = 49.45
longitude = 11.08
[[sites]]
name = "ashburn"
ipv4 = "5.161.44.145"
latitude = 39.04
longitude = -77.49
[[sites]]
name = "singapore"
ipv4 = "192.0.2.65"
ipv6 = "2001:db8:65::1"
latitude = 1.35
longitude = 103.82
[[sites]]
name = "sanjose"
ipv4 = "149.28.219.155"
latitude = 37.34
longitude = -121.89
[[sites]]
name = "saopaulo"
ipv4 = "192.0.2.66"
ipv6 = "2001:db8:66::1"
latitude = -23.55
longitude = -46.63
[[sites]]
name = "sydney"
ipv4 = "139.180.162.114"
ipv6 = "2001:19f0:5800:1855:5400:6ff:fef0:4c0a"
latitude = -33.87
longitude = 151.21
"""


def make_mmdb(directory, layout="city"):
    """Writes the fixture databases (see tests/fixtures/make_mmdb.pl)."""
    subprocess.run(["perl", os.path.join(FIXTURES, "make_mmdb.pl"), "--layout", layout,
                    "--out", directory], check=True)


def make_key(path):
    """A P-256 key as `openssl genpkey` writes it, mode 0600."""
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-out", path], check=True,
                   stderr=subprocess.DEVNULL)
    os.chmod(path, 0o600)


def enter_private_netns():
    """Runs the calling test program again inside a network namespace of its
    own that has only the loopback interface, and exits with its status.

    Inside it nothing can leave the machine (there is no other interface)
    and port 53 on any 127.0.0.0/8 address is free.  Needs root (CI) or
    unprivileged user namespaces; without either it exits 77, which ctest
    reports as skipped (SKIP_RETURN_CODE), never as passed.
    """
    if os.environ.get("GEOACME_IN_NETNS") == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    probe = subprocess.run(unshare + ["true"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("skipped: cannot make a network namespace (%s): %s"
              % (" ".join(unshare), probe.stderr.strip()))
        sys.exit(77)
    env = dict(os.environ, GEOACME_IN_NETNS="1")
    sys.exit(subprocess.call(unshare + [sys.executable] + sys.argv, env=env))


def netns_add_address(addr):
    """Puts addr on the private namespace's loopback interface (only there:
    outside enter_private_netns's namespace this refuses)."""
    if os.environ.get("GEOACME_IN_NETNS") != "1":
        raise AssertionError("netns_add_address outside the private network namespace")
    family = ["-6"] if ":" in addr else []
    extra = ["nodad"] if ":" in addr else []
    subprocess.run(["ip"] + family + ["addr", "add", addr + ("/128" if ":" in addr else "/32"), "dev", "lo"]
                   + extra, check=True)


def demo_server(listen_v4=("127.0.0.1",), listen_v6=("::1",), port=0, edit_zone=None, settings=None,
                env=None):
    """A Server (not started) running config.toml.example itself with the
    demo zones (demo/example.com.zone, demo/acme.example.net.zone): only the
    listen addresses and port, the log level and the geo database (the test
    fixture instead of DB-IP) are changed; its keys and TSIG secret are made
    as scripts/demo.sh makes them.  edit_zone(name, text) may rewrite a zone
    file's text (name is "example.com" or "acme.example.net"); settings
    replaces other `key = value` lines of the example ({"rrl_rate": "10"});
    env adds to the server's environment."""
    with open(os.path.join(REPO, "config.toml.example")) as f:
        conf = f.read()
    for key, value in (("listen_addrs_ipv4", json.dumps(list(listen_v4))),
                       ("listen_addrs_ipv6", json.dumps(list(listen_v6))),
                       ("listen_port", str(port)), ("log_level", '"debug"'),
                       ("http_listen", '["127.0.0.1:0"]'),
                       ("databases", '["city.mmdb"]')) + tuple((settings or {}).items()):
        conf, n = re.subn(r"(?m)^%s = .*$" % key, "%s = %s" % (key, value), conf)
        assert n == 1, "config.toml.example has no single %s line" % key
    files = {}
    for zone in ("example.com", "acme.example.net"):
        with open(os.path.join(REPO, "demo", zone + ".zone")) as f:
            text = f.read()
        files["demo/%s.zone" % zone] = edit_zone(zone, text) if edit_zone else text
    server = Server(conf, files, env=dict(os.environ, **env) if env else None)
    make_mmdb(server.dir)
    run = server.path("demo/run")
    os.makedirs(run, mode=0o700)
    for zone in ("example.com", "acme.example.net"):
        make_key(os.path.join(run, zone + ".pem"))
    subprocess.run([BIN, "keygen", "--tsig", os.path.join(run, "update.acme.example.net.tsig")],
                   check=True, stdout=subprocess.DEVNULL)
    return server


def ds_records(server, *zones):
    """The DS record `geoacme ds` prints for each of the server's zones."""
    return [subprocess.run([BIN, "ds", "-c", server.config_path, zone], capture_output=True,
                           text=True, check=True).stdout.strip() for zone in zones]


def demo_mid_rollover(server):
    """Catches demo_server's example.com (not started) mid-rollover, as a parent
    that never shows the new DS leaves it (doc/dnssec.md, steps 2-3): a key
    policy is turned on (the example's commented block, with lifetime 0, TTLs
    of an hour and a parent that never answers), `geoacme ctl key-roll`
    starts a rollover, and the key state file is moved one step on (the new
    key active, so CDS and CDNSKEY name it; the first key outgoing), as the
    server writes it once the new key has been in every cache.  Both keys
    are published and sign every RRset.  The server is left running.
    Returns (the DS the parent still holds: the first key's, its tag, the
    new key's tag)."""
    old_ds = ds_records(server, "example.com")[0]
    with open(server.config_path) as f:
        conf = f.read()
    policy = ('[zones.key_policy]\nlifetime = "0"\ndnskey_ttl = "1h"\npropagation_delay = "1h"\n'
              'key_dir = "demo/run/keys"\nparent = ["127.0.0.1:1"]\n')
    conf, n = re.subn(r"(?m)^# ds_push_key = .*\n", lambda m: m.group(0) + policy, conf)
    assert n == 1, "config.toml.example's commented [zones.key_policy] block moved"
    with open(server.config_path, "w") as f:
        f.write(conf)
    os.makedirs(server.path("demo/run/keys"), mode=0o700)
    server.start()
    r = subprocess.run([BIN, "ctl", "-c", server.config_path, "key-roll", "example.com"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    server.stop()
    state = server.path("demo/run/keys/example.com.keys")
    with open(state) as f:
        lines = f.read().splitlines()
    tags = {}
    for i, line in enumerate(lines):
        m = re.match(r"key (\d+) (\S+) (active|incoming) (\d+),(\d+),(\d+),(\d+),(.*)", line)
        if not m:
            continue
        tag, origin, st, created, published, signing = m.groups()[:6]
        rest = m.group(8)
        times = "%s,%s,%s,%s,%s" % (created, published, signing,
                                    signing if st == "incoming" else m.group(7), rest)
        tags[st] = int(tag)
        lines[i] = "key %s %s %s %s" % (tag, origin, "active" if st == "incoming" else "outgoing",
                                        times)
    assert sorted(tags) == ["active", "incoming"], lines
    with open(state, "w") as f:
        f.write("\n".join(lines) + "\n")
    server.start()
    return old_ds, tags["active"], tags["incoming"]
