/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Reading a non-blocking stream socket to its end and throwing the bytes
 * away: for a connection whose answer is decided (the HTTP endpoint, the
 * control channel) that waits for the peer to close.
 */
#include <stdbool.h>

/* Reads and discards what is queued on fd.  true: nothing more for now (the
 * peer is still there); false: the peer closed or the socket failed, so the
 * caller closes its side. */
bool sock_drain(int fd);
