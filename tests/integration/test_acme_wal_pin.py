# SPDX-License-Identifier: MIT
"""An ACME database's WAL and wal-index stay in memory (issue #26.2,
storage/wal_pin.h).

The loop's COMMIT writes WAL frames in place, and a frame covers part of a
4096-byte block: when the kernel had dropped that block's page, the write
read it back first, on the loop (16-22 ms COMMITs in bench/stall.sh).  The
checkpoint helper now maps the WAL (up to the checkpoint threshold's size)
read-only and locks it with mlock, and locks the wal-index regions where
SQLite mapped them.  Asserted from
/proc/<pid>/smaps, beside exact answers:

- after an UPDATE, a locked mapping of the WAL covers the whole file and
  is resident, and SQLite's own mapping of the -shm file is locked (the
  file is never opened by geoacme itself: closing a descriptor of it would
  drop SQLite's POSIX locks on it);
- a WAL that one large UPDATE grows past the threshold is pinned up to the
  threshold's size only;
- when mlock is refused (no CAP_IPC_LOCK, RLIMIT_MEMLOCK 0), the log says
  so once, nothing is locked, and UPDATEs are acknowledged and served as
  before.
"""
import os
import re
import time
import unittest

import dns.rcode

from acme_helpers import TsigKey, acme_files, acme_zone_toml, seed_zone, serial, signed_update, txt
from harness import BASE_CONFIG, Server, main

KEY = TsigKey("update.pin.example.", "hmac-sha256", b"wal-pin-test-secret-32-bytes!!!!")
ZONE = "pin.example"
PAGE = 4096
FRAME = 4096 + 24      # a WAL frame: its header and one database page (4096 by default)
WAL_HEADER = 32


def round_up(n, unit=PAGE):
    return (n + unit - 1) // unit * unit


def locked_mappings(pid, path):
    """[(size kB, resident kB)] of the process's locked mappings of path
    (VmFlags "lo"): geoacme's own of the WAL, SQLite's of the -shm file."""
    out, vma = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s+(.*)$", line)
            if m:
                vma = {"path": m.group(1).strip()}
                continue
            m = re.match(r"^(Size|Rss):\s+(\d+) kB", line)
            if m:
                vma[m.group(1)] = int(m.group(2))
            elif line.startswith("VmFlags:") and vma["path"] == path and " lo" in line:
                out.append((vma["Size"], vma["Rss"]))
    return out


def server(store="", wrapper=()):
    s = Server(BASE_CONFIG + acme_zone_toml(ZONE, [KEY], store), acme_files(seed_zone(ZONE + "."), [KEY]),
               wrapper=wrapper)
    s.start()
    return s


class Pinned(unittest.TestCase):
    def tearDown(self):
        self.server.cleanup()

    def pins(self):
        """The locked mappings of the WAL and of the -shm file: [(size kB, resident kB)] each."""
        pid = self.server.proc.pid
        return (locked_mappings(pid, self.server.path("acme.sqlite-wal")),
                locked_mappings(pid, self.server.path("acme.sqlite-shm")))

    def wait_for_pin(self, wal_bytes):
        """The pins once the WAL's covers wal_bytes (the helper pins after the commit)."""
        deadline = time.monotonic() + 10
        while True:
            wal, shm = self.pins()
            if wal and wal[0][0] * 1024 >= wal_bytes or time.monotonic() > deadline:
                return wal, shm
            time.sleep(0.05)

    def update(self, add, tcp=False):
        r = signed_update(self.server, ZONE + ".", KEY, add=add, tcp=tcp, timeout=20)
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)

    def test_wal_and_index_locked(self):
        self.server = server()
        self.update([("one." + ZONE + ".", 60, "TXT", '"pinned"')])
        self.assertEqual(txt(self.server, "one." + ZONE + "."), ['"pinned"'])
        self.assertEqual(serial(self.server, ZONE + "."), 2)
        wal_size = os.path.getsize(self.server.path("acme.sqlite-wal"))
        shm_size = os.path.getsize(self.server.path("acme.sqlite-shm"))
        self.assertGreater(wal_size, WAL_HEADER)
        wal, shm = self.wait_for_pin(round_up(wal_size))
        self.assertEqual(wal, [(round_up(wal_size) // 1024,) * 2], "the WAL: [(size kB, resident kB)]")
        # SQLite's own mapping of the -shm file, locked (one mapping per 32 KiB region).
        self.assertEqual((sum(m[0] for m in shm), sum(m[1] for m in shm)), (round_up(shm_size) // 1024,) * 2,
                         "the -shm file: (size kB, resident kB)")
        self.assertFalse(self.server.log_count("not kept in memory"))

    def test_pin_stops_at_the_checkpoint_size(self):
        self.server = server(store="checkpoint_pages = 8\n")
        cap = round_up(WAL_HEADER + 8 * FRAME)
        names = ["n%d.%s." % (i, ZONE) for i in range(200)]
        self.update([(n, 60, "TXT", '"%s"' % ("x" * 200)) for n in names], tcp=True)
        self.assertEqual(serial(self.server, ZONE + "."), 2)
        self.assertEqual(txt(self.server, names[0]), ['"%s"' % ("x" * 200)])
        self.assertEqual(txt(self.server, names[-1]), ['"%s"' % ("x" * 200)])
        wal_size = os.path.getsize(self.server.path("acme.sqlite-wal"))
        self.assertGreater(wal_size, cap, "the UPDATE grew the WAL past the threshold")
        wal, _ = self.wait_for_pin(cap)
        self.assertEqual(wal, [(cap // 1024,) * 2], "pinned up to the threshold's size only")
        # A checkpoint ran (8 pages): the WAL starts over inside the pin.
        self.update([("after." + ZONE + ".", 60, "TXT", '"after"')])
        self.assertEqual(txt(self.server, "after." + ZONE + "."), ['"after"'])
        self.assertEqual(self.pins()[0], [(cap // 1024,) * 2])

    def test_refused_lock_keeps_serving(self):
        # No CAP_IPC_LOCK (root has it: drop it from the bounding set) and
        # no locked memory allowed: mlock fails with EPERM.
        limit = ["prlimit", "--memlock=0:0", "--"]
        drop = ["setpriv", "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock", "--"]
        self.server = server(wrapper=(drop if os.geteuid() == 0 else []) + limit)
        for i in range(3):
            self.update([("r%d.%s." % (i, ZONE), 60, "TXT", '"r%d"' % i)])
            self.assertEqual(txt(self.server, "r%d.%s." % (i, ZONE)), ['"r%d"' % i])
        self.assertEqual(serial(self.server, ZONE + "."), 4)
        self.server.wait_log_count("the WAL is not kept in memory", 1)
        line = [l for l in self.server.log_since_start().splitlines() if "not kept in memory" in l]
        self.assertEqual(len(line), 1, line)
        self.assertIn("RLIMIT_MEMLOCK is 0 KiB", line[0])
        self.assertEqual(self.pins(), ([], []))


if __name__ == "__main__":
    main()
