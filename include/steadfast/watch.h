/*
 * watch.h - streaming decoders for WATCH and LIST response bodies.
 *
 * A watch body is a sequence of JSON objects {"type":..., "object":{...}}
 * that arrive in arbitrary chunks; a LIST body is one object whose "items"
 * may be megabytes. Both are parsed incrementally with yajl: bytes are fed as
 * they arrive, each complete event or item is handed over as an sf_obj built
 * from its minified JSON, and the whole body is never held in memory.
 * Malformed or truncated input is an error with a message, never a crash.
 */
#ifndef STEADFAST_WATCH_H
#define STEADFAST_WATCH_H

#include <stddef.h>

#include "steadfast/json.h"

typedef enum {
	SF_WATCH_ADDED = 1,
	SF_WATCH_MODIFIED,
	SF_WATCH_DELETED,
	SF_WATCH_BOOKMARK,
	SF_WATCH_ERROR, /* obj is a metav1.Status */
} sf_watch_type;

const char *sf_watch_type_name(sf_watch_type t);

/* Called once per complete event. obj is handed over: the callee owns one
 * reference and must sf_obj_unref it. Return 0 to go on, non-zero to stop
 * decoding (feed then returns -ECANCELED). */
typedef int (*sf_watch_event_fn)(void *ud, sf_watch_type type, sf_obj *obj);

typedef struct sf_watch_decoder sf_watch_decoder;

/* max_event_bytes caps one event's size (0 = 16 MiB). NULL on -ENOMEM. */
sf_watch_decoder *sf_watch_decoder_new(sf_watch_event_fn fn, void *ud, size_t max_event_bytes);
void sf_watch_decoder_free(sf_watch_decoder *d);
/* Feeds the next chunk. 0, or a negative errno (-EBADMSG malformed,
 * -E2BIG event too large, -ECANCELED stopped by the callback); after an
 * error the decoder accepts nothing more. */
int sf_watch_decoder_feed(sf_watch_decoder *d, const char *p, size_t n);
/* End of stream: 0 if it ended between events, -EBADMSG if truncated. */
int sf_watch_decoder_finish(sf_watch_decoder *d);
/* Message for the last error ("" if none). */
const char *sf_watch_decoder_error(const sf_watch_decoder *d);
/* Events delivered so far. */
unsigned long sf_watch_decoder_count(const sf_watch_decoder *d);

/* LIST bodies: each element of "items" is handed over as an sf_obj (the
 * callee owns it). The list's metadata is available after finish. A
 * response that is a metav1.Status decodes without error (and without
 * items); sf_list_decoder_kind then returns "Status". max_item_bytes caps
 * one item, and also the list's bytes outside items (0 = 16 MiB). */
typedef int (*sf_list_item_fn)(void *ud, sf_obj *item);
typedef struct sf_list_decoder sf_list_decoder;

sf_list_decoder *sf_list_decoder_new(sf_list_item_fn fn, void *ud, size_t max_item_bytes);
void sf_list_decoder_free(sf_list_decoder *d);
int sf_list_decoder_feed(sf_list_decoder *d, const char *p, size_t n);
int sf_list_decoder_finish(sf_list_decoder *d);
const char *sf_list_decoder_error(const sf_list_decoder *d);
/* metadata.resourceVersion and metadata.continue of the list ("" if absent);
 * valid until free. */
const char *sf_list_decoder_rv(const sf_list_decoder *d);
const char *sf_list_decoder_continue(const sf_list_decoder *d);
/* Top-level "kind" of the body ("PodList", "Status", ...; "" if absent);
 * valid until free. */
const char *sf_list_decoder_kind(const sf_list_decoder *d);
/* metadata.remainingItemCount, -1 if absent. */
long long sf_list_decoder_remaining(const sf_list_decoder *d);
unsigned long sf_list_decoder_count(const sf_list_decoder *d);

#endif
