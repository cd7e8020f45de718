/* SPDX-License-Identifier: MIT */
/*
 * geoacme check: load everything serve would load (config, zone files,
 * keys, geo databases, what is at each journal_path) without binding or
 * writing, print every problem.  Started as root with `user =` set, the
 * check runs in a child that has dropped to that user first, as serve does
 * after binding, so a file that user cannot read is reported here.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/capability.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/privs.h"
#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/net/xdp.h"
#include "core/net/xdp_memlock.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/zone/svcb.h"
#include "core/zone/zone_file.h"
#include "core/zone/zone_table.h"

struct warn_ctx {
	const char *file;
	size_t warnings;
};

/*
 * Advice the RFCs give as SHOULD, for records that load fine: a ServiceMode
 * SVCB/HTTPS record whose target is "." (the owner itself) with address
 * hints (RFC 9460 7.3: the owner's own A/AAAA are what clients use, and
 * hints that drift from them mislead), and AliasMode with SvcParams (2.4.2:
 * they are ignored).
 */
static int warn_record(void *arg, const uint8_t *owner, uint16_t type, uint32_t ttl,
                       const uint8_t *rdata, uint16_t rdlen, int line)
{
	struct warn_ctx *w = arg;
	char name[DNAME_MAX * 4 + 2];
	(void)ttl;
	if ((type != RR_SVCB && type != RR_HTTPS) || rdlen < 3)
		return 0;
	dname_to_str(owner, name, sizeof(name));
	const char *tn = type == RR_HTTPS ? "HTTPS" : "SVCB";
	bool alias = rdata[0] == 0 && rdata[1] == 0;
	size_t i = 2 + dname_len(rdata + 2);
	if (alias && i < rdlen) {
		fprintf(stderr, "%s:%d: warning: %s %s: AliasMode (priority 0) with SvcParams, which "
		        "clients ignore (RFC 9460 2.4.2)\n", w->file, line, name, tn);
		w->warnings++;
	}
	if (alias || rdata[2] != 0)
		return 0;
	for (; i + 4 <= rdlen; i += 4 + (size_t)(rdata[i + 2] << 8 | rdata[i + 3])) {
		uint16_t key = (uint16_t)(rdata[i] << 8 | rdata[i + 1]);
		if (key == SVCB_KEY_IPV4HINT || key == SVCB_KEY_IPV6HINT) {
			fprintf(stderr, "%s:%d: warning: %s %s with target \".\" carries %s: clients use "
			        "%s's own A/AAAA; drop the hint (RFC 9460 7.3)\n", w->file, line, name, tn,
			        key == SVCB_KEY_IPV4HINT ? "ipv4hint" : "ipv6hint", name);
			w->warnings++;
		}
	}
	return 0;
}

static size_t warn_zone_files(const struct config *c)
{
	size_t total = 0;
	for (size_t i = 0; i < c->n_zones; i++) {
		const struct config_zone *zc = &c->zones[i];
		const char *file = zc->file ? zc->file : zc->zone_path;
		uint8_t apex[DNAME_MAX];
		if (!file || dname_from_str(zc->zone, apex) < 0)
			continue;
		struct warn_ctx w = { file, 0 };
		struct diag d;
		diag_init(&d);
		zone_file_read(file, apex, warn_record, &w, &d);   /* errors were reported already */
		diag_clear(&d);
		total += w.warnings;
	}
	return total;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme check -c FILE\n"
	        "\n"
	        "Validates the config, the zone files, the DNSSEC keys and the geo\n"
	        "databases, prints every problem found, and exits non-zero on any.\n"
	        "ACME databases are identified read-only (never written); a seed zone\n"
	        "file is checked when serve would seed.  As root with `user =` set, the\n"
	        "files are opened as that user, as serve opens them after binding.\n"
	        "\n"
	        "  -c, --config FILE   the TOML configuration\n"
	        "  -h, --help          this help\n");
}

/* Whether the process has capability `cap` in its effective set. */
static bool has_cap(unsigned cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &h, data) < 0)
		return false;
	return cap < 64 && (data[cap / 32].effective >> (cap % 32) & 1);
}

/*
 * xdp_listen never stops serve (it falls back to the sockets, core/net/
 * xdp.h), so what would make it fall back is a warning here: a build
 * without AF_XDP, an interface that does not exist, missing capabilities
 * (CAP_BPF, CAP_NET_ADMIN, CAP_NET_RAW; CAP_SYS_ADMIN stands for CAP_BPF on
 * older kernels), too little locked memory for the sockets (RLIMIT_MEMLOCK
 * without CAP_IPC_LOCK).  A driver that refuses both modes shows only at
 * start.
 */
static size_t warn_xdp(const struct config *c)
{
	if (!c->n_xdp_listen)
		return 0;
	if (!xdp_built()) {
		fprintf(stderr, "%s: warning: xdp_listen: this geoacme was built without AF_XDP "
		        "(GEOACME_XDP); the sockets will answer all UDP\n", c->path);
		return 1;
	}
	size_t n = 0, need = 0;
	for (size_t i = 0; i < c->n_xdp_listen; i++) {
		if (!if_nametoindex(c->xdp_listen[i])) {
			fprintf(stderr, "%s: warning: xdp_listen: no interface \"%s\" here; the sockets "
			        "will answer its UDP\n", c->path, c->xdp_listen[i]);
			n++;
		}
		need += xdp_memlock_need(c->xdp_listen[i]);
	}
	char why[256];
	if (need && !xdp_memlock_ok(0, need, false, why)) {
		fprintf(stderr, "%s: warning: xdp_listen: %s; the sockets will answer the UDP of "
		        "what does not fit\n", c->path, why);
		n++;
	}
	bool bpf = has_cap(39 /* CAP_BPF */) || has_cap(CAP_SYS_ADMIN);
	if (!bpf || !has_cap(CAP_NET_ADMIN) || !has_cap(CAP_NET_RAW)) {
		fprintf(stderr, "%s: warning: xdp_listen: needs CAP_BPF (or CAP_SYS_ADMIN), "
		        "CAP_NET_ADMIN and CAP_NET_RAW, which this process lacks; without them the "
		        "sockets will answer all UDP\n", c->path);
		n++;
	}
	return n;
}

/* The check proper, as the current user: the generation serve would build. */
static int run_check(const char *path, const char *as_user)
{
	struct diag d;
	diag_init(&d);
	struct generation *g = generation_new(path, NULL, NULL, true, &d);
	if (!g) {
		diag_print(&d);
		fprintf(stderr, "%s: %zu problem%s found\n", path, d.n, d.n == 1 ? "" : "s");
		diag_clear(&d);
		return EXIT_CONFIG;
	}
	size_t warnings = warn_zone_files(g->cfg) + warn_xdp(g->cfg);
	printf("%s: ok (%zu zone%s", path, g->cfg->n_zones, g->cfg->n_zones == 1 ? "" : "s");
	if (warnings)
		printf(", %zu warning%s", warnings, warnings == 1 ? "" : "s");
	printf("%s%s)\n", as_user ? ", read as user " : "", as_user ? as_user : "");
	generation_free(g);
	diag_clear(&d);
	return EXIT_OK;
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': path = optarg; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (!path || optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	/* A first reading, quiet, for `user`; its problems are the full check's too. */
	enum log_level level = log_get_level();
	log_set_level(LOG_ERROR);
	struct diag d;
	diag_init(&d);
	struct config *pre = config_load(path, &d);
	log_set_level(level);
	if (!pre) {
		diag_clear(&d);
		return run_check(path, NULL);
	}
	diag_clear(&d);
	char user[256] = "", group[256] = "";
	if (pre->user)
		snprintf(user, sizeof(user), "%s", pre->user);
	if (pre->group)
		snprintf(group, sizeof(group), "%s", pre->group);
	config_free(pre);
	if (!user[0])
		return run_check(path, NULL);
	if (geteuid() != 0) {
		fprintf(stderr, "%s: note: not run as root, so files were opened as uid %u, not as "
		        "user '%s' (serve opens them as '%s' after binding)\n", path,
		        (unsigned)geteuid(), user, user);
		return run_check(path, NULL);
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "geoacme check: fork: %s\n", strerror(errno));
		return EXIT_RUNTIME;
	}
	if (pid == 0) {
		char err[256];
		log_set_level(LOG_WARN);   /* not the "running as user" line */
		if (privs_drop(user, group[0] ? group : NULL, err) < 0) {
			fprintf(stderr, "%s: %s\n%s: 1 problem found\n", path, err, path);
			fflush(stderr);
			_exit(EXIT_CONFIG);
		}
		log_set_level(level);
		int rc = run_check(path, user);
		fflush(stdout);
		fflush(stderr);
		_exit(rc);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "geoacme check: waitpid: %s\n", strerror(errno));
			return EXIT_RUNTIME;
		}
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	fprintf(stderr, "geoacme check: the check as user '%s' died (signal %d)\n", user,
	        WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return EXIT_RUNTIME;
}
