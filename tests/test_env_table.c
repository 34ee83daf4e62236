/*
 * The README's environment table is the settings table (context/settings.c,
 * the one place ferry reads the environment): the rows under "## Environment"
 * in README.md must be, in order, exactly the rows this program prints with
 * --print (paste them there after changing the table). FERRY_README names the
 * file (default README.md, the tests run from the repository root).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "helpers.h"

/* Writes the README row of t into buf. */
static void row_text(const struct ferry__setting_info *t, char *buf, size_t len)
{
	snprintf(buf, len, "| `%s` | %s | %s | %s |", t->name, t->values, t->fallback, t->about);
}

/* Reads the rows "| `..." of the "## Environment" section of path into rows
 * (at most cap, each malloc'ed). Returns how many. */
static size_t readme_rows(const char *path, char **rows, size_t cap)
{
	char line[2048];
	size_t n = 0;
	int inside = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		T_FAIL("%s: cannot open it", path);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "## ", 3))
			inside = !strcmp(line, "## Environment");
		else if (inside && !strncmp(line, "| `", 3) && n < cap)
			rows[n++] = strdup(line);
	}
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	size_t n, got;
	const struct ferry__setting_info *t = ferry__settings_table(&n);
	const char *path = getenv("FERRY_README") ? getenv("FERRY_README") : "README.md";
	char want[2048], *rows[64];
	int bad = 0;

	if (argc > 1 && !strcmp(argv[1], "--print")) {
		for (size_t i = 0; i < n; i++) {
			row_text(&t[i], want, sizeof(want));
			puts(want);
		}
		return 0;
	}
	got = readme_rows(path, rows, 64);
	for (size_t i = 0; i < n || i < got; i++) {
		if (i < n)
			row_text(&t[i], want, sizeof(want));
		if (i >= n || i >= got || strcmp(rows[i], want)) {
			printf("FAIL: %s, environment row %zu:\n  has:  %s\n  want: %s\n", path, i + 1,
			       i < got ? rows[i] : "(none)", i < n ? want : "(none)");
			bad = 1;
		}
	}
	for (size_t i = 0; i < got; i++)
		free(rows[i]);
	if (bad) {
		printf("(build/tests/test_env_table --print gives the rows)\n");
		return T_EXIT_FAIL;
	}
	printf("ok: the README's %zu environment rows are the settings table\n", n);
	return T_EXIT_PASS;
}
