# SPDX-License-Identifier: MIT
"""Issue #26.1: SIGHUP builds the new configuration off the loop.

The new generation (zone files, the ACME zone's records from SQLite,
signing) is built on the reload builder thread (cmd/builder.h) while the
running one answers; the loop only swaps.  The test hook
GEOACME_TEST_RELOAD_DELAY_MS holds a built generation on the builder thread
for a while before the swap, so these cases can act in that window:

- queries in it get the old answers, and after the swap the new ones;
- an UPDATE answered in it is in the new generation too (the running one
  keeps what it commits during a build, and the swap applies it);
- SIGHUPs and `geoacme reload` clients in it coalesce into one more build,
  and every client is answered, even when all their signals are pending at
  once (a client sends SIGRTMIN+1, which the kernel queues, where a second
  pending SIGHUP, and the token it carried, was dropped);
- a build that fails keeps the old generation (and its UPDATEs);
- `geoacme ctl reload` is the same build: the client is answered with the
  outcome once the new generation is swapped in, and the old one answers
  meanwhile (before, it built on the loop, and refused while a SIGHUP's
  build ran).

ReloadSignal: the client sends SIGRTMIN+1 only to a process that blocks or
catches it, and SIGHUP to any other (an older geoacme), which lives.
"""
import os
import signal
import subprocess
import sys
import time
import unittest

import dns.rcode

from acme_helpers import TsigKey, seed_zone, signed_update, txt
from harness import (BASE_CONFIG, BIN, Server, ServerPerTest, example_zone, main, make_key,
                     needs_test_hooks, rrs)

DELAY_MS = 2500

KEY = TsigKey("lego.acme.example.", "hmac-sha256", b"reload-test-secret-0123456789abc")

CONFIG = BASE_CONFIG + """
[[zones]]
zone = "example.com"
zone_type = "Primary"
file = "example.com.zone"

[[zones]]
zone = "acme.example"
zone_type = "Primary"
axfr_policy = "AllowAll"

[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "acme.pem"

[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.sqlite"
zone_path = "acme.zone"
""" + KEY.toml()

ZONE = example_zone("www     IN A    192.0.2.80\n")
ACME = seed_zone("acme.example.", serial=100)
CHALLENGE = "_acme-challenge.www.acme.example."


def wait_polling(pid, timeout=30):
    """Waits until process pid sleeps in poll(2): a `geoacme reload` client
    does so once it has signalled the server."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open("/proc/%d/wchan" % pid) as f:
            if "poll" in f.read():
                return
        time.sleep(0.01)
    raise AssertionError("process %d never waited in poll(2)" % pid)


@needs_test_hooks
class ReloadOffTheLoop(ServerPerTest):
    def make_server(self):
        srv = Server(CONFIG, {"example.com.zone": ZONE, "acme.zone": ACME},
                     env=dict(os.environ, GEOACME_TEST_RELOAD_DELAY_MS=str(DELAY_MS)))
        make_key(srv.path("acme.pem"))
        return srv

    def www(self):
        return rrs(self.srv.query("www.example.com"), "answer")

    def serial(self):
        return self.srv.query("acme.example", "SOA").answer[0][0].serial

    def reload_built(self, n=1):
        """Waits until the n-th build since start is done and held by the hook."""
        self.srv.wait_log_count(r"reload: the new configuration was built in \d+ ms", n)

    def test_old_answers_until_the_swap(self):
        self.assertEqual(self.www(), ["www.example.com. 3600 IN A 192.0.2.80"])
        self.srv.write("example.com.zone", ZONE.replace("192.0.2.80", "192.0.2.81"))
        self.srv.send_signal(signal.SIGHUP)
        self.reload_built()
        # Built, not yet swapped: the running generation answers, at once.
        self.assertEqual(self.srv.log_count(r"info: reloaded: "), 0)
        self.assertEqual(self.www(), ["www.example.com. 3600 IN A 192.0.2.80"])
        self.srv.wait_log(r"info: reloaded: 2 zones\n")
        self.assertEqual(self.www(), ["www.example.com. 3600 IN A 192.0.2.81"])

    def test_update_during_the_build_is_kept(self):
        before = self.serial()
        self.srv.send_signal(signal.SIGHUP)
        # The build has read the ACME records: the UPDATE comes after it.
        self.reload_built()
        r = signed_update(self.srv, "acme.example", KEY, add=[(CHALLENGE, 60, "TXT", "during")])
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        during = self.serial()
        self.assertEqual(during, before + 1)
        self.assertEqual(txt(self.srv, CHALLENGE), ['"during"'])
        self.srv.wait_log(r"info: reloaded: 2 zones\n")
        # In the new generation: the record, at its serial (the build took
        # every signature from the cache: no bump for new signatures).
        self.assertEqual(txt(self.srv, CHALLENGE), ['"during"'])
        self.assertEqual(self.serial(), during)
        self.assertIn("info: acme.example.: 1 change committed during the reload's build applied "
                      "to the new configuration, serial %d\n" % during, self.srv.log_since_start())
        # The new generation's own UPDATEs go on from there.
        r = signed_update(self.srv, "acme.example", KEY, delete=[(CHALLENGE, "TXT")])
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertEqual(txt(self.srv, CHALLENGE), [])
        self.assertEqual(self.serial(), during + 1)
        # And a restart reads the same from the database (and bumps the
        # serial for the new process's signatures).
        self.srv.stop()
        self.srv.start()
        self.assertEqual(txt(self.srv, CHALLENGE), [])
        self.assertEqual(self.serial(), during + 2)

    def test_sighups_during_a_build_coalesce(self):
        self.srv.send_signal(signal.SIGHUP)
        self.srv.wait_log(r"info: reloading ")
        # Ten `geoacme reload` clients and five plain SIGHUPs while it builds,
        # all sent while the server is stopped, so that all are pending when
        # it reads them: the kernel drops a SIGHUP sent while one is pending
        # (it dropped clients' tokens so), each client's realtime signal is
        # queued with its token.
        self.srv.send_signal(signal.SIGSTOP)
        clients = []
        try:
            for i in range(10):
                clients.append(subprocess.Popen([BIN, "reload", "--pid", str(self.srv.proc.pid),
                                                 "--timeout", "30"], stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, text=True))
                if i % 2:
                    self.srv.send_signal(signal.SIGHUP)
            for c in clients:
                wait_polling(c.pid)
        finally:
            self.srv.send_signal(signal.SIGCONT)
        outs = [c.communicate(timeout=60) for c in clients]
        self.assertEqual([(c.returncode, o) for c, o in zip(clients, outs)],
                         [(0, ("geoacme reload: ok serving 2 zones\n", ""))] * 10, outs)
        # Two builds: the first, and one more for everything that came during it.
        self.srv.wait_log_count(r"info: reloaded: 2 zones\n", 2)
        self.assertEqual(self.srv.log_count(r"info: reloading "), 2, self.srv.log_since_start())

    def ctl_reload(self):
        return subprocess.Popen([BIN, "ctl", "-c", self.srv.config_path, "reload"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def test_ctl_reload_is_built_beside_the_loop(self):
        self.srv.write("example.com.zone", ZONE.replace("192.0.2.80", "192.0.2.83"))
        first = self.ctl_reload()
        self.reload_built()
        # Built, held by the hook: the old generation answers, the client waits.
        self.assertEqual(self.www(), ["www.example.com. 3600 IN A 192.0.2.80"])
        self.assertIsNone(first.poll())
        # A second client during the build: one more build after it.
        second = self.ctl_reload()
        outs = [c.communicate(timeout=90) for c in (first, second)]
        self.assertEqual([(c.returncode, o) for c, o in zip((first, second), outs)],
                         [(0, ("reloaded: serving 2 zones\n", ""))] * 2, outs)
        self.assertEqual(self.www(), ["www.example.com. 3600 IN A 192.0.2.83"])
        self.srv.wait_log_count(r"info: reloaded: 2 zones\n", 2)
        self.assertEqual(self.srv.log_count(r"info: reloading "), 2, self.srv.log_since_start())

    def test_failed_build_keeps_the_old_generation(self):
        self.srv.write("example.com.zone", ZONE + "broken IN A not-an-address\n")
        self.srv.send_signal(signal.SIGHUP)
        self.srv.wait_log(r"error: reload failed; still serving the previous configuration\n")
        self.assertIn("example.com.zone:", self.srv.log_since_start())
        self.assertEqual(self.www(), ["www.example.com. 3600 IN A 192.0.2.80"])
        # UPDATEs go on in the old generation, and the next good reload keeps them.
        r = signed_update(self.srv, "acme.example", KEY, add=[(CHALLENGE, 60, "TXT", "kept")])
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.srv.write("example.com.zone", ZONE.replace("192.0.2.80", "192.0.2.82"))
        self.srv.send_signal(signal.SIGHUP)
        self.srv.wait_log(r"info: reloaded: 2 zones\n")
        self.assertEqual(self.www(), ["www.example.com. 3600 IN A 192.0.2.82"])
        self.assertEqual(txt(self.srv, CHALLENGE), ['"kept"'])


# A stand-in for an older server: handles SIGHUP only, so the realtime signal
# would kill it.  It prints each SIGHUP it gets and answers nothing.
SIGHUP_ONLY = """
import signal, time
signal.signal(signal.SIGHUP, lambda *_: print("SIGHUP", flush=True))
print("ready", flush=True)
time.sleep(60)
"""

# A stand-in for a server that takes the realtime signal: blocks it, as a
# signalfd reader does, and prints which signal came and how it was sent.
# (It polls sigpending: sigwaitinfo would unblock the signals while it
# waits, and /proc would show them unblocked.)
SIGNALFD_READER = """
import signal, time
sigs = {signal.SIGHUP, signal.SIGRTMIN + 1}
signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
print("ready", flush=True)
while not signal.sigpending():
    time.sleep(0.01)
si = signal.sigwaitinfo(sigs)
print(si.si_signo, si.si_code, flush=True)
"""


class ReloadSignal(unittest.TestCase):
    """Which signal `geoacme reload` sends: the realtime SIGRTMIN+1 (queued
    with its token however many come) to a process that blocks or catches
    it, else SIGHUP (the realtime one would kill an older geoacme)."""

    def start(self, code):
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        self.addCleanup(child.stdout.close)
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        self.assertEqual(child.stdout.readline(), "ready\n")
        client = subprocess.Popen([BIN, "reload", "--pid", str(child.pid), "--timeout", "1"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return child, client

    def test_realtime_signal_else_sighup(self):
        old, old_client = self.start(SIGHUP_ONLY)
        new, new_client = self.start(SIGNALFD_READER)
        errs = []
        # Neither answers: both clients give up after their second.
        for child, client in ((old, old_client), (new, new_client)):
            out, err = client.communicate(timeout=30)
            self.assertEqual((client.returncode, out), (1, ""), err)
            self.assertIn("no answer from process %d within 1 s" % child.pid, err)
            errs.append(err)
        # The older one got SIGHUP, lives, and its client said why.
        self.assertEqual(old.stdout.readline(), "SIGHUP\n")
        self.assertIsNone(old.poll())
        self.assertIn("process %d does not take SIGRTMIN+1" % old.pid, errs[0])
        # The other got the realtime signal, queued (SI_QUEUE), no note.
        self.assertEqual(new.stdout.readline(), "%d -1\n" % (signal.SIGRTMIN + 1))
        self.assertNotIn("SIGRTMIN", errs[1])


if __name__ == "__main__":
    main()
