# SPDX-License-Identifier: MIT
"""What the ACME tests share: an ACME zone kept in SQLite with its TSIG keys
(config and files), signed UPDATEs sent with dnspython, BIND's nsupdate or
Knot's knsupdate, and reading back TXT records and the SOA serial.

    KEY = TsigKey("update.acme.example.", "hmac-sha256", b"secret bytes")
    server = Server(BASE_CONFIG + acme_zone_toml("acme.example", [KEY]),
                    acme_files(seed_zone("acme.example."), [KEY]))
    signed_update(server, "acme.example.", KEY, add=[("x.acme.example.", 60, "TXT", '"v"')])
    nsupdate(server, KEY.nsupdate_arg(), ["update add x.acme.example. 60 TXT v"], "acme.example.")
"""
import base64
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import dns.message
import dns.name
import dns.query
import dns.rdata
import dns.rdatatype
import dns.rrset
import dns.tsig
import dns.update

sys.path.insert(0, os.path.dirname(__file__))
from harness import BASE_CONFIG, Server, make_key   # noqa: E402


class TsigKey:
    """A TSIG key as the config declares it and as the clients use it.

    key_file: the key is written to that file (raw bytes, Hickory's form)
    and the config points at it; otherwise the config carries the secret in
    base64.  policy: extra `key = value` lines for its tsig_keys table
    (allow_names, allow_types)."""

    def __init__(self, name, algorithm, secret, key_file=None, policy=""):
        self.name = name
        self.algorithm = algorithm
        self.secret = secret
        self.key_file = key_file
        self.policy = policy

    @property
    def b64(self):
        return base64.b64encode(self.secret).decode()

    def toml(self):
        where = 'key_file = "%s"' % self.key_file if self.key_file else 'secret = "%s"' % self.b64
        return '\n[[zones.stores.tsig_keys]]\nname = "%s"\nalgorithm = "%s"\n%s\n%s' % (
            self.name, self.algorithm, where, self.policy)

    def key(self, secret=None):
        """The dnspython key (with another secret, for a wrong-secret test)."""
        return dns.tsig.Key(self.name, secret if secret is not None else self.secret, self.algorithm)

    def nsupdate_arg(self):
        """nsupdate -y's argument."""
        return "%s:%s:%s" % (self.algorithm, self.name, self.b64)

    def knsupdate_line(self):
        return "key %s:%s %s" % (self.algorithm, self.name, self.b64)


def acme_zone_toml(zone, keys, store="", signing_key=None, zone_lines=""):
    """A [[zones]] table for an ACME zone in SQLite (acme.sqlite, seeded from
    acme.zone) that takes UPDATEs signed by keys; store adds lines to its
    [zones.stores]; signing_key is a key_path to sign it with; zone_lines
    adds lines to the [[zones]] table itself (axfr_policy, notify, ... and
    last, if any, a table of its own such as [zones.key_policy])."""
    out = '\n[[zones]]\nzone = "%s"\nzone_type = "Primary"\n%s' % (zone, zone_lines)
    if signing_key:
        out += '\n[[zones.keys]]\nalgorithm = "ECDSAP256SHA256"\nkey_path = "%s"\n' % signing_key
    out += ('\n[zones.stores]\ntype = "sqlite"\nallow_update = true\njournal_path = "acme.sqlite"\n'
            'zone_path = "acme.zone"\n' + store)
    return out + "".join(k.toml() for k in keys)


def acme_files(zone_text, keys):
    """The files acme_zone_toml's table names: the seed zone and the key files."""
    files = {"acme.zone": zone_text}
    files.update({k.key_file: k.secret for k in keys if k.key_file})
    return files


def signed_acme_server(zone, key, zone_text, zone_lines="", store="", env=None,
                       ready_timeout=60):
    """A Server (not started) with one signed ACME zone: acme_zone_toml's
    table for zone, taking UPDATEs signed by key (a TsigKey), seeded from
    zone_text and signed with a fresh P-256 key (acme.pem); zone_lines and
    store as for acme_zone_toml; env adds to the server's environment."""
    server = Server(BASE_CONFIG + acme_zone_toml(zone, [key], store, "acme.pem", zone_lines),
                    acme_files(zone_text, [key]), ready_timeout=ready_timeout,
                    env=dict(os.environ, **env) if env else None)
    make_key(server.path("acme.pem"))
    return server


def seed_zone(origin, ttl=300, serial=1, extra=""):
    """A minimal seed zone: SOA and one NS, then extra lines."""
    return ("$ORIGIN %s\n$TTL %d\n@  IN SOA ns1.example. hostmaster.example. %d 3600 600 86400 60\n"
            "@  IN NS  ns1.example.\n%s" % (origin, ttl, serial, extra))


def signed_update(server, zone, key, add=(), delete=(), tcp=False, timeout=5):
    """A dnspython UPDATE signed with key (a TsigKey): add and delete are
    (name, ttl, type, data) and (name, type[, data]) tuples.  Returns the
    response."""
    u = dns.update.UpdateMessage(zone, keyring=key.key())
    for name, ttl, rdtype, data in add:
        u.add(name, ttl, rdtype, data)
    for d in delete:
        u.delete(*d)
    fn = dns.query.tcp if tcp else dns.query.udp
    return fn(u, "127.0.0.1", port=server.port, timeout=timeout)


def nsupdate(server, key_arg, lines, zone, tcp=False):
    """BIND's nsupdate with `-y key_arg` (None: unsigned) sending lines as one update."""
    script = "server 127.0.0.1 %d\nzone %s\n%s\nsend\n" % (server.port, zone, "\n".join(lines))
    args = ["nsupdate", "-t", "5"] + (["-v"] if tcp else [])
    if key_arg:
        args += ["-y", key_arg]
    return subprocess.run(args, input=script, capture_output=True, text=True, timeout=30)


def nsupdate_rcode(server, key_arg, lines, zone, tcp=False):
    """nsupdate's outcome as an RCODE name (NOERROR when it exits 0)."""
    r = nsupdate(server, key_arg, lines, zone, tcp=tcp)
    if r.returncode == 0:
        return "NOERROR"
    m = re.search(r"update failed: (\S+)", r.stderr + r.stdout)
    return m.group(1) if m else "rc=%d: %s" % (r.returncode, (r.stderr + r.stdout).strip())


def knsupdate(server, key, lines, zone, tcp=False):
    """Knot's knsupdate signing with key (a TsigKey)."""
    script = "server 127.0.0.1 %d\nzone %s\n%s\n%s\nsend\nanswer\n" % (
        server.port, zone, key.knsupdate_line(), "\n".join(lines))
    args = ["knsupdate"] + (["-v"] if tcp else [])
    return subprocess.run(args, input=script, capture_output=True, text=True, timeout=30)


def txt(server, name):
    """The TXT strings the server answers for name, sorted."""
    r = server.query(name, "TXT")
    return sorted(rd.to_text() for rrset in r.answer for rd in rrset if rrset.rdtype == dns.rdatatype.TXT)


def serial(server, zone):
    return server.query(zone, "SOA").answer[0][0].serial


def ixfr_soas(server, zone, from_serial):
    """An IXFR over TCP from `from_serial`: the serials of the answer's SOA
    records in order (the shape of the answer, RFC 1995 section 4), and the
    answer."""
    q = dns.message.make_query(zone, "IXFR")
    q.authority.append(dns.rrset.from_text(zone + ".", 0, "IN", "SOA",
                                           ". . %d 0 0 0 0" % from_serial))
    r = dns.query.tcp(q, "127.0.0.1", port=server.port, timeout=5, one_rr_per_rrset=True)
    return [rr[0].serial for rr in r.answer if rr.rdtype == dns.rdatatype.SOA], r


def tsig_of(wire):
    """The TSIG rdata of a raw message (its records walked by hand, nothing
    validated), or None: to read the Error field and MAC of a refusal that
    dnspython would raise on."""
    (qd, an, ns, ar) = struct.unpack("!HHHH", wire[4:12])
    pos = 12
    for _ in range(qd):
        _, used = dns.name.from_wire(wire, pos)
        pos += used + 4
    rd = None
    for _ in range(an + ns + ar):
        _, used = dns.name.from_wire(wire, pos)
        pos += used
        rtype, rclass, _, rdlen = struct.unpack("!HHIH", wire[pos:pos + 10])
        pos += 10
        if rtype == dns.rdatatype.TSIG:
            rd = dns.rdata.from_wire(rclass, rtype, wire, pos, rdlen)
        pos += rdlen
    return rd

class Pebble:
    """Let's Encrypt's test CA, on 127.0.0.1, checking challenges through the
    resolver at 127.0.0.1:dns_port.  A throwaway CA in `directory` signs the
    server certificate; lego trusts it through LEGO_CA_CERTIFICATES
    (`ca_path`)."""

    def __init__(self, directory, dns_port):
        self.dir = directory
        self.dns_port = dns_port
        self.port = None
        self.proc = None
        self.log = None
        self.ca_path = os.path.join(directory, "ca.pem")

    def _make_certs(self):
        def run(*args):
            subprocess.run(args, cwd=self.dir, check=True, capture_output=True)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        run("openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=geoacme test CA")
        run("openssl", "req", *ec, "-keyout", "key.pem", "-out", "req.csr", "-subj", "/CN=localhost")
        with open(os.path.join(self.dir, "ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        run("openssl", "x509", "-req", "-in", "req.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "cert.pem", "-days", "2", "-extfile", "ext")

    def start(self, free_port):
        """Starts it on ports free_port() gives; waits until it serves."""
        self._make_certs()
        self.port = free_port()
        with open(os.path.join(self.dir, "pebble.json"), "w") as f:
            json.dump({"pebble": {
                "listenAddress": "127.0.0.1:%d" % self.port,
                "managementListenAddress": "127.0.0.1:%d" % free_port(),
                "certificate": os.path.join(self.dir, "cert.pem"),
                "privateKey": os.path.join(self.dir, "key.pem"),
                "httpPort": 5002, "tlsPort": 5001, "ocspResponderURL": "",
                "externalAccountBindingRequired": False}}, f)
        env = dict(os.environ, PEBBLE_VA_NOSLEEP="1", PEBBLE_WFE_NONCEREJECT="0",
                   PEBBLE_AUTHZREUSE="0")
        self.log = open(os.path.join(self.dir, "pebble.log"), "wb")
        self.proc = subprocess.Popen(
            ["pebble", "-config", os.path.join(self.dir, "pebble.json"),
             "-dnsserver", "127.0.0.1:%d" % self.dns_port],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL, env=env)
        deadline = time.time() + 15
        while time.time() < deadline:
            with open(os.path.join(self.dir, "pebble.log"), errors="replace") as f:
                if "ACME directory available" in f.read():
                    return self
            time.sleep(0.1)
        raise AssertionError("pebble did not start")

    def stop(self):
        """Stops it by PID (NULL-safe: a start that failed half-way)."""
        if self.proc:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None
        if self.log:
            self.log.close()
            self.log = None


def run_in_own_namespaces(script, hosts):
    """Runs `script` (the calling test file) again in new network and mount
    namespaces, with loopback up and /etc/hosts replaced by `hosts` (a bind
    mount nobody outside sees), and returns its exit code; None when already
    inside.  There port 53 is free on every loopback address, whatever the
    machine runs, and Lego can ask nameservers by name.  Needs root, unshare
    and ip: without them it returns 77 (ctest: skipped, never passed)."""
    if os.environ.get("GEOACME_TEST_NETNS") == "1":
        return None
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        print("skipped: needs root, unshare and ip (util-linux, iproute2: scripts/deps.sh)")
        return 77
    fd, path = tempfile.mkstemp(prefix="geoacme-hosts-")
    with os.fdopen(fd, "w") as f:
        f.write(hosts)
    os.chmod(path, 0o644)
    sh = 'ip link set lo up && mount --bind "$1" /etc/hosts && shift && exec "$@"'
    env = dict(os.environ, GEOACME_TEST_NETNS="1")
    try:
        return subprocess.call(["unshare", "-n", "-m", "sh", "-c", sh, "sh", path,
                                sys.executable, script] + sys.argv[1:], env=env)
    finally:
        os.unlink(path)


def transfer_records(msgs):
    """The answer records of a transfer, in order, as (owner, type, ttl, rdata text)."""
    return [(rrset.name.to_text(), rrset.rdtype, rrset.ttl, rd.to_text())
            for m in msgs for rrset in m.answer for rd in rrset]


class TransferChecks:
    """For a unittest.TestCase with an APEX: the zone by AXFR, as a set of
    records, and an IXFR checked against such a set."""
    APEX = None

    def axfr(self, srv):
        return set(transfer_records(dns.query.xfr("127.0.0.1", self.APEX, port=srv.port,
                                                  lifetime=30)))

    def assert_ixfr_gives(self, srv, base, serial, now):
        """An IXFR from `serial` applied to `base` (the AXFR then) is `now`."""
        rrs = transfer_records(dns.query.xfr("127.0.0.1", self.APEX, rdtype=dns.rdatatype.IXFR,
                                             serial=serial, port=srv.port, lifetime=30))
        self.assertEqual(rrs[0][1], dns.rdatatype.SOA)
        self.assertEqual(rrs[1][1], dns.rdatatype.SOA, "the server answered the IXFR with the zone")
        zone, mode = set(base), None
        for rr in rrs[1:-1]:
            if rr[1] == dns.rdatatype.SOA:
                mode = "add" if mode == "del" else "del"
            if mode == "del":
                self.assertIn(rr, zone, "the IXFR deletes a record the zone did not hold")
                zone.discard(rr)
            else:
                zone.add(rr)
        self.assertEqual(zone, now)
