/* tl_heap: bytes in use on the heap, from glibc's mallinfo2 or, under
 * AddressSanitizer, from the sanitizer's allocator (tl_heap.h says why). */
#include "tl_heap.h"

#include <malloc.h>

#if defined(__SANITIZE_ADDRESS__)
#define TL_HEAP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TL_HEAP_ASAN 1
#endif
#endif

#ifdef TL_HEAP_ASAN
#include <sanitizer/allocator_interface.h>

size_t tl_heap_in_use(void)
{
	return __sanitizer_get_current_allocated_bytes();
}

int tl_heap_is_sanitizer(void)
{
	return 1;
}
#else
size_t tl_heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}

int tl_heap_is_sanitizer(void)
{
	return 0;
}
#endif
