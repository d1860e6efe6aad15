#ifndef VOUCH_SAMPLE_CHECKSUM_H
#define VOUCH_SAMPLE_CHECKSUM_H
#include <stddef.h>
#include <stdint.h>

uint32_t vs_adler32(const unsigned char *data, size_t len);
uint64_t vs_fnv1a64(const unsigned char *data, size_t len);

#endif
