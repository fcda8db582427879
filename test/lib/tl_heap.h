/* tl_heap: the bytes the heap has handed out and not taken back, for the
 * tests that hold the memory accounting (sf_store_bytes,
 * sf_strmap_table_bytes) to what malloc really gave.
 *
 * glibc's allocator reports it through mallinfo2 (chunk headers and
 * rounding included); under AddressSanitizer malloc is the sanitizer's,
 * which mallinfo2 does not see (it reports no growth at all), so the
 * sanitizer's own count of the bytes asked for is read instead. Either
 * way the accounting must not exceed it and must explain most of it. */
#ifndef TL_HEAP_H
#define TL_HEAP_H

#include <stddef.h>

/* Bytes in use on the heap now. */
size_t tl_heap_in_use(void);

/* 1 when the count is the sanitizer's (requested bytes, no chunk
 * headers), 0 when it is glibc's. */
int tl_heap_is_sanitizer(void);

#endif
