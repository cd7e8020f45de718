#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every example in the documentation is run (issue #25.7).

The examples are found, not listed here: every fenced block of README.md,
HACKING.md and doc/*.md, the inline `geoacme ...` commands of those files,
`geoacme --help` (and each command's --help) and the man page's synopsis.

A fenced block is handled by what it is:

- ```toml: a configuration.  `geoacme check` must accept it.  A fragment is
  completed from a documented base, said in an HTML comment on the line
  before the block:
      <!-- example: config fragment -->            merged into config.toml.example
      <!-- example: config fragment zone=NAME -->  its keys set in that zone's [[zones]]
      <!-- example: config fragment base=previous ... -->  completed from the
          configuration of the config block before it in the same file
  A fragment's tables replace the base's table of the same name ([server])
  or zone ([[zones]] with the same zone =).  Paths under /etc/geoacme and
  /var/lib/geoacme are made in a temporary folder: keys with `geoacme
  keygen`, zone files from demo/.
- dig and kdig lines (or a transcript of `$ dig ...` followed by its
  output): run against config.toml.example served on loopback (the demo,
  with tests/fixtures/make_mmdb.pl --layout doc in place of DB-IP's data:
  the networks the examples query, placed where the examples say), port 5353
  replaced by the server's.  Every query must get NOERROR or NXDOMAIN; the
  records, flags and CLIENT-SUBNET the doc shows must be what dig prints.
- `geoacme ds|explain|check|version|keygen` lines: run with -c pointing at
  that demo configuration; exit 0.  In a transcript (`$ geoacme ...` and its
  output) the output is compared, commit hashes and the " test-hooks" of a
  test build aside.
- anything else says what it is in a comment before it:
      <!-- example: shell [FROM=TO ...] -->  a harmless shell snippet, run with
          bash in the demo's folder, each FROM path replaced by the folder's TO
          (so /var/lib/geoacme/ can be the demo's database folder)
      <!-- example: explain-output -->  a `geoacme explain` output: the same
          question and client asked, every line compared but the database path
      <!-- example: knot -->        Knot configuration: knotc conf-check
      <!-- example: prometheus -->  promtool check config
      <!-- example: copy-of PATH "TEXT" -->  the same thing is run by the test
          or script PATH, which must contain TEXT (so the copy has a source)
      <!-- example: not-run "REASON" -->  touches the host (systemd, /usr,
          the network); the reason is printed
  A block with no way to run it fails the test, so a new example must say
  how it is checked.

The table of clients per continent in doc/geo.md is queried row by row.
config.toml.example is what the demo server serves; contrib/config.toml (the
installed example) is checked with its files made where it names them.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unicodedata
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import BIN, REPO  # noqa: E402

DOCS = ["README.md", "HACKING.md"] + sorted(
    "doc/" + f for f in os.listdir(os.path.join(REPO, "doc")) if f.endswith(".md"))
DIRECTIVE = re.compile(r"<!--\s*example:\s*(.*?)\s*-->")
SAFE_COMMANDS = ("ds", "explain", "check", "version", "keygen")


class Block:
    def __init__(self, path, line, lang, directive, lines):
        self.path, self.line, self.lang, self.directive, self.lines = path, line, lang, directive, lines

    def where(self):
        return "%s:%d" % (self.path, self.line)

    def kind(self):
        if self.directive:
            return self.directive.split()[0]
        body = [l.strip() for l in self.lines if l.strip() and not l.strip().startswith("#")]
        if self.lang == "toml":
            return "config"
        if any(re.match(r"(\$ )?k?dig ", l) for l in body):
            return "dig"
        if body and all(re.match(r"geoacme (%s)\b" % "|".join(SAFE_COMMANDS), l) for l in body):
            return "geoacme"
        if body and re.match(r"\$ geoacme (%s)\b" % "|".join(SAFE_COMMANDS), body[0]) and \
                all(re.match(r"\$ geoacme ", l) for l in body if l.startswith("$ ")):
            return "transcript"
        return None


def scan(path):
    """The fenced blocks of one Markdown file, with the directive before each."""
    blocks = []
    with open(os.path.join(REPO, path)) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = len(m.group(1)), m.group(2), i
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        directive = None
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0:
            d = DIRECTIVE.search(lines[k])
            if d:
                directive = d.group(1)
        blocks.append(Block(path, start + 1, lang, directive, [l[indent:] for l in lines[start + 1:j]]))
        i = j + 1
    return blocks


def all_blocks():
    return [b for path in DOCS for b in scan(path)]


def inline_commands():
    """`geoacme CMD ...` in running text: concrete ones only (no FILE, NAME
    or [optional] placeholders, which are usage, not examples)."""
    found = []
    for path in DOCS:
        with open(os.path.join(REPO, path)) as f:
            text = f.read()
        text = re.sub(r"(?ms)^\s*```.*?^\s*```", "", text)
        for m in re.finditer(r"`(geoacme (%s)\b[^`]*)`" % "|".join(SAFE_COMMANDS), text):
            cmd = m.group(1)
            if re.search(r"[\[\]|]|\b[A-Z]{2,}\b|\.\.\.|…", cmd):
                continue
            if " -c " not in cmd and not re.match(r"geoacme (version$|keygen --)", cmd):
                continue    # the command's name in a sentence, not a command line
            found.append((path, cmd))
    return found


# --- configurations ---------------------------------------------------------

def split_tables(text):
    """[(header or None, [lines])] at top level: a table runs to the next
    header of the same or a higher level ([x] or [[zones]])."""
    parts, cur = [], (None, [])
    for line in text.split("\n"):
        m = re.match(r"^\s*\[\[?([A-Za-z0-9_.]+)\]\]?\s*(#.*)?$", line)
        if m and "." not in m.group(1):
            parts.append(cur)
            cur = (line.strip().split("#")[0].strip(), [line])
        else:
            cur[1].append(line)
    parts.append(cur)
    return parts


def zone_of(lines):
    for line in lines:
        m = re.match(r'^\s*zone\s*=\s*"([^"]+)"', line)
        if m:
            return m.group(1)
    return None


def set_keys(lines, keys):
    """lines (one table) with each `key = value` of keys set: replaced where
    the key is, else added after the table's own keys (before a sub-table)."""
    out, done = [], set()
    for line in lines:
        m = re.match(r"^\s*([A-Za-z0-9_]+)\s*=", line)
        if m and m.group(1) in keys and m.group(1) not in done:
            out.append(keys[m.group(1)])
            done.add(m.group(1))
        else:
            out.append(line)
    rest = [v for k, v in keys.items() if k not in done]
    at = next((i for i, l in enumerate(out) if i > 0 and re.match(r"^\s*\[", l)), len(out))
    return out[:at] + rest + out[at:]


def key_lines(text):
    keys = {}
    for line in text.split("\n"):
        m = re.match(r"^\s*([A-Za-z0-9_]+)\s*=", line)
        if m:
            keys[m.group(1)] = line
    return keys


def complete_config(fragment, options, base_text):
    """The whole configuration a fragment stands for (see the module doc)."""
    base = split_tables(base_text)
    zone = options.get("zone")
    if zone:
        for i, (header, lines) in enumerate(base):
            if header == "[[zones]]" and zone_of(lines) == zone:
                base[i] = (header, set_keys(lines, key_lines(fragment)))
                break
        else:
            raise AssertionError("the base has no zone %s" % zone)
        return "\n".join(l for _, lines in base for l in lines)
    for header, lines in split_tables(fragment):
        if header is None:
            if any(l.strip() and not l.strip().startswith("#") for l in lines):
                base[0] = (None, set_keys(base[0][1], key_lines("\n".join(lines))))
            continue
        if header == "[[zones]]":
            name = zone_of(lines)
            base = [(h, ls) for h, ls in base if not (h == "[[zones]]" and zone_of(ls) == name)]
            base.append((header, lines))
            continue
        for i, (h, ls) in enumerate(base):
            if h == header:
                base[i] = (h, set_keys(ls, key_lines("\n".join(lines[1:]))))
                break
        else:
            base.append((header, lines))
    return "\n".join(l for _, lines in base for l in lines)


def localise(config, root):
    """Absolute /etc/geoacme and /var/lib/geoacme paths moved under root,
    and the files they name made there."""
    for prefix in ("/etc/geoacme/", "/var/lib/geoacme/"):
        config = config.replace('"' + prefix, '"' + root + prefix)
    for path in re.findall(r'"(%s/[^"]+)"' % re.escape(root), config):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            continue
        if path.endswith(".pem"):
            harness.make_key(path)
        elif path.endswith(".tsig"):
            subprocess.run([BIN, "keygen", "--tsig", path], check=True, stdout=subprocess.DEVNULL)
        elif path.endswith(".mmdb"):
            layout = "flat" if re.search(r"-ipv[46]\.mmdb$", path) else "doc"
            d = tempfile.mkdtemp(dir=root)
            subprocess.run(["perl", os.path.join(harness.FIXTURES, "make_mmdb.pl"), "--layout", layout,
                            "--out", d], check=True, stdout=subprocess.DEVNULL)
            made = ("flat-ipv6.mmdb" if path.endswith("-ipv6.mmdb") else "flat-ipv4.mmdb") \
                if layout == "flat" else "doc.mmdb"
            os.rename(os.path.join(d, made), path)
        elif path.endswith(".zone"):
            name = os.path.basename(path)[:-len(".zone")]
            with open(os.path.join(REPO, "demo", name + ".zone")) as f, open(path, "w") as out:
                out.write(f.read())
    return config


def options_of(directive):
    return dict(o.split("=", 1) for o in (directive or "").split()[1:] if "=" in o)


# --- dig transcripts --------------------------------------------------------

RR = re.compile(r"^(\S+)\s+(\d+)\s+IN\s+([A-Z0-9]+)\s+(.*?)\s*$")


def parse_dig(lines):
    """{"answer": [...], "additional": [...], "authority": [...], "flags": str,
    "subnet": str, "status": str}: what a dig output (or a doc's copy of
    one) shows.  Records are (owner, ttl, type, rdata) with the rdata's
    blanks collapsed; an RRSIG keeps only its first four fields (the rest
    depends on the key and the time); `;` comments are dropped."""
    out = {"answer": [], "additional": [], "authority": []}
    section = "answer"
    for raw in lines:
        line = raw.rstrip()
        m = re.match(r"^;; (ANSWER|ADDITIONAL|AUTHORITY) SECTION:", line)
        if m:
            section = m.group(1).lower()
            continue
        m = re.search(r";; flags: ([a-z ]*);", line)
        if m:
            out["flags"] = " ".join(sorted(m.group(1).split()))
        m = re.search(r"status: (\w+)", line)
        if m:
            out["status"] = m.group(1)
        m = re.search(r"CLIENT-SUBNET: (\S+)", line)
        if m:
            out["subnet"] = m.group(1)
        if line.startswith(";") or not line or line[0].isspace():
            continue
        rr = RR.match(line.split(" ; ")[0].split("\t;")[0].strip())
        if not rr:
            continue
        owner, ttl, rtype, rdata = rr.groups()
        rdata = " ".join(rdata.split())
        if rtype == "RRSIG":
            rdata = " ".join(rdata.split()[:4])
        elif " ;" in rdata:
            rdata = rdata.split(" ;")[0].strip()
        out[section].append((owner.lower(), int(ttl), rtype, rdata))
    return out


def dig_command(line, port):
    """argv for a doc's dig/kdig line: the shell comment dropped, the port
    made the server's."""
    line = re.sub(r"^\$ ", "", line.strip())
    line = re.sub(r"\s+#.*$", "", line)
    argv = shlex.split(line)
    for i, a in enumerate(argv):
        if a == "-p" and i + 1 < len(argv):
            argv[i + 1] = str(port)
    return argv


def site_addresses(config_text):
    """{normalised site name: (ipv4, ipv6)} from a config's [[sites]]."""
    sites = {}
    for header, lines in split_tables(config_text):
        if header != "[[sites]]":
            continue
        text = "\n".join(lines)
        name = re.search(r'^name\s*=\s*"([^"]+)"', text, re.M)
        v4 = re.search(r'^ipv4\s*=\s*"([^"]+)"', text, re.M)
        v6 = re.search(r'^ipv6\s*=\s*"([^"]+)"', text, re.M)
        if name:
            sites[norm(name.group(1))] = (v4 and v4.group(1), v6 and v6.group(1))
    return sites


def norm(name):
    name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[\s_]+", "-", name.strip().lower())


class DocChecks:
    """The checks, written once, used on the docs and on the self-test's
    wrong examples."""

    def __init__(self, server, base_config):
        self.server, self.base_config = server, base_config

    def check_config(self, block, previous=None):
        """(None when geoacme check accepts the block, else why not; the
        whole configuration checked).  base=previous completes a fragment
        from the configuration of the block before it in the same file."""
        text = "\n".join(block.lines)
        options = options_of(block.directive)
        fragment = "fragment" in (block.directive or "").split()
        root = tempfile.mkdtemp(prefix="geoacme-doc-", dir=self.server.dir)
        base = previous if options.get("base") == "previous" else self.base_config
        if base is None:
            return "base=previous, but no configuration before it in %s" % block.path, None
        config = complete_config(text, options, base) if fragment else text
        config = localise(config, root)
        path = os.path.join(self.server.dir, os.path.basename(root) + ".toml")
        with open(path, "w") as f:
            f.write(config)
        r = subprocess.run([BIN, "check", "-c", path], capture_output=True, text=True,
                           cwd=self.server.dir, timeout=60)
        if r.returncode != 0:
            return "geoacme check exit %d:\n%s%s\n--- the configuration checked:\n%s" % (
                r.returncode, r.stdout, r.stderr, config), config
        return None, config

    def check_dig(self, block):
        """[problems] of a block of dig/kdig lines or transcripts."""
        problems = []
        runs, cur = [], None
        for line in block.lines:
            s = line.strip()
            if re.match(r"(\$ )?k?dig ", s):
                cur = (s, [])
                runs.append(cur)
            elif s.startswith("$ "):
                cur = None     # another command (the demo itself): the server stands for it
            elif cur is not None:
                cur[1].append(line)
        for command, shown in runs:
            argv = dig_command(command, self.server.port)
            if argv[0] == "dig":
                argv.insert(1, "+tries=1")
            r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            got = parse_dig(r.stdout.split("\n"))
            if "+noall" in argv and r.returncode == 0:    # the status is not printed: ask again for it
                again = subprocess.run(argv + ["+comments"], capture_output=True, text=True, timeout=30)
                got["status"] = parse_dig(again.stdout.split("\n")).get("status")
            if argv[0] == "kdig":
                m = re.search(r"status: (\w+)", r.stdout)
                got["status"] = m.group(1) if m else None
            if r.returncode != 0 or got.get("status") not in ("NOERROR", "NXDOMAIN"):
                problems.append("%s: %s gave exit %d, status %s:\n%s%s" % (
                    block.where(), command, r.returncode, got.get("status"), r.stdout, r.stderr))
                continue
            want = parse_dig(shown)
            for key in ("flags", "subnet", "status"):
                if key in want and want[key] != got.get(key):
                    problems.append("%s: %s: the doc shows %s %r, dig says %r" % (
                        block.where(), command, key, want[key], got.get(key)))
            for section in ("answer", "authority", "additional"):
                if want[section] and want[section] != got[section]:
                    problems.append("%s: %s: the doc's %s section\n  %s\nis not what dig says\n  %s" % (
                        block.where(), command, section, want[section], got[section]))
        return problems

    def run_geoacme(self, command):
        """(argv, result) of a doc's geoacme command, run on the demo config."""
        argv = shlex.split(re.sub(r"\s+#.*$", "", command.strip().lstrip("$ ")))
        argv = [a for a in argv if a]
        for i, a in enumerate(argv):
            if a in ("-c", "--config") and i + 1 < len(argv):
                argv[i + 1] = self.server.config_path
        if argv[1] == "keygen":
            argv = [a if not a.startswith("/") and not a.endswith((".pem", ".tsig")) else
                    os.path.join(tempfile.mkdtemp(dir=self.server.dir), os.path.basename(a))
                    for a in argv]
        r = subprocess.run([BIN] + argv[1:], capture_output=True, text=True,
                           cwd=self.server.dir, timeout=60)
        return argv, r


class DocExamples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = harness.demo_server(settings={"databases": '["doc.mmdb"]'})
        subprocess.run(["perl", os.path.join(harness.FIXTURES, "make_mmdb.pl"), "--layout", "doc",
                        "--out", cls.server.dir], check=True, stdout=subprocess.DEVNULL)
        cls.server.start()
        with open(cls.server.config_path) as f:
            cls.served_config = f.read()
        # The documented base of a fragment: config.toml.example as the demo
        # serves it (its keys made, the doc database in place of DB-IP's).
        cls.checks = DocChecks(cls.server, cls.served_config)
        cls.blocks = all_blocks()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def blocks_of(self, kind):
        return [b for b in self.blocks if b.kind() == kind]

    def test_every_block_is_checked_somehow(self):
        known = {"config", "dig", "geoacme", "transcript", "shell", "explain-output", "knot",
                 "prometheus", "copy-of", "not-run"}
        loose = ["%s (```%s, %s)" % (b.where(), b.lang, (b.lines or [""])[0][:50])
                 for b in self.blocks if b.kind() not in known]
        self.assertEqual(loose, [], "examples with no way to check them: add an "
                         "<!-- example: ... --> comment (see this test's doc)")

    def test_configs(self):
        blocks = self.blocks_of("config")
        self.assertGreater(len(blocks), 2)
        previous = {}
        for b in blocks:
            with self.subTest(example=b.where()):
                why, previous[b.path] = self.checks.check_config(b, previous.get(b.path))
                self.assertIsNone(why, "%s: %s" % (b.where(), why))

    def test_installed_example_config(self):
        """contrib/config.toml, installed as examples/config.toml for
        /etc/geoacme: checked with its files made where it names them."""
        with open(os.path.join(REPO, "contrib/config.toml")) as f:
            block = Block("contrib/config.toml", 1, "toml", None, f.read().split("\n"))
        why, _ = self.checks.check_config(block)
        self.assertIsNone(why, why)

    def test_dig_examples(self):
        blocks = self.blocks_of("dig")
        self.assertGreater(len(blocks), 3)
        problems = [p for b in blocks for p in self.checks.check_dig(b)]
        self.assertEqual(problems, [], "\n\n".join(problems))

    def test_geoacme_commands(self):
        commands = [(b.where(), l) for b in self.blocks_of("geoacme") for l in b.lines
                    if l.strip() and not l.strip().startswith("#")]
        commands += inline_commands()
        self.assertGreater(len(commands), 5)
        for where, command in commands:
            with self.subTest(example=where, command=command):
                argv, r = self.checks.run_geoacme(command)
                self.assertEqual(r.returncode, 0, "%s: %s\n%s%s" % (where, command, r.stdout, r.stderr))
                m = re.search(r"#\s*(\S+\. IN DS \d+ \d+ \d+)", command)
                if m:   # a ds line with its output in a comment: the same zone, algorithm, digest type
                    shown = m.group(1).split()
                    got = r.stdout.split()
                    self.assertEqual((got[0], got[2], got[5]), (shown[0], shown[2], shown[5]), command)

    def test_continent_table(self):
        """doc/geo.md's table of one client per continent, row by row."""
        with open(os.path.join(REPO, "doc/geo.md")) as f:
            rows = [l for l in f.read().split("\n") if re.match(r"^\| `[0-9a-f:.]+/\d+`", l)]
        self.assertGreater(len(rows), 5)
        sites = site_addresses(self.served_config)
        for row in rows:
            cells = [c.strip() for c in row.strip("|").split("|")]
            subnet = re.match(r"`([^`]+)`", cells[0]).group(1)
            rtype = "AAAA" if "(AAAA)" in cells[0] else "A"
            scope = re.match(r"/(\d+)", cells[2]).group(1)
            ttl = int(re.search(r"TTL (\d+)", cells[3]).group(1))
            addrs = re.findall(r"`([0-9a-f:.]+)`", cells[3])
            if not addrs:       # named by site: "Paris, Nuremberg"
                names = [norm(n) for n in re.sub(r",?\s*TTL.*", "", cells[3]).split(",")]
                addrs = [sites[n][0 if rtype == "A" else 1] for n in names]
            with self.subTest(row=subnet):
                r = subprocess.run(["dig", "@127.0.0.1", "-p", str(self.server.port), "+norec",
                                    "+tries=1", "www.example.com", rtype, "+subnet=" + subnet],
                                   capture_output=True, text=True, timeout=30)
                got = parse_dig(r.stdout.split("\n"))
                self.assertEqual([(rr[1], rr[3]) for rr in got["answer"]], [(ttl, a) for a in addrs], row)
                self.assertEqual(got.get("subnet", "").split("/")[-1], scope, row)

    def test_transcripts(self):
        blocks = self.blocks_of("transcript")
        self.assertGreater(len(blocks), 0)
        for b in blocks:
            runs, cur = [], None
            for line in b.lines:
                if line.startswith("$ "):
                    cur = (line[2:], [])
                    runs.append(cur)
                elif cur is not None and line.strip():
                    cur[1].append(line.rstrip())
            for command, shown in runs:
                with self.subTest(example=b.where(), command=command):
                    argv, r = self.checks.run_geoacme(command)
                    self.assertEqual(r.returncode, 0, "%s: %s\n%s" % (b.where(), command, r.stderr))
                    got = [l.replace(" test-hooks", "").replace("-dirty)", ")")
                           for l in r.stdout.rstrip().split("\n")]
                    hexes = lambda ls: [re.sub(r"\b[0-9a-f]{7,40}\b", "<commit>", l) for l in ls]
                    self.assertEqual(hexes(got), hexes(shown), b.where())

    def test_shell_snippets(self):
        blocks = self.blocks_of("shell")
        self.assertGreater(len(blocks), 0)
        for b in blocks:
            with self.subTest(example=b.where()):
                text = "\n".join(b.lines)
                for opt in b.directive.split()[1:]:
                    old, new = opt.split("=", 1)
                    new = os.path.join(self.server.dir, new)
                    os.makedirs(new, exist_ok=True)
                    text = text.replace(old, new.rstrip("/") + "/")
                cwd = tempfile.mkdtemp(dir=self.server.dir)
                r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], capture_output=True,
                                   text=True, cwd=cwd, timeout=60)
                self.assertEqual(r.returncode, 0, "%s:\n%s\n%s%s" % (b.where(), text, r.stdout, r.stderr))

    def test_explain_outputs(self):
        blocks = self.blocks_of("explain-output")
        self.assertGreater(len(blocks), 0)
        for b in blocks:
            with self.subTest(example=b.where()):
                question = re.match(r"question: (\S+) (\S+)", b.lines[0]).groups()
                client = re.match(r"client:\s+(\S+)", b.lines[1]).group(1)
                r = subprocess.run([BIN, "explain", "-c", self.server.config_path, question[0], question[1],
                                    "--client", client], capture_output=True, text=True,
                                   cwd=self.server.dir, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
                keep = lambda ls: [l.rstrip() for l in ls if not l.startswith("location:")]
                self.assertEqual(keep(r.stdout.rstrip().split("\n")), keep(b.lines), b.where())

    def test_knot_configs(self):
        blocks = self.blocks_of("knot")
        self.assertGreater(len(blocks), 0)
        for b in blocks:
            with self.subTest(example=b.where()):
                text = "\n".join(b.lines)
                secret = subprocess.run(["openssl", "rand", "-base64", "32"], capture_output=True,
                                        text=True, check=True).stdout.strip()
                text = re.sub(r"<base64[^>]*>", secret, text)
                d = tempfile.mkdtemp(dir=self.server.dir)
                path = os.path.join(d, "knot.conf")
                with open(path, "w") as f:
                    f.write("server:\n  rundir: %s\ndatabase:\n  storage: %s\n" % (d, d) + text + "\n")
                r = subprocess.run(["knotc", "-c", path, "conf-check"], capture_output=True, text=True,
                                   timeout=30)
                self.assertEqual(r.returncode, 0, "%s:\n%s%s" % (b.where(), r.stdout, r.stderr))

    def test_prometheus_configs(self):
        for b in self.blocks_of("prometheus"):
            with self.subTest(example=b.where()):
                d = tempfile.mkdtemp(dir=self.server.dir)
                path = os.path.join(d, "prometheus.yml")
                with open(path, "w") as f:
                    f.write("\n".join(b.lines) + "\n")
                r = subprocess.run(["promtool", "check", "config", path], capture_output=True,
                                   text=True, timeout=30)
                self.assertEqual(r.returncode, 0, "%s:\n%s%s" % (b.where(), r.stdout, r.stderr))

    def test_copies_have_a_source(self):
        for b in self.blocks_of("copy-of"):
            with self.subTest(example=b.where()):
                m = re.match(r'copy-of\s+(\S+)\s+"([^"]+)"', b.directive)
                self.assertTrue(m, "%s: copy-of PATH \"TEXT\"" % b.where())
                path = os.path.join(REPO, m.group(1))
                self.assertTrue(os.path.isfile(path), "%s: no %s" % (b.where(), m.group(1)))
                with open(path) as f:
                    self.assertIn(m.group(2), f.read(), "%s: %s does not run it" % (b.where(), m.group(1)))

    def test_not_run_says_why(self):
        for b in self.blocks_of("not-run"):
            self.assertRegex(b.directive, r'not-run\s+".{10,}"', b.where())
            print("not run: %s: %s" % (b.where(), b.directive[len("not-run"):].strip()))

    def test_help_and_man_page_agree_with_each_command(self):
        """Each command's own --help usage (printed by its parser) is what
        geoacme --help and the man page's synopsis say: the man page names
        every option and every argument and choice word (HTTPS, LAT, ...);
        geoacme --help, a summary, every one but the optional flags."""
        top = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
        with open(os.path.join(REPO, "doc/geoacme.8.in")) as f:
            man = f.read().replace("\\-", "-")
        man_synopsis = man[man.index(".SH SYNOPSIS"):man.index(".SH DESCRIPTION")]
        commands = re.findall(r"^  ([a-z]+) ", top, re.M)
        self.assertIn("explain", commands)
        words = re.compile(r"--[a-z-]+|\b[A-Z]{2,}[A-Z0-9]*\b")
        for command in commands:
            with self.subTest(command=command):
                r = subprocess.run([BIN, command, "--help"], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, command)
                usage = "\n".join(l for l in r.stdout.split("\n")
                                  if re.match(r"^(usage:|\s+geoacme )", l))
                summary = "\n".join(l for l in top.split("\n") if re.match(r"^  %s " % command, l))
                for word in set(words.findall(usage)):
                    self.assertIn(word, man_synopsis, "the man page's synopsis, %s: %s" % (command, word))
                required = usage
                while re.search(r"\[-[^\[\]]*\]", required):
                    required = re.sub(r"\[-[^\[\]]*\]", "", required)
                if "..." in summary:
                    continue
                for word in set(words.findall(required)):
                    self.assertIn(word, summary, "geoacme --help, %s: %s" % (command, word))

    def test_self_wrong_examples_fail(self):
        """The checks fail on wrong examples (so a wrong new one fails the
        suite): a notify list with host names, a dig transcript whose TTL and
        scope are not what the server sends."""
        bad = Block("self", 1, "toml", "config fragment zone=acme.example.net",
                    ['axfr_policy = "AllowAll"', 'notify = ["ns2:53", "ns3:53"]'])
        self.assertIsNotNone(self.checks.check_config(bad)[0])
        good = Block("self", 1, "toml", "config fragment zone=acme.example.net",
                     ['axfr_policy = "AllowAll"', 'notify = ["192.0.2.54:53"]'])
        self.assertIsNone(self.checks.check_config(good)[0])
        wrong = Block("self", 1, "", None, [
            "$ dig @127.0.0.1 -p 5353 +norec www.example.com A +subnet=24.48.0.0/24",
            "; CLIENT-SUBNET: 24.48.0.0/24/16",
            "www.example.com.  3600  IN A 5.161.44.145"])
        self.assertEqual(len(self.checks.check_dig(wrong)), 2, self.checks.check_dig(wrong))


if __name__ == "__main__":
    harness.main()
