/*
 * heap.c - the allocator's settings, figures and housekeeping (see heap.h).
 *
 * glibc only: mallopt, mallinfo2 and malloc_trim. mallinfo2 walks the
 * free lists of every arena, which is cheap at this process's size
 * (milliseconds at most); it is called for /metrics and by the trim
 * timer, never per request.
 */
#include "steadfast/heap.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#define LARGE_BYTES (128 * 1024)

static unsigned long trims;

void sf_heap_tune(void)
{
#ifdef __GLIBC__
	/* setting either turns off glibc's dynamic raising of both */
	mallopt(M_MMAP_THRESHOLD, LARGE_BYTES);
	mallopt(M_TRIM_THRESHOLD, LARGE_BYTES);
#endif
}

size_t sf_heap_free_bytes(void)
{
#ifdef __GLIBC__
	return mallinfo2().fordblks;
#else
	return 0;
#endif
}

int sf_heap_trim(size_t min_free)
{
#ifdef __GLIBC__
	if (sf_heap_free_bytes() < min_free)
		return 0;
	malloc_trim(0);
	trims++;
	return 1;
#else
	(void)min_free;
	return 0;
#endif
}

void sf_heap_metrics_write(sf_prom *p)
{
#ifdef __GLIBC__
	struct mallinfo2 mi = mallinfo2();
	sf_prom_family *f =
	    sf_prom_family_get(p, "steadfast_heap_bytes", SF_PROM_GAUGE,
	                       "The allocator's bytes: handed out (in_use, mmapped ones included), "
	                       "free inside the heap (free), mmapped (glibc mallinfo2)");
	sf_prom_add_u(f, (const char *[]){"state", "in_use", NULL}, mi.uordblks + mi.hblkhd);
	sf_prom_add_u(f, (const char *[]){"state", "free", NULL}, mi.fordblks);
	sf_prom_add_u(f, (const char *[]){"state", "mmapped", NULL}, mi.hblkhd);
	sf_prom_add_u(sf_prom_family_get(p, "steadfast_heap_trims_total", SF_PROM_COUNTER,
	                                 "Free heap pages given back to the system (malloc_trim)"),
	              NULL, trims);
#else
	(void)p;
#endif
}
