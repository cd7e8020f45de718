#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The include direction of the module map (HACKING.md / shared/STYLE.md),
checked on every #include line: project headers ("...") and the libraries
(<ldns/...>, <openssl/...>, <sqlite3.h>, <maxminddb.h>).

Top level, each module's allowed dependencies (as strict as today's tree
allows; the map allows a little more, noted where it does):
    cmd     -> everything
    acme    -> storage; core/wire, core/conf, core/tsig, core/net, core/zone,
               core/hooks.h, core/test_hooks.h  (the map also allows dnssec:
               unused today)
    xfr     -> storage; core/wire, core/conf, core/tsig, core/net, core/zone,
               core/hooks.h, core/test_hooks.h  (acme and xfr are siblings: neither includes
               the other; cmd wires them together)
    dnssec  -> core/wire, core/conf, core/tsig, core/net, core/zone, core/hooks.h,
               core/test_hooks.h
               (tsig and net: the key rollover asks the parent for the DS
               and pushes it by UPDATE through the loop, dnssec/rollover.c)
    storage -> core/wire, core/conf  (one exception, EXCEPTIONS below)
    core    -> core only
Inside core the sub-folders are layers, lowest first, and an include may
only point down or sideways within its own folder:
            wire < conf < tsig < net < geo < zone   (core/hooks.h sits with
            zone; core/test_hooks.h includes nothing and sits below wire)
A folder's <folder>_internal.h is included only from that folder.
Libraries: SQLite only in storage/; libmaxminddb only in core/geo/geo_db.c;
OpenSSL in dnssec/, core/tsig/tsig.c, cmd/keygen.c and core/geo/health_tls.c;
ldns in core/ only where it reads presentation format (core/zone/zone_file.c,
core/conf/base64.c).
Exits 1 and names every offending line; prints "N passed, 0 failed" when clean.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOP = {
    "cmd": {"cmd", "acme", "xfr", "dnssec", "storage", "core"},
    "acme": {"acme", "storage", "core"},
    "xfr": {"xfr", "storage", "core"},
    "dnssec": {"dnssec", "core"},
    "storage": {"storage", "core"},
    "core": {"core"},
}
# Which parts of core each outer module may include (cmd: all of it).
CORE_USE = {
    "acme": {"core/wire", "core/conf", "core/tsig", "core/net", "core/zone", "core/hooks.h",
             "core/test_hooks.h"},
    "xfr": {"core/wire", "core/conf", "core/tsig", "core/net", "core/zone", "core/hooks.h",
            "core/test_hooks.h"},
    "dnssec": {"core/wire", "core/conf", "core/tsig", "core/net", "core/zone", "core/hooks.h",
               "core/test_hooks.h"},
    "storage": {"core/wire", "core/conf"},
}
# Arrows today's tree still has that the map does not: each named, with why.
EXCEPTIONS = {
    # Seeding a database from a zone file reads presentation format through
    # core's zone-file reader; moving the reader below storage would undo it.
    ("storage/seed.c", "core/zone/zone_file.h"),
}
CORE_RANK = {"wire": 0, "conf": 1, "tsig": 2, "net": 3, "geo": 4, "zone": 5}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SYSTEM = re.compile(r'^\s*#\s*include\s+<([^>]+)>')
# The libraries, by the first part of their headers' names, and where each may be used:
# a folder (ending in /) or a file.
LIBS = {
    "sqlite3.h": ("SQLite", {"storage/"}),
    "maxminddb.h": ("libmaxminddb", {"core/geo/geo_db.c"}),
    "openssl": ("OpenSSL", {"dnssec/", "core/tsig/tsig.c", "cmd/keygen.c",
                            "core/geo/health_tls.c"}),
    "ldns": ("ldns", {"core/zone/zone_file.c", "core/conf/base64.c"}),
}


def core_rank(path):
    """Rank of a core file or header given as 'core/<sub>/x' or 'core/hooks.h'."""
    parts = path.split("/")
    if path == "core/test_hooks.h":   # includes nothing of ours: usable anywhere
        return -1
    if len(parts) == 2:          # core/hooks.h: the interfaces core calls out through
        return CORE_RANK["zone"]
    return CORE_RANK.get(parts[1])


def core_part(inc):
    """'core/<sub>' for a header in a core sub-folder, else the header itself."""
    parts = inc.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else inc


def check_system(src, inc):
    """Returns a complaint, or None when src may include library header <inc>."""
    lib = LIBS.get(inc.split("/")[0])
    if not lib:
        return None
    name, where = lib
    if any(src == w or (w.endswith("/") and src.startswith(w)) for w in where):
        return None
    return f"<{inc}>: {name} is used only in {', '.join(sorted(where))}"


def check(src, inc):
    """Returns a complaint, or None when src may include inc."""
    s_top, i_top = src.split("/")[0], inc.split("/")[0]
    if (src, inc) in EXCEPTIONS:
        return None if os.path.exists(os.path.join(ROOT, inc)) else f'"{inc}" does not exist'
    if i_top not in TOP:
        return f'includes "{inc}", which is not a project header folder'
    if i_top not in TOP[s_top]:
        return f"{s_top}/ may not include {i_top}/ (dependencies point down the module map)"
    if i_top == "core" and s_top in CORE_USE and core_part(inc) not in CORE_USE[s_top]:
        return (f"{s_top}/ may not include {core_part(inc)} (it uses only "
                f"{', '.join(sorted(CORE_USE[s_top]))})")
    if os.path.basename(inc).endswith("_internal.h"):
        if os.path.dirname(inc) != os.path.dirname(src):
            return f'"{inc}" is internal to {os.path.dirname(inc)}/'
    if s_top == "core" and i_top == "core":
        rs, ri = core_rank(src), core_rank(inc)
        if rs is None or ri is None:
            return f"core file outside the known layers ({sorted(CORE_RANK)})"
        if ri > rs:
            return (f"core layers point down (wire < conf < tsig < net < geo < zone): "
                    f"{src.split('/')[1] if '/' in src[5:] else 'hooks'} may not include {inc}")
    if not os.path.exists(os.path.join(ROOT, inc)):
        return f'"{inc}" does not exist'
    return None


def self_test():
    """The check itself must be able to fail: known-bad arrows are refused."""
    must_fail = [
        ("core/wire/packet.c", "core/zone/answer.h"),      # up a layer
        ("core/geo/geo_rule.c", "core/hooks.h"),           # hooks sit with zone
        ("core/net/rrl.c", "acme/acme_zone.h"),            # core calls out only through hooks
        ("core/conf/log.c", "core/tsig/tsig.h"),           # tsig sits above conf
        ("core/tsig/tsig.c", "core/net/loop.h"),           # ... and below net
        ("acme/commit.c", "xfr/notify.h"),                 # acme and xfr are siblings
        ("xfr/secondary.c", "acme/commit.h"),
        ("xfr/xfr.c", "acme/acme_internal.h"),             # ... and another folder's internals
        ("xfr/xfr.c", "dnssec/sign.h"),                    # xfr signs nothing
        ("storage/db.c", "dnssec/key.h"),                  # across the module map
        ("core/zone/zone.c", "core/net/net_internal.h"),   # another folder's internals
        ("storage/records.c", "core/zone/zone.h"),         # storage uses wire and conf only
        ("dnssec/sign.c", "core/geo/geo_db.h"),            # dnssec knows no geo
        ("acme/update.c", "core/geo/geo_rule.h"),          # nor does acme
    ]
    must_pass = [
        ("core/zone/process.c", "core/net/rrl.h"),
        ("cmd/serve.c", "acme/acme_zone.h"),
        ("core/net/udp.c", "core/net/net_internal.h"),
        ("storage/seed.c", "core/zone/zone_file.h"),       # the named exception
        ("core/wire/packet.c", "core/test_hooks.h"),
        ("xfr/secondary.c", "core/tsig/tsig.h"),
        ("acme/update.c", "core/zone/recset.h"),
        ("storage/records.c", "core/wire/change.h"),
        ("cmd/runtime.c", "xfr/xfr.h"),
    ]
    errors = [f"self-test: {s} -> {i} was allowed" for s, i in must_fail if not check(s, i)]
    errors += [f"self-test: {s} -> {i} was refused: {check(s, i)}"
               for s, i in must_pass if check(s, i)]
    lib_fail = [("storage/db.c", "openssl/evp.h"), ("acme/update.c", "sqlite3.h"),
                ("acme/commit.c", "openssl/evp.h"),
                ("core/zone/answer.c", "ldns/ldns.h"), ("core/geo/geo_rule.c", "maxminddb.h")]
    lib_pass = [("storage/db.c", "sqlite3.h"), ("dnssec/key.c", "openssl/ec.h"),
                ("core/tsig/tsig.c", "openssl/evp.h"),
                ("core/zone/zone_file.c", "ldns/ldns.h"), ("core/net/udp.c", "sys/socket.h")]
    errors += [f"self-test: {s} -> <{i}> was allowed" for s, i in lib_fail
               if not check_system(s, i)]
    errors += [f"self-test: {s} -> <{i}> was refused" for s, i in lib_pass
               if check_system(s, i)]
    return errors


def main():
    bad = self_test()
    files = 0
    for top in TOP:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                files += 1
                full = os.path.join(dirpath, n)
                src = os.path.relpath(full, ROOT)
                with open(full, encoding="utf-8") as f:
                    for no, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        why = check(src, m.group(1)) if m else None
                        m = SYSTEM.match(line)
                        why = why or (check_system(src, m.group(1)) if m else None)
                        if why:
                            bad.append(f"{src}:{no}: {why}")
    for b in bad:
        print(b)
    print(f"{files - len({b.split(':')[0] for b in bad})} passed, "
          f"{len({b.split(':')[0] for b in bad})} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
