#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The include direction of shared/STYLE.md, checked on every #include "..." line.

Top level:  cmd -> anything;  acme -> storage, core;  dnssec -> core;
            storage -> core;  core -> core only.
Inside core the sub-folders are layers, lowest first, and an include may
only point down or sideways within its own folder:
            wire < conf < net < geo < zone   (core/hooks.h sits with zone)
A folder's <folder>_internal.h is included only from that folder.
Exits 1 and names every offending line; prints "N passed, 0 failed" when clean.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOP = {
    "cmd": {"cmd", "acme", "dnssec", "storage", "core"},
    "acme": {"acme", "storage", "core"},
    "dnssec": {"dnssec", "core"},
    "storage": {"storage", "core"},
    "core": {"core"},
}
CORE_RANK = {"wire": 0, "conf": 1, "net": 2, "geo": 3, "zone": 4}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def core_rank(path):
    """Rank of a core file or header given as 'core/<sub>/x' or 'core/hooks.h'."""
    parts = path.split("/")
    if len(parts) == 2:          # core/hooks.h: the interfaces core calls out through
        return CORE_RANK["zone"]
    return CORE_RANK.get(parts[1])


def check(src, inc):
    """Returns a complaint, or None when src may include inc."""
    s_top, i_top = src.split("/")[0], inc.split("/")[0]
    if i_top not in TOP:
        return f'includes "{inc}", which is not a project header folder'
    if i_top not in TOP[s_top]:
        return f"{s_top}/ may not include {i_top}/ (dependencies point down the module map)"
    if os.path.basename(inc).endswith("_internal.h"):
        if os.path.dirname(inc) != os.path.dirname(src):
            return f'"{inc}" is internal to {os.path.dirname(inc)}/'
    if s_top == "core" and i_top == "core":
        rs, ri = core_rank(src), core_rank(inc)
        if rs is None or ri is None:
            return f"core file outside the known layers ({sorted(CORE_RANK)})"
        if ri > rs:
            return (f"core layers point down (wire < conf < net < geo < zone): "
                    f"{src.split('/')[1] if '/' in src[5:] else 'hooks'} may not include {inc}")
    if not os.path.exists(os.path.join(ROOT, inc)):
        return f'"{inc}" does not exist'
    return None


def self_test():
    """The check itself must be able to fail: known-bad arrows are refused."""
    must_fail = [
        ("core/wire/packet.c", "core/zone/answer.h"),      # up a layer
        ("core/geo/geo_rule.c", "core/hooks.h"),           # hooks sit with zone
        ("core/net/rrl.c", "acme/tsig.h"),                 # core calls out only through hooks
        ("storage/db.c", "dnssec/key.h"),                  # across the module map
        ("core/zone/zone.c", "core/net/net_internal.h"),   # another folder's internals
    ]
    must_pass = [
        ("core/zone/process.c", "core/net/rrl.h"),
        ("cmd/serve.c", "acme/acme_zone.h"),
        ("core/net/udp.c", "core/net/net_internal.h"),
    ]
    errors = [f"self-test: {s} -> {i} was allowed" for s, i in must_fail if not check(s, i)]
    errors += [f"self-test: {s} -> {i} was refused: {check(s, i)}"
               for s, i in must_pass if check(s, i)]
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
                        if m:
                            why = check(src, m.group(1))
                            if why:
                                bad.append(f"{src}:{no}: {why}")
    for b in bad:
        print(b)
    print(f"{files - len({b.split(':')[0] for b in bad})} passed, "
          f"{len({b.split(':')[0] for b in bad})} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
