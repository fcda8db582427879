/*
 * log.h - structured log lines (one JSON object per line).
 *
 * Every module logs through here; nothing else in the library writes to
 * stderr. A line is {"ts":..., "level":..., "logger":..., "msg":..., k: v...}
 * with controller-runtime/zap's field names, so the usual log tooling reads it.
 * Levels follow zap: error < warn < info < debug(1) < trace(2+); the active
 * level is set like --zap-log-level (a name or a verbosity number).
 */
#ifndef STEADFAST_LOG_H
#define STEADFAST_LOG_H

#include <stdarg.h>

typedef enum {
	SF_LOG_ERROR = -2,
	SF_LOG_WARN = -1,
	SF_LOG_INFO = 0,
	SF_LOG_DEBUG = 1,
	SF_LOG_TRACE = 2,
} sf_log_level;

/* A sink receives each formatted line (without the trailing newline).
 * The default sink writes to stderr. Tests install one to capture lines. */
typedef void (*sf_log_sink_fn)(sf_log_level level, const char *line, void *ud);

void sf_log_set_level(int level);
int sf_log_get_level(void);
/* Parses "error", "warn", "info", "debug", or an integer >= 0 (zap verbosity).
 * Returns 0 and sets *out, or -EINVAL. */
int sf_log_parse_level(const char *s, int *out);
void sf_log_set_sink(sf_log_sink_fn fn, void *ud);
int sf_log_enabled(sf_log_level level);

/* Logs msg with key/value string pairs terminated by NULL:
 *   sf_log(SF_LOG_INFO, "kube", "request failed", "url", url, "code", "409", NULL);
 * A NULL value prints as null. Keys must be plain identifiers. */
void sf_log(sf_log_level level, const char *logger, const char *msg, ...);
void sf_logv(sf_log_level level, const char *logger, const char *msg, va_list ap);

#define sf_log_error(logger, msg, ...) sf_log(SF_LOG_ERROR, logger, msg, __VA_ARGS__)
#define sf_log_warn(logger, msg, ...) sf_log(SF_LOG_WARN, logger, msg, __VA_ARGS__)
#define sf_log_info(logger, msg, ...) sf_log(SF_LOG_INFO, logger, msg, __VA_ARGS__)
#define sf_log_debug(logger, msg, ...) sf_log(SF_LOG_DEBUG, logger, msg, __VA_ARGS__)

/* Formats an integer into a caller buffer for use as a log value. */
const char *sf_log_int(char buf[24], long long v);

#endif
