# SPDX-License-Identifier: MIT
"""Backing up a live ACME database with the sqlite3 CLI, as doc/operations.md
says ("Backing it up", "Restoring a backup").

While UPDATE clients keep committing to the signed zone,
`sqlite3 db "VACUUM INTO 'file'"` (the documented method) and
`sqlite3 db ".backup file"` copy the database; the copy is restored into a
fresh server (stopped, files replaced, started), which serves every record
whose UPDATE was acknowledged before the backup started, and no UPDATE by
half, and whose zone, transferred whole, ldns-verify-zone accepts.

It can fail: the same test with `cp acme.sqlite` as the backup loses the
acknowledged records that were still only in the -wal file (checked by
hand: "acknowledged before the backup, missing in it").
"""
import os
import shutil
import subprocess
import threading
import time
import unittest

import dns.rcode

from acme_helpers import TsigKey, acme_files, acme_zone_toml, seed_zone, signed_update, txt
from harness import BASE_CONFIG, Server, main, make_key

KEY = TsigKey("update.acme.example.", "hmac-sha256", b"backup-test-secret-32-bytes-long")
ZONE = "acme.example."
# Signed, and transferable so that the restored zone can be verified whole.
CONFIG = BASE_CONFIG + acme_zone_toml("acme.example", [KEY], signing_key="acme.pem").replace(
    'zone_type = "Primary"\n', 'zone_type = "Primary"\naxfr_policy = "AllowAll"\n', 1)
FILES = acme_files(seed_zone(ZONE), [KEY])


def signed_server():
    server = Server(CONFIG, FILES)
    make_key(server.path("acme.pem"))
    return server


class Backup(unittest.TestCase):
    def setUp(self):
        self.server = signed_server()
        self.server.start()

    def tearDown(self):
        self.server.cleanup()

    def still_serving(self):
        """Fails, rather than waiting for acknowledgements forever, when the
        server died (it once did: SIGBUS, its wal-index reset by the
        sqlite3 shell after the server had dropped its own locks on it)."""
        self.assertTrue(self.server.alive(), "the server died:\n" + self.server.log_since_start()[-2000:])

    def backup_while_updating(self, command):
        """Clients update until a while after the backup; returns (names
        acknowledged before the backup started, every name sent)."""
        acked, sent = [], []
        stop = threading.Event()
        lock = threading.Lock()

        def client(c):
            i = 0
            while not stop.is_set():
                name = "b-c%d-%d.%s" % (c, i, ZONE)
                i += 1
                with lock:
                    sent.append(name)
                try:
                    r = signed_update(self.server, ZONE, KEY, timeout=3, add=[
                        ("a." + name, 60, "TXT", '"%s"' % name), ("b." + name, 60, "TXT", '"%s"' % name)])
                except Exception:   # noqa: BLE001 - a lost reply: not acknowledged
                    continue
                if r.rcode() == dns.rcode.NOERROR:
                    with lock:
                        acked.append(name)

        threads = [threading.Thread(target=client, args=(c,)) for c in range(4)]
        for t in threads:
            t.start()
        try:
            while True:   # some history first, and some of it still in the WAL
                with lock:
                    if len(acked) >= 40:
                        before = list(acked)
                        break
                self.still_serving()
                time.sleep(0.01)
            out = subprocess.run(["sqlite3", self.server.path("acme.sqlite"), command],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            while True:   # and UPDATEs after it
                with lock:
                    if len(acked) >= len(before) + 20:
                        break
                self.still_serving()
                time.sleep(0.01)
        finally:
            stop.set()
            for t in threads:
                t.join()
        return before, list(sent)

    def restore_and_check(self, backup, before, sent):
        """doc/operations.md's restore into a fresh server: its files replaced
        by the backup while it is stopped."""
        fresh = Server(CONFIG, FILES)
        shutil.copy(self.server.path("acme.pem"), fresh.path("acme.pem"))   # the same key
        try:
            fresh.start()   # seeds its own database from the zone file
            fresh.stop()
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(fresh.path("acme.sqlite" + suffix)):
                    os.unlink(fresh.path("acme.sqlite" + suffix))
            shutil.copy(backup, fresh.path("acme.sqlite"))
            fresh.start()
            for name in before:
                self.assertEqual(txt(fresh, "a." + name), ['"%s"' % name],
                                 "%s: acknowledged before the backup, missing in it" % name)
            for name in sent:
                self.assertEqual(txt(fresh, "a." + name), txt(fresh, "b." + name),
                                 "%s: applied by half" % name)
            self.verify_zone(fresh)
        finally:
            fresh.cleanup()

    def verify_zone(self, server):
        """The restored zone, transferred whole, verifies with ldns-verify-zone:
        every RRset signed, the NSEC chain complete."""
        out = subprocess.run(["kdig", "@127.0.0.1", "-p", str(server.port), "+nocomments",
                              "+nostats", "+noheader", "+noquestion", ZONE, "AXFR"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = [l for l in out.stdout.splitlines() if len(l.split()) > 3]
        soa = [l for l in lines if l.split()[3] == "SOA"][:1]   # first and once
        rest = [l for l in lines if l.split()[3] != "SOA"]
        self.assertTrue(any(l.split()[3] == "RRSIG" for l in rest), "the zone is signed")
        path = server.path("verify.zone")
        with open(path, "w") as f:
            f.write("\n".join(soa + rest) + "\n")
        r = subprocess.run(["ldns-verify-zone", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Zone is verified and complete", r.stdout + r.stderr)

    def test_vacuum_into(self):
        backup = self.server.path("backup-vacuum.sqlite")
        before, sent = self.backup_while_updating("VACUUM INTO '%s'" % backup)
        self.restore_and_check(backup, before, sent)

    def test_dot_backup(self):
        backup = self.server.path("backup-dot.sqlite")
        before, sent = self.backup_while_updating(".backup '%s'" % backup)
        self.restore_and_check(backup, before, sent)


if __name__ == "__main__":
    main()
