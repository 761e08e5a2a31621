/* test_data.c: a command-line window onto runtime/rt_data.c, rt_inflate.c
 * and rt_svg.c for tests/test_train_prog.py, which builds it plain and under
 * ASan/UBSan and compares its results with Python's gzip and numpy.
 *
 *   test_data read FILE OUT     prints "dtype RANK D0 D1 ..." and writes the
 *                               elements (host order) to OUT; on failure prints
 *                               "error STATUS MESSAGE" and exits 1
 *   test_data gunzip FILE OUT   the decompressed bytes of FILE to OUT
 *   test_data svg OUT           a plot with awkward names and values
 */
#include "cellrt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_out(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
		printf("error cannot write %s\n", path);
		return 2;
	}
	return 0;
}

static int slurp(const char *path, unsigned char **buf, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t cap = 1 << 16;
	*buf = malloc(cap);
	*n = 0;
	size_t got;
	while (*buf && (got = fread(*buf + *n, 1, cap - *n, f)) > 0) {
		*n += got;
		if (*n == cap)
			*buf = realloc(*buf, cap *= 2);
	}
	fclose(f);
	return *buf ? 0 : -1;
}

int main(int argc, char **argv)
{
	char err[600];
	if (argc == 4 && !strcmp(argv[1], "read")) {
		rt_array a;
		int st = rt_array_read(&a, argv[2], err, sizeof err);
		if (st != RT_OK) {
			printf("error %d %s\n", st, err);
			return 1;
		}
		printf("%s %d", rt_dtype_name(a.dtype), a.rank);
		for (int i = 0; i < a.rank; i++)
			printf(" %lld", (long long)a.dims[i]);
		printf("\n");
		int rc = write_out(argv[3], a.data, a.nbytes);
		rt_array_free(&a);
		return rc;
	}
	if (argc == 4 && !strcmp(argv[1], "gunzip")) {
		unsigned char *in;
		size_t n, outn;
		void *out;
		if (slurp(argv[2], &in, &n)) {
			printf("error cannot read %s\n", argv[2]);
			return 2;
		}
		int st = rt_gunzip(in, n, (size_t)1 << 32, &out, &outn, err, sizeof err);
		free(in);
		if (st != RT_OK) {
			printf("error %d %s\n", st, err);
			return 1;
		}
		int rc = write_out(argv[3], out, outn);
		free(out);
		printf("%zu bytes\n", outn);
		return rc;
	}
	if (argc == 3 && !strcmp(argv[1], "svg")) {
		double x[5] = {1, 2, 3, 4, 5}, y1[5] = {0.5, NAN, 0.25, -1, 1e-7}, y2[5] = {3, 2, INFINITY, 1, 0.5};
		rt_series s[3] = {{"a <b> & \"c\"", 5, x, y1}, {"\x01" "ctl", 5, x, y2}, {"empty", 0, NULL, NULL}};
		int st = rt_svg_plot(argv[2], &(rt_plot){"title <&>", "x & y", "log <y>", 1}, 3, s);
		if (st != RT_OK) {
			printf("error %d %s\n", st, rt_status_str(st));
			return 1;
		}
		return 0;
	}
	fprintf(stderr, "usage: test_data read|gunzip FILE OUT | svg OUT\n");
	return 2;
}
