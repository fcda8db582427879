/*
 * log.c - structured JSON log lines (see log.h).
 */
#include "steadfast/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/buf.h"
#include "steadfast/time.h"

static int log_level = SF_LOG_INFO;
static sf_log_sink_fn log_sink;
static void *log_sink_ud;

void sf_log_set_level(int level)
{
	log_level = level;
}

int sf_log_get_level(void)
{
	return log_level;
}

int sf_log_parse_level(const char *s, int *out)
{
	static const struct {
		const char *name;
		int level;
	} names[] = {{"error", SF_LOG_ERROR},
	             {"warn", SF_LOG_WARN},
	             {"info", SF_LOG_INFO},
	             {"debug", SF_LOG_DEBUG}};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i].name) == 0) {
			*out = names[i].level;
			return 0;
		}
	}
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 0 || v > 10)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

void sf_log_set_sink(sf_log_sink_fn fn, void *ud)
{
	log_sink = fn;
	log_sink_ud = ud;
}

int sf_log_enabled(sf_log_level level)
{
	return (int)level <= log_level;
}

const char *sf_log_int(char buf[24], long long v)
{
	snprintf(buf, 24, "%lld", v);
	return buf;
}

static const char *level_name(sf_log_level level)
{
	switch (level) {
	case SF_LOG_ERROR: return "error";
	case SF_LOG_WARN: return "warn";
	case SF_LOG_INFO: return "info";
	case SF_LOG_DEBUG: return "debug";
	default: return "trace";
	}
}

void sf_logv(sf_log_level level, const char *logger, const char *msg, va_list ap)
{
	if (!sf_log_enabled(level))
		return;
	char ts[40];
	int64_t now = sf_wall_ns();
	sf_time_rfc3339(now, ts, sizeof(ts));
	ts[strlen(ts) - 1] = '\0';
	char tsf[48];
	snprintf(tsf, sizeof(tsf), "%s.%03lldZ", ts, (long long)(now / 1000000 % 1000));

	sf_buf h; /* a line is capped at 64 KiB */
	sf_buf_init(&h, 64 * 1024);
	sf_buf *o = &h;
	sf_buf_puts(o, "{\"ts\":\"");
	sf_buf_puts(o, tsf);
	sf_buf_puts(o, "\",\"level\":\"");
	sf_buf_puts(o, level_name(level));
	sf_buf_puts(o, "\",\"logger\":");
	sf_buf_put_json_str(o, logger ? logger : "", logger ? strlen(logger) : 0);
	sf_buf_puts(o, ",\"msg\":");
	sf_buf_put_json_str(o, msg, strlen(msg));
	for (;;) {
		const char *k = va_arg(ap, const char *);
		if (!k)
			break;
		const char *v = va_arg(ap, const char *);
		sf_buf_putc(o, ',');
		sf_buf_put_json_str(o, k, strlen(k));
		sf_buf_putc(o, ':');
		if (v)
			sf_buf_put_json_str(o, v, strlen(v));
		else
			sf_buf_puts(o, "null");
	}
	sf_buf_putc(o, '}');
	if (o->data) {
		if (log_sink) {
			log_sink(level, o->data, log_sink_ud);
		} else {
			sf_buf_putc(o, '\n');
			fwrite(o->data, 1, o->len, stderr);
		}
	}
	sf_buf_free(&h);
}

void sf_log(sf_log_level level, const char *logger, const char *msg, ...)
{
	va_list ap;
	va_start(ap, msg);
	sf_logv(level, logger, msg, ap);
	va_end(ap);
}
