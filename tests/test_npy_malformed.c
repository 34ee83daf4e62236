/*
 * NPY files ferry must refuse, each with the right code and a reason that says
 * why. The cases are built in code, written as files into a temporary directory
 * and read back, then checked the way the loader checks a file: header length
 * from the prefix, parse of the whole header, payload size against the file size.
 *
 * `test_npy_malformed --write-corpus DIR` writes every case (bad-*.npy) and a few
 * valid files (good-*.npy) into DIR instead: that is how fuzz/corpus/npy/ is made.
 */
#include "helpers.h"

#include <dirent.h>
#include <sys/stat.h>

#include "base/base.h"
#include "npy/npy.h"

#define MAX_CASES 160
#define CASE_CAP 4096

struct bad_case {
	char name[64];
	unsigned char bytes[CASE_CAP];
	size_t len;
	int code;
	const char *reason;	/* a substring the reason must contain */
};

static struct bad_case cases[MAX_CASES];
static int ncases;

static struct bad_case *new_case(const char *name, int code, const char *reason)
{
	struct bad_case *c;
	T_ASSERT(ncases < MAX_CASES);
	c = &cases[ncases++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->code = code;
	c->reason = reason;
	return c;
}

/* Writes magic, version, a dict length field and the dict into out, padding the
 * dict to a multiple of 64 as numpy does. Returns the header length. */
static size_t put_header(unsigned char *out, size_t cap, int major, const char *dict)
{
	size_t prefix = major == 1 ? 10 : 12, n = strlen(dict);
	size_t total = (prefix + n + 1 + 63) / 64 * 64;
	T_ASSERT(total <= cap);
	memcpy(out, "\x93NUMPY", 6);
	out[6] = (unsigned char)major;
	out[7] = 0;
	for (size_t i = 0; i < prefix - 8; i++)
		out[8 + i] = (unsigned char)((total - prefix) >> (8 * i));
	memcpy(out + prefix, dict, n);
	memset(out + prefix + n, ' ', total - prefix - n - 1);
	out[total - 1] = '\n';
	return total;
}

/* Adds a case whose whole header is dict, in the given version, plus 48 payload bytes. */
static void add_dict(const char *name, int major, const char *dict, int code, const char *reason)
{
	struct bad_case *c = new_case(name, code, reason);
	c->len = put_header(c->bytes, CASE_CAP - 48, major, dict);
	memset(c->bytes + c->len, 0xab, 48);
	c->len += 48;
}

/* Adds a case with the three entries' values given as text. */
static void add_values(const char *name, const char *descr, const char *fortran,
		       const char *shape, int code, const char *reason)
{
	char dict[1024];
	snprintf(dict, sizeof(dict), "{'descr': %s, 'fortran_order': %s, 'shape': %s, }", descr,
		 fortran, shape);
	add_dict(name, 1, dict, code, reason);
}

static void add_raw(const char *name, const void *bytes, size_t len, int code, const char *reason)
{
	struct bad_case *c = new_case(name, code, reason);
	T_ASSERT(len <= CASE_CAP);
	memcpy(c->bytes, bytes, len);
	c->len = len;
}

#define F (-FERRY_EFORMAT)
#define U (-FERRY_EUNSUPPORTED)
#define GOOD "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"

static void add_prefix_cases(void)
{
	unsigned char b[CASE_CAP];
	size_t len = put_header(b, sizeof(b), 1, GOOD);

	add_raw("empty", "", 0, F, "truncated");
	add_raw("zip-magic", "PK\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00", 12, F, "bad magic");
	add_raw("bad-magic", "\x93NUMPZ\x01\x00\x10\x00{}", 12, F, "bad magic");
	add_raw("magic-only", "\x93NUMPY", 6, F, "truncated");
	add_raw("no-length", "\x93NUMPY\x02\x00\x10\x00", 10, F, "truncated");
	add_raw("version-4.0", "\x93NUMPY\x04\x00\x10\x00\x00\x00", 12, F, "unknown version 4.0");
	add_raw("version-1.1", "\x93NUMPY\x01\x01\x10\x00\x00\x00", 12, F, "unknown version 1.1");
	add_raw("version-0.0", "\x93NUMPY\x00\x00\x10\x00\x00\x00", 12, F, "unknown version 0.0");
	add_raw("over-cap", "\x93NUMPY\x02\x00\x01\x00\x01\x00{'descr'", 19, F, "cap of 65536");
	add_raw("over-cap-huge", "\x93NUMPY\x03\x00\xff\xff\xff\xff{", 13, F, "cap");
	b[8] = 0xff; /* dict length 255 + 0x00 * 256, past the 128-byte file */
	add_raw("length-past-buffer", b, len, F, "header truncated: needs");
	b[8] = (unsigned char)(len - 10);
	add_raw("dict-cut", b, len - 30, F, "header truncated");
}

static void add_dict_cases(void)
{
	add_dict("missing-descr", 1, "{'fortran_order': False, 'shape': (3,), }", F,
		 "missing key 'descr'");
	add_dict("missing-fortran", 1, "{'descr': '<f4', 'shape': (3,), }", F,
		 "missing key 'fortran_order'");
	add_dict("missing-shape", 1, "{'descr': '<f4', 'fortran_order': False}", F,
		 "missing key 'shape'");
	add_dict("empty-dict", 1, "{}", F, "missing key");
	add_dict("extra-key", 1,
		 "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1, }", F,
		 "unknown key 'extra'");
	add_dict("duplicate-key", 1,
		 "{'descr': '<f4', 'shape': (3,), 'fortran_order': False, 'shape': (3,), }", F,
		 "duplicate key 'shape'");
	add_dict("no-open-brace", 1, "'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
		 F, "not a dict");
	add_dict("no-close-brace", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), ",
		 F, "missing '}'");
	add_dict("no-close-after-value", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)",
		 F, "missing '}'");
	add_dict("unquoted-key", 1, "{descr: '<f4', 'fortran_order': False, 'shape': (3,), }", F,
		 "expected a quoted key");
	add_dict("unterminated-key", 1, "{'descr", F, "unterminated key");
	add_dict("unterminated-descr", 1, "{'descr': '<f4", F, "unterminated descr");
	add_dict("newline-in-string", 1, "{'descr': '<f4\n', 'fortran_order': False, 'shape': (), }",
		 F, "unterminated descr");
	add_dict("missing-colon", 1, "{'descr' '<f4', 'fortran_order': False, 'shape': (3,), }", F,
		 "missing ':' after key 'descr'");
	add_dict("missing-comma", 1, "{'descr': '<f4' 'fortran_order': False, 'shape': (3,), }", F,
		 "expected ',' or '}'");
	add_dict("double-comma", 1, "{'descr': '<f4',, 'fortran_order': False, 'shape': (3,), }", F,
		 "expected a quoted key");
	add_dict("trailing-garbage", 1, GOOD " x", F, "after the dict");
	add_dict("two-dicts", 1, GOOD GOOD, F, "after the dict");
	add_dict("list-not-dict", 1, "['descr', '<f4']", F, "not a dict");
}

static void add_value_cases(void)
{
	add_values("bool-lowercase", "'<f4'", "false", "(3,)", F, "must be True or False");
	add_values("bool-upper", "'<f4'", "FALSE", "(3,)", F, "must be True or False");
	add_values("bool-int", "'<f4'", "0", "(3,)", F, "must be True or False");
	add_values("bool-string", "'<f4'", "'False'", "(3,)", F, "must be True or False");
	add_values("bool-suffix", "'<f4'", "Truex", "(3,)", F, "must be True or False");
	add_values("bool-none", "'<f4'", "None", "(3,)", F, "must be True or False");
	add_values("dim-negative", "'<f4'", "False", "(-1, 3)", F, "negative dimension");
	add_values("dim-negative-2", "'<f4'", "False", "(3, -3)", F, "negative dimension");
	add_values("dim-float", "'<f4'", "False", "(3.0,)", F, "non-integer dimension '3.0'");
	add_values("dim-exp", "'<f4'", "False", "(3e2,)", F, "non-integer dimension");
	add_values("dim-hex", "'<f4'", "False", "(0x10,)", F, "non-integer dimension");
	add_values("dim-bool", "'<f4'", "False", "(True,)", F, "non-integer dimension 'True'");
	add_values("dim-string", "'<f4'", "False", "('3',)", F, "non-integer dimension");
	add_values("dim-complex", "'<f4'", "False", "(3j,)", F, "non-integer dimension");
	add_values("dim-too-large", "'<f4'", "False", "(9223372036854775808,)", F,
		   "dimension too large");
	add_values("shape-list", "'<f4'", "False", "[3, 4]", F, "must be a tuple");
	add_values("shape-int", "'<f4'", "False", "3", F, "must be a tuple");
	add_values("shape-paren-int", "'<f4'", "False", "(3)", F, "is not a tuple");
	add_values("shape-double-comma", "'<f4'", "False", "(3,,)", F, "expected a dimension");
	add_values("shape-lone-comma", "'<f4'", "False", "(,)", F, "expected a dimension");
	add_values("shape-no-comma", "'<f4'", "False", "(3 4)", F, "expected ',' or ')'");
	add_values("shape-unclosed", "'<f4'", "False", "(3, 4", F, "expected a dimension");
	add_values("overflow-2-62x8", "'<f8'", "False", "(4611686018427387904, 8)", F,
		   "shape product overflows");
	add_values("overflow-items", "'<f8'", "False", "(2305843009213693952,)", F,
		   "overflows with 8-byte items");
	add_values("overflow-square", "'|i1'", "False", "(3037000500, 3037000500)", F,
		   "shape product overflows");
	add_values("overflow-with-zero", "'<f4'", "False",
		   "(4611686018427387904, 4611686018427387904, 0)", F, "shape product overflows");
	add_values("overflow-int64-max", "'|u1'", "False", "(9223372036854775807,)", F,
		   "overflows");
	add_values("descr-int", "5", "False", "(3,)", F, "'descr' must be a string");
	add_values("descr-none", "None", "False", "(3,)", F, "'descr' must be a string");
	add_values("structured-unclosed", "[('a', '<f4'), ('b', '<i8')", "False", "(3,)", F,
		   "unterminated list");
}

static void add_unsupported_cases(void)
{
	add_values("object", "'|O'", "False", "(3,)", U, "object dtype '|O' is not supported");
	add_values("object-8", "'<O8'", "False", "(3,)", U, "object dtype '<O8'");
	add_values("structured", "[('a', '<f4'), ('b', '<i8')]", "False", "(3,)", U,
		   "structured dtype");
	add_values("structured-nested", "[('a', [('x', '<f4')]), ('b', '<i8', (2, 3))]", "True",
		   "(3,)", U, "structured dtype");
	add_values("unicode", "'<U10'", "False", "(3,)", U, "dtype '<U10' is not supported");
	add_values("datetime", "'<M8[ns]'", "False", "(3,)", U, "dtype '<M8[ns]' is not supported");
	add_values("timedelta", "'<m8'", "False", "(3,)", U, "dtype '<m8' is not supported");
	add_values("bytes", "'|S5'", "False", "(3,)", U, "dtype '|S5'");
	add_values("void", "'|V16'", "False", "(3,)", U, "dtype '|V16'");
	add_values("float128", "'<f16'", "False", "(3,)", U, "dtype '<f16'");
	add_values("complex256", "'<c32'", "False", "(3,)", U, "dtype '<c32'");
	add_values("int3", "'<i3'", "False", "(3,)", U, "dtype '<i3'");
	add_values("float-long-size", "'<f0004'", "False", "(3,)", U, "dtype '<f0004'");
	add_values("bool-char", "'?'", "False", "(3,)", U, "dtype '?'");
	add_values("empty-descr", "''", "False", "(3,)", U, "dtype ''");
	add_values("order-only", "'<'", "False", "(3,)", U, "dtype '<'");
	add_values("rank-33", "'<f4'", "False",
		   "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
		   "1, 1, 1, 1, 1, 1, 1)",
		   U, "rank 33");
	/* A malformed header is a format error even when its dtype is unsupported. */
	add_dict("structured-missing-key", 1, "{'descr': [('a', '<f4')], 'shape': (3,)}", F,
		 "missing key 'fortran_order'");
	add_dict("object-bad-shape", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (-1,)}",
		 F, "negative dimension");
}

/* Header text quoted in a reason is escaped: ESC, a newline (kept in a string
 * by a backslash), bytes >= 0x80 and quotes never reach a terminal raw. */
static void add_escape_cases(void)
{
	char descr[300] = "'";

	add_values("descr-esc", "'\x1b[2J<f4'", "False", "(3,)", U,
		   "dtype '\\x1b[2J<f4' is not supported");
	add_values("descr-newline", "'<f4\\\n'", "False", "(3,)", U,
		   "dtype '<f4\\\\\\x0a' is not supported");
	add_values("descr-high-bytes", "'<f4\xc3\xa9\xff\x9b'", "False", "(3,)", U,
		   "dtype '<f4\\xc3\\xa9\\xff\\x9b' is not supported");
	add_values("descr-quote", "\"<f4'x\"", "False", "(3,)", U, "dtype '<f4\\'x'");
	add_values("object-esc", "'|O\x1b'", "False", "(3,)", U, "object dtype '|O\\x1b'");
	add_dict("key-esc", 1, "{'\x1b]0;title\x07': 1, 'descr': '<f4', }", F,
		 "unknown key '\\x1b]0;title\\x07'");
	add_values("bool-esc", "'<f4'", "\x1b[31mTrue", "(3,)", F,
		   "must be True or False, not '\\x1b[31mTrue'");
	add_values("dim-high-byte", "'<f4'", "False", "(\xff" "3,)", F,
		   "non-integer dimension '\\xff3'");
	add_values("dim-negative-esc", "'<f4'", "False", "(-\x1b\x7f,)", F,
		   "negative dimension '-\\x1b\\x7f'");
	add_dict("in-dict-esc", 1, "{'descr': '<f4' \x9b" "2J, }", F,
		 "expected ',' or '}' in dict, not '\\x9b2J'");
	add_dict("after-dict-esc", 1, GOOD " \x1b[0m", F, "unexpected '\\x1b[0m' after the dict");
	/* A long excerpt is cut at a whole escape, with "...", so the reason fits. */
	memset(descr + 1, 0x1b, 200);
	strcpy(descr + 201, "'");
	add_values("descr-long-esc", descr, "False", "(3,)", U,
		   "dtype '\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b..."
		   "' is not supported");
	add_values("bool-long", "'<f4'", "False_is_not_a_python_literal_at_all_and_goes_on_for_long",
		   "(3,)", F, "not 'False_is_not_a_python_literal_at_all_and_goes_on_for...'");
}

static void add_version_cases(void)
{
	/* numpy filters Python 2's 3L only in versions 1.0 and 2.0. */
	add_dict("long-dim-v3", 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,), }", F,
		 "non-integer dimension '3L'");
	add_dict("long-long-dim", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3LL,), }",
		 F, "non-integer dimension");
	add_dict("nul-in-header", 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
		 F, "NUL");
	cases[ncases - 1].bytes[12 + 20] = '\0';
}

/* Adds files whose header is valid but whose payload does not fill the file exactly. */
static void add_size_cases(void)
{
	struct bad_case *c;
	size_t hlen;

	c = new_case("payload-short", F, "payload is 48 bytes, file holds 47");
	hlen = put_header(c->bytes, CASE_CAP, 1, GOOD);
	c->len = hlen + 47;
	c = new_case("payload-long", F, "payload is 48 bytes, file holds 49");
	hlen = put_header(c->bytes, CASE_CAP, 1, GOOD);
	c->len = hlen + 49;
	c = new_case("payload-missing", F, "payload is 48 bytes, file holds 0");
	c->len = put_header(c->bytes, CASE_CAP, 3, GOOD);
	c = new_case("empty-array-with-payload", F, "payload is 0 bytes, file holds 1");
	hlen = put_header(c->bytes, CASE_CAP, 1,
			  "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0), }");
	c->len = hlen + 1;
}

/* Runs the loader's three checks on a file's bytes. Returns the first failure's
 * code (0 when all pass) with its reason in why. */
static int check_file(const unsigned char *bytes, size_t len, char *why, size_t why_len)
{
	struct ferry__npy_header h;
	int64_t hlen = ferry__npy_header_length(bytes, len < 12 ? len : 12, why, why_len);
	int rc;

	if (hlen < 0)
		return (int)hlen;
	rc = ferry__npy_parse(bytes, len, &h, why, why_len);
	if (rc < 0)
		return rc;
	T_EQ(h.data_offset, hlen);
	return ferry__npy_check_size(&h, len, why, why_len);
}

/* A reason is printable ASCII (header text quoted in it is escaped) and fits
 * the loader's 160-byte buffer (src/load_npy.c). */
static void expect_clean_reason(const struct bad_case *c, const char *why)
{
	for (size_t i = 0; why[i]; i++)
		if ((unsigned char)why[i] < 0x20 || (unsigned char)why[i] >= 0x7f)
			T_FAIL("%s: reason holds byte 0x%02x at %zu", c->name, (unsigned char)why[i], i);
	if (strlen(why) >= 159)
		T_FAIL("%s: reason of %zu bytes would be cut: \"%s\"", c->name, strlen(why), why);
}

static void expect_rejected(const struct bad_case *c, const unsigned char *bytes, size_t len)
{
	char why[256] = "(none)";
	int rc = check_file(bytes, len, why, sizeof(why));
	expect_clean_reason(c, why);
	if (rc != c->code)
		T_FAIL("%s: rc %d (%s), expected %d", c->name, rc, why, c->code);
	if (!strstr(why, c->reason))
		T_FAIL("%s: reason \"%s\" lacks \"%s\"", c->name, why, c->reason);
}

static void write_file(const char *path, const void *bytes, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(bytes, 1, len, f) != len || fclose(f) != 0)
		T_FAIL("cannot write %s", path);
}

/* Reads a whole file into a fresh buffer (free()); its size goes to len. */
static unsigned char *read_file(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *bytes;
	FILE *f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st) != 0)
		T_FAIL("cannot open %s", path);
	bytes = malloc((size_t)st.st_size + 1);
	T_ASSERT(bytes);
	*len = fread(bytes, 1, (size_t)st.st_size, f);
	T_EQ(*len, st.st_size);
	fclose(f);
	return bytes;
}

/* Every case as a file, read back and checked as a loader would. */
static void test_case_files(const char *dir)
{
	char path[512];
	size_t len;
	for (int i = 0; i < ncases; i++) {
		snprintf(path, sizeof(path), "%.400s/bad-%.63s.npy", dir, cases[i].name);
		write_file(path, cases[i].bytes, cases[i].len);
		unsigned char *bytes = read_file(path, &len);
		expect_rejected(&cases[i], bytes, len);
		free(bytes);
	}
}

/* Cutting a valid file anywhere inside its header gives "truncated"; anywhere in
 * its payload, a payload size error. */
static void test_truncation(int major)
{
	unsigned char b[256];
	char why[256];
	struct ferry__npy_header h;
	size_t hlen = put_header(b, sizeof(b), major, GOOD), total = hlen + 48;
	size_t prefix = major == 1 ? 10 : 12;

	memset(b + hlen, 0x5a, 48);
	for (size_t len = 0; len < hlen; len++) {
		int rc = ferry__npy_parse(b, len, &h, why, sizeof(why));
		if (rc != F || !strstr(why, "truncated"))
			T_FAIL("v%d cut at %zu: rc %d (%s)", major, len, rc, why);
		int64_t n = ferry__npy_header_length(b, len, why, sizeof(why));
		if (len < prefix)
			T_ASSERT(n == F && strstr(why, "truncated"));
		else
			T_EQ(n, hlen);
	}
	T_EQ(ferry__npy_parse(b, hlen, &h, why, sizeof(why)), 0);
	for (size_t len = hlen; len < total + 3; len++) {
		int rc = ferry__npy_check_size(&h, len, why, sizeof(why));
		T_EQ(rc, len == total ? 0 : F);
		T_ASSERT(rc == 0 || strstr(why, "payload is 48 bytes"));
	}
	T_EQ(ferry__npy_check_size(&h, hlen - 1, why, sizeof(why)), F);
	T_ASSERT(strstr(why, "shorter than its"));
}

/* A reason never overruns the buffer it is given, however small. */
static void test_short_reason_buffers(void)
{
	char why[8];
	struct ferry__npy_header h;
	for (size_t n = 0; n <= sizeof(why); n++) {
		memset(why, 'x', sizeof(why));
		T_EQ(ferry__npy_parse("\x93NUMPY\x09\x00\x00\x00", 10, &h, n ? why : NULL, n), F);
		if (n)
			T_EQ(strlen(why), n - 1);
		for (size_t i = n; i < sizeof(why); i++)
			T_EQ(why[i], 'x');
	}
}

/* Replays the fuzzer's committed corpus when the test runs from the top of the
 * tree: bad-* files are refused, good-* accepted, any other (a fixed crash) gets
 * one of the three answers. */
static void test_fuzz_corpus(const char *dir)
{
	char path[512], why[256];
	struct dirent *e;
	size_t len;
	int files = 0;
	DIR *d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unsigned char *bytes = read_file(path, &len);
		int rc = check_file(bytes, len, why, sizeof(why));
		if (!strncmp(e->d_name, "bad-", 4) && rc != F && rc != U)
			T_FAIL("%s: accepted (rc %d)", path, rc);
		if (!strncmp(e->d_name, "good-", 5) && rc != 0)
			T_FAIL("%s: rc %d: %s", path, rc, why);
		T_ASSERT(rc == 0 || rc == F || rc == U);
		free(bytes);
		files++;
	}
	closedir(d);
	printf("replayed %d files of %s\n", files, dir);
}

static void build_cases(void)
{
	add_prefix_cases();
	add_dict_cases();
	add_value_cases();
	add_unsupported_cases();
	add_version_cases();
	add_escape_cases();
	add_size_cases();
}

/* Writes valid seed files for the fuzzer next to the bad ones. */
static void write_good_seeds(const char *dir)
{
	static const struct { const char *name; enum ferry_dtype dtype; char order; int fortran;
			      int ndim; int64_t shape[3]; int major; } seeds[] = {
		{ "f4-3x4", FERRY_FLOAT32, '<', 0, 2, { 3, 4 }, 1 },
		{ "u1-scalar", FERRY_UINT8, '|', 0, 0, { 0 }, 1 },
		{ "be-f8-fortran", FERRY_FLOAT64, '>', 1, 3, { 2, 3, 2 }, 2 },
		{ "c8-v3", FERRY_COMPLEX64, '<', 0, 1, { 5 }, 3 },
		{ "b1-empty", FERRY_BOOL, '|', 0, 2, { 0, 7 }, 1 },
	};
	unsigned char b[1024];
	char path[512];
	for (size_t i = 0; i < FERRY__ARRAY_LEN(seeds); i++) {
		int hlen = ferry__npy_write_header(b, sizeof(b), seeds[i].dtype, seeds[i].order,
						   seeds[i].fortran, seeds[i].ndim,
						   seeds[i].shape, seeds[i].major);
		struct ferry__npy_header h;
		T_OK(hlen);
		T_EQ(ferry__npy_parse(b, (size_t)hlen, &h, NULL, 0), 0);
		T_ASSERT(hlen + h.data_size <= sizeof(b));
		t_fill_pattern(b + hlen, h.data_size, (uint32_t)i, 0);
		snprintf(path, sizeof(path), "%s/good-%s.npy", dir, seeds[i].name);
		write_file(path, b, (size_t)hlen + h.data_size);
	}
	/* An old 16-byte aligned header, as numpy before 1.14 wrote. */
	snprintf(path, sizeof(path), "%s/good-aligned16.npy", dir);
	memcpy(b, "\x93NUMPY\x01\x00\x46\x00" GOOD "          \n", 80);
	memset(b + 80, 0, 48);
	T_EQ(check_file(b, 128, NULL, 0), 0);
	write_file(path, b, 128);
}

int main(int argc, char **argv)
{
	build_cases();
	if (argc == 3 && !strcmp(argv[1], "--write-corpus")) {
		test_case_files(argv[2]);
		write_good_seeds(argv[2]);
		printf("wrote %d bad and 6 good files into %s\n", ncases, argv[2]);
		return T_EXIT_PASS;
	}
	char *dir = t_tmpdir();
	test_case_files(dir);
	write_good_seeds(dir);
	t_rmtree(dir);
	test_truncation(1);
	test_truncation(2);
	test_truncation(3);
	test_short_reason_buffers();
	test_fuzz_corpus("fuzz/corpus/npy");
	return T_EXIT_PASS;
}
