/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Hooks that exist only for tests, all named here.  They are compiled in
 * only when CMake's GEOACME_TEST_HOOKS is ON (scripts/test.sh,
 * scripts/test-sanitize.sh and so .ci/run turn it on; the default and the
 * Debian package leave it off).  Without it the environment variables are
 * never read, their names are not in the binary (test_hook() drops its
 * argument unexpanded), and SIGUSR2 keeps its default action.
 * `geoacme version` ends in "test-hooks" when they are in, which is how
 * the integration tests that need one know to skip (exit 77) without;
 * doc/packaging.md says how to check a release binary.
 *
 *   GEOACME_TEST_SYNC        acme/commit.c: "blocking" (every commit syncs
 *                            in COMMIT, on the loop), "hold=MS" (each sync
 *                            settles MS ms late), "fail" (every sync fails)
 *   GEOACME_TEST_CLOCK_FILE  cmd/serve.c: a file holding how many seconds
 *                            the loop's clock runs ahead; re-read on SIGUSR2
 *   GEOACME_TEST_RELOAD_DELAY_MS  cmd/builder.c: a reload's new generation,
 *                            once built, waits this long on the builder
 *                            thread before the loop swaps it in
 *   GEOACME_TEST_COMPACT_BYTES  acme/compact.c: an ACME zone's snapshot is
 *                            compacted (built whole beside the loop) once
 *                            patches grew it by more than this many bytes
 *                            (else: its built size, and 4 MiB at least)
 *   GEOACME_TEST_COMPACT_DELAY_MS  acme/compact.c: that compaction, once
 *                            built, waits this long on its thread before
 *                            the loop catches it up and swaps it in;
 *                            acme/presign.c: a large UPDATE, its
 *                            signatures made ahead, waits this long more
 *                            before it is handled again
 *   GEOACME_TEST_CUT_FAIL    acme/compact.c: "beside" or "all": every
 *                            snapshot built beside the loop (a committed
 *                            change a patch cannot make, a compaction, a
 *                            re-keying) is dropped at the end of its
 *                            thread, after GEOACME_TEST_COMPACT_DELAY_MS,
 *                            as if memory ran out; acme/commit.c: "all":
 *                            the committed change's build retried on the
 *                            loop (cut_on_loop) fails too, so its UPDATEs
 *                            get SERVFAIL and the old snapshot serves
 *   GEOACME_TEST_STAGED_HOLD_MS  acme/staged.c: a large UPDATE committed
 *                            in stages waits this long halfway through
 *                            writing its records (its transaction open)
 *   GEOACME_TEST_XFR_BUILD_DELAY_MS  xfr/secondary.c: a secondary's copy,
 *                            once built whole and stored beside the loop
 *                            (xfr/copy_build.h), waits this long on its
 *                            thread before the loop serves it
 *   GEOACME_TEST_RESIGN_DELAY_MS  cmd/resign_job.c: a zone from a file,
 *                            re-signed beside the loop (a key change),
 *                            waits this long on its thread before the
 *                            loop serves it
 *   GEOACME_TEST_KEYS_WRITE_DELAY_MS  dnssec/keystore_job.c: a key
 *                            change's key store write (or new key) waits
 *                            this long on its thread first, so a test sees
 *                            the change take no effect before it is on disk
 *   GEOACME_TEST_XFR_LIST_SLICE  xfr/xfr.c: an outgoing AXFR lists about
 *                            this many names per loop round (instead of
 *                            1024), so a test's UPDATEs land mid-list
 *   GEOACME_TEST_XFR_IN_WINDOW_MS  xfr/secondary.c: a transfer in is judged
 *                            for progress (1 KiB/s) every this many ms
 *                            instead of 30 000
 *   GEOACME_TEST_XFR_IN_BUDGET_US  xfr/secondary.c: a transfer in is taken
 *                            apart for at most this many µs a loop round
 *                            instead of 1000 (0: one record a round), so a
 *                            test sees a copy read in many rounds
 *   GEOACME_TEST_SLOW_ROUND_US  core/net/loop_trace.c: every loop round of
 *                            this many µs or more is logged with its
 *                            longest callbacks (finding stalls)
 *   GEOACME_TEST_XDP_TX_RING  core/net/xdp.c: each AF_XDP socket's tx ring
 *                            holds this many descriptors (a power of two)
 *                            instead of 512, so that a burst fills it and
 *                            the queries behind wait on the rx ring
 *   GEOACME_TEST_ROLLOVER_HOLD  dnssec/rollover.c: a path; while that file
 *                            exists, a key whose lifetime is over does not
 *                            start a rollover yet (looked at again every
 *                            second), so a test can first see its
 *                            validators answer with the key set as it is
 */
#include <stdbool.h>
#include <stdlib.h>

/* Generated in the build folder: defines GEOACME_TEST_HOOKS when it is ON. */
#include <geoacme_test_hooks.h>
/* tests/CMakeLists.txt compiles the files that use hooks once more with
 * this, to check that a build without them holds none of their names. */
#ifdef GEOACME_NO_TEST_HOOKS
#undef GEOACME_TEST_HOOKS
#endif

#ifdef GEOACME_TEST_HOOKS
#define TEST_HOOKS_ON true
#define TEST_HOOK_SYNC "GEOACME_TEST_SYNC"
#define TEST_HOOK_CLOCK_FILE "GEOACME_TEST_CLOCK_FILE"
#define TEST_HOOK_RELOAD_DELAY "GEOACME_TEST_RELOAD_DELAY_MS"
#define TEST_HOOK_XFR_BUILD_DELAY "GEOACME_TEST_XFR_BUILD_DELAY_MS"
#define TEST_HOOK_RESIGN_DELAY "GEOACME_TEST_RESIGN_DELAY_MS"
#define TEST_HOOK_COMPACT_BYTES "GEOACME_TEST_COMPACT_BYTES"
#define TEST_HOOK_COMPACT_DELAY "GEOACME_TEST_COMPACT_DELAY_MS"
#define TEST_HOOK_STAGED_HOLD "GEOACME_TEST_STAGED_HOLD_MS"
#define TEST_HOOK_CUT_FAIL "GEOACME_TEST_CUT_FAIL"
#define TEST_HOOK_KEYS_WRITE_DELAY "GEOACME_TEST_KEYS_WRITE_DELAY_MS"
#define TEST_HOOK_XFR_LIST_SLICE "GEOACME_TEST_XFR_LIST_SLICE"
#define TEST_HOOK_SLOW_ROUND "GEOACME_TEST_SLOW_ROUND_US"
#define TEST_HOOK_XFR_IN_WINDOW "GEOACME_TEST_XFR_IN_WINDOW_MS"
#define TEST_HOOK_XFR_IN_BUDGET "GEOACME_TEST_XFR_IN_BUDGET_US"
#define TEST_HOOK_ROLLOVER_HOLD "GEOACME_TEST_ROLLOVER_HOLD"
#define TEST_HOOK_XDP_TX_RING "GEOACME_TEST_XDP_TX_RING"
/* The hook's value from the environment, or NULL when it is not set. */
#define test_hook(name) getenv(name)
/* The hook's name, for a log line. */
#define test_hook_name(name) (name)
#else
#define TEST_HOOKS_ON false
/* Always NULL; name is not expanded, so the hook names above need not
 * (and do not) exist in a build without the hooks. */
#define test_hook(name) ((const char *)NULL)
#define test_hook_name(name) ""
#endif
