/* SPDX-License-Identifier: MIT */
#pragma once
/* SipHash-2-4 (Aumasson and Bernstein), 64-bit output: the keyed hash RFC 9018 uses for DNS cookies. */
#include <stddef.h>
#include <stdint.h>

uint64_t siphash24(const uint8_t key[16], const void *data, size_t len);
