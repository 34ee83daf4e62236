/*
 * What the .npz tests share: tests/npz_cases.py run by the interpreter
 * run.sh names ($PYTHON; the test skips without numpy), and its manifest
 * read into cases; in a build without libdeflate, the check that a deflated
 * case is refused, and the skip that says how many were. Header-only, as
 * test_reader_util.h is.
 */
#ifndef FERRY_TEST_NPZ_UTIL_H
#define FERRY_TEST_NPZ_UTIL_H

#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/base.h"
#include "context/context.h"
#include "test_reader_util.h"

#define TN_MAX_CASES 256

struct tn_case {
	int ok;
	int deflated;              /* loading it inflates (column Z) */
	char archive[1024], key[128];
	char expected[1100];       /* ok: the bytes np.load gives, native C order */
	char dtype[32];
	int ndim, fortran;
	int64_t shape[FERRY_MAX_DIMS];
	int code;                  /* err: the negative code */
	char text[256];            /* err: what the message says */
};

static inline int tn_code(const char *name)
{
	if (!strcmp(name, "EFORMAT"))
		return -FERRY_EFORMAT;
	if (!strcmp(name, "EUNSUPPORTED"))
		return -FERRY_EUNSUPPORTED;
	if (!strcmp(name, "ENOENT"))
		return -ENOENT;
	T_FAIL("unknown code %s in the manifest", name);
}

static inline void tn_parse_shape(struct tn_case *c, const char *text)
{
	char *end;
	for (int d = 0; d < c->ndim; d++, text = end + (*end == ',')) {
		c->shape[d] = strtoll(text, &end, 10);
		T_ASSERT(end != text);
	}
}

static inline void tn_parse_line(char *line, struct tn_case *c)
{
	char *f[10] = { 0 };
	int n = 0;
	for (char *save, *tok = strtok_r(line, "\t\n", &save); tok && n < 10;
	     tok = strtok_r(NULL, "\t\n", &save))
		f[n++] = tok;
	T_ASSERT(n >= 4);
	memset(c, 0, sizeof(*c));
	c->ok = !strcmp(f[0], "ok");
	snprintf(c->archive, sizeof(c->archive), "%s", f[1]);
	snprintf(c->key, sizeof(c->key), "%s", f[2]);
	if (!c->ok) {
		T_ASSERT(n >= 5);
		c->code = tn_code(f[3]);
		c->deflated = !strcmp(f[4], "deflated");
		snprintf(c->text, sizeof(c->text), "%s", n > 5 ? f[5] : "");
		return;
	}
	T_ASSERT(n == 9);
	c->deflated = !strcmp(f[8], "deflated");
	snprintf(c->expected, sizeof(c->expected), "%s", f[3]);
	snprintf(c->dtype, sizeof(c->dtype), "%s", f[4]);
	c->ndim = atoi(f[5]);
	tn_parse_shape(c, f[6]);
	c->fortran = atoi(f[7]);
}

/* Writes the archives into a fresh directory and reads the manifest. Returns
 * the number of cases; *dir gets the directory. */
static inline unsigned tn_make_cases(struct tn_case *cases, char **dir)
{
	const char *py = getenv("PYTHON") ? getenv("PYTHON") : "python3";
	char cmd[4096], line[4096];
	*dir = t_tmpdir();
	snprintf(cmd, sizeof(cmd), "'%s' tests/npz_cases.py '%s'", py, *dir);
	int rc = system(cmd);
	if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 77)
		T_SKIP("numpy is not installed for %s", py);
	if (rc != 0)
		T_FAIL("%s failed (%d)", cmd, rc);
	snprintf(cmd, sizeof(cmd), "%s/manifest.tsv", *dir);
	FILE *m = fopen(cmd, "r");
	T_ASSERT(m);
	unsigned n = 0;
	while (n < TN_MAX_CASES && fgets(line, sizeof(line), m))
		tn_parse_line(line, &cases[n++]);
	fclose(m);
	T_ASSERT(n > 0);
	return n;
}

/* Whether c is checked only for its refusal: a deflated case in a build
 * without libdeflate. */
static inline int tn_refused(const struct tn_case *c)
{
	return c->deflated && !ferry__inflate_available();
}

/* A deflated member of archive refused by a build without libdeflate: rc and
 * the message naming the archive, the member and libdeflate. */
static inline void tn_check_refusal(int rc, const char *archive, const char *key, const char *how)
{
	const char *msg = ferry_last_error();
	char member[200];
	snprintf(member, sizeof(member), "member '%s'", key);
	if (rc != -FERRY_EUNSUPPORTED || !strstr(msg, archive) || !strstr(msg, member) ||
	    !strstr(msg, "libdeflate"))
		T_FAIL("%s[%s] by %s without libdeflate: %d (%s), want -FERRY_EUNSUPPORTED naming "
		       "the file, the member and libdeflate", archive, key, how, rc, msg);
}

/* Ends a test that passed: 0, or 77 with a skip line where refused cases (of
 * a build without libdeflate) were checked only for their refusal. */
static inline int tn_exit(unsigned refused)
{
	if (!refused)
		return T_EXIT_PASS;
	printf("skip: this build has no libdeflate: %u deflated cases checked only for their "
	       "refusal\n", refused);
	return T_EXIT_SKIP;
}

/*
 * Runs tests/npz_small.py: n small archives in dir/stacked and dir/ragged,
 * member x of each (and its expected bytes, fNNN.x.bin), the ragged set's
 * largest members big_rows rows; mode "stored" (np.savez) or "" (deflated).
 * Skips the test where the interpreter has no numpy.
 */
static inline void tn_write_small(const char *dir, int n, int big_rows, const char *mode)
{
	const char *py = getenv("PYTHON") ? getenv("PYTHON") : "python3";
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "'%s' tests/npz_small.py '%s' %d %d %s", py, dir, n, big_rows,
		 mode);
	int rc = system(cmd);
	if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 77)
		T_SKIP("numpy is not installed for %s", py);
	T_EQ(rc, 0);
}

/* The expected bytes of c (malloc'd), and their count. */
static inline void *tn_expected(const struct tn_case *c, uint64_t *nbytes)
{
	FILE *f = fopen(c->expected, "rb");
	struct stat st;
	T_ASSERT(f && stat(c->expected, &st) == 0);
	void *buf = malloc((size_t)st.st_size + 1);
	T_ASSERT(buf);
	T_EQ(fread(buf, 1, (size_t)st.st_size, f), st.st_size);
	fclose(f);
	*nbytes = (uint64_t)st.st_size;
	return buf;
}

/* The expected bytes of member x of archives 0..n-1 of a tn_write_small set
 * (dir: its stacked or ragged directory), malloc'd. */
static inline void tn_small_expected(const char *dir, int n, unsigned char **want,
				     uint64_t *nbytes)
{
	for (int i = 0; i < n; i++) {
		struct tn_case c;
		snprintf(c.expected, sizeof(c.expected), "%s/f%03d.x.bin", dir, i);
		want[i] = tn_expected(&c, &nbytes[i]);
	}
}

#endif
