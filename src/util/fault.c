/*
 * fault.c - fault injection points that exist only in the test build.
 *
 * sf_fault_lookup is a weak reference: the shipped binary does not define
 * it, so every fault point reads 0 and no environment variable is looked
 * at; the test build links test/shim/faults.c, which defines it.
 */
#include "steadfast/fault.h"

#pragma weak sf_fault_lookup

long sf_fault(const char *name)
{
	return sf_fault_lookup ? sf_fault_lookup(name) : 0;
}
