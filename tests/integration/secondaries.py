# SPDX-License-Identifier: MIT
"""Stock secondaries for the transfer tests: Debian's Knot (knotd), NSD and
BIND (named), each started from its own temporary directory with its own
config on loopback ports of its own, and stopped by PID.  They never use
the packaged services' configs, sockets or state (the Debian packages may
start those on install; nothing here depends on or touches them)."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import dns.message
import dns.query
import dns.rcode

from harness import free_port


class Secondary:
    NAME = "?"
    SOURCE = "127.0.0.1"    # the address it transfers from: the primary's log tells them apart

    def __init__(self, zones, primary_port, key=None, notify_key=True, port=None,
                 addr="127.0.0.1", primary_addr="127.0.0.1", notify_from="127.0.0.0/8",
                 source=None):
        """zones: names; key: (name, algorithm, base64 secret) used for the
        transfers and required on NOTIFYs when notify_key is true; addr and
        port: where it answers; primary_addr and primary_port: geoacme;
        notify_from: the address or block NOTIFYs are accepted from (its
        ACL; Knot and NSD); source: the address its transfer requests leave from."""
        self.dir = tempfile.mkdtemp(prefix="geoacme-%s-" % self.NAME)
        self.port = port or free_port()
        self.addr = addr
        self.primary_addr = primary_addr
        self.notify_from = notify_from
        self.source = source or self.SOURCE
        self.zones = zones
        self.primary_port = primary_port
        self.key = key
        self.notify_key = notify_key and key is not None
        self.proc = None
        self.log_path = os.path.join(self.dir, "server.log")
        self.write_config()

    def path(self, name):
        return os.path.join(self.dir, name)

    def start(self):
        with open(self.path("stdout.log"), "ab") as out:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, cwd=self.dir)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("%s exited with %s:\n%s" % (self.NAME, self.proc.returncode,
                                                                 self.log()))
            try:
                q = dns.message.make_query(self.zones[0], "SOA")
                dns.query.udp(q, self.addr, port=self.port, timeout=0.3)
                return self
            except Exception:
                time.sleep(0.1)
        raise AssertionError("%s did not answer:\n%s" % (self.NAME, self.log()))

    def log(self):
        out = ""
        for name in ("server.log", "stdout.log"):
            try:
                with open(self.path(name), errors="replace") as f:
                    out += f.read()
            except OSError:
                pass
        return out

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill9(self):
        self.stop(signal.SIGKILL)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def query(self, name, rdtype="SOA", timeout=2):
        q = dns.message.make_query(name, rdtype, want_dnssec=True)
        return dns.query.udp(q, self.addr, port=self.port, timeout=timeout)

    def serial(self, zone):
        try:
            r = self.query(zone, "SOA", timeout=1)
        except Exception:
            return None
        if r.rcode() != dns.rcode.NOERROR or not r.answer:
            return None
        for rrset in r.answer:
            for rd in rrset:
                if rd.rdtype == 6:
                    return rd.serial
        return None

    def wait_serial(self, zone, serial, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.serial(zone) == serial:
                return time.time()
            time.sleep(0.01)
        raise AssertionError("%s never served %s serial %s (has %s):\n%s"
                             % (self.NAME, zone, serial, self.serial(zone), self.log()[-3000:]))

    def axfr_text(self, zone):
        """The secondary's copy, through an AXFR from it (it allows loopback)."""
        out = subprocess.run(["kdig", "@" + self.addr, "-p", str(self.port), "+nocomments",
                              "+nostats", "+noheader", "+noquestion", zone, "AXFR"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout


class Knot(Secondary):
    NAME = "knot"
    SOURCE = "127.0.0.2"

    def write_config(self):
        key = ""
        remote_key = ""
        notify_key = ""
        if self.key:
            name, alg, secret = self.key
            key = "key:\n  - id: %s\n    algorithm: %s\n    secret: %s\n" % (name, alg, secret)
            remote_key = "    key: %s\n" % name
            if self.notify_key:
                notify_key = "    key: %s\n" % name
        zones = "".join("  - domain: %s\n    master: primary\n    acl: [from_primary, local]\n"
                        % z for z in self.zones)
        conf = """server:
  rundir: "{d}"
  listen: {addr}@{port}
  pidfile: "{d}/knot.pid"
log:
  - target: "{d}/server.log"
    any: info
database:
  storage: "{d}"
{key}remote:
  - id: primary
    address: {paddr}@{pport}
    via: {src}
{remote_key}acl:
  - id: from_primary
    address: {nfrom}
    action: notify
{notify_key}  - id: local
    address: 127.0.0.1
    action: transfer
template:
  - id: default
    storage: "{d}"
    zonefile-sync: -1
    journal-content: changes
zone:
{zones}""".format(d=self.dir, port=self.port, pport=self.primary_port, key=key,
                  remote_key=remote_key, notify_key=notify_key, zones=zones, src=self.source,
                  addr=self.addr, paddr=self.primary_addr, nfrom=self.notify_from)
        with open(self.path("knot.conf"), "w") as f:
            f.write(conf)

    def command(self):
        return ["knotd", "-c", self.path("knot.conf")]


class Nsd(Secondary):
    NAME = "nsd"
    SOURCE = "127.0.0.3"

    def write_config(self):
        key = ""
        kname = "NOKEY"
        nkey = "NOKEY"
        if self.key:
            name, alg, secret = self.key
            key = 'key:\n  name: "%s"\n  algorithm: %s\n  secret: "%s"\n' % (name, alg, secret)
            kname = name
            if self.notify_key:
                nkey = name
        zones = "".join("""zone:
  name: "{z}"
  zonefile: "{z}.zone"
  request-xfr: {paddr}@{pport} {k}
  allow-notify: {nfrom} {nk}
  provide-xfr: 127.0.0.1 NOKEY
  outgoing-interface: {src}
""".format(z=z, pport=self.primary_port, k=kname, nk=nkey, src=self.source,
           paddr=self.primary_addr, nfrom=self.notify_from) for z in self.zones)
        conf = """server:
  ip-address: {addr}@{port}
  port: {port}
  do-ip6: no
  zonesdir: "{d}"
  database: ""
  pidfile: "{d}/nsd.pid"
  username: ""
  chroot: ""
  xfrdfile: "{d}/xfrd.state"
  xfrdir: "{d}"
  zonelistfile: "{d}/zone.list"
  cookie-secret-file: "{d}/cookiesecrets.txt"
  logfile: "{d}/server.log"
  verbosity: 2
  server-count: 1
  tcp-count: 16
  reuseport: no
  # Serve a received transfer at once (the default waits a second to batch).
  xfrd-reload-timeout: 0
remote-control:
  control-enable: no
{key}{zones}""".format(d=self.dir, port=self.port, key=key, zones=zones, addr=self.addr)
        with open(self.path("nsd.conf"), "w") as f:
            f.write(conf)

    def command(self):
        return ["nsd", "-d", "-c", self.path("nsd.conf")]


class Bind(Secondary):
    NAME = "bind"
    SOURCE = "127.0.0.4"

    def write_config(self):
        key = ""
        pkey = ""
        notify = ""
        if self.key:
            name, alg, secret = self.key
            key = 'key "%s" { algorithm %s; secret "%s"; };\n' % (name, alg, secret)
            pkey = ' key "%s"' % name
            if self.notify_key:
                notify = 'allow-notify { key "%s"; };' % name
        zones = "".join("""zone "{z}" {{
  type secondary;
  file "{d}/{z}.db";
  masterfile-format text;
  primaries port {pport} {{ {paddr}{pkey}; }};
  {notify}
}};
""".format(z=z, d=self.dir, pport=self.primary_port, pkey=pkey, notify=notify,
           paddr=self.primary_addr)
            for z in self.zones)
        conf = """options {{
  directory "{d}";
  listen-on port {port} {{ {addr}; }};
  listen-on-v6 {{ none; }};
  pid-file "{d}/named.pid";
  session-keyfile "{d}/session.key";
  managed-keys-directory "{d}";
  recursion no;
  notify no;
  dnssec-validation no;
  allow-transfer {{ 127.0.0.1; }};
  allow-query {{ any; }};
  transfer-source {src};
}};
controls {{ }};
{key}logging {{
  channel f {{ file "{d}/server.log"; severity info; print-time yes; print-category yes; }};
  category default {{ f; }};
  category xfer-in {{ f; }};
  category notify {{ f; }};
  category lame-servers {{ null; }};
}};
{zones}""".format(d=self.dir, port=self.port, key=key, zones=zones, src=self.source,
                  addr=self.addr)
        with open(self.path("named.conf"), "w") as f:
            f.write(conf)

    def command(self):
        return ["named", "-f", "-c", self.path("named.conf"), "-n", "1"]


ALL = [Knot, Nsd, Bind]


def sorted_records(text):
    """Zone text (kdig or ldns style) as sorted, normalised record lines,
    with the closing SOA of an AXFR dropped."""
    seen = set()
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(";"):
            continue
        f = line.split()
        if len(f) > 3 and f[3] == "TSIG":
            continue   # the transfer's signature, not zone data
        rec = " ".join([f[0].lower()] + f[1:])
        if rec in seen:
            continue
        seen.add(rec)
        out.append(rec)
    return sorted(out)


def xfr_kinds(secondary):
    """Which transfer kinds the secondary's log reports (IXFR, AXFR)."""
    log = secondary.log()
    return set(re.findall(r"\b(IXFR|AXFR)\b", log))
