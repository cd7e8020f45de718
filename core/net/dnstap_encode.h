/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * One dnstap message (the public dnstap.proto schema, https://dnstap.info)
 * encoded as protobuf, by hand, into the caller's buffer: no allocation,
 * so the query path can log every message.  libprotobuf-c would build a
 * message object and allocate for each one (protobuf_c_message_pack needs
 * the filled struct, and its unpacking side allocates); the schema part
 * we write is small and fixed:
 *
 *   Dnstap  { identity = 1 (bytes), version = 2 (bytes), message = 14
 *             (Message), type = 15 (enum: MESSAGE = 1) }
 *   Message { type = 1 (enum), socket_family = 2 (INET = 1, INET6 = 2),
 *             socket_protocol = 3 (UDP = 1, TCP = 2), query_address = 4,
 *             response_address = 5 (bytes: 4 or 16), query_port = 6,
 *             response_port = 7 (uint32), query_time_sec = 8 (uint64),
 *             query_time_nsec = 9 (fixed32), query_message = 10 (bytes),
 *             query_zone = 11 (unused here), response_time_sec = 12 (uint64),
 *             response_time_nsec = 13 (fixed32), response_message = 14 }
 *
 * Protobuf wire format: each field is a varint key (field << 3 | wire
 * type: 0 varint, 2 length-delimited, 5 fixed32 little-endian) and its
 * value; a nested message is length-delimited, so its size is worked out
 * before it is written.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Message.Type values (dnstap.proto). */
enum dnstap_type {
	DNSTAP_AUTH_QUERY = 1,
	DNSTAP_AUTH_RESPONSE = 2,
	DNSTAP_UPDATE_QUERY = 13,
	DNSTAP_UPDATE_RESPONSE = 14,
};

struct dnstap_msg {
	enum dnstap_type type;
	int family;                   /* 4 or 6 */
	bool tcp;
	uint8_t query_addr[16];       /* the client: 4 or 16 bytes used */
	uint16_t query_port;
	bool has_response_addr;       /* our address, when known */
	uint8_t response_addr[16];
	uint16_t response_port;
	uint64_t query_sec;           /* when the query was received */
	uint32_t query_nsec;
	bool has_response_time;
	uint64_t response_sec;
	uint32_t response_nsec;
	const uint8_t *query;         /* the query message as received, or NULL */
	size_t query_len;
	const uint8_t *response;      /* the response message, or NULL */
	size_t response_len;
};

/*
 * Writes a Dnstap message into out.  identity and version may be NULL.
 * Returns the length written, or -ENOSPC when it does not fit in cap.
 */
int dnstap_encode(uint8_t *out, size_t cap, const char *identity, const char *version,
                  const struct dnstap_msg *m);
