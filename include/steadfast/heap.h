/*
 * heap.h - the allocator's settings, figures and housekeeping.
 *
 * The controller's memory is mostly many small cached objects, each
 * replaced by a new copy on every update, plus large short-lived buffers
 * (list pages, watch chunks, request bodies). With glibc's defaults the
 * mmap threshold rises when a large mmapped buffer is freed, so later
 * large buffers come from the heap and leave holes in it, and free
 * memory inside the heap goes back to the system only through
 * malloc_trim. sf_heap_tune fixes the thresholds; sf_heap_trim gives
 * free pages back when enough are free. Elsewhere than glibc these do
 * nothing.
 */
#ifndef STEADFAST_HEAP_H
#define STEADFAST_HEAP_H

#include <stddef.h>

#include "steadfast/prom.h"

/* Once at start: large allocations (>= 128 KiB) always mmapped, so they
 * are unmapped when freed; the heap's top trimmed past 128 KiB free. */
void sf_heap_tune(void);
/* Free bytes inside the heap (glibc mallinfo2's fordblks); 0 elsewhere. */
size_t sf_heap_free_bytes(void);
/* When at least min_free bytes are free inside the heap, returns their
 * whole pages to the system (malloc_trim) and returns 1; else 0. */
int sf_heap_trim(size_t min_free);
/* steadfast_heap_bytes{state="in_use"|"free"|"mmapped"} and
 * steadfast_heap_trims_total. */
void sf_heap_metrics_write(sf_prom *p);

#endif
