/*
 * strmap.c - string-keyed open-addressing hash map (see strmap.h).
 *
 * The table is a power-of-two array of slots probed linearly. A slot holds
 * the key pointer and the value (16 bytes); a parallel array holds one tag
 * byte per slot, 8 bits of the key's hash, so a probe touches the key bytes
 * only when the tag matches (1 in 256 of the others). The caches keep one
 * table per kind and index and the leader a few per AppWrapper, at a load
 * of 3/8 to 3/4: a slot is paid about twice per entry, so its size counts
 * (it was 24 bytes with the whole hash and length). A keyed map (its
 * values hold their keys) keeps only the value in a slot, 8 bytes, and
 * asks the value for its key when a tag matches. The first word of a slot
 * (the key, or the value of a keyed map) tells empty (NULL) and removed
 * (TOMB) slots from live ones. Rehashing recomputes the hashes from the
 * keys. Removal
 * leaves a tombstone (live entries never move, which keeps iteration with
 * removal safe); a tombstone directly before an empty slot is turned back
 * into an empty slot so delete-heavy use does not fill the table with them.
 * When live entries plus tombstones pass 3/4 of the slots the table is
 * rebuilt at a size that leaves it at most half full, which also drops all
 * tombstones.
 *
 * Keys come from the API server, so the hash is seeded per map to make
 * collisions hard to arrange ahead of time.
 */
#include "steadfast/strmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/time.h"

struct sf_strmap {
	const void **slots; /* cap slots of stride words, then cap tags, in one allocation */
	uint8_t *tags;      /* of live slots: tag_of(hash of the key) */
	size_t cap;         /* power of two, or 0 before the first insert */
	size_t len;
	size_t tombs;
	uint64_t seed;
	unsigned flags;
	size_t stride;           /* words per slot: 2 (key, value) or 1 (keyed: value) */
	sf_strmap_key_fn key_of; /* keyed maps */
};

static const char tomb_mark;
#define TOMB ((const void *)&tomb_mark)
#define MIN_CAP 8
#define MAX_CAP ((size_t)1 << 31)

/* Slot i: its first word (NULL empty, TOMB removed, else live), its key
 * and its value. */
static inline const void **slot_at(const sf_strmap *m, size_t i)
{
	return &m->slots[i * m->stride];
}

static inline int mark_live(const void *w)
{
	return w && w != TOMB;
}

static inline const char *slot_key(const sf_strmap *m, const void *const *s)
{
	return m->key_of ? m->key_of(s[0]) : s[0];
}

static inline void *slot_val(const sf_strmap *m, const void *const *s)
{
	return (void *)s[m->stride - 1];
}

static inline void slot_set(const sf_strmap *m, const void **s, const char *key, const void *val)
{
	if (!m->key_of)
		s[0] = key;
	s[m->stride - 1] = val;
}

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Word-at-a-time multiply/rotate hash with a final avalanche; the seed goes
 * in first so equal keys in different maps land differently. */
static uint32_t hash_bytes(uint64_t seed, const char *p, size_t n)
{
	const uint64_t k1 = 0x9e3779b97f4a7c15ULL;
	const uint64_t k2 = 0xbf58476d1ce4e5b9ULL;
	uint64_t h = seed ^ ((uint64_t)n * k1);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = rotl64(h ^ (w * k2), 29) * k1;
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, p, n);
		h = rotl64(h ^ (w * k2), 29) * k1;
	}
	return (uint32_t)fmix64(h);
}

static inline uint8_t tag_of(uint32_t h)
{
	return (uint8_t)(h >> 24); /* the index uses the low bits */
}

/* Whether the live key k is the len bytes at key (which hold no NUL). */
static inline int key_is(const char *k, const char *key, size_t len)
{
	return strncmp(k, key, len) == 0 && k[len] == '\0';
}

static size_t cap_for(size_t n)
{
	size_t cap = MIN_CAP;
	while (cap < MAX_CAP && cap / 2 < n)
		cap *= 2;
	return cap / 2 < n ? 0 : cap;
}

/* Slot holding key, or NULL. */
static const void **lookup(const sf_strmap *m, const char *key, size_t len, uint32_t h)
{
	if (!m->cap)
		return NULL;
	size_t mask = m->cap - 1;
	uint8_t t = tag_of(h);
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		const void **s = slot_at(m, i);
		if (!s[0])
			return NULL;
		if (s[0] != TOMB && m->tags[i] == t && key_is(slot_key(m, s), key, len))
			return s;
	}
}

/* Index of the first empty or tombstone slot for hash h in a table of
 * cap slots (never full). */
static size_t free_slot(const sf_strmap *m, const void *const *slots, size_t cap, uint32_t h)
{
	size_t mask = cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		if (!mark_live(slots[i * m->stride]))
			return i;
	}
}

static int rehash(sf_strmap *m, size_t cap)
{
	const void **slots = calloc(cap, m->stride * sizeof(*slots) + 1);
	if (!slots)
		return -ENOMEM;
	uint8_t *tags = (uint8_t *)(slots + cap * m->stride);
	for (size_t i = 0; i < m->cap; i++) {
		const void **s = slot_at(m, i);
		if (mark_live(s[0])) {
			const char *k = slot_key(m, s);
			uint32_t h = hash_bytes(m->seed, k, strlen(k));
			size_t j = free_slot(m, slots, cap, h);
			memcpy(&slots[j * m->stride], s, m->stride * sizeof(*s));
			tags[j] = tag_of(h);
		}
	}
	free(m->slots);
	m->slots = slots;
	m->tags = tags;
	m->cap = cap;
	m->tombs = 0;
	return 0;
}

static int map_new(unsigned flags, sf_strmap_key_fn key_of, size_t hint, sf_strmap **out)
{
	int rc = -ENOMEM;
	sf_strmap *m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	m->flags = key_of ? SF_STRMAP_BORROW_KEYS : flags;
	m->key_of = key_of;
	m->stride = key_of ? 1 : 2;
	m->seed = fmix64((uint64_t)(uintptr_t)m ^ (uint64_t)sf_mono_ns());
	if (hint) {
		rc = sf_strmap_reserve(m, hint);
		if (rc)
			goto out;
	}
	*out = m;
	m = NULL;
	rc = 0;
out:
	free(m);
	return rc;
}

int sf_strmap_new(unsigned flags, size_t hint, sf_strmap **out)
{
	return map_new(flags, NULL, hint, out);
}

int sf_strmap_new_keyed(sf_strmap_key_fn key_of, size_t hint, sf_strmap **out)
{
	if (!key_of)
		return -EINVAL;
	return map_new(0, key_of, hint, out);
}

void sf_strmap_clear(sf_strmap *m, sf_strmap_free_fn free_val)
{
	for (size_t i = 0; i < m->cap; i++) {
		const void **s = slot_at(m, i);
		if (mark_live(s[0])) {
			if (free_val)
				free_val(slot_val(m, s));
			if (!(m->flags & SF_STRMAP_BORROW_KEYS))
				free((void *)s[0]);
		}
		s[0] = NULL;
	}
	m->len = 0;
	m->tombs = 0;
}

void sf_strmap_free(sf_strmap *m, sf_strmap_free_fn free_val)
{
	if (!m)
		return;
	sf_strmap_clear(m, free_val);
	free(m->slots);
	free(m);
}

size_t sf_strmap_len(const sf_strmap *m)
{
	return m->len;
}

size_t sf_strmap_table_bytes(const sf_strmap *m)
{
	return sizeof(*m) + m->cap * (m->stride * sizeof(*m->slots) + 1);
}

int sf_strmap_reserve(sf_strmap *m, size_t n)
{
	if (n <= m->len)
		n = m->len;
	/* Enough if n entries stay under the 3/4 threshold. */
	if (m->cap && (n + m->tombs) <= m->cap / 4 * 3)
		return 0;
	size_t cap = cap_for(n);
	if (!cap)
		return -ENOMEM;
	return rehash(m, cap);
}

int sf_strmap_put(sf_strmap *m, const char *key, void *val, void **old)
{
	size_t len = strlen(key);
	if (len > UINT32_MAX)
		return -ENOMEM;
	/* a keyed map's value is its slot's mark, and must carry this key */
	if (m->key_of && (!val || !key_is(m->key_of(val), key, len)))
		return -EINVAL;
	uint32_t h = hash_bytes(m->seed, key, len);
	const void **s = lookup(m, key, len, h);
	if (s) {
		if (old)
			*old = slot_val(m, s);
		/* a borrowed key becomes the caller's pointer; a copied one stays */
		slot_set(m, s, m->flags & SF_STRMAP_BORROW_KEYS ? key : s[0], val);
		return 0;
	}
	if (!m->cap || (m->len + m->tombs + 1) > m->cap / 4 * 3) {
		size_t cap = cap_for(m->len + 1);
		if (!cap)
			return -ENOMEM;
		int rc = rehash(m, cap);
		if (rc)
			return rc;
	}
	const char *k = key;
	if (!(m->flags & SF_STRMAP_BORROW_KEYS)) {
		char *copy = malloc(len + 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, key, len + 1);
		k = copy;
	}
	size_t i = free_slot(m, m->slots, m->cap, h);
	s = slot_at(m, i);
	if (s[0] == TOMB)
		m->tombs--;
	slot_set(m, s, k, val);
	m->tags[i] = tag_of(h);
	m->len++;
	return 1;
}

void *sf_strmap_getn(const sf_strmap *m, const char *key, size_t len)
{
	if (len > UINT32_MAX || !m->len || memchr(key, '\0', len))
		return NULL;
	const void **s = lookup(m, key, len, hash_bytes(m->seed, key, len));
	return s ? slot_val(m, s) : NULL;
}

void *sf_strmap_get(const sf_strmap *m, const char *key)
{
	return sf_strmap_getn(m, key, strlen(key));
}

int sf_strmap_find(const sf_strmap *m, const char *key, void **val)
{
	size_t len = strlen(key);
	if (len > UINT32_MAX || !m->len)
		return 0;
	const void **s = lookup(m, key, len, hash_bytes(m->seed, key, len));
	if (!s)
		return 0;
	if (val)
		*val = slot_val(m, s);
	return 1;
}

int sf_strmap_remove(sf_strmap *m, const char *key, void **val)
{
	size_t len = strlen(key);
	if (len > UINT32_MAX || !m->len)
		return -ENOENT;
	const void **s = lookup(m, key, len, hash_bytes(m->seed, key, len));
	if (!s)
		return -ENOENT;
	if (val)
		*val = slot_val(m, s);
	if (!(m->flags & SF_STRMAP_BORROW_KEYS))
		free((void *)s[0]);
	m->len--;
	size_t mask = m->cap - 1;
	size_t i = (size_t)(s - m->slots) / m->stride;
	if (slot_at(m, (i + 1) & mask)[0]) {
		s[0] = TOMB;
		m->tombs++;
		return 0;
	}
	/* Nothing probes past an empty slot: this one and any tombstones just
	 * before it can become empty. */
	s[0] = NULL;
	for (i = (i - 1) & mask; slot_at(m, i)[0] == TOMB; i = (i - 1) & mask) {
		slot_at(m, i)[0] = NULL;
		m->tombs--;
	}
	return 0;
}

int sf_strmap_next(const sf_strmap *m, sf_strmap_iter *it, const char **key, void **val)
{
	for (; it->pos < m->cap; it->pos++) {
		const void **s = slot_at(m, it->pos);
		if (mark_live(s[0])) {
			if (key)
				*key = slot_key(m, s);
			if (val)
				*val = slot_val(m, s);
			it->pos++;
			return 1;
		}
	}
	return 0;
}
