/*
 * time.h - clocks and Kubernetes time formats.
 *
 * Deadlines and expiries use the monotonic clock only; wall time is for
 * timestamps written to the API (RFC3339, and MicroTime with exactly six
 * fractional digits as client-go writes Lease times).
 */
#ifndef STEADFAST_TIME_H
#define STEADFAST_TIME_H

#include <stdint.h>
#include <stddef.h>

#define SF_NSEC_PER_MSEC 1000000LL
#define SF_NSEC_PER_SEC 1000000000LL

int64_t sf_mono_ns(void); /* CLOCK_MONOTONIC */
int64_t sf_wall_ns(void); /* CLOCK_REALTIME, ns since the epoch */

/* "2026-11-29T15:04:05Z" (metav1.Time); buf >= 32 bytes. */
const char *sf_time_rfc3339(int64_t wall_ns, char *buf, size_t n);
/* "2026-11-29T15:04:05.123456Z" (metav1.MicroTime); buf >= 32 bytes. */
const char *sf_time_rfc3339micro(int64_t wall_ns, char *buf, size_t n);
/* Parses RFC3339 with optional fraction and Z or +hh:mm offset.
 * Returns 0 and ns since the epoch, or -EINVAL. */
int sf_time_parse_rfc3339(const char *s, size_t len, int64_t *out_ns);

#endif
