# SPDX-License-Identifier: MIT
"""The ACME zone survives kill -9: an acknowledged UPDATE is never lost,
an UPDATE is never half applied, and the SQLite database stays intact."""
import random
import signal
import sqlite3
import threading
import unittest

import dns.rcode

from acme_helpers import (TsigKey, acme_files, acme_zone_toml, nsupdate, seed_zone, serial, signed_update,
                          txt)
from harness import BASE_CONFIG, Server, main

KEY = TsigKey("update.acme.example.", "hmac-sha256", b"durability-test-secret-32-bytes!")

CONFIG = BASE_CONFIG + acme_zone_toml("acme.example", [KEY])
FILES = acme_files(seed_zone("acme.example."), [KEY])


class Durability(unittest.TestCase):
    def setUp(self):
        self.server = Server(CONFIG, FILES)
        self.server.start()

    def tearDown(self):
        self.server.cleanup()

    def restart(self):
        self.server.start()

    def txt(self, name):
        return txt(self.server, name)

    def serial(self):
        return serial(self.server, "acme.example.")

    def integrity(self):
        db = sqlite3.connect(self.server.path("acme.sqlite"))
        try:
            return (db.execute("PRAGMA integrity_check").fetchone()[0],
                    db.execute("PRAGMA journal_mode").fetchone()[0])
        finally:
            db.close()

    def test_kill9_right_after_ack(self):
        r = nsupdate(self.server, KEY.nsupdate_arg(),
                     ['update add bernat.ch.acme.example. 60 TXT "acknowledged"'], "acme.example.")
        self.assertEqual(r.returncode, 0, r.stderr)
        # The response was received: kill at once, no chance for a clean shutdown.
        self.assertEqual(self.server.kill9(), -signal.SIGKILL)
        self.restart()
        self.assertEqual(self.txt("bernat.ch.acme.example."), ['"acknowledged"'])
        self.assertEqual(self.serial(), 2)
        self.server.stop()
        self.assertEqual(self.integrity(), ("ok", "wal"))

    def test_kill9_during_a_burst(self):
        """Each UPDATE adds a pair of records; after kill -9 every acknowledged
        pair is there, and no pair is there by half."""
        total = 0
        for round_ in range(3):
            acked = []
            sent = []
            stop = threading.Event()
            server = self.server

            # Killed after a random number of acknowledged updates (not after
            # a random time: a loaded machine acknowledges fewer per second),
            # while the burst goes on.
            target = random.randint(6, 40)
            enough = threading.Event()

            def burst(base):
                i = 0
                try:
                    while not stop.is_set():
                        n = base + i
                        sent.append(n)
                        try:
                            r = signed_update(server, "acme.example.", KEY, timeout=3, add=[
                                ("%s%d.pairs.acme.example." % (ab, n), 60, "TXT", '"pair %d"' % n)
                                for ab in "ab"])
                        except Exception:
                            return
                        if r.rcode() == dns.rcode.NOERROR:
                            acked.append(n)
                        if len(acked) >= target:
                            enough.set()
                        i += 1
                finally:
                    enough.set()

            t = threading.Thread(target=burst, args=(round_ * 100000,))
            t.start()
            enough.wait(120)
            self.server.kill9()
            stop.set()
            t.join(15)
            self.assertGreaterEqual(len(acked), target, "round %d: the burst made progress" % round_)
            self.restart()
            for n in sent:
                a = self.txt("a%d.pairs.acme.example." % n)
                b = self.txt("b%d.pairs.acme.example." % n)
                self.assertEqual(a, b, "round %d: update %d applied by half" % (round_, n))
                if n in acked:
                    self.assertEqual(a, ['"pair %d"' % n],
                                     "round %d: acknowledged update %d lost" % (round_, n))
            # One serial bump per applied UPDATE, counted from the zone file's 1.
            applied = sum(1 for n in sent if self.txt("a%d.pairs.acme.example." % n))
            self.assertGreaterEqual(applied, len(acked))
            self.assertLessEqual(applied, len(acked) + 1)
            total += applied
            self.assertEqual(self.serial(), 1 + total, "round %d: serial" % round_)
            self.server.stop()
            self.assertEqual(self.integrity()[0], "ok", "round %d" % round_)
            self.restart()
        self.assertGreater(total, 15)


if __name__ == "__main__":
    main()
