"""Integration test rig: runs the real geoacme binary on loopback.

Each Server gets a temporary directory with its config and zone files,
listens on 127.0.0.1 and ::1 on a port the kernel picks (listen_port = 0;
the port is read back from the "ready" log line), and is stopped by PID.
Queries go through dnspython (Debian's python3-dnspython) or real tools
(kdig, dig, delv, nsupdate) found on PATH.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
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

    def __init__(self, config, files=None, keep_dir=None, ready_timeout=15):
        self.dir = keep_dir or tempfile.mkdtemp(prefix="geoacme-test-")
        self.files = files or {}
        for name, content in self.files.items():
            path = os.path.join(self.dir, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(path, mode) as f:
                f.write(content)
        self.config_path = os.path.join(self.dir, "config.toml")
        with open(self.config_path, "w") as f:
            f.write(config)
        self.log_path = os.path.join(self.dir, "server.log")
        self.proc = None
        self.port = None
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
        self.proc = subprocess.Popen([BIN, "serve", "-c", self.config_path],
                                     stdout=self.log_file, stderr=self.log_file,
                                     stdin=subprocess.DEVNULL, cwd=self.dir)
        deadline = time.time() + self.ready_timeout
        while time.time() < deadline:
            m = re.search(r"ready: .* port (\d+)", self.log_since_start())
            if m:
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                raise AssertionError("geoacme exited with %s before it was ready:\n%s"
                                     % (self.proc.returncode, self.log_since_start()))
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

    def wait_log(self, pattern, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if re.search(pattern, self.log_since_start()):
                return True
            time.sleep(0.05)
        raise AssertionError("log never matched %r:\n%s" % (pattern, self.log_since_start()))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=10):
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
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

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
        cls.server.cleanup()

    def assertRcode(self, msg, rcode):
        self.assertEqual(dns.rcode.to_text(msg.rcode()), rcode)

    def assertFlags(self, msg, *flags):
        want = set(flags)
        got = set(dns.flags.to_text(msg.flags).split())
        self.assertEqual(got, want)


def main():
    unittest.main(verbosity=2)
