# SPDX-License-Identifier: MIT
"""A power cut loses no acknowledged UPDATE (issue #27.3).

kill -9 alone cannot show a lost sync: the page cache outlives the process.
So the real geoacme runs with tests/tools/powercut.so preloaded, which logs
every write to the ACME database's files (the database, its -wal and
-journal, and their folder's entries) and every sync that completed (fsync,
fdatasync, and the WAL's fdatasync through Linux AIO that
storage/wal_sync.c submits).  Many concurrent TSIG-signed UPDATE clients
keep group commit busy, and the server is cut (SIGKILL) at a seeded random
point: after the n-th write to the WAL, the n-th write to the database file
(a checkpoint), the n-th AIO sync
submitted (a group commit in flight), the n-th sync completed, or at a
random moment from outside.  replay() then rebuilds the files as the disk
would hold them: every write that no completed sync of its file covers is
thrown away (a folder entry likewise needs a sync of the folder).  geoacme
starts again on those files, and every UPDATE that was answered NOERROR
before the cut must be served.

It fails when a sync or the held reply is missing.  Checked by mutation,
each run with the first 6 rounds of seed 2027 and restored afterwards:
  - storage/wal_sync.c, wal_sync_start() reporting the AIO fdatasync done
    without submitting it: FAILED, "round 0 (wal:120): acknowledged UPDATE
    r0-c1-0.acme.example. lost";
  - acme/commit.c, commit_waiting_zone() always NULL (replies not held for
    the sync): FAILED, "round 0 (wal:120): acknowledged UPDATE
    r0-c4-1.acme.example. lost";
  - storage/wal_sync.c, wal_fd() without its sync_folder(): passes, and
    rightly: the log shows SQLite syncing the folder itself right after it
    first syncs the new WAL's header (its syncHeader, made in NORMAL mode
    too), before any commit is in it, so ours is a second sync of the
    same entry.

The design kept (issue #27.3 asks for the simplest one that passes): the
current one, SQLite with synchronous=NORMAL, the WAL's fdatasync through
Linux AIO off the loop, group commit and replies held until the sync.
synchronous=FULL passes this test too (a COMMIT that returns has synced),
and would be less code, but it syncs inside COMMIT, on the event loop:
issue #26.2 forbids any wait for storage on the loop, and every query of
every zone would wait 1-15 ms per UPDATE (more on a busy disk).  The
UPDATE latency of the kept design is in doc/performance.md.

Set POWERCUT_SEED to replay one seed, POWERCUT_ROUNDS for more rounds.
"""
import os
import random
import struct
import subprocess
import threading
import time
import unittest

import dns.rcode

from acme_helpers import TsigKey, acme_files, acme_zone_toml, seed_zone, signed_update, txt
from harness import BASE_CONFIG, Server, main

LIB = os.environ.get("POWERCUT_LIB")
KEY = TsigKey("update.acme.example.", "hmac-sha256", b"power-cut-test-secret-32-bytes!!")
ZONE = "acme.example."
# Checkpoints every 8 WAL pages: several per round, so cuts land in them.
CONFIG = BASE_CONFIG + acme_zone_toml("acme.example", [KEY], store="checkpoint_pages = 8\n")
FILES = acme_files(seed_zone(ZONE), [KEY])
DB = "acme.sqlite"
CLIENTS = 8

# tests/tools/powercut.c's log.
REC = struct.Struct("=QIIQQ")
W, T, S, C, U, R, A = range(1, 8)
F_DB, F_WAL, F_JOURNAL, F_DIR = range(4)
SUFFIX = {F_DB: "", F_WAL: "-wal", F_JOURNAL: "-journal"}


def read_log(path):
    """The records of a power-cut log, in seq order; a record cut short by
    the kill (the last one) is left out."""
    with open(path, "rb") as f:
        data = f.read()
    recs, pos = [], 0
    while pos + REC.size <= len(data):
        seq, typ, file, arg, n = REC.unpack_from(data, pos)
        if pos + REC.size + n > len(data):
            break
        recs.append((seq, typ, file, arg, data[pos + REC.size:pos + REC.size + n]))
        pos += REC.size + n
    recs.sort()
    return recs


def replay(recs, base):
    """The tracked files as the disk holds them after the cut: base (name ->
    bytes, None when absent) plus every change a completed sync covers.
    Returns (files, dropped writes)."""
    covered = {}
    for seq, typ, file, arg, _ in recs:
        if typ == S:
            covered[file] = max(covered.get(file, 0), arg)
    content = {f: bytearray(base[f] or b"") for f in SUFFIX}
    exists = {f: base[f] is not None for f in SUFFIX}
    dropped = 0
    for seq, typ, file, arg, data in recs:
        if typ in (W, T):
            if seq > covered.get(file, 0):
                dropped += 1
                continue
            buf = content[file]
            if typ == W:
                if len(buf) < arg:
                    buf.extend(bytes(arg - len(buf)))
                buf[arg:arg + len(data)] = data
            else:
                del buf[arg:]
        elif typ in (C, U, R) and seq <= covered.get(F_DIR, 0):
            if typ == C:
                exists[file] = True
            elif typ == U:
                exists[file] = False
                content[file] = bytearray()
            else:
                exists[file], exists[arg] = False, True
                content[arg], content[file] = content[file], bytearray()
    return {f: bytes(content[f]) if exists[f] else None for f in SUFFIX}, dropped


class PowerCut(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not LIB:
            raise AssertionError("POWERCUT_LIB is not set (tests/CMakeLists.txt builds powercut.so)")
        # The files every round starts from: seeded by a clean first start.
        cls.server = Server(CONFIG, FILES)
        cls.server.start()
        cls.server.stop()
        cls.base = {}
        for f, suffix in SUFFIX.items():
            p = cls.server.path(DB + suffix)
            cls.base[f] = open(p, "rb").read() if os.path.exists(p) else None
        cls.env = dict(os.environ, LD_PRELOAD=LIB, POWERCUT_DB=os.path.realpath(cls.server.path(DB)),
                       POWERCUT_LOG=cls.server.path("powercut.log"))

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def restore(self, files):
        for f, suffix in SUFFIX.items():
            p = self.server.path(DB + suffix)
            if os.path.exists(p):
                os.unlink(p)
            if files[f] is not None:
                with open(p, "wb") as out:
                    out.write(files[f])
        shm = self.server.path(DB + "-shm")
        if os.path.exists(shm):
            os.unlink(shm)   # rebuilt from the WAL, as after a real crash

    def clients(self, round_, stop):
        """CLIENTS threads sending UPDATEs until the server is gone; returns
        (threads, acknowledged names)."""
        acked = []

        def client(c):
            i = 0
            while not stop.is_set():
                name = "r%d-c%d-%d.%s" % (round_, c, i, ZONE)
                i += 1
                try:
                    r = signed_update(self.server, ZONE, KEY, add=[(name, 60, "TXT", '"%d"' % i)],
                                      timeout=1)
                except Exception:
                    continue   # timed out: the server is gone or the reply lost
                if r.rcode() == dns.rcode.NOERROR:
                    acked.append(name)

        threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
        for t in threads:
            t.start()
        return threads, acked

    def one_round(self, round_, rng):
        kind = rng.choice(["wal", "wal", "db", "db", "submit", "sync", "time"])
        n = {"wal": rng.randint(2, 120), "db": rng.randint(1, 60), "submit": rng.randint(3, 40),
             "sync": rng.randint(4, 60), "time": 0}[kind]
        cut = "%s:%d" % (kind, n) if n else "time"
        self.restore(self.base)
        env = dict(self.env)
        if n:
            env["POWERCUT_KILL"] = cut
        self.server.env = env
        self.server.start()
        stop = threading.Event()
        threads, acked = self.clients(round_, stop)
        proc = self.server.proc
        try:
            if n:
                proc.wait(20)   # it kills itself at the chosen event
            else:
                time.sleep(rng.uniform(0.05, 1.0))
        except subprocess.TimeoutExpired:
            pass                # the event never came: cut now
        self.server.kill9()
        stop.set()
        for t in threads:
            t.join()
        acked = list(acked)
        files, dropped = replay(read_log(self.server.path("powercut.log")), self.base)
        self.restore(files)
        self.server.env = None
        self.server.start()
        try:
            for name in acked:
                self.assertEqual(txt(self.server, name), [_quoted(name)],
                                 "round %d (%s): acknowledged UPDATE %s lost" % (round_, cut, name))
        finally:
            self.server.stop()
        return cut, len(acked), dropped

    def test_power_cuts(self):
        seed = int(os.environ.get("POWERCUT_SEED", "2027"))
        rounds = int(os.environ.get("POWERCUT_ROUNDS", "32"))
        rng = random.Random(seed)
        total = 0
        for round_ in range(rounds):
            cut, acked, dropped = self.one_round(round_, rng)
            total += acked
            print("round %d (seed %d): cut at %s, %d acknowledged, %d unsynced writes dropped"
                  % (round_, seed, cut, acked, dropped), flush=True)
        self.assertGreater(total, rounds, "the clients made progress")


def _quoted(name):
    """The TXT value the client of `name` sent: its sequence number + 1."""
    return '"%d"' % (int(name.split(".")[0].rsplit("-", 1)[1]) + 1)


if __name__ == "__main__":
    main()
