# SPDX-License-Identifier: MIT
"""Validating resolvers and a stock authoritative server, on loopback, for tests.

Each resolver is Debian's own daemon started by the test: its config lives in
a temporary directory, it listens on 127.0.0.1 on a free port, sends every
query for the test's zones to geoacme (stub or forward zones), trusts only
the DS records the test gives it (no root anchor), and is stopped by PID.

  Unbound(stubs, anchors, subnet=False)   unbound (subnet: ECS through subnetcache;
                                          validate=False: an iterator only, a relay)
  Kresd(stubs, anchors, extra=())        Knot Resolver 5 (kresd; extra: more config lines)
  NamedResolver(stubs, anchors)           BIND 9 named, recursive
  NamedAuth(zones, address, port)         BIND 9 named, authoritative only

stubs is a list of (zone, geoacme port); anchors a list of DS records in
presentation form ("example.com. IN DS 50982 13 2 2B67...").
"""
import os
import shutil
import subprocess
import tempfile
import time

import dns.edns
import dns.message
import dns.query

from harness import free_port


class Daemon:
    """A daemon in its own directory, stopped by PID; query() asks it over UDP."""
    NAME = "daemon"

    def __init__(self, address="127.0.0.1", port=None):
        self.dir = tempfile.mkdtemp(prefix="geoacme-%s-" % self.NAME)
        self.address = address
        self.port = port or free_port()
        self.proc = None
        self.log_path = os.path.join(self.dir, self.NAME + ".log")

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def command(self):
        raise NotImplementedError

    def start(self, timeout=15):
        """Starts the daemon and waits until it answers a query (any answer)."""
        self.log_file = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=self.log_file,
                                     stderr=self.log_file, cwd=self.dir)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("%s exited with %s:\n%s" % (self.NAME, self.proc.returncode,
                                                               self.log()[-3000:]))
            try:
                q = dns.message.make_query(self.probe_name(), "SOA")
                dns.query.udp(q, self.address, port=self.port, timeout=0.3)
                return self
            except Exception:
                time.sleep(0.1)
        self.stop()
        raise AssertionError("%s did not answer in time:\n%s" % (self.NAME, self.log()[-3000:]))

    def probe_name(self):
        return "localhost."

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def query(self, name, rdtype="A", ecs=None, dnssec=True, timeout=5):
        q = dns.message.make_query(name, rdtype, want_dnssec=dnssec, use_edns=0)
        if ecs is not None:
            q.use_edns(0, q.ednsflags, 1232, options=[dns.edns.ECSOption(ecs[0], ecs[1], 0)])
        return dns.query.udp(q, self.address, port=self.port, timeout=timeout)

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
            self.log_file.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def ds_fields(ds):
    """'example.com. IN DS 1 13 2 ABCD' -> ('example.com.', '1', '13', '2', 'ABCD')."""
    f = ds.split()
    i = f.index("DS")
    return (f[0] if f[0].endswith(".") else f[0] + ".",) + tuple(f[i + 1:i + 4]) + ("".join(f[i + 4:]),)


class Unbound(Daemon):
    """Debian's unbound as a validating resolver with stub zones; with subnet,
    its subnetcache module forwards the client's ECS (any prefix length)."""
    NAME = "unbound"

    def __init__(self, stubs, trust_anchors, subnet=False, extra="", validate=True):
        super().__init__()
        anchors = "".join('  trust-anchor: "%s"\n' % ta for ta in trust_anchors)
        modules = "subnetcache validator iterator" if subnet else "validator iterator"
        if not validate:
            modules = "iterator"
        subnet_conf = ""
        if subnet:
            subnet_conf = ("  send-client-subnet: 127.0.0.1\n  send-client-subnet: ::1\n"
                           "  client-subnet-always-forward: yes\n  max-client-subnet-ipv4: 32\n"
                           "  max-client-subnet-ipv6: 128\n")
        stub_conf = "".join('stub-zone:\n  name: "%s"\n  stub-addr: 127.0.0.1@%d\n' % (z, p)
                            for z, p in stubs)
        self.conf = self.write("unbound.conf", """server:
  interface: 127.0.0.1
  port: {port}
  do-not-query-localhost: no
  username: ""
  chroot: ""
  directory: "{dir}"
  pidfile: "{dir}/unbound.pid"
  use-syslog: no
  logfile: "{log}"
  verbosity: 1
  val-log-level: 2
  module-config: "{modules}"
  qname-minimisation: no
  access-control: 127.0.0.0/8 allow
  cache-max-ttl: 0
  cache-max-negative-ttl: 0
{anchors}{subnet}{extra}
{stubs}
remote-control:
  control-enable: no
""".format(port=self.port, dir=self.dir, log=self.log_path, modules=modules, anchors=anchors,
           subnet=subnet_conf, extra=extra, stubs=stub_conf))

    def command(self):
        return ["unbound", "-d", "-c", self.conf]


class Kresd(Daemon):
    """Knot Resolver 5 forwarding the zones to geoacme and validating them.

    policy.FORWARD (not STUB) because only FORWARD validates; the root
    anchor that kresd loads by default is removed, and so are the modules
    that would ask the root on their own (priming, time-skew detection).
    """
    NAME = "kresd"

    def __init__(self, stubs, anchors, extra=()):
        super().__init__()
        lines = ["net.listen('127.0.0.1', %d, { kind = 'dns' })" % self.port,
                 "modules.unload('priming')",
                 "modules.unload('detect_time_skew')",
                 "modules.unload('detect_time_jump')",
                 "trust_anchors.remove('.')",
                 "cache.size = 10 * MB"]
        for ds in anchors:
            lines.append("trust_anchors.add('%s')" % ds)
        for zone, port in stubs:
            lines.append("policy.add(policy.suffix(policy.FORWARD({'127.0.0.1@%d'}), "
                         "policy.todnames({'%s.'})))" % (port, zone.rstrip(".")))
        lines.extend(extra)
        # Anything else is refused here rather than sent anywhere.
        lines.append("policy.add(policy.all(policy.REFUSE))")
        self.write("config", "\n".join(lines) + "\n")

    def command(self):
        return ["kresd", "-n", "-c", os.path.join(self.dir, "config"), self.dir]

    def probe_name(self):
        return "example.invalid."    # refused by the last rule: an answer all the same


class NamedResolver(Daemon):
    """BIND 9 named as a validating recursive resolver with forward zones.

    dnssec-validation yes (not auto) uses only the trust-anchors given here:
    static-ds entries for the test's zones.
    """
    NAME = "named"

    def __init__(self, stubs, anchors):
        super().__init__()
        tas = "".join('  %s static-ds %s %s %s "%s";\n' % ds_fields(ds) for ds in anchors)
        zones = "".join('zone "%s" { type forward; forward only; forwarders { 127.0.0.1 port %d; }; };\n'
                        % (z.rstrip("."), p) for z, p in stubs)
        self.write("named.conf", """options {{
  directory "{dir}";
  pid-file "{dir}/named.pid";
  session-keyfile "{dir}/session.key";
  managed-keys-directory "{dir}";
  listen-on port {port} {{ 127.0.0.1; }};
  listen-on-v6 {{ none; }};
  recursion yes;
  allow-query {{ 127.0.0.0/8; }};
  allow-recursion {{ 127.0.0.0/8; }};
  dnssec-validation yes;
  qname-minimization off;
  max-cache-ttl 1;
  max-ncache-ttl 1;
}};
controls {{ }};
trust-anchors {{
{tas}}};
{zones}""".format(dir=self.dir, port=self.port, tas=tas, zones=zones))

    def command(self):
        return ["named", "-g", "-n", "1", "-c", os.path.join(self.dir, "named.conf")]


class NamedAuth(Daemon):
    """BIND 9 named serving the given zone files authoritatively, nothing else.

    zones is a list of (origin, zone file text).  Listens on an address that
    must be configured on an interface (named only binds those), e.g. 127.0.0.1.
    """
    NAME = "named-auth"

    def __init__(self, zones, address="127.0.0.1", port=None):
        super().__init__(address, port)
        self.first_zone = zones[0][0]
        decls = ""
        for i, (origin, text) in enumerate(zones):
            self.write("zone%d.db" % i, text)
            decls += 'zone "%s" { type primary; file "zone%d.db"; };\n' % (origin, i)
        self.write("named.conf", """options {{
  directory "{dir}";
  pid-file "{dir}/named.pid";
  session-keyfile "{dir}/session.key";
  managed-keys-directory "{dir}";
  listen-on port {port} {{ {addr}; }};
  listen-on-v6 {{ none; }};
  recursion no;
  dnssec-validation no;
}};
controls {{ }};
{decls}""".format(dir=self.dir, port=self.port, addr=address, decls=decls))

    def command(self):
        return ["named", "-g", "-n", "1", "-c", os.path.join(self.dir, "named.conf")]

    def probe_name(self):
        return self.first_zone
