/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * SVCB and HTTPS records (RFC 9460): the rdata's presentation format, its
 * wire format, and the wire-format rules a zone must obey.
 *
 * Wire form (RFC 9460 section 2.2): SvcPriority (u16), TargetName
 * (uncompressed, never compressed on output), then SvcParams, each
 * key (u16), length (u16), value.  Priority 0 is AliasMode, anything else
 * ServiceMode.
 *
 * Presentation form (section 2.1 and Appendix A): "PRIORITY TARGET
 * key=value ...".  A value is one <character-string>, quoted or not, with
 * \DDD and \X escapes; the list-valued keys (mandatory, alpn, ipv4hint,
 * ipv6hint) then split the decoded string on commas, where "\," and "\\"
 * stand for a literal comma and backslash (Appendix A.1), so that
 *   alpn="f\\\\oo\\,bar,h2"  and  alpn=f\\\092oo\092,bar,h2
 * both mean the two ALPN ids "f\oo,bar" and "h2".  Keys may appear in any
 * order; the wire form has them sorted.  keyNNNNN (no leading zeros) names
 * any key, its value then being the raw wire value.  The registered keys:
 * mandatory (0), alpn (1), no-default-alpn (2), port (3), ipv4hint (4),
 * ech (5, base64), ipv6hint (6), dohpath (7, RFC 9461).
 *
 * ldns 1.8.3 (Debian 12) parses this syntax but gets the Appendix A
 * escaping wrong and accepts records the RFC forbids, so zone files go
 * through this parser instead (core/zone/zone_file.c hands ldns the rest).
 *
 * Names in the target are lowercased, like every name the server stores.
 */
#include <stddef.h>
#include <stdint.h>

enum {
	SVCB_KEY_MANDATORY = 0,
	SVCB_KEY_ALPN = 1,
	SVCB_KEY_NO_DEFAULT_ALPN = 2,
	SVCB_KEY_PORT = 3,
	SVCB_KEY_IPV4HINT = 4,
	SVCB_KEY_ECH = 5,
	SVCB_KEY_IPV6HINT = 6,
	SVCB_KEY_DOHPATH = 7,
};

/*
 * Parses the rdata text (everything after the type; one logical line, with
 * parentheses and comments already removed) into wire form in out[cap].
 * The RFC 3597 generic form "\# LEN HEX" is accepted too.  A relative
 * target name is completed with `origin` (wire form).  The result always
 * passes svcb_check_wire().  Returns the rdata length, or -EINVAL with the
 * reason in err.
 */
int svcb_from_text(const char *text, const uint8_t *origin, uint8_t *out, size_t cap,
                   char err[256]);
/*
 * The wire-format rules (RFC 9460 sections 2.2, 7 and 8): a valid target,
 * keys in strictly increasing order (so no duplicates), key 65535 unused,
 * each registered key's value well formed (lists non-empty, no-default-alpn
 * empty and with alpn beside it), every key that `mandatory` lists present,
 * and `mandatory` not listing itself.  Returns 0 or -EBADMSG with err.
 */
int svcb_check_wire(const uint8_t *rdata, size_t len, char err[256]);
/*
 * Presentation form of valid wire rdata ("1 paris.sites.example.com.
 * alpn=\"h3,h2\""), NUL-terminated.  Returns the string length, or -ENOSPC.
 */
int svcb_to_text(const uint8_t *rdata, size_t len, char *out, size_t cap);
