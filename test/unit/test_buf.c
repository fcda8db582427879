/*
 * test_buf.c - the JSON string escaper (sf_buf_put_json_str), the one every
 * JSON writer uses: every control character, quote and backslash, DEL and
 * UTF-8 bytes, and byte for byte what yajl_gen writes (sf_json_minify).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/buf.h"
#include "steadfast/json.h"

/* What yajl_gen writes for byte c inside a string. */
static const char *expected(unsigned char c, char *tmp)
{
	switch (c) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '\b': return "\\b";
	case '\f': return "\\f";
	case '\n': return "\\n";
	case '\r': return "\\r";
	case '\t': return "\\t";
	default:
		if (c < 0x20) {
			snprintf(tmp, 8, "\\u00%02X", c);
			return tmp;
		}
		tmp[0] = (char)c;
		tmp[1] = '\0';
		return tmp;
	}
}

Test(buf, json_str_escapes_every_control_character)
{
	for (unsigned c = 0; c < 0x80; c++) {
		char in[3] = {'a', (char)c, 'z'}, tmp[8], want[16];
		snprintf(want, sizeof(want), "\"a%sz\"", expected((unsigned char)c, tmp));
		sf_buf b;
		sf_buf_init(&b, 0);
		cr_assert_eq(sf_buf_put_json_str(&b, in, 3), 0);
		cr_assert_eq(b.len, strlen(want), "byte 0x%02x: %s", c, b.data);
		cr_assert_eq(memcmp(b.data, want, b.len), 0, "byte 0x%02x: %s, want %s", c, b.data,
		             want);
		sf_buf_free(&b);
	}
}

Test(buf, json_str_passes_utf8_and_solidus_through)
{
	const char *s = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 a/b \x7f";
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_buf_put_json_str(&b, s, strlen(s)), 0);
	cr_assert_str_eq(b.data, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 a/b \x7f\"");
	sf_buf_reset(&b);
	cr_assert_eq(sf_buf_put_json_str(&b, "", 0), 0);
	cr_assert_str_eq(b.data, "\"\"");
	sf_buf_free(&b);
}

Test(buf, json_str_is_what_yajl_gen_writes)
{
	/* every byte below 0x80, written as \u00XX, minified by yajl */
	sf_buf in, raw, ours, theirs;
	sf_buf_init(&in, 0);
	sf_buf_init(&raw, 0);
	sf_buf_init(&ours, 0);
	sf_buf_init(&theirs, 0);
	sf_buf_putc(&in, '"');
	for (unsigned c = 0; c < 0x80; c++) {
		sf_buf_printf(&in, "\\u%04X", c);
		sf_buf_putc(&raw, (char)c);
	}
	sf_buf_putc(&in, '"');
	char err[256] = "";
	cr_assert_eq(sf_json_minify(in.data, in.len, &theirs, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sf_buf_put_json_str(&ours, raw.data, raw.len), 0);
	cr_assert_eq(ours.len, theirs.len, "ours %s\nyajl %s", ours.data, theirs.data);
	cr_assert_eq(memcmp(ours.data, theirs.data, ours.len), 0, "ours %s\nyajl %s", ours.data,
	             theirs.data);
	sf_buf_free(&in);
	sf_buf_free(&raw);
	sf_buf_free(&ours);
	sf_buf_free(&theirs);
}
