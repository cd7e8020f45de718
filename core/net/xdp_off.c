/* SPDX-License-Identifier: MIT */
/* The AF_XDP path when the build has none (GEOACME_XDP off, or no libxdp):
 * xdp_listen is accepted and ignored, with one line saying so. */
#include "core/net/xdp.h"

#include "core/conf/log.h"

bool xdp_built(void)
{
	return false;
}

struct xdp *xdp_new(struct loop *l, const struct net_handler *h, const struct xdp_config *cfg)
{
	(void)l, (void)h;
	if (cfg->n_ifaces)
		log_warn("xdp: this geoacme was built without AF_XDP (GEOACME_XDP); xdp_listen is "
		         "ignored and UDP is answered by the sockets");
	return NULL;
}

size_t xdp_memlock_need(const char *ifname)
{
	(void)ifname;
	return 0;
}

void xdp_free(struct xdp *x)
{
	(void)x;
}
