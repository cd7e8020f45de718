/* SPDX-License-Identifier: MIT */
/* The qtype labels of the query counters: names from the record-type table. */
#include <string.h>

#include "core/conf/metrics.h"
#include "core/wire/rrset.h"
#include "tests/unit/check.h"

int main(void)
{
	static const struct { uint16_t type; const char *label; } want[] = {
		{ RR_A, "A" }, { RR_NS, "NS" }, { RR_CNAME, "CNAME" }, { RR_SOA, "SOA" },
		{ RR_PTR, "PTR" }, { RR_MX, "MX" }, { RR_TXT, "TXT" }, { RR_AAAA, "AAAA" },
		{ RR_SRV, "SRV" }, { RR_NAPTR, "NAPTR" }, { RR_DS, "DS" }, { RR_RRSIG, "RRSIG" },
		{ RR_NSEC, "NSEC" }, { RR_DNSKEY, "DNSKEY" }, { RR_SVCB, "SVCB" }, { RR_HTTPS, "HTTPS" },
		{ RR_AXFR, "AXFR" }, { RR_IXFR, "IXFR" }, { RR_ANY, "ANY" },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		size_t k = metrics_qtype_index(want[i].type);
		is_int(k, i, "%s has label index %zu", want[i].label, i);
		is_str(metrics_qtype_name(k), want[i].label, "label %zu is %s", i, want[i].label);
	}
	is_int(metrics_qtype_index(RR_CAA), METRICS_QTYPES - 1, "CAA counts as other");
	is_int(metrics_qtype_index(0), METRICS_QTYPES - 1, "type 0 counts as other");
	is_int(metrics_qtype_index(65280), METRICS_QTYPES - 1, "TYPE65280 counts as other");
	is_str(metrics_qtype_name(METRICS_QTYPES - 1), "other", "the last label is other");
	is_str(metrics_qtype_name(1000), "other", "out of range: other");
	return done_testing();
}
