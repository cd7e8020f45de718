# SPDX-License-Identifier: MIT
"""The zone of the wildcard and DNAME tests (issue #28), and the questions
asked of it: shared by test_wildcard.py (exact answers, a Knot differential,
transfers), tests/conformance (validating resolvers) and test_noalloc.py."""

from harness import example_zone

LONG = "l" * 60
ZONE = example_zone("""*        IN TXT   "apex wildcard"
*        IN MX    10 mail.example.com.
mail     IN A     192.0.2.25
www      IN A     192.0.2.80
*.cdn    IN CNAME www.example.com.
edge.cdn IN A     192.0.2.81
a.ent    IN A     192.0.2.82
*.ent    IN A     192.0.2.83
*.ent    IN AAAA  2001:db8::83
a.b      IN TXT   "below an empty non-terminal, no wildcard"
*.loop   IN CNAME x.loop.example.com.
out      IN DNAME example.net.
inside   IN DNAME web.example.com.
a.web    IN A     192.0.2.90
long     IN DNAME %s.%s.example.net.
""" % (LONG, LONG))

# (name, type, what it shows); the name is relative to example.com.
QUESTIONS = [
    ("foo", "TXT", "apex wildcard"),
    ("foo", "MX", "wildcard MX with its target's address"),
    ("a.b.c.foo", "TXT", "several labels below the apex wildcard"),
    ("foo", "A", "wildcard NODATA"),
    ("*", "TXT", "the literal '*' label"),
    ("*", "A", "the literal '*' label, NODATA"),
    ("www", "TXT", "an existing name blocks synthesis"),
    ("x.www", "TXT", "NXDOMAIN below an existing name (no *.www)"),
    ("ent", "TXT", "an empty non-terminal blocks synthesis"),
    ("x.ent", "A", "wildcard below an empty non-terminal"),
    ("x.y.ent", "AAAA", "two labels below it"),
    ("x.ent", "TXT", "its NODATA"),
    ("z.b", "TXT", "NXDOMAIN below an ENT without a wildcard"),
    ("x.cdn", "A", "wildcard CNAME followed in the zone"),
    ("x.cdn", "CNAME", "wildcard CNAME asked for"),
    ("edge.cdn", "A", "an existing name beside the wildcard"),
    ("a.loop", "A", "a wildcard CNAME that loops"),
    ("a.inside", "A", "DNAME with a match below its target"),
    ("b.inside", "A", "DNAME without a match below its target"),
    ("a.inside", "CNAME", "DNAME, CNAME asked for"),
    ("inside", "DNAME", "the DNAME itself"),
    ("inside", "A", "the DNAME owner, NODATA"),
    ("x.out", "A", "DNAME out of the zone"),
    ("%s.%s.%s.long" % ("a" * 60, "b" * 60, "c" * 50), "A", "DNAME: the new name is too long"),
]

# Wildcards and a DNAME added to the demo zone (demo/example.com.zone, which
# has mail.example.com) by the tests that run the demo configuration:
# test_noalloc, tests/conformance (resolvers, Zonemaster).
DEMO = """*.wild IN TXT "wildcard"
*.wild IN MX 10 mail.example.com.
*.alias IN CNAME mail.example.com.
dn IN DNAME wild.example.com.
"""


def demo_with_wildcards(zone, text):
    """An edit_zone for harness.demo_server: DEMO into example.com."""
    return text + DEMO if zone == "example.com" else text
