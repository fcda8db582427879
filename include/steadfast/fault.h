/*
 * fault.h - fault injection points, for tests only.
 *
 * The shipped binary reads no fault settings: sf_fault() answers 0 there.
 * Only the test build of the controller (build/test/steadfast-faults, which
 * links test/shim/faults.c) gives it values, from $STEADFAST_FAULT_<NAME>.
 * The library's own fault options (sf_reflector_opts and friends) stay as
 * they are: they are API, set by code, never by the environment.
 */
#ifndef STEADFAST_FAULT_H
#define STEADFAST_FAULT_H

/* The value of fault point name (e.g. "WATCH_DELAY_MS"), 0 when unset or
 * in the shipped binary. */
long sf_fault(const char *name);

/* Provided by the test shim only (a weak reference here). */
long sf_fault_lookup(const char *name);

#endif
