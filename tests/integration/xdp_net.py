# SPDX-License-Identifier: MIT
"""The network the AF_XDP tests run on (test_xdp.py, test_xdp_noalloc.py).

The test program runs inside a network namespace of its own
(harness.enter_private_netns: the server's side, "S"), and makes a second
one for the client ("C", ip netns add gxc<PID>).  Two veth pairs join them:

    S: gxs<PID> (the XDP interface, xdp_listen)  <->  C: gxc<PID>
    S: gss<PID> (sockets only)                   <->  C: gsc<PID>

The XDP pair has 4 queues each way (QUEUES), like a multi-queue NIC; the
sockets-only pair one.  Both of S's ends carry the server's addresses 192.0.2.1 and 2001:db8::1,
both of C's ends the client's 192.0.2.2 and 2001:db8::2, so the same client
reaches the same server process over AF_XDP (a socket bound to gxc<PID>)
or over the kernel's sockets (bound to gsc<PID>): the answers must be the
same bytes, cookies and signatures included.  S routes replies to the
client over the sockets-only pair; a second client address, 192.0.2.3 /
2001:db8::3, lives on the XDP pair only and is routed back over it, for
what the XDP program passes to the kernel (TCP, UPDATE, NOTIFY).

Addresses: the project's rule is loopback only, but a veth end cannot take
::1, and 127.0.0.0/8 on both ends of a pair would have the kernel route
the socket path's replies to lo; so these are documentation addresses
(RFC 5737, RFC 3849) on veth pairs whose two ends are both in namespaces
this test made, with no other interface and no route out: the traffic
cannot leave the machine.  S disappears with the test program; C and the
pairs are deleted by name at exit (atexit), also when a test fails.

Needs root (CAP_NET_ADMIN, CAP_BPF): without it, or where the kernel
refuses a veth pair or a namespace, the file exits 77 (skipped).
"""
import atexit
import json
import os
import re
import subprocess
import sys

SERVER4, SERVER6 = "192.0.2.1", "2001:db8::1"
QUEUES = 4                                   # the XDP pair's receive queues
CLIENT4, CLIENT6 = "192.0.2.2", "2001:db8::2"
TCP4, TCP6 = "192.0.2.3", "2001:db8::3"      # on the XDP pair only, routed back over it

PID = os.getpid()
XDP_S, XDP_C = "gxs%d" % PID, "gxc%d" % PID
SOCK_S, SOCK_C = "gss%d" % PID, "gsc%d" % PID
NETNS = "gxc%d" % PID


def _run(*cmd, ns=False):
    full = (["ip", "netns", "exec", NETNS] if ns else []) + list(cmd)
    r = subprocess.run(full, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(full), r.stderr.strip()))
    return r.stdout


def _skip(why):
    print("skipped: %s" % why)
    sys.exit(77)


def _cleanup():
    subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)
    for dev in (XDP_S, SOCK_S):
        subprocess.run(["ip", "link", "del", dev], capture_output=True)


def setup():
    """Makes the namespaces and pairs (in the private namespace S, which
    the calling program has entered: call harness.enter_private_netns()
    first).  Exits 77 when they cannot be made."""
    if os.geteuid() != 0:
        _skip("AF_XDP needs root (CAP_BPF, CAP_NET_ADMIN) and veth pairs")
    try:
        _run("ip", "netns", "add", NETNS)
    except RuntimeError as e:
        _skip("cannot make a network namespace: %s" % e)
    atexit.register(_cleanup)
    try:
        # The XDP pair has QUEUES queues each way, as a multi-queue NIC:
        # the client's flows spread over them by hash.
        q = ["numrxqueues", str(QUEUES), "numtxqueues", str(QUEUES)]
        _run("ip", "link", "add", XDP_S, *q, "type", "veth", "peer", "name", XDP_C, *q)
        _run("ip", "link", "add", SOCK_S, "type", "veth", "peer", "name", SOCK_C)
    except RuntimeError as e:
        _skip("cannot make a veth pair: %s" % e)
    for dev in (XDP_C, SOCK_C):
        _run("ip", "link", "set", dev, "netns", NETNS)
    for sysctl in ("net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"):
        _run("sysctl", "-qw", sysctl)
        _run("sysctl", "-qw", sysctl, ns=True)
    _run("ip", "link", "set", "lo", "up", ns=True)
    for dev in (XDP_S, SOCK_S):
        _run("sysctl", "-qw", "net.ipv4.conf.%s.rp_filter=0" % dev)
        _run("ip", "addr", "add", SERVER4 + "/32", "dev", dev)
        _run("ip", "-6", "addr", "add", SERVER6 + "/128", "dev", dev, "nodad")
        _run("ip", "link", "set", dev, "up")
    for dev, extra in ((XDP_C, (TCP4, TCP6)), (SOCK_C, ())):
        _run("sysctl", "-qw", "net.ipv4.conf.%s.rp_filter=0" % dev, ns=True)
        for a in (CLIENT4, CLIENT6) + extra:
            if ":" in a:
                _run("ip", "-6", "addr", "add", a + "/128", "dev", dev, "nodad", ns=True)
            else:
                _run("ip", "addr", "add", a + "/32", "dev", dev, ns=True)
        _run("ip", "link", "set", dev, "up", ns=True)
    # S: the client's main addresses over the sockets-only pair, the TCP
    # ones over the XDP pair.  C: the server over either (a socket bound to
    # a device picks that device's route).
    for a, dev in ((CLIENT4, SOCK_S), (TCP4, XDP_S)):
        _run("ip", "route", "add", a + "/32", "dev", dev)
    for a, dev in ((CLIENT6, SOCK_S), (TCP6, XDP_S)):
        _run("ip", "-6", "route", "add", a + "/128", "dev", dev)
    _run("ip", "route", "add", SERVER4 + "/32", "dev", XDP_C, ns=True)
    _run("ip", "route", "add", SERVER4 + "/32", "dev", SOCK_C, "metric", "10", ns=True)
    _run("ip", "-6", "route", "add", SERVER6 + "/128", "dev", XDP_C, ns=True)
    _run("ip", "-6", "route", "add", SERVER6 + "/128", "dev", SOCK_C, "metric", "10", ns=True)


# The client, run in C: each job is [device, source, server, port, hex,
# tcp, source port (0: any)]; sends it from source over device and prints
# the reply's hex (None when none came in the timeout), one JSON list for all.
_CLIENT = r"""
import json, socket, struct, sys
jobs, timeout = json.load(sys.stdin)
out = []
def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise OSError("closed")
        b += c
    return b
for dev, src, dst, port, data, tcp, sport in jobs:
    fam = socket.AF_INET6 if ":" in dst else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM if tcp else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())
    s.bind((src, sport))
    s.settimeout(timeout)
    msg = bytes.fromhex(data)
    try:
        if tcp:
            s.connect((dst, port))
            s.sendall(struct.pack("!H", len(msg)) + msg)
            n = struct.unpack("!H", recv_exact(s, 2))[0]
            out.append(recv_exact(s, n).hex())
        else:
            s.sendto(msg, (dst, port))
            out.append(s.recv(65535).hex())
    except (socket.timeout, OSError):
        out.append(None)
    s.close()
json.dump(out, sys.stdout)
"""


def exchange(jobs, timeout=1.0):
    """Runs the client in C over jobs ([device, source, server, port, wire
    bytes, tcp] and optionally the source port); returns the replies' bytes
    (None: no reply)."""
    wire = [[d, s, a, p, m.hex(), t, rest[0] if rest else 0] for d, s, a, p, m, t, *rest in jobs]
    r = subprocess.run(["ip", "netns", "exec", NETNS, sys.executable, "-c", _CLIENT],
                       input=json.dumps([wire, timeout]), capture_output=True, text=True,
                       timeout=60 + timeout * len(jobs))
    if r.returncode != 0:
        raise RuntimeError("client: " + r.stderr)
    return [bytes.fromhex(h) if h is not None else None for h in json.loads(r.stdout)]


def xdp_job(msg, v6=False, port=53, sport=0):
    """A UDP query over the XDP pair from the client's main address (from
    source port sport, 0: any)."""
    return [XDP_C, CLIENT6 if v6 else CLIENT4, SERVER6 if v6 else SERVER4, port, msg, False, sport]


def sock_job(msg, v6=False, port=53):
    """The same over the sockets-only pair."""
    return [SOCK_C, CLIENT6 if v6 else CLIENT4, SERVER6 if v6 else SERVER4, port, msg, False]


def passed_job(msg, v6=False, tcp=False, port=53):
    """Over the XDP pair from the address routed back over it: what the XDP
    program passes to the kernel (TCP, UPDATE, NOTIFY) is answered."""
    return [XDP_C, TCP6 if v6 else TCP4, SERVER6 if v6 else SERVER4, port, msg, tcp]


def queue_redirects(dev=None):
    """Frames the XDP program redirected to a socket, per receive queue of
    the XDP interface (ethtool -S: veth counts them per queue)."""
    out = _run("ethtool", "-S", dev or XDP_S)
    got = {int(q): int(n) for q, n in re.findall(r"rx_queue_(\d+)_xdp_redirect: (\d+)", out)}
    return [got.get(i, 0) for i in range(QUEUES)]


def raw_frame(frame):
    """Sends one Ethernet frame as it is (AF_PACKET) from C's end of the
    XDP pair: what no socket of C would send, a VLAN tag in the frame."""
    code = ("import socket, sys; s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); "
            "s.bind((sys.argv[1], 0)); s.send(bytes.fromhex(sys.argv[2]))")
    _run(sys.executable, "-c", code, XDP_C, frame.hex(), ns=True)


def mac(dev, ns=False):
    """The MAC address of dev, as bytes."""
    m = re.search(r"link/ether ([0-9a-f:]{17})", _run("ip", "link", "show", dev, ns=ns))
    return bytes.fromhex(m.group(1).replace(":", ""))


def link_xdp(dev=None):
    """`ip -d link show` of the XDP interface (shows "prog/xdp id N" while a
    program is attached)."""
    return _run("ip", "-d", "link", "show", dev or XDP_S)


def golden_queries():
    """The golden set's UDP queries: (case, source, wire bytes), from the
    golden driver (tests/golden/golden.c --queries); None when the build
    has no fixture database (then the golden test itself is skipped)."""
    build = os.environ.get("BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
    mmdb = os.path.join(build, "tests/golden_fixtures/city.mmdb")
    if not os.path.exists(mmdb):
        return None, None
    golden_dir = os.path.abspath(os.path.join(os.path.dirname(__file__), "../golden"))
    r = subprocess.run([os.path.join(build, "tests/golden"), golden_dir, "--queries"],
                       capture_output=True, text=True, env=dict(os.environ, GOLDEN_MMDB=mmdb),
                       check=True)
    out = []
    for line in r.stdout.splitlines():
        name, source, data = line.split()
        out.append((name, source, bytes.fromhex(data)))
    return out, mmdb


def golden_config(mmdb, extra_server=""):
    """tests/golden/config.toml for the real server on S's addresses, port
    53, with extra_server lines in [server]."""
    golden_dir = os.path.abspath(os.path.join(os.path.dirname(__file__), "../golden"))
    with open(os.path.join(golden_dir, "config.toml")) as f:
        text = f.read()
    text = text.replace("@GOLDEN@", golden_dir).replace("@MMDB@", mmdb)
    text = text.replace('listen_addrs_ipv4 = ["127.0.0.1"]',
                        'listen_addrs_ipv4 = ["%s"]\nlisten_addrs_ipv6 = ["%s"]\nlog_level = "info"'
                        % (SERVER4, SERVER6))
    text = text.replace("listen_port = 0", "listen_port = 53")
    text = text.replace("[server]\n", "[server]\n" + extra_server, 1)
    return text


def golden_key():
    golden_dir = os.path.join(os.path.dirname(__file__), "../golden")
    with open(os.path.join(golden_dir, "example.com.pem")) as f:
        return f.read()
