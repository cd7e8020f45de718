# SPDX-License-Identifier: MIT
"""A key change is on disk before it is served, and its disk work never holds
the loop (issue #26, dnssec/keystore_job.h, doc/dnssec.md).

One server, a zone from a file with a key policy (lifetime 0, hour-long
waits: only the first step runs here).  GEOACME_TEST_KEYS_WRITE_DELAY_MS
holds each piece of the key store's disk work (the new key generated, the
key state written) on its thread for a while, so the test sees the window:

  - `ctl key-roll` answers only once the new key is in the key state file;
    until then a second key-roll is refused and key-status says the key
    change waits for the write;
  - queries flowing all the time (another thread) get exact, valid answers
    from one snapshot each: the DNSKEY set with one RRSIG per key (never a
    key without its signature), validated from the DS of the first key;
  - a DNSKEY set with the new key is never served before the key state
    file names it (each answer is checked against the file read after it);
  - the old set answers until the change, the new one after, never the old
    one again; both keys sign www's A at the end.
"""
import os
import re
import subprocess
import sys
import threading
import time

import dns.dnssec
import dns.message
import dns.name
import dns.query
import dns.rdata
import dns.rdataclass
import dns.rdatatype

sys.path.insert(0, os.path.dirname(__file__))
from harness import BASE_CONFIG, BIN, Server, ServerTestCase, example_zone, main, make_key, \
    needs_test_hooks   # noqa: E402

DELAY_MS = 1500
ZONE = "example.com"
CONFIG = """
[[zones]]
zone = "example.com"
zone_type = "Primary"
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "example.com.pem"
[zones.key_policy]
lifetime = "0"
dnskey_ttl = "1h"
propagation_delay = "1h"
key_dir = "keys"
parent = ["127.0.0.1:1"]
[zones.stores]
type = "file"
zone_path = "example.com.zone"
"""


def ctl_run(server, *args):
    return subprocess.run([BIN, "ctl", "-c", server.config_path] + list(args),
                          capture_output=True, text=True, timeout=60)


class KeysWritten(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        records = "".join("n%02d IN A 192.0.2.%d\n" % (i, i + 1) for i in range(20))
        cls.server = Server(BASE_CONFIG + CONFIG,
                            {"example.com.zone": example_zone("www IN A 192.0.2.80\n" + records)},
                            env=dict(os.environ, GEOACME_TEST_KEYS_WRITE_DELAY_MS=str(DELAY_MS)))
        make_key(cls.server.path("example.com.pem"))
        os.makedirs(cls.server.path("keys"), mode=0o700)
        cls.server.start()

    def ask(self, name, rdtype):
        q = dns.message.make_query(name, rdtype, want_dnssec=True)
        return dns.query.udp(q, "127.0.0.1", port=self.server.port, timeout=3)

    def keys_in_file(self):
        """{tag: state} from the key state file."""
        with open(self.server.path("keys/example.com.keys")) as f:
            return {int(m.group(1)): m.group(2)
                    for m in re.finditer(r"(?m)^key (\d+) \S+ (\S+) ", f.read())}

    def dnskey_state(self, ds):
        """(the key tags of one DNSKEY answer, the tags of its RRSIGs), after
        checking the set validates from the DS."""
        origin = dns.name.from_text(ZONE)
        r = self.ask(ZONE, "DNSKEY")
        keys = r.find_rrset(r.answer, origin, dns.rdataclass.IN, dns.rdatatype.DNSKEY)
        sigs = r.find_rrset(r.answer, origin, dns.rdataclass.IN, dns.rdatatype.RRSIG,
                            dns.rdatatype.DNSKEY)
        anchor = [k for k in keys if dns.dnssec.make_ds(origin, k, "SHA256") == ds]
        self.assertEqual(len(anchor), 1, "the DS's key is not in the DNSKEY set")
        dns.dnssec.validate(keys, sigs, {origin: keys})
        return (tuple(sorted(dns.dnssec.key_id(k) for k in keys)),
                tuple(sorted(s.key_tag for s in sigs)))

    @needs_test_hooks
    def test_key_roll_served_once_written(self):
        out = subprocess.run([BIN, "ds", "-c", self.server.config_path, ZONE], capture_output=True,
                             text=True, check=True).stdout.split()
        ds = dns.rdata.from_text("IN", "DS", " ".join(out[3:]))
        first = tuple(self.keys_in_file())
        self.assertEqual(len(first), 1)
        self.assertEqual(self.dnskey_state(ds), (first, first))

        seen, errors, stop = [], [], threading.Event()

        def flow():
            # Each answer, then the file: a key served is a key written.
            while not stop.is_set():
                try:
                    st = self.dnskey_state(ds)
                    seen.append((st, self.keys_in_file()))
                except Exception as e:   # noqa: BLE001 - reported below
                    errors.append(repr(e))
        t = threading.Thread(target=flow)
        t.start()
        try:
            roll = subprocess.Popen([BIN, "ctl", "-c", self.server.config_path, "key-roll", ZONE],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # The new key is generated, then the state written, each held on
            # its thread: meanwhile key-status says so and no second
            # rollover starts.
            statuses = []
            while roll.poll() is None:
                statuses.append(ctl_run(self.server, "key-status", ZONE).stdout)
                time.sleep(0.1)
            again = ctl_run(self.server, "key-roll", ZONE)
            out, err = roll.communicate()
            self.assertEqual(roll.returncode, 0, out + err)
            self.assertEqual(out, "started: a rollover of example.com (see key-status and the "
                                  "log)\n")
            # Answered once on disk: the new key is in the file, incoming.
            states = self.keys_in_file()
            new = [k for k in states if k not in first]
            self.assertEqual(len(new), 1, states)
            self.assertEqual(states, {first[0]: "active", new[0]: "incoming"})
            self.assertEqual(again.returncode, 1, again.stdout + again.stderr)
            self.assertIn("a rollover is already running", again.stdout + again.stderr)
            self.assertTrue(any(re.search(r"(?m)^next \S+: writing the key state", s)
                                for s in statuses), statuses)
            both = tuple(sorted(first + tuple(new)))
            deadline = time.time() + 30
            while time.time() < deadline and (not seen or seen[-1][0] != (both, both)):
                time.sleep(0.05)
            time.sleep(0.3)
        finally:
            stop.set()
            t.join()
        self.assertEqual(errors, [])
        answers = [st for st, _ in seen]
        self.assertEqual(set(answers), {(first, first), (both, both)})
        # Old until the change, new after it, never old again.
        self.assertNotIn((first, first), answers[answers.index((both, both)):])
        for st, on_disk in seen:
            if st == (both, both):
                self.assertEqual(on_disk.get(new[0]), "incoming")
        # Every RRset is signed by both keys now.
        www = dns.name.from_text("www." + ZONE)
        r = self.ask(www, "A")
        sigs = r.find_rrset(r.answer, www, dns.rdataclass.IN, dns.rdatatype.RRSIG,
                            dns.rdatatype.A)
        self.assertEqual(tuple(sorted(s.key_tag for s in sigs)), both)
        self.assertRegex(self.server.log(), r"example\.com\.: keys: rollover started: key %d "
                                            r"signs beside the old one" % new[0])


if __name__ == "__main__":
    main()
