/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * core's update_handler (core/hooks.h) for the ACME zones: every message
 * core hands over (UPDATEs, and anything carrying a TSIG) comes here.  It
 * finds and verifies the TSIG against the keys of every ACME zone (RFC
 * 8945), passes UPDATEs to the update path (commit.h), answers signed
 * queries through core (process_query) for any zone, and signs each
 * response — or answers the TSIG error unsigned, as section 5.3.2 says.
 */
struct acme;
struct query;

/* The handle function; ctx is the struct acme. */
int tsig_handler_handle(void *ctx, struct query *q);
/*
 * With a loop: what holds UPDATEs that meet another process's lock on
 * their database (acme/lockwait.h).  0 or -ENOMEM.
 */
int tsig_handler_setup(struct acme *a);
