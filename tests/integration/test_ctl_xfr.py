# SPDX-License-Identifier: MIT
"""The control channel on a primary and a geoacme secondary (issue #21.3 and
#21.4): zone-status of both roles, zone-refresh, zone-retransfer (and
--force with a serial that went backwards), zone-notify, the commands on
the wrong role, the secondaries' metrics with exact values, and the
warning for a NOTIFY target that never answers (a loopback socket of the
test's that reads and says nothing), logged once per episode; that
target is "pending" until the first wait for its answer ends (RFC 1996
3.6), then "unanswered" since that first NOTIFY.
"""
import json
import re
import socket
import time
import unittest
import urllib.request

import dns.message

from harness import BASE_CONFIG, Server, free_port, main
from test_ctl import ctl

ZONE = """$ORIGIN short.example.
$TTL 300
@ IN SOA ns1.example.com. hostmaster.example.com. {serial} 3600 600 86400 60
@ IN NS ns1.example.com.
www IN A 192.0.2.7
"""

PRIMARY = """
[server]
http_listen = ["127.0.0.1:0"]
[[zones]]
zone = "short.example"
file = "short.zone"
allow_axfr = true
notify = ["127.0.0.1:{sp}", "127.0.0.1:{dead}"]
"""

SECONDARY = """
[server]
http_listen = ["127.0.0.1:0"]
[[zones]]
zone = "short.example"
zone_type = "Secondary"
primaries = ["127.0.0.1:{pp}"]
[zones.stores]
type = "sqlite"
journal_path = "short-copy.sqlite"
"""


def listen(port):
    return BASE_CONFIG.replace("listen_port = 0", "listen_port = %d" % port)


def status(server, zone="short.example"):
    out = ctl(server, "zone-status", zone)
    assert out.returncode == 0, out.stderr
    return out.stdout


def fields(text):
    return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)


def metrics(server):
    url = "http://127.0.0.1:%d/metrics" % server.http_port()
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def status_json(server):
    url = "http://127.0.0.1:%d/status.json" % server.http_port()
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read().decode())


class PrimaryAndSecondary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pp, cls.sp = free_port(), free_port()
        # The target that never answers unless a test makes it: it receives
        # every NOTIFY, so a test sees each try arrive.
        cls.silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        cls.silent.bind(("127.0.0.1", 0))
        cls.dead = cls.silent.getsockname()[1]
        fmt = dict(pp=cls.pp, sp=cls.sp, dead=cls.dead)
        cls.t0 = int(time.time())
        cls.primary = Server(listen(cls.pp) + PRIMARY.format(**fmt),
                             {"short.zone": ZONE.format(serial=10)})
        cls.primary.start()
        cls.secondary = Server(listen(cls.sp) + SECONDARY.format(**fmt), {})
        cls.secondary.start()
        cls.wait_serial(10)
        cls.t1 = int(time.time())

    @classmethod
    def tearDownClass(cls):
        cls.secondary.cleanup()
        cls.primary.cleanup()
        cls.silent.close()

    @classmethod
    def wait_serial(cls, serial, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if fields(status(cls.secondary)).get("serial") == str(serial):
                return
            time.sleep(0.05)
        raise AssertionError("the secondary never had serial %s:\n%s"
                             % (serial, cls.secondary.log_since_start()[-3000:]))

    def fails(self, out, message):
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertEqual(out.stderr, "geoacme ctl: %s\n" % message)

    def test_1_secondary_status_and_metrics(self):
        f = fields(status(self.secondary))
        self.assertEqual(f["zone"], "short.example.")
        self.assertEqual(f["role"], "secondary")
        self.assertEqual(f["serial"], "10")
        self.assertEqual(f["signature_expiry"], "0")
        last = int(f["last_refresh"])
        self.assertTrue(self.t0 <= last <= int(time.time()), (self.t0, last))
        self.assertEqual(int(f["expires_at"]), last + 86400)
        self.assertIn(int(f["next_refresh"]) - last, (3600, 3601))
        self.assertEqual((f["soa_refresh"], f["soa_retry"], f["soa_expire"]),
                         ("3600", "600", "86400"))
        m = metrics(self.secondary)
        self.assertIn('geoacme_secondary_last_refresh_timestamp_seconds{zone="short.example."} %d\n'
                      % last, m)
        self.assertIn('geoacme_secondary_expire_timestamp_seconds{zone="short.example."} %d\n'
                      % (last + 86400), m)
        self.assertIn('geoacme_zone_serial{zone="short.example."} 10\n', m)
        url = "http://127.0.0.1:%d/" % self.secondary.http_port()
        with urllib.request.urlopen(url, timeout=10) as r:
            page = r.read().decode()
        self.assertRegex(page, r'(?s)<table id="copies">.*<tr><td>short\.example\.</td><td>10</td>'
                         r'<td>\d{4}-\d\d-\d\d \d\d:\d\d UTC</td><td>\d{4}-\d\d-\d\d \d\d:\d\d '
                         r'UTC</td><td>\d{4}-\d\d-\d\d \d\d:\d\d UTC</td><td>unsigned</td></tr>')
        # /status.json: the copy with the same times as zone-status, exactly
        doc = status_json(self.secondary)
        self.assertEqual(doc["copies"], [{
            "zone": "short.example.", "role": "secondary", "have_copy": True, "serving": True,
            "serial": 10, "last_refresh": last, "next_refresh": int(f["next_refresh"]),
            "checking": False, "expires_at": last + 86400, "signature_expiry": 0,
            "soa_refresh": 3600, "soa_retry": 600, "soa_expire": 86400}])
        self.assertEqual(doc["zones"], [{"zone": "short.example.", "role": "secondary",
                                         "serial": 10, "signed": False,
                                         "signature_expiry": 0}])
        self.assertEqual(doc["notify_targets"], [])
        # the status line of the whole server
        self.assertIn("zone short.example. serial 10 role secondary",
                      ctl(self.secondary, "status").stdout)

    def test_2_dead_notify_target_warned_once(self):
        dead = "127.0.0.1:%d" % self.dead
        pattern = r"warn: short\.example\.: secondary %s has not answered NOTIFY for 1[5-9] s " \
                  r"\(serial 10, \d+ tries\); still trying" % re.escape(dead)
        self.primary.wait_log(pattern, timeout=40)
        f = status(self.primary)
        lines = f.splitlines()
        self.assertEqual(lines[:4], ["zone short.example.", "role primary", "serial 10",
                                     "signature_expiry 0"])
        self.assertEqual(lines[4], "notify_targets 2")
        self.assertEqual(lines[5], "notify_target 127.0.0.1:%d acknowledged_serial 10 "
                         "unanswered_since 0" % self.sp)
        m = re.match(r"notify_target %s acknowledged_serial - unanswered_since (\d+)$"
                     % re.escape(dead), lines[6])
        self.assertIsNotNone(m, lines[6])
        since = int(m.group(1))
        self.assertTrue(self.t0 <= since <= self.t1, (self.t0, since, self.t1))
        text = metrics(self.primary)
        self.assertIn('geoacme_notify_target_acknowledged_serial{zone="short.example.",'
                      'target="127.0.0.1:%d"} 10\n' % self.sp, text)
        self.assertNotIn('geoacme_notify_target_acknowledged_serial{zone="short.example.",'
                         'target="%s"}' % dead, text)
        self.assertIn('geoacme_notify_target_unanswered_since_timestamp_seconds{zone='
                      '"short.example.",target="%s"} %d\n' % (dead, since), text)
        self.assertIn('geoacme_notify_target_unanswered_since_timestamp_seconds{zone='
                      '"short.example.",target="127.0.0.1:%d"} 0\n' % self.sp, text)
        url = "http://127.0.0.1:%d/" % self.primary.http_port()
        with urllib.request.urlopen(url, timeout=10) as r:
            page = r.read().decode()
        self.assertIn("<td>short.example.</td><td>127.0.0.1:%d</td><td class=\"up\">answered "
                      "at serial 10</td>" % self.sp, page)
        self.assertIn("<td>short.example.</td><td>%s</td><td class=\"down\">unanswered "
                      "since " % dead, page)
        doc = status_json(self.primary)
        self.assertEqual(doc["notify_targets"], [
            {"zone": "short.example.", "target": "127.0.0.1:%d" % self.sp, "state": "answered",
             "acknowledged_serial": 10, "unanswered_since": 0},
            {"zone": "short.example.", "target": dead, "state": "unanswered",
             "acknowledged_serial": None, "unanswered_since": since}])
        self.assertEqual(doc["copies"], [])
        self.assertEqual(doc["zones"][0]["role"], "primary")
        # zone-notify sends again: the same episode, no second warning
        out = ctl(self.primary, "zone-notify", "short.example")
        self.assertEqual(out.stdout, "NOTIFY of short.example sent to 2 targets (answers: "
                         "zone-status)\n")
        self.primary.wait_log(r"NOTIFY serial 10 answered by 127\.0\.0\.1:%d" % self.sp)
        time.sleep(1)
        self.assertEqual(len(re.findall(pattern, self.primary.log())), 1)
        self.assertIn("unanswered_since %d" % since, status(self.primary))

    def test_3_wrong_role_and_unknown_zone(self):
        self.fails(ctl(self.primary, "zone-refresh", "short.example"),
                   "short.example is a primary here: zone-refresh is for secondary zones")
        self.fails(ctl(self.primary, "zone-retransfer", "short.example"),
                   "short.example is a primary here: zone-retransfer is for secondary zones")
        self.fails(ctl(self.secondary, "zone-notify", "short.example"),
                   "short.example is a secondary here: zone-notify is for primary zones")
        for cmd in ("zone-refresh", "zone-retransfer", "zone-notify", "zone-status"):
            self.fails(ctl(self.secondary, cmd, "nope.example"), "unknown zone 'nope.example'")
        self.fails(ctl(self.secondary, "zone-retransfer", "a", "b"),
                   "usage: zone-retransfer ZONE [--force]")

    def test_4_refresh_and_retransfer(self):
        before = int(fields(status(self.secondary))["last_refresh"])
        time.sleep(1.1)   # the refresh time is in whole seconds
        mark = len(self.secondary.log_since_start())
        out = ctl(self.secondary, "zone-refresh", "short.example")
        self.assertEqual(out.stdout, "refresh of short.example started (see zone-status and "
                         "the log)\n")
        deadline = time.time() + 20
        while int(fields(status(self.secondary))["last_refresh"]) == before:
            self.assertLess(time.time(), deadline, self.secondary.log_since_start()[mark:])
            time.sleep(0.05)
        self.assertIn("short.example.: a refresh asked for (geoacme ctl)",
                      self.secondary.log_since_start()[mark:])

        out = ctl(self.secondary, "zone-retransfer", "short.example")
        self.assertEqual(out.stdout, "full transfer (AXFR) of short.example started (see "
                         "zone-status and the log)\n")
        self.secondary.wait_log(r"short\.example\.: AXFR from 127\.0\.0\.1:%d, serial 10 -> 10"
                                % self.pp)

    def test_5_retransfer_force_takes_an_older_serial(self):
        # the primary's serial goes backwards (a rebuilt zone): NOTIFY and a plain
        # retransfer keep the copy; --force takes it
        self.primary.write("short.zone", ZONE.format(serial=5))
        self.assertEqual(ctl(self.primary, "reload").returncode, 0)
        self.secondary.wait_log(r"offers serial 5, older than our copy's 10")
        mark = len(self.secondary.log_since_start())
        self.assertEqual(ctl(self.secondary, "zone-retransfer", "short.example").returncode, 0)
        self.secondary.wait_log(r"short\.example\.: a full transfer asked for")
        time.sleep(1)
        self.assertEqual(fields(status(self.secondary))["serial"], "10")
        out = ctl(self.secondary, "zone-retransfer", "--force", "short.example")
        self.assertEqual(out.stdout, "full transfer (AXFR) of short.example started, taken at "
                         "any serial (see zone-status and the log)\n")
        self.wait_serial(5)
        self.assertIn("taking serial 5, not newer than our 10, as asked (geoacme ctl "
                      "zone-retransfer --force)", self.secondary.log_since_start()[mark:])
        self.assertIn('geoacme_zone_serial{zone="short.example."} 5\n', metrics(self.secondary))

    def notifies(self, wait):
        """The NOTIFYs the silent target holds: waits up to `wait` s for the
        first ([] when none came), then takes what else is queued."""
        got = []
        self.silent.settimeout(wait)
        try:
            while True:
                data, self.notifier = self.silent.recvfrom(4096)
                got.append(dns.message.from_wire(data))
                self.silent.settimeout(0)
        except (BlockingIOError, socket.timeout):
            return got

    def answer(self, notify):
        """The silent target answers a NOTIFY (RFC 1996 4.7), to where it came from."""
        self.silent.sendto(dns.message.make_response(notify).to_wire(), self.notifier)

    def target_state(self):
        target = "127.0.0.1:%d" % self.dead
        return [t for t in status_json(self.primary)["notify_targets"] if t["target"] == target][0]

    def wait_answered(self, serial):
        deadline = time.time() + 10
        while time.time() < deadline:
            t = self.target_state()
            if t["state"] == "answered" and t["acknowledged_serial"] == serial:
                return t
            time.sleep(0.05)
        self.fail("the answer to NOTIFY serial %d was not taken: %s" % (serial, t))

    def test_6_notify_pending_until_its_first_try_times_out(self):
        target = "127.0.0.1:%d" % self.dead
        serial = int(fields(status(self.primary))["serial"])
        # End the episode the earlier tests left: answer a NOTIFY.
        self.notifies(0)
        self.assertEqual(ctl(self.primary, "zone-notify", "short.example").returncode, 0)
        self.answer(self.notifies(10)[-1])
        self.wait_answered(serial)
        # A new episode.  Until the first try's wait (1 s) has ended, the
        # target is pending, not unanswered.  The state is read between the
        # first try and the retry: a retry already queued at the target
        # when the state came back means the server was too slow to see it
        # pending, so that round is answered and tried again.
        for _ in range(5):
            self.notifies(0)
            before = int(time.time())
            self.assertEqual(ctl(self.primary, "zone-notify", "short.example").returncode, 0)
            first = self.notifies(10)
            after = int(time.time())
            state = self.target_state()
            retried = self.notifies(0)
            if len(first) == 1 and not retried:
                break
            self.answer((first + retried)[-1])
            self.wait_answered(serial)
        else:
            self.fail("never read the state before the first retry")
        self.assertEqual(state, {"zone": "short.example.", "target": target, "state": "pending",
                                 "acknowledged_serial": serial, "unanswered_since": 0})
        # The retry (RFC 1996 3.6): from now on unanswered, since the first try.
        retry = self.notifies(10)
        self.assertTrue(retry, "no retry of the NOTIFY")
        self.assertEqual(retry[0].id, first[0].id)
        state = self.target_state()
        since = state["unanswered_since"]
        self.assertTrue(before <= since <= after, (before, since, after))
        self.assertEqual(state, {"zone": "short.example.", "target": target,
                                 "state": "unanswered", "acknowledged_serial": serial,
                                 "unanswered_since": since})
        self.assertIn("notify_target %s acknowledged_serial %d unanswered_since %d\n"
                      % (target, serial, since), status(self.primary))
        self.assertIn('geoacme_notify_target_unanswered_since_timestamp_seconds{zone='
                      '"short.example.",target="%s"} %d\n' % (target, since),
                      metrics(self.primary))
        # Its answer ends the episode.
        self.answer(retry[-1])
        self.assertEqual(self.wait_answered(serial)["unanswered_since"], 0)


if __name__ == "__main__":
    main()
