# SPDX-License-Identifier: MIT
"""An operator's sqlite3 holding the ACME database stalls nothing (issue #26.2).

An external sqlite3 process takes the write lock (BEGIN EXCLUSIVE) on the
live database.  The UPDATE sent meanwhile waits without blocking the loop
(acme/lockwait.h): queries to both zones (the ACME zone and a zone-file
zone) are answered, exactly, while it waits, before its reply.  When the
lock is released within the bound (2 s) the UPDATE is answered NOERROR
and served; when the lock outlives it, SERVFAIL and absent, and nothing
else changed.  After kill -9 every acknowledged UPDATE is there.  A
reload whose zone-file edit must be committed waits for the lock likewise
(the previous configuration answering), up to its own bound (10 s).

Before the fix (a 2 s busy timeout on the loop) the first test fails: the
queries are answered only after the UPDATE's SERVFAIL.
"""
import signal
import sqlite3
import subprocess
import threading
import unittest

import dns.flags
import dns.rcode
import dns.rdatatype

from acme_helpers import TsigKey, acme_files, acme_zone_toml, seed_zone, serial, signed_update, txt
from harness import BASE_CONFIG, Server, example_zone, main, zone_toml

KEY = TsigKey("update.acme.example.", "hmac-sha256", b"sqlite-lock-test-secret-32-bytes")
ZONE = "acme.example."
CONFIG = BASE_CONFIG + zone_toml() + acme_zone_toml("acme.example", [KEY])
FILES = dict(acme_files(seed_zone(ZONE, extra="www 300 IN A 192.0.2.7\n"), [KEY]),
             **{"example.com.zone": example_zone()})
WAITS = r"update for acme\.example\. waits: .* is locked by another process"


class Lock:
    """`sqlite3 db` holding BEGIN EXCLUSIVE until release()."""

    def __init__(self, path):
        self.p = subprocess.Popen(["sqlite3", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        # The shell prints the marker once its transaction holds the lock.
        self.p.stdin.write("BEGIN EXCLUSIVE;\nSELECT 'locked';\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline().strip()
        if line != "locked":
            raise AssertionError("sqlite3 did not take the lock: %r" % line)

    def release(self):
        out, _ = self.p.communicate("ROLLBACK;\n.quit\n", timeout=10)
        return out


class LockedDatabase(unittest.TestCase):
    """A server with the ACME zone and a zone-file zone, per test."""

    def setUp(self):
        self.server = Server(CONFIG, FILES)
        self.server.start()
        self.db = self.server.path("acme.sqlite")

    def tearDown(self):
        self.server.cleanup()

    def assert_zones_answered(self):
        r = self.server.query("www.acme.example.", "A")
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertEqual([(rr.name.to_text(), rr.ttl, rd.to_text()) for rr in r.answer for rd in rr],
                         [("www.acme.example.", 300, "192.0.2.7")])
        self.assertIn("aa", dns.flags.to_text(r.flags).lower())
        r = self.server.query("ns1.example.com.", "A")
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertEqual([(rr.name.to_text(), rr.ttl, rd.to_text()) for rr in r.answer for rd in rr],
                         [("ns1.example.com.", 3600, "192.0.2.53")])
        r = self.server.query("nothing.acme.example.", "TXT")
        self.assertEqual(r.rcode(), dns.rcode.NXDOMAIN)


class SqliteLock(LockedDatabase):
    def update_async(self, name, value, tcp=False):
        """Sends an UPDATE from a thread; returns (thread, result list)."""
        out = []

        def run():
            try:
                r = signed_update(self.server, ZONE, KEY, add=[(name, 60, "TXT", '"%s"' % value)],
                                  tcp=tcp, timeout=10)
                out.append(r.rcode())
            except Exception as e:   # noqa: BLE001 - reported by the assertion
                out.append(e)

        t = threading.Thread(target=run)
        t.start()
        return t, out

    def locked_update(self, name, tcp):
        lock = Lock(self.db)
        t, out = self.update_async(name, "after release", tcp=tcp)
        try:
            self.server.wait_log(WAITS)
            # The UPDATE waits; the loop does not: every zone answers now,
            # before the UPDATE's reply.
            for _ in range(20):
                self.assert_zones_answered()
            self.assertEqual(out, [], "the UPDATE was answered while the lock was held")
        finally:
            lock.release()
        t.join(15)
        self.assertEqual(len(out), 1, out)
        if out[0] == dns.rcode.NOERROR:
            self.assertEqual(txt(self.server, name), ['"after release"'])
        else:
            # The bound passed before the release (a slow machine): refused whole.
            self.assertEqual(out[0], dns.rcode.SERVFAIL)
            self.assertEqual(txt(self.server, name), [])
        return out[0]

    def test_update_waits_for_the_lock_udp(self):
        before = serial(self.server, ZONE)
        rc = self.locked_update("udp.acme.example.", tcp=False)
        self.assertEqual(serial(self.server, ZONE), before + (1 if rc == dns.rcode.NOERROR else 0))

    def test_update_waits_for_the_lock_tcp(self):
        self.locked_update("tcp.acme.example.", tcp=True)

    def test_lock_outlives_the_bound(self):
        before = serial(self.server, ZONE)
        lock = Lock(self.db)
        try:
            t, out = self.update_async("refused.acme.example.", "never")
            self.server.wait_log(WAITS)
            self.assert_zones_answered()
            t.join(15)   # answered at the bound, the lock still held
            self.assertEqual(out, [dns.rcode.SERVFAIL])
            self.server.wait_log(r"stayed locked by another process for 2000 ms; answered "
                                 r"SERVFAIL, nothing changed")
            self.assert_zones_answered()
        finally:
            lock.release()
        self.assertEqual(txt(self.server, "refused.acme.example."), [])
        self.assertEqual(serial(self.server, ZONE), before)
        # The next one goes through, and both survive a restart as they are.
        r = signed_update(self.server, ZONE, KEY, add=[("next.acme.example.", 60, "TXT", '"ok"')])
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.server.kill9()
        self.server.start()
        self.assertEqual(txt(self.server, "refused.acme.example."), [])
        self.assertEqual(txt(self.server, "next.acme.example."), ['"ok"'])
        self.assertEqual(serial(self.server, ZONE), before + 1)

    def test_acknowledged_survive_kill9(self):
        """UPDATEs while the lock comes and goes, several waiting at once
        (answered in order): every NOERROR is there after kill -9, every
        SERVFAIL is not."""
        results = {}
        for round_ in range(3):
            lock = Lock(self.db)
            waiting = [self.update_async("k%d-%d.acme.example." % (round_, i), "v%d" % i,
                                         tcp=i % 2 == 1) + ("k%d-%d.acme.example." % (round_, i),)
                       for i in range(4)]
            self.server.wait_log(WAITS)
            self.assert_zones_answered()
            lock.release()
            for t, out, name in waiting:
                t.join(15)
                self.assertEqual(len(out), 1, out)
                results[name] = out[0]
        self.assertIn(dns.rcode.NOERROR, results.values())
        self.assertEqual(self.server.kill9(), -signal.SIGKILL)
        self.server.start()
        for name, rc in results.items():
            want = ['"v%s"' % name.split("-")[1].split(".")[0]] if rc == dns.rcode.NOERROR else []
            self.assertIn(rc, (dns.rcode.NOERROR, dns.rcode.SERVFAIL), name)
            self.assertEqual(txt(self.server, name), want, name)
        self.server.stop()
        db = sqlite3.connect(self.db)
        try:
            self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        finally:
            db.close()


class ReloadWaitsForTheLock(LockedDatabase):
    """A SIGHUP whose zone-file edit needs the locked database: the new
    configuration waits for the lock (cmd/serve.c, RELOAD_LOCKWAIT_MS)
    while the previous one answers, then is swapped in with the edit; a
    lock that outlives the bound fails the reload with that reason, and
    nothing changed (the next reload applies the edit)."""

    def ns(self):
        r = self.server.query(ZONE, "NS")
        return sorted(rd.to_text() for rrset in r.answer for rd in rrset)

    def edit_and_reload(self):
        self.server.write("acme.zone", seed_zone(ZONE, extra="www 300 IN A 192.0.2.7\n"
                                                 "@ IN NS ns2.example.\n"))
        self.server.send_signal(signal.SIGHUP)
        self.server.wait_log(r"reload: the database of acme\.example\. is locked by another "
                             r"process or a write under way; the new configuration waits for it")

    def test_reload_waits_then_applies(self):
        before = serial(self.server, ZONE)
        lock = Lock(self.db)
        try:
            self.edit_and_reload()
            for _ in range(20):
                self.assert_zones_answered()
            self.assertEqual(self.ns(), ["ns1.example."])
            self.assertNotIn("reloaded:", self.server.log_since_start())
        finally:
            lock.release()
        self.server.wait_log(r"reloaded: 2 zones")
        self.assertRegex(self.server.log_since_start(), r"zone file .*acme\.zone applied as a "
                         r"difference: 0 records removed, 1 added, serial %d -> %d"
                         % (before, before + 1))
        self.assertNotIn("reload failed", self.server.log_since_start())
        self.assertEqual(self.ns(), ["ns1.example.", "ns2.example."])
        self.assertEqual(serial(self.server, ZONE), before + 1)
        self.assert_zones_answered()

    def test_lock_outlives_the_bound(self):
        before = serial(self.server, ZONE)
        lock = Lock(self.db)
        try:
            self.edit_and_reload()
            self.server.wait_log(r"reload failed: the database of acme\.example\. stayed locked "
                                 r"for 1\d{4} ms; still serving the previous configuration",
                                 timeout=20)
            self.assert_zones_answered()
        finally:
            lock.release()
        self.assertEqual(self.ns(), ["ns1.example."])
        self.assertEqual(serial(self.server, ZONE), before)
        self.assertNotIn("applied as a difference", self.server.log_since_start())
        # Nothing was committed: the next reload finds the edit and applies it.
        self.server.send_signal(signal.SIGHUP)
        self.server.wait_log(r"reloaded: 2 zones")
        self.assertEqual(self.ns(), ["ns1.example.", "ns2.example."])
        self.assertEqual(serial(self.server, ZONE), before + 1)


if __name__ == "__main__":
    main()
