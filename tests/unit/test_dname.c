/* SPDX-License-Identifier: MIT */
/* Names: unpacking (compression, loops, limits), case, canonical order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire/dname.h"
#include "tests/unit/check.h"

static void test_from_to_str(void)
{
	uint8_t n[DNAME_MAX];
	char s[1024];
	is_int(dname_from_str("WWW.Example.COM", n), 17, "length of www.example.com");
	is_mem(n, "\3www\7example\3com", 17, "wire form, lowercased");
	is_int(dname_from_str("www.example.com.", n), 17, "trailing dot accepted");
	is_int(dname_from_str(".", n), 1, "root");
	is_int(dname_from_str("a..b", n), -EINVAL, "empty label rejected");
	is_int(dname_from_str("", n), -EINVAL, "empty string rejected");
	char long_label[80];
	memset(long_label, 'a', 64);
	long_label[64] = 0;
	is_int(dname_from_str(long_label, n), -EINVAL, "64-byte label rejected");
	long_label[63] = 0;
	is_int(dname_from_str(long_label, n), 65, "63-byte label accepted");
	char long_name[300] = "";
	for (int i = 0; i < 4; i++)
		strcat(long_name, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.");
	is_int(dname_from_str(long_name, n), -EINVAL, "name over 255 bytes rejected");
	is_int(dname_from_str("a\\.b.c", n), 7, "escaped dot stays in the label");
	dname_to_str(n, s, sizeof(s));
	is_str(s, "a\\.b.c.", "escaped dot printed back");
	dname_from_str("x\\000y.z", n);
	dname_to_str(n, s, sizeof(s));
	is_str(s, "x\\000y.z.", "decimal escape round trip");
	is_int(dname_to_str(n, s, 4), -ENOSPC, "small buffer reported");
}

static void test_unpack(void)
{
	uint8_t out[DNAME_MAX];
	/* header(12) + "www.example.com" + pointer name "mail" -> offset 16 ("example.com") */
	uint8_t msg[64] = { 0 };
	memcpy(msg + 12, "\3www\7example\3com\0", 17);
	memcpy(msg + 29, "\4mail\xc0\x10", 7);
	size_t pos = 29;
	is_int(dname_unpack(msg, 36, &pos, out), 18, "compressed name length");
	is_mem(out, "\4mail\7example\3com", 18, "compressed name expanded");
	is_int(pos, 36, "position after the pointer");

	pos = 12;
	is_int(dname_unpack(msg, 36, &pos, out), 17, "plain name");
	is_int(pos, 29, "position after the plain name");

	uint8_t loop[16] = { 0 };
	loop[12] = 0xc0;
	loop[13] = 12;
	pos = 12;
	is_int(dname_unpack(loop, 14, &pos, out), -EBADMSG, "self pointer rejected");
	uint8_t fwd[20] = { 0 };
	memcpy(fwd + 12, "\1a\xc0\x10\1b\xc0\x0c", 8);
	pos = 12;
	is_int(dname_unpack(fwd, 20, &pos, out), -EBADMSG, "forward pointer rejected");
	uint8_t trunc[14] = { 0 };
	memcpy(trunc + 12, "\5ab", 2);
	pos = 12;
	is_int(dname_unpack(trunc, 14, &pos, out), -EBADMSG, "label past the end rejected");
	uint8_t ext[16] = { 0 };
	ext[12] = 0x41;
	pos = 12;
	is_int(dname_unpack(ext, 16, &pos, out), -EBADMSG, "0x40 label type rejected");
	/* 256 bytes through pointers. */
	uint8_t big[400] = { 0 };
	size_t at = 12;
	for (int i = 0; i < 4; i++) {
		big[at] = 63;
		memset(big + at + 1, 'a', 63);
		at += 64;
	}
	big[at] = 0;
	pos = 12;
	is_int(dname_unpack(big, at + 1, &pos, out), -EBADMSG, "257-byte name rejected");
}

static void test_compare(void)
{
	uint8_t a[DNAME_MAX], b[DNAME_MAX];
	dname_from_str("example.com", a);
	dname_from_str("a.example.com", b);
	ok(dname_canonical_cmp(a, b) < 0, "parent sorts before child");
	/* RFC 4034 6.1 example order. */
	const char *order[] = { "example", "a.example", "yljkjljk.a.example", "Z.a.example",
		                "zABC.a.EXAMPLE", "z.example", "\\001.z.example", "*.z.example",
		                "\\200.z.example" };
	uint8_t names[9][DNAME_MAX];
	for (int i = 0; i < 9; i++)
		dname_from_str(order[i], names[i]);
	int good = 1;
	for (int i = 0; i + 1 < 9; i++)
		if (dname_canonical_cmp(names[i], names[i + 1]) >= 0)
			good = 0;
	ok(good, "RFC 4034 section 6.1 example order");
	uint8_t m1[DNAME_MAX] = "\3WwW\7example\3com";
	dname_from_str("www.example.com", a);
	ok(dname_equal(m1, a), "equality ignores case");
	ok(dname_is_subdomain(a, dname_skip_labels(a, 1)), "subdomain");
	ok(!dname_is_subdomain(dname_skip_labels(a, 1), a), "parent is not a subdomain of child");
	is_int(dname_label_count(a), 3, "label count");
	dname_lower(m1);
	is_mem(m1, "\3www", 4, "lowered in place");
}

/* The question reader agrees with dname_unpack + dname_lower + dname_hash. */
static void test_unpack_question(void)
{
	uint8_t orig[DNAME_BUF], low[DNAME_BUF], off[DNAME_LABELS_MAX], labels = 99;
	uint8_t ref[DNAME_MAX];
	uint32_t hash = 0;
	/* Header, then WwW.ExAmPlE.CoM with bytes that must not be touched. */
	uint8_t msg[64] = { 0 };
	memcpy(msg + 12, "\3WwW\7ExAmPlE\3CoM\0", 17);
	size_t pos = 12;
	is_int(dname_unpack_question(msg, 12 + 17 + 4, &pos, orig, low, off, &labels, &hash), 17,
	       "question length");
	is_int((int)pos, 29, "position past the name");
	is_mem(orig, "\3WwW\7ExAmPlE\3CoM\0", 17, "client's case kept");
	is_mem(low, "\3www\7example\3com\0", 17, "lowercase copy");
	is_int(labels, 3, "three labels");
	is_int(off[0], 0, "label 0 at 0");
	is_int(off[1], 4, "label 1 at 4");
	is_int(off[2], 12, "label 2 at 12");
	is_int((int)hash, (int)dname_hash((const uint8_t *)"\3www\7example\3com\0", 17),
	       "hash of the lowercase copy");
	/* Every length up to a few words: the folded hash matches dname_hash. */
	uint8_t nm[64];
	bool same = true;
	for (int l = 1; l <= 40 && same; l++) {
		memset(nm, 0, sizeof(nm));
		nm[12] = (uint8_t)l;            /* one label of l bytes, then the root */
		memset(nm + 13, 'Q', (size_t)l);
		pos = 12;
		int r = dname_unpack_question(nm, 12 + (size_t)l + 2, &pos, orig, low, off, &labels,
		                              &hash);
		same = r == l + 2 && hash == dname_hash(low, (size_t)r);
	}
	ok(same, "folded hash equals dname_hash for names of 3..42 bytes");
	/*
	 * The words are read so that none starts past the message: a buffer
	 * of exactly the message's size (ASan in test-sanitize.sh sees any
	 * read past it), names of every length up to a few words, in mixed
	 * case, copied as sent and lowercased.
	 */
	same = true;
	for (int l = 1; l <= 40 && same; l++) {
		size_t mlen = 12 + (size_t)l + 2;
		uint8_t *m = malloc(mlen);
		if (!m)
			break;
		memset(m, 0, 12);
		m[12] = (uint8_t)l;
		for (int k = 0; k < l; k++)
			m[13 + k] = (uint8_t)(k % 2 ? 'q' : 'Q');
		m[mlen - 1] = 0;
		pos = 12;
		int r = dname_unpack_question(m, mlen, &pos, orig, low, off, &labels, &hash);
		bool lowered = true;
		for (int k = 0; k < l; k++)
			lowered = lowered && low[1 + k] == 'q';
		same = r == l + 2 && pos == mlen && memcmp(orig, m + 12, (size_t)r) == 0 && lowered &&
		       low[0] == l && low[l + 1] == 0 && hash == dname_hash(low, (size_t)r);
		free(m);
	}
	ok(same, "a name ending the message: copied as sent, lowercased, hashed (3..42 bytes)");
	/* The longest name, 255 bytes, at the very end of its message. */
	uint8_t longest[12 + 255] = { 0 };
	for (size_t i = 12; i < 12 + 192; i += 64)
		longest[i] = 63;                /* three labels of 63 */
	longest[12 + 192] = 61;             /* one of 61, then the root */
	longest[12 + 253] = 'Z';
	pos = 12;
	is_int(dname_unpack_question(longest, sizeof(longest), &pos, orig, low, off, &labels, &hash),
	       255, "a 255-byte name is read");
	is_int(low[253], 'z', "its last label lowercased");

	/* Bytes at and above 0x80, and the characters just outside A..Z. */
	uint8_t odd[] = { 6, '@', 'A', 'Z', '[', 0xC1, 0xDA, 0 };
	memcpy(msg + 12, odd, sizeof(odd));
	pos = 12;
	is_int(dname_unpack_question(msg, 12 + sizeof(odd), &pos, orig, low, off, &labels, &hash), 8,
	       "odd bytes read");
	const uint8_t want[] = { 6, '@', 'a', 'z', '[', 0xC1, 0xDA, 0 };
	is_mem(low, want, 8, "only A..Z lowered");

	/* A question compressed into the header (legal, if odd) falls back. */
	uint8_t cmp[20] = { 0 };
	cmp[2] = 1; cmp[3] = 'X'; cmp[4] = 0;     /* "X." sits in the header at 2 */
	cmp[12] = 1; cmp[13] = 'a'; cmp[14] = 0xC0; cmp[15] = 2;
	pos = 12;
	int n = dname_unpack_question(cmp, 16, &pos, orig, low, off, &labels, &hash);
	size_t p2 = 12;
	is_int(n, dname_unpack(cmp, 16, &p2, ref), "compressed: same length as dname_unpack");
	is_mem(low, "\1a\1x\0", 5, "compressed: lowercase copy");
	is_int(labels, 2, "compressed: labels");
	is_int(off[1], 2, "compressed: label offsets are the copy's");
	is_int((int)hash, (int)dname_hash(low, 5), "compressed: hash");
	is_int((int)pos, 16, "compressed: position past the pointer");

	/* Too long, or running off the end. */
	uint8_t big[300];
	memset(big, 0, sizeof(big));
	for (size_t i = 12; i + 64 < sizeof(big); i += 64)
		big[i] = 63;
	pos = 12;
	is_int(dname_unpack_question(big, sizeof(big), &pos, orig, low, off, &labels, &hash), -EBADMSG,
	       "name over 255 bytes rejected");
	pos = 12;
	is_int(dname_unpack_question(msg, 14, &pos, orig, low, off, &labels, &hash), -EBADMSG,
	       "truncated name rejected");
}

int main(void)
{
	test_from_to_str();
	test_unpack();
	test_compare();
	test_unpack_question();
	return done_testing();
}
