#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check = serve minus binding: every problem serve meets at start, check reports,
with the same message, and neither writes to a file that is not ours.

Also the operator-facing messages: a TSIG key_file that looks like base64
text gets a warning (once), and port 53 without privilege says how to grant
CAP_NET_BIND_SERVICE.
"""
import hashlib
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from harness import BIN, free_port, main  # noqa: E402

ZONE = """$ORIGIN acme.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
"""

CONFIG = """listen_addrs_ipv4 = ["127.0.0.1"]
{top}
[[zones]]
zone = "acme.example.net"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "{journal}"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "update.acme.example.net."
algorithm = "hmac-sha256"
key_file = "update.key"
"""

# Two signed zones whose key and zone file are both missing.
KEYED = """listen_addrs_ipv4 = ["127.0.0.1"]
[[zones]]
zone = "signed.example"
file = "gone.zone"
[[zones.keys]]
key_path = "gone.pem"
[[zones]]
zone = "acme.example.net"
[[zones.keys]]
key_path = "gone-acme.pem"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "{journal}"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "update.acme.example.net."
algorithm = "hmac-sha256"
key_file = "update.key"
"""


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class CheckServeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="geoacme-check-")
        os.chmod(self.dir, 0o755)
        self.cfg = os.path.join(self.dir, "config.toml")
        with open(os.path.join(self.dir, "acme.zone"), "w") as f:
            f.write(ZONE)
        self.key = os.path.join(self.dir, "update.key")
        with open(self.key, "wb") as f:
            f.write(os.urandom(32))
        os.chmod(self.key, 0o600)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write_config(self, journal="acme.sqlite", top=""):
        with open(self.cfg, "w") as f:
            f.write(CONFIG.format(journal=journal, top=top))

    def check(self):
        return subprocess.run([BIN, "check", "-c", self.cfg], capture_output=True, text=True,
                              timeout=60)

    def serve(self, **kw):
        """serve on a free port; returns (exit code, stderr).  A server that
        gets ready is stopped with SIGTERM (exit 0 expected)."""
        p = subprocess.Popen([BIN, "serve", "-c", self.cfg, "-p", str(free_port())],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
        lines = []
        for line in p.stderr:
            lines.append(line)
            if "ready:" in line:
                p.terminate()
        p.wait(timeout=60)
        p.stderr.close()
        return p.returncode, "".join(lines)

    def assertBothRefuse(self, message):
        """check and serve both exit 3, and both print `message`."""
        c = self.check()
        self.assertEqual(c.returncode, 3, c.stdout + c.stderr)
        self.assertIn(message, c.stderr)
        rc, log = self.serve()
        self.assertEqual(rc, 3, log)
        self.assertIn(message, log)

    # --- every problem in one run (issue #25.4) ---

    def test_four_problems_in_one_run(self):
        """A missing TSIG key, seed zone file, geo database and CA file: check
        names all four, each at the key that names it, and exits 3; check and
        a failed serve leave no file behind (no empty database, no pid file)."""
        os.remove(self.key)
        os.remove(os.path.join(self.dir, "acme.zone"))
        top = ('pid_file = "geoacme.pid"\n[geo]\ndatabases = ["City.mmdb"]\n'
               '[[sites]]\nname = "a"\nipv4 = "192.0.2.1"\nlatitude = 1.0\nlongitude = 2.0\n'
               '[sites.health]\nport = 443\nca_file = "ca.pem"\n')
        self.write_config(top=top)
        before = sorted(os.listdir(self.dir))
        c = self.check()
        d, f = self.dir, self.cfg
        self.assertEqual(c.returncode, 3, c.stdout + c.stderr)
        self.maxDiff = None
        self.assertEqual(c.stderr, "".join([
            "%s:12:11: cannot read CA file '%s/ca.pem': No such file or directory\n" % (f, d),
            "%s:24:12: cannot read TSIG key file '%s/update.key': No such file or directory\n"
            % (f, d),
            "%s:4:14: [geo] databases: %s/City.mmdb: No such file or directory\n" % (f, d),
            "%s:20:13: zone acme.example.net: cannot read zone file '%s/acme.zone': No such file "
            "or directory; relative paths are resolved against directory = \"%s\"; a Hickory "
            "config without `directory` means /var/named: set directory = \"/var/named\" if the "
            "zone files are there\n" % (f, d, d),
            "%s: 4 problems found\n" % f]))
        self.assertEqual(sorted(os.listdir(self.dir)), before)
        rc, log = self.serve()
        self.assertEqual(rc, 3, log)
        self.assertEqual(sorted(os.listdir(self.dir)), before, log)

    def test_missing_key_and_zone_file_of_one_zone(self):
        """A zone's signing key and its zone file both missing, for a file zone and
        for an ACME zone's seed: check names all four, not only the keys; serve
        refuses with the same four and leaves no database behind."""
        os.remove(os.path.join(self.dir, "acme.zone"))
        with open(self.cfg, "w") as f:
            f.write(KEYED.format(journal="acme.sqlite"))
        d, f = self.dir, self.cfg
        hint = ("; relative paths are resolved against directory = \"%s\"; a Hickory config "
                "without `directory` means /var/named: set directory = \"/var/named\" if the "
                "zone files are there\n" % d)
        want = "".join([
            "%s:5:1: %s/gone.pem: No such file or directory\n" % (f, d),
            "%s:4:8: zone signed.example: cannot read zone file '%s/gone.zone': No such file or "
            "directory" % (f, d) + hint,
            "%s:9:1: %s/gone-acme.pem: No such file or directory\n" % (f, d),
            "%s:15:13: zone acme.example.net: cannot read zone file '%s/acme.zone': No such "
            "file or directory" % (f, d) + hint,
            "%s: 4 problems found\n" % f])
        before = sorted(os.listdir(self.dir))
        c = self.check()
        self.maxDiff = None
        self.assertEqual((c.returncode, c.stderr), (3, want))
        rc, log = self.serve()
        self.assertEqual(rc, 3, log)
        for line in want.splitlines()[:4]:
            self.assertIn(line.split(": ", 1)[1], log)
        self.assertEqual(sorted(os.listdir(self.dir)), before, log)

    def test_failed_serve_leaves_no_empty_database(self):
        """The key is there, the seed zone file is not: serve refuses before
        making acme.sqlite, so a fixed config starts from a real seed."""
        os.remove(os.path.join(self.dir, "acme.zone"))
        self.write_config()
        rc, log = self.serve()
        self.assertEqual(rc, 3, log)
        self.assertIn("%s:9:13: zone acme.example.net: cannot read zone file" % self.cfg, log)
        self.assertEqual(sorted(os.listdir(self.dir)), ["config.toml", "update.key"])

    # --- journal_path ---

    def test_foreign_sqlite_is_refused_and_left_byte_identical(self):
        jrnl = os.path.join(self.dir, "hickory.jrnl")
        db = sqlite3.connect(jrnl)
        db.executescript("CREATE TABLE tdns_schema (name TEXT PRIMARY KEY, version INTEGER);"
                         "INSERT INTO tdns_schema VALUES ('tdns_history', 1);"
                         "CREATE TABLE records (history_id INTEGER PRIMARY KEY, soa_serial "
                         "INTEGER, timestamp TEXT, record BLOB);")
        db.commit()
        db.close()
        before = sha256(jrnl)
        stat = os.stat(jrnl)
        self.write_config(journal="hickory.jrnl")
        self.assertBothRefuse("%s:3:1: zone acme.example.net: %s: not a geoacme database (a "
                              "Hickory journal, tables: records, tdns_schema); it was left as "
                              "it is" % (self.cfg, jrnl))
        self.assertEqual(sha256(jrnl), before, "byte-identical: not switched to WAL")
        self.assertEqual(os.stat(jrnl).st_mtime_ns, stat.st_mtime_ns)
        self.assertEqual(sorted(os.listdir(self.dir)),
                         ["acme.zone", "config.toml", "hickory.jrnl", "update.key"],
                         "no -wal, -shm or -journal file either")

    def test_missing_journal_folder(self):
        self.write_config(journal="state/acme.sqlite")
        self.assertBothRefuse("zone acme.example.net: %s/state/acme.sqlite: its folder %s/state "
                              "does not exist" % (self.dir, self.dir))

    def test_newer_database(self):
        db = sqlite3.connect(os.path.join(self.dir, "acme.sqlite"))
        db.executescript("PRAGMA application_id = 1734700897; CREATE TABLE records (a);"
                         "CREATE TABLE meta (k, v); PRAGMA user_version = 99;")
        db.close()
        before = sha256(os.path.join(self.dir, "acme.sqlite"))
        self.write_config()
        self.assertBothRefuse("acme.sqlite: schema version 99 is newer than this geoacme")
        self.assertEqual(sha256(os.path.join(self.dir, "acme.sqlite")), before)

    def test_not_sqlite(self):
        with open(os.path.join(self.dir, "acme.sqlite"), "w") as f:
            f.write(ZONE)
        before = sha256(os.path.join(self.dir, "acme.sqlite"))
        self.write_config()
        self.assertBothRefuse("acme.sqlite: not an SQLite database")
        self.assertEqual(sha256(os.path.join(self.dir, "acme.sqlite")), before)

    def test_ours_from_another_zone(self):
        self.write_config()
        rc, log = self.serve()           # seeds acme.sqlite for acme.example.net
        self.assertEqual(rc, 0, log)
        with open(self.cfg) as f:
            text = f.read().replace('zone = "acme.example.net"', 'zone = "other.example.net"')
        with open(self.cfg, "w") as f:
            f.write(text)
        before = sha256(os.path.join(self.dir, "acme.sqlite"))
        self.assertBothRefuse("acme.sqlite holds zone acme.example.net., not other.example.net")
        self.assertEqual(sha256(os.path.join(self.dir, "acme.sqlite")), before)

    def test_damaged_database(self):
        self.write_config()
        rc, log = self.serve()           # seeds acme.sqlite
        self.assertEqual(rc, 0, log)
        path = os.path.join(self.dir, "acme.sqlite")
        size = os.path.getsize(path)
        with open(path, "r+b") as f:     # garbage in every page's cell pointers
            for page in range(1, size // 4096):
                f.seek(page * 4096 + 8)
                f.write(b"\xff" * 64)
        before = sha256(path)
        c = self.check()
        self.assertEqual(c.returncode, 3, c.stdout)
        self.assertIn("zone acme.example.net: %s: the database is damaged (quick_check: " % path,
                      c.stderr)
        self.assertEqual(sha256(path), before, "check only reads")
        rc, log = self.serve()
        self.assertEqual(rc, 3, log)
        self.assertIn("%s: " % path, log)

    def test_ok_both_ways(self):
        self.write_config()
        c = self.check()
        self.assertEqual((c.returncode, c.stdout), (0, "%s: ok (1 zone)\n" % self.cfg), c.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "acme.sqlite")))
        rc, log = self.serve()
        self.assertEqual(rc, 0, log)
        self.assertIn("ready:", log)

    def test_missing_zone_file_mentions_hickorys_directory(self):
        with open(self.cfg, "w") as f:
            f.write('[[zones]]\nzone = "example.com"\nfile = "example.com.zone"\n')
        self.assertBothRefuse(
            "%s:3:8: zone example.com: cannot read zone file '%s/example.com.zone': No such "
            "file or directory; relative paths are resolved against directory = \"%s\"; "
            "a Hickory config without `directory` means /var/named: set directory = "
            "\"/var/named\" if the zone files are there\n" % (self.cfg, self.dir, self.dir))

    # --- the drop user ---

    @unittest.skipUnless(os.geteuid() == 0, "needs root to check files as another user")
    def test_files_as_the_drop_user(self):
        nobody = pwd.getpwnam("nobody")
        state = os.path.join(self.dir, "state")
        os.mkdir(state, 0o755)
        self.write_config(journal="state/acme.sqlite", top='user = "nobody"')
        # The key is root's, mode 0600: root reads it, nobody does not.
        self.assertBothRefuse("cannot read TSIG key file '%s': Permission denied" % self.key)
        os.chown(self.key, nobody.pw_uid, nobody.pw_gid)
        # The journal folder is root's: SQLite could not make its files there.
        self.assertBothRefuse("its folder %s is not writable by uid %d" % (state, nobody.pw_uid))
        os.chown(state, nobody.pw_uid, nobody.pw_gid)
        c = self.check()
        self.assertEqual((c.returncode, c.stdout),
                         (0, "%s: ok (1 zone, read as user nobody)\n" % self.cfg), c.stderr)
        rc, log = self.serve()
        self.assertEqual(rc, 0, log)
        self.assertIn("running as user nobody", log)

    # --- messages ---

    def test_base64_key_file_warning(self):
        with open(self.key, "w") as f:
            f.write("c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0\n")
        self.write_config()
        warning = ("warn: TSIG key file '%s' looks like base64 text (36 characters and a "
                   "newline), but a key file holds the raw secret bytes, so this text itself is "
                   "the secret; if it is the base64 form, store the decoded bytes (base64 -d < "
                   "FILE > FILE.new) or use secret = \"...\"\n" % self.key)
        c = self.check()
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertEqual(c.stderr.count(warning), 1, c.stderr)
        rc, log = self.serve()
        self.assertEqual(rc, 0, log)
        self.assertEqual(log.count(warning), 1, log)
        # Raw random bytes: no warning.
        with open(self.key, "wb") as f:
            f.write(bytes(range(200, 232)))
        c = self.check()
        self.assertNotIn("looks like base64", c.stderr)

    def test_port_53_without_privilege(self):
        with open("/proc/sys/net/ipv4/ip_unprivileged_port_start") as f:
            if int(f.read()) <= 53:
                self.skipTest("port 53 needs no privilege on this machine")
        self.write_config()
        kw = {}
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.key, nobody.pw_uid, nobody.pw_gid)

            def drop():
                os.setgroups([])
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
            kw["preexec_fn"] = drop
        p = subprocess.run([BIN, "serve", "-c", self.cfg, "-p", "53"], capture_output=True,
                           text=True, timeout=60, **kw)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("error: bind 127.0.0.1:53 (udp): Permission denied\n", p.stderr)
        self.assertIn("error: port 53 needs root or CAP_NET_BIND_SERVICE: start geoacme as root "
                      "with `user = \"geoacme\"` in the config (it drops to that user after "
                      "binding), or grant the capability (systemd: "
                      "AmbientCapabilities=CAP_NET_BIND_SERVICE as in contrib/geoacme.service; "
                      "otherwise: setcap cap_net_bind_service=+ep /path/to/geoacme), or use -p "
                      "with a port from 1024", p.stderr)


if __name__ == "__main__":
    main()
