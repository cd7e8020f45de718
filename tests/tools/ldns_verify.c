/* SPDX-License-Identifier: MIT */
/*
 * A second, independent DNSSEC verifier for the integration tests: reads a
 * DNS response (wire format) and the zone's DNSKEY RRset (presentation
 * format), and checks every RRSIG in the answer, authority and additional
 * sections with ldns.  Prints one line per covered RRset; exits 0 only when at least one
 * RRSIG was present and every one verified.
 */
#include <stdio.h>
#include <stdlib.h>

#include <ldns/ldns.h>

static int check_section(ldns_rr_list *section, ldns_rr_list *keys, int *sigs)
{
	int bad = 0;
	for (size_t i = 0; i < ldns_rr_list_rr_count(section); i++) {
		ldns_rr *sig = ldns_rr_list_rr(section, i);
		if (ldns_rr_get_type(sig) != LDNS_RR_TYPE_RRSIG)
			continue;
		(*sigs)++;
		ldns_rr_type covered = ldns_rdf2rr_type(ldns_rr_rrsig_typecovered(sig));
		ldns_rr_list *set = ldns_rr_list_new();
		for (size_t j = 0; j < ldns_rr_list_rr_count(section); j++) {
			ldns_rr *rr = ldns_rr_list_rr(section, j);
			if (ldns_rr_get_type(rr) == covered &&
			    ldns_dname_compare(ldns_rr_owner(rr), ldns_rr_owner(sig)) == 0)
				ldns_rr_list_push_rr(set, rr);
		}
		ldns_rr_list *good = ldns_rr_list_new();
		ldns_status s = ldns_verify_rrsig_keylist(set, sig, keys, good);
		char *owner = ldns_rdf2str(ldns_rr_owner(sig));
		char *type = ldns_rr_type2str(covered);
		printf("%s %s %s: %s\n", s == LDNS_STATUS_OK ? "ok" : "BAD", owner, type,
		       ldns_get_errorstr_by_id(s));
		if (s != LDNS_STATUS_OK)
			bad++;
		free(owner);
		free(type);
		ldns_rr_list_free(good);
		ldns_rr_list_free(set);
	}
	return bad;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: ldns_verify DNSKEY.txt RESPONSE.bin\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	ldns_rr_list *keys = ldns_rr_list_new();
	ldns_rr *rr;
	int line = 0;
	while (ldns_rr_new_frm_fp_l(&rr, f, NULL, NULL, NULL, &line) == LDNS_STATUS_OK)
		ldns_rr_list_push_rr(keys, rr);
	fclose(f);
	f = fopen(argv[2], "rb");
	if (!f) {
		perror(argv[2]);
		return 2;
	}
	static uint8_t buf[65536];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	ldns_pkt *pkt = NULL;
	if (ldns_wire2pkt(&pkt, buf, n) != LDNS_STATUS_OK) {
		fprintf(stderr, "cannot parse the response\n");
		return 2;
	}
	int sigs = 0;
	int bad = check_section(ldns_pkt_answer(pkt), keys, &sigs);
	bad += check_section(ldns_pkt_authority(pkt), keys, &sigs);
	bad += check_section(ldns_pkt_additional(pkt), keys, &sigs);
	ldns_pkt_free(pkt);
	ldns_rr_list_deep_free(keys);
	if (!sigs) {
		printf("no RRSIG in the response\n");
		return 1;
	}
	return bad ? 1 : 0;
}
