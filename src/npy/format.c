/*
 * The NPY format layer: header parsing, validation and writing. See npy.h.
 *
 * The dict is parsed as the small subset of Python literal syntax numpy writes
 * and reads back: quoted strings, True/False, tuples of non-negative integers
 * (with Python 2's 'L' suffix in versions 1.0 and 2.0, as numpy's own reader
 * filters it), whitespace between tokens and trailing commas. Like numpy, it
 * wants exactly the three keys. Unlike numpy, it rejects a key given twice.
 */
#include "npy/npy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NPY_HOST_ORDER '>'
#else
#define NPY_HOST_ORDER '<'
#endif

/* ---- dtypes ---- */

struct npy_dtype_info {
	enum ferry_dtype dtype;
	char kind;	/* numpy's kind character in descr */
	unsigned size;
	const char *name;
};

static const struct npy_dtype_info npy_dtypes[] = {
	{ FERRY_BOOL, 'b', 1, "bool" },
	{ FERRY_INT8, 'i', 1, "int8" },
	{ FERRY_INT16, 'i', 2, "int16" },
	{ FERRY_INT32, 'i', 4, "int32" },
	{ FERRY_INT64, 'i', 8, "int64" },
	{ FERRY_UINT8, 'u', 1, "uint8" },
	{ FERRY_UINT16, 'u', 2, "uint16" },
	{ FERRY_UINT32, 'u', 4, "uint32" },
	{ FERRY_UINT64, 'u', 8, "uint64" },
	{ FERRY_FLOAT16, 'f', 2, "float16" },
	{ FERRY_FLOAT32, 'f', 4, "float32" },
	{ FERRY_FLOAT64, 'f', 8, "float64" },
	{ FERRY_COMPLEX64, 'c', 8, "complex64" },
	{ FERRY_COMPLEX128, 'c', 16, "complex128" },
};

/* Returns the table entry of dtype, or NULL. */
static const struct npy_dtype_info *npy_dtype_info(enum ferry_dtype dtype)
{
	for (size_t i = 0; i < FERRY__ARRAY_LEN(npy_dtypes); i++)
		if (npy_dtypes[i].dtype == dtype)
			return &npy_dtypes[i];
	return NULL;
}

/* Returns the table entry for a descr kind and size ('f', 4), or NULL. */
static const struct npy_dtype_info *npy_dtype_by_kind(char kind, unsigned size)
{
	for (size_t i = 0; i < FERRY__ARRAY_LEN(npy_dtypes); i++)
		if (npy_dtypes[i].kind == kind && npy_dtypes[i].size == size)
			return &npy_dtypes[i];
	return NULL;
}

FERRY_API size_t ferry_dtype_size(enum ferry_dtype dtype)
{
	const struct npy_dtype_info *info = npy_dtype_info(dtype);
	return info ? info->size : 0;
}

FERRY_API const char *ferry_dtype_name(enum ferry_dtype dtype)
{
	const struct npy_dtype_info *info = npy_dtype_info(dtype);
	return info ? info->name : "invalid";
}

/* ---- reasons ---- */

int ferry__npy_reason(char *why, size_t why_len, int err, const char *fmt, ...)
{
	va_list ap;
	if (!why || !why_len)
		return err;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
	return err;
}

static void npy_clear_reason(char *why, size_t why_len)
{
	if (why && why_len)
		why[0] = '\0';
}

/* Room for a quoted excerpt of the header in a reason, with its NUL. */
#define NPY_QUOTE_MAX 56

/* Writes byte c as a reason shows it into esc: printable ASCII as is, a
 * backslash or quote escaped, anything else as \xNN. Returns its length. */
static size_t npy_escape_byte(unsigned char c, char esc[5])
{
	if (c == '\\' || c == '\'' || c == '"')
		return (size_t)snprintf(esc, 5, "\\%c", c);
	if (c >= 0x20 && c < 0x7f)
		return (size_t)snprintf(esc, 5, "%c", c);
	return (size_t)snprintf(esc, 5, "\\x%02x", c);
}

/* Escapes the n bytes at s into out (NPY_QUOTE_MAX bytes), so that header text
 * quoted in a reason holds no control or non-ASCII byte; an excerpt too long is
 * cut at a whole escape and ends with "...". Returns out. */
static const char *npy_quote(char out[NPY_QUOTE_MAX], const char *s, size_t n)
{
	size_t total = 0, used = 0, i, len;
	char esc[5];

	for (i = 0; i < n && total < NPY_QUOTE_MAX; i++)
		total += npy_escape_byte((unsigned char)s[i], esc);
	/* All of it fits with its NUL, or leave room for "..." and the NUL. */
	size_t room = total < NPY_QUOTE_MAX ? NPY_QUOTE_MAX - 1 : NPY_QUOTE_MAX - 4;
	for (i = 0; i < n; i++) {
		len = npy_escape_byte((unsigned char)s[i], esc);
		if (used + len > room)
			break;
		memcpy(out + used, esc, len);
		used += len;
	}
	if (i < n)
		memcpy(out + used, "...", 4);
	else
		out[used] = '\0';
	return out;
}

/* ---- the prefix: magic, version, length ---- */

uint64_t ferry__read_le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int64_t ferry__npy_header_length(const void *prefix, size_t len, char *why, size_t why_len)
{
	const unsigned char *p = prefix;
	size_t magic_len = len < NPY_MAGIC_LEN ? len : NPY_MAGIC_LEN;
	size_t need;
	uint32_t dict_len;

	npy_clear_reason(why, why_len);
	if (memcmp(p, NPY_MAGIC, magic_len) != 0)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT, "bad magic");
	if (len < 8)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "header truncated: %zu bytes, no version", len);
	if (p[6] < 1 || p[6] > 3 || p[7] != 0)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT, "unknown version %d.%d", p[6],
				  p[7]);
	need = p[6] == 1 ? 10 : 12;
	if (len < need)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "header truncated: %zu bytes, no header length", len);
	dict_len = (uint32_t)ferry__read_le(p + 8, (int)need - 8);
	if (dict_len > FERRY__NPY_MAX_HEADER)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "header is %" PRIu32 " bytes, over ferry's cap of %d "
				  "(numpy's default is 10000)",
				  dict_len, FERRY__NPY_MAX_HEADER);
	return (int64_t)(need + dict_len);
}

/* ---- the dict ---- */

enum npy_key { NPY_KEY_DESCR, NPY_KEY_FORTRAN_ORDER, NPY_KEY_SHAPE, NPY_KEYS };

static const char *const npy_key_names[NPY_KEYS] = { "descr", "fortran_order", "shape" };

struct npy_parser {
	const char *p, *end;
	int major;
	char *why;
	size_t why_len;
	/* Set by the first valid-but-unloadable value; reported once the whole dict
	 * parsed, so a malformed header is always -FERRY_EFORMAT. */
	int unsupported;
	int seen[NPY_KEYS];
	const struct npy_dtype_info *dtype;
	char byteorder;
	int fortran_order;
	int ndim;	/* may exceed FERRY_MAX_DIMS; shape holds the first ones */
	int64_t shape[FERRY_MAX_DIMS];
};

#define NPY_FORMAT_ERROR(ps, ...) ferry__npy_reason((ps)->why, (ps)->why_len, -FERRY_EFORMAT, __VA_ARGS__)

/* Records the first reason the header cannot be loaded; returns 0 to go on parsing. */
#define NPY_UNSUPPORTED(ps, ...)                                                     \
	((ps)->unsupported ? 0                                                        \
			   : ((ps)->unsupported = 1,                                   \
			      ferry__npy_reason((ps)->why, (ps)->why_len, 0, __VA_ARGS__)))

/* Returns the next byte, or -1 at the end. */
static int npy_peek(const struct npy_parser *ps)
{
	return ps->p < ps->end ? (unsigned char)*ps->p : -1;
}

static int npy_is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static int npy_is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int npy_is_word(int c)
{
	return npy_is_digit(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static void npy_skip_space(struct npy_parser *ps)
{
	while (npy_is_space(npy_peek(ps)))
		ps->p++;
}

/* Returns the length of the token at p (up to a delimiter, at most
 * NPY_QUOTE_MAX: npy_quote cuts anything longer), for reasons. */
static int npy_token_len(const struct npy_parser *ps)
{
	int n = 0;
	while (ps->p + n < ps->end && n < NPY_QUOTE_MAX && !npy_is_space(ps->p[n]) &&
	       !memchr(",:)}]", ps->p[n], 5))
		n++;
	return n;
}

/* Returns the token at p (at least its first byte, when there is one) quoted
 * for a reason by npy_quote, in q. */
static const char *npy_token(const struct npy_parser *ps, char q[NPY_QUOTE_MAX])
{
	int n = npy_token_len(ps);

	return npy_quote(q, ps->p, n || ps->p >= ps->end ? (size_t)n : 1);
}

/* Parses a quoted string (what names it in reasons); a backslash keeps the next
 * byte. Returns 0 with its raw contents in s/n, or -FERRY_EFORMAT. */
static int npy_parse_string(struct npy_parser *ps, const char *what, const char **s, size_t *n)
{
	int quote = npy_peek(ps);
	const char *start;

	if (quote != '\'' && quote != '"')
		return NPY_FORMAT_ERROR(ps, "expected a quoted %s", what);
	start = ++ps->p;
	while (ps->p < ps->end && *ps->p != quote) {
		if (*ps->p == '\n')
			break;
		ps->p += *ps->p == '\\' && ps->p + 1 < ps->end ? 2 : 1;
	}
	if (ps->p >= ps->end || *ps->p != quote)
		return NPY_FORMAT_ERROR(ps, "unterminated %s string", what);
	*s = start;
	*n = (size_t)(ps->p - start);
	ps->p++;
	return 0;
}

/* Skips a bracketed value (a structured descr's list). Returns 0 or -FERRY_EFORMAT. */
static int npy_skip_nested(struct npy_parser *ps)
{
	int depth = 0;
	const char *s;
	size_t n;

	while (ps->p < ps->end) {
		int c = *ps->p;
		if (c == '\'' || c == '"') {
			if (npy_parse_string(ps, "field", &s, &n) < 0)
				return -FERRY_EFORMAT;
			continue;
		}
		if (c == '[' || c == '(')
			depth++;
		else if ((c == ']' || c == ')') && --depth == 0) {
			ps->p++;
			return 0;
		}
		ps->p++;
	}
	return NPY_FORMAT_ERROR(ps, "unterminated list in 'descr'");
}

/* Decodes a descr string such as "<f4". Returns 0 (possibly recording it as
 * unsupported); only a well-formed string reaches here. */
static int npy_decode_descr(struct npy_parser *ps, const char *s, size_t n)
{
	size_t i = 0;
	unsigned size = 0;
	char q[NPY_QUOTE_MAX];

	ps->byteorder = '=';
	if (n > 0 && memchr("<>|=", s[0], 4)) {
		ps->byteorder = s[0];
		i = 1;
	}
	if (i < n && s[i] == 'O')
		return NPY_UNSUPPORTED(ps, "object dtype '%s' is not supported", npy_quote(q, s, n));
	if (i + 1 < n && n - i <= 3) {
		size_t k;
		for (k = i + 1; k < n && npy_is_digit(s[k]); k++)
			size = size * 10 + (unsigned)(s[k] - '0');
		if (k == n)
			ps->dtype = npy_dtype_by_kind(s[i], size);
	}
	if (!ps->dtype)
		return NPY_UNSUPPORTED(ps, "dtype '%s' is not supported", npy_quote(q, s, n));
	return 0;
}

/* Parses the value of 'descr'. Returns 0 or -FERRY_EFORMAT. */
static int npy_parse_descr(struct npy_parser *ps)
{
	int c = npy_peek(ps);
	const char *s;
	size_t n;

	if (c == '[' || c == '(') {
		if (npy_skip_nested(ps) < 0)
			return -FERRY_EFORMAT;
		return NPY_UNSUPPORTED(ps, "structured dtype (list descr) is not supported");
	}
	if (c != '\'' && c != '"')
		return NPY_FORMAT_ERROR(ps, "'descr' must be a string");
	if (npy_parse_string(ps, "descr", &s, &n) < 0)
		return -FERRY_EFORMAT;
	return npy_decode_descr(ps, s, n);
}

/* Parses the value of 'fortran_order'. Returns 0 or -FERRY_EFORMAT. */
static int npy_parse_bool(struct npy_parser *ps)
{
	char q[NPY_QUOTE_MAX];
	int n = 0;

	while (ps->p + n < ps->end && npy_is_word(ps->p[n]))
		n++;
	if (n == 4 && !memcmp(ps->p, "True", 4))
		ps->fortran_order = 1;
	else if (n == 5 && !memcmp(ps->p, "False", 5))
		ps->fortran_order = 0;
	else
		return NPY_FORMAT_ERROR(ps, "'fortran_order' must be True or False, not '%s'",
					npy_token(ps, q));
	ps->p += n;
	return 0;
}

/* Parses one dimension of 'shape'. Returns 0 with it in dim, or -FERRY_EFORMAT. */
static int npy_parse_dim(struct npy_parser *ps, int64_t *dim)
{
	const char *start = ps->p;
	char q[NPY_QUOTE_MAX];
	int64_t v = 0;

	if (npy_peek(ps) == '-')
		return NPY_FORMAT_ERROR(ps, "negative dimension '%s' in 'shape'", npy_token(ps, q));
	while (npy_is_digit(npy_peek(ps))) {
		int d = *ps->p++ - '0';
		if (v > (INT64_MAX - d) / 10)
			return NPY_FORMAT_ERROR(ps, "dimension too large in 'shape'");
		v = v * 10 + d;
	}
	/* Python 2 wrote long integers as 3L; numpy reads those files. */
	if (ps->p > start && ps->major <= 2 && (npy_peek(ps) == 'L' || npy_peek(ps) == 'l'))
		ps->p++;
	if (ps->p == start || npy_is_word(npy_peek(ps)) || npy_peek(ps) == '.') {
		ps->p = start;
		if (!npy_token_len(ps))
			return NPY_FORMAT_ERROR(ps, "expected a dimension in 'shape'");
		return NPY_FORMAT_ERROR(ps, "non-integer dimension '%s' in 'shape'",
					npy_token(ps, q));
	}
	*dim = v;
	return 0;
}

/* Records one parsed dimension; those past FERRY_MAX_DIMS are only counted. */
static void npy_add_dim(struct npy_parser *ps, int64_t dim)
{
	if (ps->ndim < FERRY_MAX_DIMS)
		ps->shape[ps->ndim] = dim;
	ps->ndim++;
}

/* Parses the value of 'shape': (), (3,), (3, 4), (3, 4,). Returns 0 or -FERRY_EFORMAT. */
static int npy_parse_shape(struct npy_parser *ps)
{
	int64_t dim = 0;

	if (npy_peek(ps) != '(')
		return NPY_FORMAT_ERROR(ps, "'shape' must be a tuple");
	ps->p++;
	npy_skip_space(ps);
	while (npy_peek(ps) != ')') {
		if (npy_parse_dim(ps, &dim) < 0)
			return -FERRY_EFORMAT;
		npy_add_dim(ps, dim);
		npy_skip_space(ps);
		if (npy_peek(ps) == ',') {
			ps->p++;
			npy_skip_space(ps);
		} else if (npy_peek(ps) != ')') {
			return NPY_FORMAT_ERROR(ps, "expected ',' or ')' in 'shape'");
		} else if (ps->ndim == 1) {
			return NPY_FORMAT_ERROR(ps, "'shape' (%" PRId64 ") is not a tuple", dim);
		}
	}
	ps->p++;
	if (ps->ndim > FERRY_MAX_DIMS)
		return NPY_UNSUPPORTED(ps, "rank %d is over ferry's limit of %d", ps->ndim,
				       FERRY_MAX_DIMS);
	return 0;
}

/* Returns the key named by s/n, or NPY_KEYS when there is none. */
static enum npy_key npy_find_key(const char *s, size_t n)
{
	int k;
	for (k = 0; k < NPY_KEYS; k++)
		if (strlen(npy_key_names[k]) == n && !memcmp(npy_key_names[k], s, n))
			break;
	return (enum npy_key)k;
}

/* Parses "'key': value". Returns 0 or -FERRY_EFORMAT. */
static int npy_parse_entry(struct npy_parser *ps)
{
	char q[NPY_QUOTE_MAX];
	const char *s;
	size_t n;
	enum npy_key key;

	if (npy_parse_string(ps, "key", &s, &n) < 0)
		return -FERRY_EFORMAT;
	key = npy_find_key(s, n);
	if (key == NPY_KEYS)
		return NPY_FORMAT_ERROR(ps, "unknown key '%s'", npy_quote(q, s, n));
	if (ps->seen[key]++)
		return NPY_FORMAT_ERROR(ps, "duplicate key '%s'", npy_key_names[key]);
	npy_skip_space(ps);
	if (npy_peek(ps) != ':')
		return NPY_FORMAT_ERROR(ps, "missing ':' after key '%s'", npy_key_names[key]);
	ps->p++;
	npy_skip_space(ps);
	switch (key) {
	case NPY_KEY_DESCR: return npy_parse_descr(ps);
	case NPY_KEY_FORTRAN_ORDER: return npy_parse_bool(ps);
	default: return npy_parse_shape(ps);
	}
}

/* Parses the entries between '{' and '}'. Returns 0 or -FERRY_EFORMAT. */
static int npy_parse_entries(struct npy_parser *ps)
{
	char q[NPY_QUOTE_MAX];

	for (;;) {
		npy_skip_space(ps);
		if (npy_peek(ps) == '}')
			break;
		if (npy_peek(ps) < 0)
			return NPY_FORMAT_ERROR(ps, "dict not closed (missing '}')");
		if (npy_parse_entry(ps) < 0)
			return -FERRY_EFORMAT;
		npy_skip_space(ps);
		if (npy_peek(ps) == ',')
			ps->p++;
		else if (npy_peek(ps) < 0)
			return NPY_FORMAT_ERROR(ps, "dict not closed (missing '}')");
		else if (npy_peek(ps) != '}')
			return NPY_FORMAT_ERROR(ps, "expected ',' or '}' in dict, not '%s'",
						npy_token(ps, q));
	}
	ps->p++;
	return 0;
}

/* Parses the whole dict and the padding after it. Returns 0 or -FERRY_EFORMAT. */
static int npy_parse_dict(struct npy_parser *ps)
{
	char q[NPY_QUOTE_MAX];

	npy_skip_space(ps);
	if (npy_peek(ps) != '{')
		return NPY_FORMAT_ERROR(ps, "header is not a dict (no '{')");
	ps->p++;
	if (npy_parse_entries(ps) < 0)
		return -FERRY_EFORMAT;
	npy_skip_space(ps);
	if (ps->p != ps->end)
		return NPY_FORMAT_ERROR(ps, "unexpected '%s' after the dict", npy_token(ps, q));
	for (int k = 0; k < NPY_KEYS; k++)
		if (!ps->seen[k])
			return NPY_FORMAT_ERROR(ps, "missing key '%s'", npy_key_names[k]);
	return 0;
}

/* Fills count and data_size, refusing sizes whose byte offsets would not fit an
 * int64 (numpy's limit too). Zero dims are left out of the overflow check as
 * numpy does. Returns 0 or -FERRY_EFORMAT. */
static int npy_compute_sizes(struct ferry__npy_header *h, char *why, size_t why_len)
{
	uint64_t nonzero = 1;
	int any_zero = 0;

	for (int i = 0; i < h->ndim; i++) {
		uint64_t d = (uint64_t)h->shape[i];
		if (d == 0)
			any_zero = 1;
		else if (nonzero > INT64_MAX / d)
			return ferry__npy_reason(why, why_len, -FERRY_EFORMAT, "shape product overflows");
		else
			nonzero *= d;
	}
	if (nonzero > (INT64_MAX - h->data_offset) / h->itemsize)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "shape product overflows with %zu-byte items", h->itemsize);
	h->count = any_zero ? 0 : nonzero;
	h->data_size = h->count * h->itemsize;
	return 0;
}

/* Copies what the parser found into h. */
static void npy_fill_header(struct ferry__npy_header *h, const struct npy_parser *ps)
{
	size_t component = ps->dtype->kind == 'c' ? ps->dtype->size / 2 : ps->dtype->size;

	h->dtype = ps->dtype->dtype;
	h->itemsize = ps->dtype->size;
	h->swap = component > 1 && (ps->byteorder == '<' || ps->byteorder == '>') &&
		  ps->byteorder != NPY_HOST_ORDER;
	h->fortran_order = ps->fortran_order;
	h->ndim = ps->ndim;
	memcpy(h->shape, ps->shape, sizeof(int64_t) * (size_t)ps->ndim);
}

int ferry__npy_parse(const void *bytes, size_t len, struct ferry__npy_header *out, char *why,
		     size_t why_len)
{
	const unsigned char *b = bytes;
	struct npy_parser ps = { .why = why, .why_len = why_len };
	int64_t total;

	memset(out, 0, sizeof(*out));
	total = ferry__npy_header_length(bytes, len, why, why_len);
	if (total < 0)
		return (int)total;
	if ((uint64_t)total > len)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "header truncated: needs %" PRId64 " bytes, have %zu", total, len);
	ps.major = b[6];
	ps.p = (const char *)b + (b[6] == 1 ? 10 : 12);
	ps.end = (const char *)b + total;
	/* Python source may not hold NUL bytes, so numpy refuses them too. */
	if (memchr(ps.p, 0, (size_t)(ps.end - ps.p)))
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT, "header holds a NUL byte");
	if (npy_parse_dict(&ps) < 0)
		return -FERRY_EFORMAT;
	if (ps.unsupported)
		return -FERRY_EUNSUPPORTED;
	out->major = b[6];
	out->minor = b[7];
	out->data_offset = (uint64_t)total;
	npy_fill_header(out, &ps);
	return npy_compute_sizes(out, why, why_len);
}

int ferry__npy_check_size(const struct ferry__npy_header *h, uint64_t file_size, char *why,
			  size_t why_len)
{
	npy_clear_reason(why, why_len);
	if (file_size < h->data_offset)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "file is %" PRIu64 " bytes, shorter than its %" PRIu64
				  "-byte header",
				  file_size, h->data_offset);
	if (file_size - h->data_offset != h->data_size)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "payload is %" PRIu64 " bytes, file holds %" PRIu64
				  " after the header",
				  h->data_size, file_size - h->data_offset);
	return 0;
}

/* ---- writing ---- */

/* Writes the dict as numpy does ("{'descr': '<f4', ... }") into text.
 * Returns its length, or -ENOSPC. */
static int npy_format_dict(char *text, size_t cap, const struct npy_dtype_info *info,
			   char byteorder, int fortran_order, int ndim, const int64_t *shape)
{
	size_t n;

	n = (size_t)snprintf(text, cap, "{'descr': '%c%c%u', 'fortran_order': %s, 'shape': (",
			     byteorder, info->kind, info->size, fortran_order ? "True" : "False");
	for (int i = 0; i < ndim && n < cap; i++)
		n += (size_t)snprintf(text + n, cap - n, "%s%" PRId64, i ? ", " : "", shape[i]);
	if (n < cap)
		n += (size_t)snprintf(text + n, cap - n, "%s), }", ndim == 1 ? "," : "");
	return n < cap ? (int)n : -ENOSPC;
}

/* Returns 1 when the arguments describe a header ferry can write. */
static int npy_valid_request(char byteorder, int fortran_order, int ndim, const int64_t *shape,
			     int major)
{
	if (!memchr("<>|=", byteorder, 4))
		return 0;
	if (fortran_order != 0 && fortran_order != 1)
		return 0;
	if (ndim < 0 || ndim > FERRY_MAX_DIMS || (ndim > 0 && !shape) || major < 0 || major > 3)
		return 0;
	for (int i = 0; i < ndim; i++)
		if (shape[i] < 0)
			return 0;
	return 1;
}

int ferry__npy_write_header(void *buf, size_t cap, enum ferry_dtype dtype, char byteorder,
			    int fortran_order, int ndim, const int64_t *shape, int major)
{
	const struct npy_dtype_info *info = npy_dtype_info(dtype);
	unsigned char *b = buf;
	char text[1024];
	int text_len;
	size_t prefix, total, dict_len;

	if (!info || !npy_valid_request(byteorder, fortran_order, ndim, shape, major))
		return -EINVAL;
	text_len = npy_format_dict(text, sizeof(text), info, byteorder, fortran_order, ndim,
				   shape);
	if (text_len < 0)
		return text_len;
	if (major == 0)
		major = text_len + 1 + 10 + NPY_ALIGN <= 0xffff ? 1 : 2;
	prefix = major == 1 ? 10 : 12;
	total = (prefix + (size_t)text_len + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
	dict_len = total - prefix;
	if (total > cap || (major == 1 && dict_len > 0xffff))
		return -ENOSPC;
	memcpy(b, NPY_MAGIC, NPY_MAGIC_LEN);
	b[6] = (unsigned char)major;
	b[7] = 0;
	for (size_t i = 0; i < prefix - 8; i++)
		b[8 + i] = (unsigned char)(dict_len >> (8 * i));
	memcpy(b + prefix, text, (size_t)text_len);
	memset(b + prefix + text_len, ' ', dict_len - (size_t)text_len - 1);
	b[total - 1] = '\n';
	return (int)total;
}
