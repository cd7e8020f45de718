/* SPDX-License-Identifier: MIT */
/* Base64 through ldns (see base64.h). */
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "core/conf/base64.h"

int base64_decode(const char *s, size_t len, uint8_t *out, size_t cap)
{
	if (len == 0 || memchr(s, '\0', len))
		return -1;
	for (size_t i = 0; i < len; i++)
		if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')
			return -1;
	char *padded = malloc(len + 4);
	if (!padded)
		return -1;
	memcpy(padded, s, len);
	if (!memchr(s, '=', len))
		while (len % 4)
			padded[len++] = '=';
	padded[len] = '\0';
	ldns_rdf *rdf = NULL;
	ldns_status st = ldns_str2rdf_b64(&rdf, padded);
	free(padded);
	int n = -1;
	if (st == LDNS_STATUS_OK && rdf) {
		size_t size = ldns_rdf_size(rdf);
		if (size > cap) {
			n = -2;
		} else if (size > 0) {
			memcpy(out, ldns_rdf_data(rdf), size);
			n = (int)size;
		}
	}
	ldns_rdf_deep_free(rdf);
	return n;
}
