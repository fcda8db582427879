/*
 * faults.c - the test build's fault settings: STEADFAST_FAULT_<NAME> from
 * the environment. Linked only into build/test/steadfast-faults, the
 * controller binary the fault-injection tests start; the shipped
 * build/steadfast has no such lookup (see include/steadfast/fault.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "steadfast/fault.h"

long sf_fault_lookup(const char *name)
{
	char key[128];
	snprintf(key, sizeof(key), "STEADFAST_FAULT_%s", name);
	const char *v = getenv(key);
	return v && v[0] ? atol(v) : 0;
}
