#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the fuzz targets' seed corpora into tests/fuzz/corpus/<target>/.

Run with Debian's python3 (dnspython); needs nsupdate and knsupdate for
the captured UPDATEs.  The output is committed; re-run this only to change
the seeds (file names are stable, contents of captured TSIG-signed
messages change with the clock).

  fuzz_query     queries as dnspython writes them: EDNS sizes, DO, ECS
                 (IPv4/IPv6, odd prefixes), cookies, NSID, padding, every
                 common type, plus malformed ones from the bad-input tests
  fuzz_update    one mode byte (see fuzz_update.c) + an UPDATE: captured from
                 nsupdate and knsupdate (mode 0: as sent, with their TSIG;
                 mode 1: TSIG stripped, the target signs), and dnspython
                 UPDATEs with prerequisites for the admin key (mode 2)
  fuzz_toml      the example config, the test fixtures, one snippet per syntax
  fuzz_zonefile  zone snippets: directives, many types, errors
  fuzz_update_answer  mode byte 0 or 1 (see fuzz_update_answer.c) + an
                 UPDATE adding many types, delegations, CNAME chains, and the
                 malformed rdata of issue #16
  fuzz_xdp_frame Ethernet frames as the XDP program hands them over: IPv4
                 and IPv6 UDP to port 53 (checksums valid, in the offload
                 form, zero), VLAN tags, IPv4 options and fragments, IPv6
                 extension headers, TCP, ARP, Ethernet padding, cut short

  make_corpus.py [TARGET...]   writes only the named targets' seeds
"""
import base64
import os
import socket
import struct
import subprocess
import sys
import threading

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdatatype
import dns.tsig
import dns.tsigkeyring
import dns.update

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "../.."))
CORPUS = os.path.join(HERE, "corpus")

sys.path.insert(0, os.path.join(HERE, "../integration"))
from harness import header, qname  # noqa: E402  (hand-made messages, as the bad-input tests make them)

ACME_KEY = ("lego.acme.example.net.", "hmac-sha256", b"0123456789abcdef0123456789abcdef")
ADMIN_KEY = ("admin.", "hmac-sha512",
             b"admin-secret-for-fuzzing-only-0123456789abcdef0123456789abcdef!")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- queries ---

def query(name, rdtype="A", payload=1232, edns=True, dnssec=False, options=(), qid=0x1234):
    q = dns.message.make_query(name, rdtype, use_edns=0 if edns else False, want_dnssec=dnssec,
                               payload=payload, options=list(options))
    q.id = qid
    q.flags &= ~dns.flags.RD
    return q.to_wire()


def queries():
    ecs = dns.edns.ECSOption
    cookie = dns.edns.GenericOption(10, bytes(range(8)))
    full_cookie = dns.edns.GenericOption(10, bytes(range(8)) + b"\x01\0\0\0" + b"\x60\0\0\0" + bytes(8))
    seeds = {
        "a_www": query("www.example.com"),
        "a_www_noedns": query("www.example.com", edns=False),
        "aaaa_www_do": query("www.example.com", "AAAA", dnssec=True),
        "soa_apex_do": query("example.com", "SOA", dnssec=True),
        "ns_apex": query("example.com", "NS"),
        "mx_apex_do": query("example.com", "MX", dnssec=True),
        "txt_big_512": query("big.example.com", "TXT", payload=512),
        "txt_big_4096_do": query("big.example.com", "TXT", payload=4096, dnssec=True),
        "txt_big_noedns": query("big.example.com", "TXT", edns=False),
        "cname_chain_do": query("blog.example.com", dnssec=True),
        "cname_loop": query("loop1.example.com"),
        "cname_ext": query("ext.example.com"),
        "nxdomain_do": query("nope.example.com", dnssec=True),
        "nodata_do": query("mail.example.com", "AAAA", dnssec=True),
        "ent_do": query("b.c.example.com", dnssec=True),
        "referral": query("www.sub.example.com"),
        "referral_do": query("sub.example.com", "DS", dnssec=True),
        "ds_secure_do": query("secure.example.com", "DS", dnssec=True),
        "dnskey_do": query("example.com", "DNSKEY", dnssec=True),
        "rrsig_do": query("www.example.com", "RRSIG", dnssec=True),
        "nsec_do": query("example.com", "NSEC", dnssec=True),
        "any_apex": query("example.com", "ANY"),
        "srv": query("_sip._tcp.example.com", "SRV"),
        "https": query("svc.example.com", "HTTPS"),
        "ptr": query("80.2.0.192.in-addr.example.com", "PTR"),
        "child": query("www.child.example.com", dnssec=True),
        "child_ds": query("child.example.com", "DS", dnssec=True),
        "refused": query("www.example.org"),
        "geo_a": query("geo.example.com"),
        "geo_aaaa_do": query("geo.example.com", "AAAA", dnssec=True),
        "geo_any": query("geo.example.com", "ANY"),
        "geo_apex_a": query("example.com", "A", dnssec=True),
        "geo_eu_a": query("eu.example.com"),
        "geo_ecs_v4": query("geo.example.com", options=[ecs("192.0.2.0", 24)]),
        "geo_ecs_v4_32_do": query("geo.example.com", dnssec=True, options=[ecs("203.0.113.5", 32)]),
        "geo_ecs_v6": query("geo.example.com", "AAAA", options=[ecs("2001:db8:2::", 48)]),
        "geo_ecs_v6_128": query("geo.example.com", options=[ecs("2001:db8:10:300::1", 128)]),
        "geo_ecs_zero": query("geo.example.com", options=[ecs("0.0.0.0", 0)]),
        "geo_ecs_odd_prefix": query("geo.example.com", options=[ecs("198.51.100.0", 17)]),
        "static_ecs": query("www.example.com", options=[ecs("192.0.2.0", 24)]),
        "cookie_client": query("www.example.com", options=[cookie]),
        "cookie_full": query("www.example.com", options=[full_cookie]),
        "cookie_bad_len": query("www.example.com", options=[dns.edns.GenericOption(10, b"\1\2\3")]),
        "nsid": query("www.example.com", options=[dns.edns.GenericOption(3, b"")]),
        "padding": query("www.example.com", options=[dns.edns.GenericOption(12, bytes(32))]),
        "ecs_and_cookie_do": query("geo.example.com", dnssec=True,
                                   options=[ecs("192.0.2.64", 26), cookie]),
        "unknown_option": query("www.example.com", options=[dns.edns.GenericOption(65001, b"xyz")]),
        "axfr": query("example.com", "AXFR"),
        "ixfr": query("example.com", "IXFR"),
        "type0": query("example.com", 0),
        "class_ch": dns.message.make_query("version.bind", "TXT", "CH").to_wire(),
        "mixed_case": query("WwW.ExAmPlE.cOm", dnssec=True),
    }
    v1 = dns.message.make_query("www.example.com", "A", use_edns=1)
    seeds["edns_version1"] = v1.to_wire()
    notify = dns.message.make_query("example.com", "SOA")
    notify.set_opcode(dns.opcode.NOTIFY)
    seeds["notify"] = notify.to_wire()
    # Malformed, as in tests/integration/test_core.py BadInput.
    seeds["bad_truncated_question"] = header() + qname("example.com")[:5]
    seeds["bad_qdcount2"] = header(qd=2) + qname("example.com") + b"\0\1\0\1"
    seeds["bad_compression_loop"] = header() + b"\xc0\x0c\0\1\0\1"
    seeds["bad_forward_pointer"] = header() + b"\x03www\xc0\x20\0\1\0\1"
    seeds["bad_label_type"] = header() + bytes([0x40]) + b"a" * 10 + b"\0\0\1\0\1"
    seeds["bad_two_opt"] = (header(ar=2) + qname("example.com") + b"\0\1\0\1" +
                            b"\0\0\x29\x04\xd0\0\0\0\0\0\0" * 2)
    seeds["bad_trailing"] = header() + qname("example.com") + b"\0\1\0\1junk"
    seeds["bad_ecs_family"] = (header(ar=1) + qname("geo.example.com") + b"\0\1\0\1" +
                               b"\0\0\x29\x04\xd0\0\0\0\0\0\x08" + b"\0\x08\0\x04\0\x07\x18\0")
    seeds["response_bit"] = header(flags=0x8000) + qname("example.com") + b"\0\1\0\1"
    # RFC 6891 order (issue #27.2, tests/golden/cases/edns_*.case): an OPT
    # behind a question count of 0 or 2, version 1 with malformed options.
    def opt(version=0, options=b""):
        return b"\0\0\x29\x04\xd0\0" + bytes([version]) + b"\0\0" + \
            len(options).to_bytes(2, "big") + options
    question = qname("www.example.com") + b"\0\1\0\1"
    bad_ecs = b"\0\x08\0\x07\0\x01\x18\x08\xc0\0\x02"     # scope 8 in a query
    bad_cookie = b"\0\x0a\0\x05abcde"
    seeds["edns_qdcount0_opt"] = header(qd=0, ar=1) + opt()
    seeds["edns_qdcount2_opt"] = header(qd=2, ar=1) + question * 2 + opt()
    seeds["edns_v1_qdcount0"] = header(qd=0, ar=1) + opt(1)
    seeds["edns_v1_bad_ecs"] = header(ar=1) + question + opt(1, bad_ecs)
    seeds["edns_v1_bad_cookie"] = header(ar=1) + question + opt(1, bad_cookie)
    seeds["edns_option_framing"] = header(ar=1) + question + opt(0, b"\0\x0a\0\x20ab")
    seeds["edns_v1_option_framing"] = header(ar=1) + question + opt(1, b"\0\x0a\0\x20ab")
    seeds["tsig_query_unknown_key"] = signed_query()
    for name, data in seeds.items():
        put("fuzz_query", name, data)


def signed_query():
    q = dns.message.make_query("www.example.com", "A")
    keyring = dns.tsigkeyring.from_text({"unknown.": base64.b64encode(b"secret").decode()})
    q.use_tsig(keyring, keyname="unknown.", algorithm=dns.tsig.HMAC_SHA256)
    return q.to_wire()


# --- updates ---

def strip_tsig(wire):
    """The message without its last record (the TSIG), ARCOUNT one lower."""
    qd, an, ns, ar = struct.unpack("!HHHH", wire[4:12])
    pos = 12

    def skip_name(p):
        while True:
            c = wire[p]
            if c & 0xC0 == 0xC0:
                return p + 2
            if c == 0:
                return p + 1
            p += c + 1

    for _ in range(qd):
        pos = skip_name(pos) + 4
    last = pos
    for _ in range(an + ns + ar):
        last = pos
        pos = skip_name(pos)
        rdlen = struct.unpack("!H", wire[pos + 8:pos + 10])[0]
        pos += 10 + rdlen
    out = bytearray(wire[:last])
    out[10:12] = struct.pack("!H", ar - 1)
    return bytes(out)


class Catcher:
    """A UDP port that keeps the first datagram and answers NOERROR."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(10)
        self.port = self.sock.getsockname()[1]
        self.got = []
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            data, peer = self.sock.recvfrom(65535)
        except socket.timeout:
            return
        self.got.append(data)
        reply = bytearray(data[:12])
        reply[2] |= 0x80
        reply[3] = 0
        reply[6:12] = b"\0" * 6
        self.sock.sendto(bytes(reply[:4]) + b"\0\0" * 4, peer)

    def close(self):
        self.thread.join(12)
        self.sock.close()
        return self.got[0] if self.got else None


def capture(tool, commands):
    c = Catcher()
    name, alg, secret = ACME_KEY
    key = "%s:%s:%s" % (alg, name, base64.b64encode(secret).decode())
    script = "server 127.0.0.1 %d\n%s\nsend\n" % (c.port, commands)
    if tool == "knsupdate":
        script += "quit\n"
    subprocess.run([tool, "-y", key], input=script, text=True, capture_output=True, timeout=20)
    return c.close()


def updates():
    z = "zone acme.example.net\n"
    captured = {
        "nsupdate_add_txt": ("nsupdate", z + "update add _acme-challenge.acme.example.net. 60 TXT \"token-abc\""),
        "nsupdate_del_txt": ("nsupdate", z + "update delete _acme-challenge.acme.example.net. TXT \"seeded\""),
        "nsupdate_del_rrset": ("nsupdate", z + "update delete _acme-challenge.acme.example.net. TXT"),
        "nsupdate_prereq": ("nsupdate", z + "prereq yxdomain _acme-challenge.acme.example.net.\n"
                            "update add _acme-challenge.acme.example.net. 60 TXT \"x\""),
        "knsupdate_add_txt": ("knsupdate", z + "update add _acme-challenge.acme.example.net. 60 TXT \"token-k\""),
        "knsupdate_del_name": ("knsupdate", z + "update delete _acme-challenge.acme.example.net."),
        "nsupdate_refused_apex": ("nsupdate", z + "update add acme.example.net. 60 TXT \"no\""),
    }
    for name, (tool, cmds) in captured.items():
        wire = capture(tool, cmds)
        if wire is None:
            print("warning: %s sent nothing for %s" % (tool, name), file=sys.stderr)
            continue
        put("fuzz_update", name + ".raw", b"\x00" + wire)           # as sent, with its TSIG
        put("fuzz_update", name + ".resign", b"\x01" + strip_tsig(wire))
        put("fuzz_update", name + ".tcp", b"\x05" + strip_tsig(wire))
    put("fuzz_update", "nsupdate_add_txt.badtime", b"\x03" +
        strip_tsig(capture("nsupdate", z + "update add _acme-challenge.acme.example.net. 60 TXT \"t\"")))

    def upd():
        return dns.update.UpdateMessage("acme.example.net")

    admin = {}
    u = upd()
    u.add("www", 300, "A", "192.0.2.2")
    u.add("www", 300, "AAAA", "2001:db8::2")
    admin["add_a_aaaa"] = u
    u = upd()
    u.present("www", "A", "192.0.2.1")
    u.replace("www", 60, "A", "192.0.2.9")
    admin["prereq_value_replace"] = u
    u = upd()
    u.absent("new")
    u.add("new", 60, "CNAME", "www.acme.example.net.")
    admin["absent_add_cname"] = u
    u = upd()
    u.add("@", 60, "MX", "10 mail.acme.example.net.")
    u.add("_sip._tcp", 60, "SRV", "10 60 5060 www.acme.example.net.")
    u.add("@", 60, "CAA", "0 issue \"letsencrypt.org\"")
    admin["mx_srv_caa"] = u
    u = upd()
    u.delete("www")
    admin["delete_name"] = u
    u = upd()
    u.delete("www", "A", "192.0.2.1")
    u.delete("alias", "CNAME")
    admin["delete_rr_and_rrset"] = u
    u = upd()
    u.add("alias", 60, "A", "192.0.2.5")
    admin["data_beside_cname"] = u
    u = upd()
    u.add("@", 60, "SOA", "ns1.example.com. hostmaster.example.com. 999 1 1 1 1")
    admin["soa_refused"] = u
    u = upd()
    u.add("@", 60, "NS", "ns3.example.com.")
    u.delete("@", "NS", "ns1.example.com.")
    admin["apex_ns"] = u
    u = upd()
    u.add("sub", 60, "NS", "ns.sub.acme.example.net.")
    u.add("ns.sub", 60, "A", "192.0.2.99")
    admin["delegation_glue"] = u
    u = upd()
    u.add("svc", 60, "HTTPS", "1 . alpn=\"h2\"")
    u.add("x", 60, "TYPE65280", "\\# 4 01020304")
    admin["https_and_unknown"] = u
    u = upd()
    u.add("outside.example.org.", 60, "A", "192.0.2.1")
    admin["notzone"] = u
    for name, msg in admin.items():
        put("fuzz_update", "admin_" + name, b"\x02" + msg.to_wire())
    u = upd()
    u.add("_acme-challenge", 60, "TXT", "\"" + "a" * 255 + "\"")
    put("fuzz_update", "acme_txt_255", b"\x01" + u.to_wire())
    u = dns.update.UpdateMessage("example.com")
    u.add("www", 60, "A", "192.0.2.9")
    put("fuzz_update", "static_zone_update", b"\x01" + u.to_wire())
    q = dns.message.make_query("acme.example.net", "SOA", use_edns=0, want_dnssec=True)
    put("fuzz_update", "signed_query_soa", b"\x01" + q.to_wire())
    put("fuzz_update", "signed_query_soa_tcp", b"\x06" + q.to_wire())
    put("fuzz_update", "unsigned_update", b"\x00" + upd().to_wire())


# --- what accepted updates make the server answer ---

def raw_update(records, qid=0x5151):
    """An UPDATE of acme.example.net adding (owner, type, rdata bytes): any rdata at all."""
    wire = struct.pack("!HHHHHH", qid, 5 << 11, 1, 0, len(records), 0)
    wire += qname("acme.example.net") + struct.pack("!HH", 6, 1)
    for owner, rtype, rd in records:
        wire += qname(owner) + struct.pack("!HHIH", rtype, 1, 300, len(rd)) + rd
    return wire


def update_answers():
    """fuzz_update_answer: mode 0 (signed by the target with the admin key, UDP), 1 (TCP)."""
    def upd():
        return dns.update.UpdateMessage("acme.example.net")

    seeds = {}
    u = upd()
    u.add("alias2", 60, "CNAME", "www.acme.example.net.")
    u.add("chain", 60, "CNAME", "alias2.acme.example.net.")
    seeds["cname_chain"] = u
    u = upd()
    u.add("mail2", 60, "MX", "20 mx2.acme.example.net.")
    u.add("mx2", 60, "A", "192.0.2.26")
    u.add("ptr", 60, "PTR", "www.acme.example.net.")
    seeds["mx_ptr"] = u
    u = upd()
    u.add("deleg", 60, "NS", "ns.deleg.acme.example.net.")
    u.add("ns.deleg", 60, "A", "192.0.2.98")
    u.add("deleg", 60, "DS", "1234 13 2 "
          "D4B7D520E7BB5F0F67674A0CCEB1E3E0614B93C4F9E99B8383F6A1E4469DA50A")
    seeds["delegation_ds_glue"] = u
    u = upd()
    u.add("caa", 60, "CAA", '0 issue "letsencrypt.org"')
    u.add("caa", 60, "CAA", '128 iodef "mailto:x@example.com"')
    u.add("_sip._tcp", 60, "SRV", "10 60 5060 www.acme.example.net.")
    seeds["caa_srv"] = u
    u = upd()
    u.add("svc", 60, "HTTPS", '1 . alpn="h2,h3" port=8443 ipv4hint=192.0.2.1')
    u.add("svc2", 60, "SVCB", "0 svc.acme.example.net.")
    u.add("x", 60, "TYPE65280", "\\# 4 01020304")
    seeds["svcb_and_unknown"] = u
    u = upd()
    u.add("fp", 60, "SSHFP", "4 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF")
    u.add("_443._tcp", 60, "TLSA", "3 1 1 "
          "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF")
    u.add("n", 60, "NAPTR", '100 10 "U" "E2U+sip" "!^.*$!sip:i@example.com!" .')
    u.add("loc", 60, "LOC", "52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m")
    u.add("uri", 60, "URI", '10 1 "https://example.com/"')
    u.add("hi", 60, "HINFO", '"x86" "linux"')
    seeds["opaque_types"] = u
    u = upd()
    u.present("@", "DNSKEY")
    u.add("_acme-challenge", 60, "TXT", '"after a DNSSEC prerequisite"')
    seeds["prereq_dnskey"] = u
    u = upd()
    u.delete("www")
    u.delete("alias", "CNAME")
    seeds["delete_target_of_cname"] = u
    u = upd()
    u.add("a.b.c.d", 60, "TXT", '"below empty non-terminals"')
    seeds["ent"] = u
    for name, msg in seeds.items():
        msg.id = 0x1111
        put("fuzz_update_answer", name, b"\x00" + msg.to_wire())
        # Another ID: the same signed bytes twice would be a replay (core/tsig/replay.h).
        msg.id = 0x2222
        put("fuzz_update_answer", name + ".tcp", b"\x01" + msg.to_wire())
    # The malformed rdata of issue #16 (also in regressions/, named for the bug).
    bad = {
        "empty_cname": [("e.acme.example.net", 5, b"")],
        "empty_ds": [("child.acme.example.net", 43, b"")],
        "caa_one_byte": [("caa.acme.example.net", 257, b"\x00")],
        "star_label_inside": [("x.*.acme.example.net", 16, b"\x01w")],
        "dname": [("d.acme.example.net", 39, qname("example.org"))],
    }
    for name, records in bad.items():
        put("fuzz_update_answer", "bad_" + name, b"\x00" + raw_update(records))


# --- config and zone files ---

TOML_SNIPPETS = {
    "listen_minimal": 'listen_addrs_ipv4 = ["127.0.0.1"]\nlisten_port = 0\n',
    "types": 'a = "s\\u00e9\\t"\nb = \'lit\'\nc = 0x1F\nd = 0o17\ne = 0b101\nf = -1_000\n'
             'g = 1.5e3\nh = inf\ni = nan\nj = true\nk = [1, "two", [3.0], {x = 1},]\n',
    "tables": '[a]\nx = 1\n[a.b]\ny = 2\n[[c]]\nz = 3\n[[c]]\nz = 4\n[c.d]\nw = 5\nq.r.s = 6\n',
    "inline": 'p = { a = 1, b = { c = [1, 2] } }\n',
    "multiline_array": 'a = [\n  1, # one\n  2,\n]\n',
    "errors": 'a = \nb = "unterminated\n[c\nd = 1979-05-27\ne = """x"""\nf = 1__2\n',
    "duplicate": 'a = 1\na = 2\n[t]\n[t]\n',
    "server": 'listen_addrs_ipv4 = ["127.0.0.1"]\n[server]\nudp_max_size = 4096\n'
              'tcp_max_connections = 20\nrrl_rate = 5\nrrl_slip = 2\ncookies = false\n',
    "zone_file": 'listen_addrs_ipv4 = ["127.0.0.1"]\n[[zones]]\nzone = "example.com"\n'
                 'file = "example.com.zone"\n',
    "zone_sqlite": 'listen_addrs_ipv4 = ["127.0.0.1"]\n[[zones]]\nzone = "acme.example.net"\n'
                   '[zones.stores]\ntype = "sqlite"\njournal_path = "a.sqlite"\n'
                   'zone_path = "example.com.zone"\nallow_update = true\n'
                   '[[zones.stores.tsig_keys]]\nname = "k."\nalgorithm = "hmac-sha256"\n'
                   'key_file = "tsig.key"\n[[zones.stores.tsig_keys]]\nname = "w."\n'
                   'algorithm = "hmac-sha1"\nsecret = "c2VjcmV0"\nallow_types = ["TXT", "TYPE99"]\n'
                   'allow_names = ["_acme-challenge", "x.acme.example.net."]\n',
    "world_readable_key": 'listen_addrs_ipv4 = ["127.0.0.1"]\n[[zones]]\nzone = "a"\n'
                          '[zones.stores]\ntype = "sqlite"\njournal_path = "a.sqlite"\n'
                          '[[zones.stores.tsig_keys]]\nname = "k."\nalgorithm = "hmac-sha256"\n'
                          'key_file = "world.key"\n',
    "durations": 'listen_addrs_ipv4 = ["127.0.0.1"]\ntcp_request_timeout = "500ms"\n[dnssec]\n'
                 'signature_validity = "14d"\nsignature_inception = "1h"\nsignature_refresh = "7d"\n',
    "geo": 'listen_addrs_ipv4 = ["127.0.0.1"]\ndirectory = "sub"\n[geo]\ndatabases = ["a.mmdb"]\n'
           'default_location = [48.8, 2.3]\nlookup_path = ""\n[[sites]]\nname = "p"\n'
           'ipv4 = "192.0.2.1"\nlatitude = 48\nlongitude = 2\n[sites.health]\nport = 80\n'
           'http_path = "/"\ninterval = "1s"\ntimeout = "2s"\n'
           '[[zones]]\nzone = "example.com"\nfile = "example.com.zone"\n[[zones.geo]]\nname = "www"\n'
           'sites = ["p", "q"]\nratio = 2\n',
    "typo": 'listen_prot = 53\nlog_level = "verbose"\nuser = 7\n',
}

ZONE_SNIPPETS = {
    "minimal": "$ORIGIN example.com.\n$TTL 3600\n@ IN SOA ns1 hm 1 7200 3600 1209600 300\n@ IN NS ns1\nns1 IN A 192.0.2.1\n",
    "types": "$ORIGIN example.com.\n$TTL 300\n@ SOA ns1 hm 1 2 3 4 5\n@ NS ns1\nns1 A 192.0.2.1\n"
             "ns1 AAAA 2001:db8::1\n@ MX 10 mail\nmail A 192.0.2.2\n@ TXT \"a\" \"b c\"\n"
             "@ CAA 0 issue \"ca.example\"\n_s._tcp SRV 1 2 3 t\nt CNAME www\nwww A 192.0.2.3\n"
             "svc HTTPS 1 . alpn=\"h2,h3\" port=8443\nsvc2 SVCB 0 svc\nptr PTR www\n"
             "sub NS ns.sub\nns.sub A 192.0.2.4\nsub DS 1 13 2 "
             "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\n"
             "sshfp SSHFP 4 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\n"
             "tlsa._tcp TLSA 3 1 1 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\n"
             "x TYPE65280 \\# 3 010203\nloc LOC 52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m\n",
    "relative_and_parens": "$ORIGIN example.com.\n@ 3600 IN SOA ( ns1.example.com. hm.example.com.\n"
                           " 1 ; serial\n 7200 3600 1209600 300 )\n  IN NS ns1\nns1 IN A 192.0.2.1\n",
    "errors": "$ORIGIN example.com.\n@ IN SOA ns1 hm 1 2 3 4 5\nbad IN A not-an-address\n"
              "x IN MX x\nout.example.org. IN A 192.0.2.1\ny IN RRSIG A 13 2 300 1 2 3 example.com. AA==\n"
              "$INCLUDE /etc/passwd\nz CH A 192.0.2.1\n",
    "no_soa": "$ORIGIN example.com.\nwww IN A 192.0.2.1\n",
    "cname_and_data": "$ORIGIN example.com.\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nc CNAME ns\nc A 192.0.2.2\n",
    "wildcard": "$ORIGIN example.com.\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n* A 192.0.2.9\n",
    "ttl_mixed": "$ORIGIN example.com.\n$TTL 1h\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns 60 A 192.0.2.1\nns 120 A 192.0.2.2\n",
    "long_names": "$ORIGIN example.com.\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n" +
                  ".".join(["a" * 63] * 3) + " A 192.0.2.1\n",
    "escapes": "$ORIGIN example.com.\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n"
               "a\\.b\\032c TXT \"q\\\"uote\\255\"\n",
}


def configs():
    put("fuzz_toml", "config_example", open(os.path.join(REPO, "config.toml.example"), "rb").read())
    fx = os.path.join(REPO, "tests/fixtures/config")
    for f in sorted(os.listdir(fx)):
        if f.endswith(".toml"):
            put("fuzz_toml", "fixture_" + f[:-5], open(os.path.join(fx, f), "rb").read())
    for name, text in TOML_SNIPPETS.items():
        put("fuzz_toml", name, text.encode())


def zones():
    demo = os.path.join(REPO, "demo")
    for f in sorted(os.listdir(demo)) if os.path.isdir(demo) else []:
        if f == "example.com.zone":
            put("fuzz_zonefile", "demo_" + f, open(os.path.join(demo, f), "rb").read())
    for name, text in ZONE_SNIPPETS.items():
        put("fuzz_zonefile", name, text.encode())
        # Odd length: unsigned; even: signed.  Add one space to get the other.
        put("fuzz_zonefile", name + "_other", (text + " ").encode())


# --- frames (fuzz_xdp_frame) ---

def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def frame(v6=False, payload=None, sport=40000, dport=53, proto=17, udp_sum="valid", ethertype=None,
          ihl=5, frag=0, pad=0):
    """An Ethernet frame carrying UDP (or proto) from the client to the server."""
    payload = payload if payload is not None else query("www.example.com")
    eth = bytes.fromhex("020000000001" "020000000002")
    src = bytes(15) + b"\2" if v6 else bytes([192, 0, 2, 2])
    dst = bytes(15) + b"\1" if v6 else bytes([192, 0, 2, 1])
    if v6:
        src = bytes.fromhex("20010db8000000000000000000000002")
        dst = bytes.fromhex("20010db8000000000000000000000001")
    ulen = 8 + len(payload)
    pseudo = src + dst + struct.pack("!HH", proto, ulen) if not v6 else src + dst + struct.pack("!IxxxB", ulen, proto)
    udp = struct.pack("!HHHH", sport, dport, ulen, 0) + payload
    if udp_sum == "valid":
        c = 0xffff - csum(pseudo + udp)
        udp = udp[:6] + struct.pack("!H", c or 0xffff) + udp[8:]
    elif udp_sum == "partial":
        udp = udp[:6] + struct.pack("!H", csum(pseudo)) + udp[8:]
    elif udp_sum == "wrong":
        udp = udp[:6] + b"\x12\x34" + udp[8:]
    if v6:
        ip = struct.pack("!IHBB", 6 << 28, ulen, proto, 64) + src + dst
        et = 0x86dd
    else:
        opts = bytes(4 * (ihl - 5))
        hdr = struct.pack("!BBHHHBBH", 0x40 | ihl, 0, 4 * ihl + ulen, 1, frag, 64, proto, 0) + src + dst + opts
        hdr = hdr[:10] + struct.pack("!H", 0xffff - csum(hdr)) + hdr[12:]
        ip = hdr
        et = 0x0800
    body = ip + udp
    if ethertype is not None:
        return eth + struct.pack("!HHH", ethertype, 7, et) + body
    return eth + struct.pack("!H", et) + body + bytes(pad)


def frames():
    seeds = {
        "ip4_a": frame(),
        "ip4_partial_sum": frame(udp_sum="partial"),
        "ip4_no_sum": frame(udp_sum="none"),
        "ip4_wrong_sum": frame(udp_sum="wrong"),
        "ip4_padded": frame(payload=b"\x12\x34", pad=20),
        "ip4_options": frame(ihl=6),
        "ip4_fragment": frame(frag=0x2000),
        "ip4_other_port": frame(dport=54),
        "ip4_tcp": frame(proto=6),
        "ip6_aaaa_do": frame(v6=True, payload=query("www.example.com", "AAAA", dnssec=True)),
        "ip6_partial_sum": frame(v6=True, udp_sum="partial"),
        "ip6_zero_sum": frame(v6=True, udp_sum="none"),
        "ip6_ext_header": frame(v6=True, proto=0),
        "vlan": frame(ethertype=0x8100),
        "qinq": frame(ethertype=0x88a8),
        "arp": bytes.fromhex("ffffffffffff020000000002") + b"\x08\x06" + bytes(28),
        "short": frame()[:30],
        "empty_payload": frame(payload=b""),
    }
    for name, data in seeds.items():
        put("fuzz_xdp_frame", name, data)


TARGETS = {"fuzz_query": lambda: queries(), "fuzz_update": lambda: updates(),
           "fuzz_toml": lambda: configs(), "fuzz_zonefile": lambda: zones(),
           "fuzz_update_answer": lambda: update_answers(), "fuzz_xdp_frame": lambda: frames()}


def main():
    """Every target's seeds, or only those named: make_corpus.py [TARGET...]."""
    for name in sys.argv[1:] or TARGETS:
        TARGETS[name]()


if __name__ == "__main__":
    main()
