/* rt_data.c: reading the data sets of the training program (cellrt.h,
 * "training data"): IDX files (LeCun's MNIST format, which Fashion-MNIST
 * uses) and NumPy .npy files, either of them optionally gzip-compressed
 * (rt_inflate.c).  The format is chosen by the first bytes, never by the
 * file name.
 *
 *   IDX:  u8 0, u8 0, u8 type (0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32,
 *         0x0D f32, 0x0E f64), u8 rank; rank big-endian u32 dims; the data,
 *         big-endian, row-major.
 *   .npy: "\x93NUMPY", u8 major (1, 2 or 3), u8 minor, header length (u16
 *         little-endian for version 1, u32 otherwise), a Python dict literal
 *         {'descr': '<f4', 'fortran_order': False, 'shape': (N, T, I), }
 *         padded with spaces and a newline; the data.
 *
 * Files come from outside: every field is checked and sizes are computed
 * with overflow checks before anything is read; the data must fill the rest
 * of the file exactly.  An error leaves a sentence in the caller's buffer,
 * and rt_array_read puts the file name in front of it.
 */
#define _POSIX_C_SOURCE 200809L

#include "cellrt.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deflate cannot expand more than 1032:1, which bounds the output of a
 * gzipped file by its size (no "zip bomb" beyond that). */
#define INFLATE_RATIO 1032

static int fail(char *err, size_t errlen, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int status, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return status;
}

static int host_little(void)
{
	const uint16_t one = 1;
	unsigned char b;
	memcpy(&b, &one, 1);
	return b == 1;
}

static void byteswap(unsigned char *p, size_t count, size_t esize)
{
	if (esize < 2)
		return;
	for (size_t i = 0; i < count; i++, p += esize)
		for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
			unsigned char t = p[a];
			p[a] = p[b];
			p[b] = t;
		}
}

const char *rt_dtype_name(int dtype)
{
	switch (dtype) {
	case 1: return "float32";
	case 2: return "uint8";
	case 3: return "int8";
	case 5: return "int16";
	case 6: return "int32";
	case 7: return "int64";
	case 11: return "float64";
	default: return "unsupported dtype";
	}
}

/* "[60000, 28, 28]" into buf */
static const char *dims_str(char *buf, size_t n, int rank, const int64_t *dims)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* Fills a's shape and checks that the data (from `off` to `size`) are
 * exactly numel * esize bytes; copies them out in host order. */
static int take_data(rt_array *a, const unsigned char *m, size_t size, size_t off, int swap,
		     char *err, size_t errlen)
{
	size_t esize = rt_dtype_size(a->dtype), n = esize;
	char ds[200];
	for (int i = 0; i < a->rank; i++) {
		if (a->dims[i] < 0 || (a->dims[i] > 0 && n > SIZE_MAX / (uint64_t)a->dims[i]))
			return fail(err, errlen, RT_ERR_FORMAT, "the shape %s is too large",
				    dims_str(ds, sizeof ds, a->rank, a->dims));
		n *= (size_t)a->dims[i];
	}
	size_t have = size - off;
	if (have != n)
		return fail(err, errlen, have < n ? RT_ERR_TRUNCATED : RT_ERR_FORMAT,
			    "the header says %s %s (%zu bytes of data), the file has %zu bytes after the "
			    "header (%s)", rt_dtype_name(a->dtype), dims_str(ds, sizeof ds, a->rank, a->dims),
			    n, have, have < n ? "truncated" : "trailing garbage");
	a->data = malloc(n ? n : 1);
	if (!a->data)
		return fail(err, errlen, RT_ERR_NOMEM, "out of memory for %zu bytes", n);
	memcpy(a->data, m + off, n);
	a->nbytes = n;
	if (swap)
		byteswap(a->data, n / esize, esize);
	return RT_OK;
}

/* ---- IDX ---- */

static int parse_idx(rt_array *a, const unsigned char *m, size_t size, char *err, size_t errlen)
{
	static const struct { int code, dtype; } types[] = {
		{0x08, 2}, {0x09, 3}, {0x0B, 5}, {0x0C, 6}, {0x0D, 1}, {0x0E, 11},
	};
	if (size < 4)
		return fail(err, errlen, RT_ERR_TRUNCATED, "IDX header cut short (%zu bytes)", size);
	int dtype = 0;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (types[i].code == m[2])
			dtype = types[i].dtype;
	if (!dtype)
		return fail(err, errlen, RT_ERR_FORMAT, "IDX element type 0x%02x is not one of 08 09 0B 0C 0D 0E", m[2]);
	if (m[3] > RT_TF_MAXRANK)
		return fail(err, errlen, RT_ERR_FORMAT, "IDX rank %d is above %d", m[3], RT_TF_MAXRANK);
	a->dtype = dtype;
	a->rank = m[3];
	size_t off = 4 + 4 * (size_t)a->rank;
	if (size < off)
		return fail(err, errlen, RT_ERR_TRUNCATED, "IDX header cut short: %d dims need %zu bytes, "
			    "the file has %zu", a->rank, off, size);
	for (int i = 0; i < a->rank; i++) {
		const unsigned char *p = m + 4 + 4 * i;
		a->dims[i] = (int64_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
	}
	return take_data(a, m, size, off, host_little(), err, errlen);
}

/* ---- .npy ---- */

typedef struct lex {
	const char *p, *end;
} lex;

static void skip_ws(lex *L)
{
	while (L->p < L->end && (*L->p == ' ' || *L->p == '\t' || *L->p == '\n' || *L->p == '\r'))
		L->p++;
}

static int eat(lex *L, char c)
{
	skip_ws(L);
	if (L->p < L->end && *L->p == c) {
		L->p++;
		return 1;
	}
	return 0;
}

/* a quoted string into buf[n] */
static int str_lit(lex *L, char *buf, size_t n)
{
	skip_ws(L);
	if (L->p >= L->end || (*L->p != '\'' && *L->p != '"'))
		return 0;
	char q = *L->p++;
	size_t k = 0;
	while (L->p < L->end && *L->p != q) {
		if (k + 1 >= n)
			return 0;
		buf[k++] = *L->p++;
	}
	if (L->p >= L->end)
		return 0;
	L->p++;
	buf[k] = 0;
	return 1;
}

static int word(lex *L, const char *w)
{
	skip_ws(L);
	size_t n = strlen(w);
	if ((size_t)(L->end - L->p) >= n && !strncmp(L->p, w, n)) {
		L->p += n;
		return 1;
	}
	return 0;
}

static int npy_descr(const char *d, int *dtype, int *swap)
{
	static const struct { const char *t; int dtype; } types[] = {
		{"f4", 1}, {"f8", 11}, {"i8", 7}, {"i4", 6}, {"i2", 5}, {"i1", 3}, {"u1", 2},
	};
	char order = d[0];
	if (order != '<' && order != '>' && order != '|' && order != '=')
		return 0;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (!strcmp(d + 1, types[i].t)) {
			*dtype = types[i].dtype;
			int big = order == '>' || (order == '=' && !host_little());
			*swap = rt_dtype_size(*dtype) > 1 && big == host_little();
			return 1;
		}
	return 0;
}

static int parse_npy(rt_array *a, const unsigned char *m, size_t size, char *err, size_t errlen)
{
	if (size < 10)
		return fail(err, errlen, RT_ERR_TRUNCATED, ".npy header cut short (%zu bytes)", size);
	int major = m[6];
	size_t hl, off;
	if (major == 1) {
		hl = (size_t)m[8] | (size_t)m[9] << 8;
		off = 10;
	} else if (major == 2 || major == 3) {
		if (size < 12)
			return fail(err, errlen, RT_ERR_TRUNCATED, ".npy header cut short (%zu bytes)", size);
		hl = (size_t)m[8] | (size_t)m[9] << 8 | (size_t)m[10] << 16 | (size_t)m[11] << 24;
		off = 12;
	} else {
		return fail(err, errlen, RT_ERR_FORMAT, ".npy format version %d.%d is not 1, 2 or 3", major, m[7]);
	}
	if (hl > size - off)
		return fail(err, errlen, RT_ERR_TRUNCATED, ".npy header of %zu bytes runs past the end of the "
			    "file (%zu bytes)", hl, size);
	lex L = {(const char *)m + off, (const char *)m + off + hl};
	char key[32], descr[32] = "";
	int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
	if (!eat(&L, '{'))
		return fail(err, errlen, RT_ERR_FORMAT, ".npy header is not a dict literal");
	while (!eat(&L, '}')) {
		if (!str_lit(&L, key, sizeof key) || !eat(&L, ':'))
			return fail(err, errlen, RT_ERR_FORMAT, ".npy header: malformed dict near offset %zu",
				    (size_t)(L.p - (const char *)m));
		if (!strcmp(key, "descr")) {
			if (!str_lit(&L, descr, sizeof descr))
				return fail(err, errlen, RT_ERR_FORMAT, ".npy header: 'descr' is not a string "
					    "(structured dtypes are not supported)");
			have_descr = 1;
		} else if (!strcmp(key, "fortran_order")) {
			if (word(&L, "True"))
				fortran = 1;
			else if (!word(&L, "False"))
				return fail(err, errlen, RT_ERR_FORMAT, ".npy header: 'fortran_order' is not True or False");
			have_order = 1;
		} else if (!strcmp(key, "shape")) {
			if (!eat(&L, '('))
				return fail(err, errlen, RT_ERR_FORMAT, ".npy header: 'shape' is not a tuple");
			a->rank = 0;
			while (!eat(&L, ')')) {
				skip_ws(&L);
				if (a->rank == RT_TF_MAXRANK)
					return fail(err, errlen, RT_ERR_FORMAT, ".npy shape has more than %d dims",
						    RT_TF_MAXRANK);
				int64_t v = 0;
				int digits = 0;
				while (L.p < L.end && isdigit((unsigned char)*L.p)) {
					if (v > (INT64_MAX - 9) / 10)
						return fail(err, errlen, RT_ERR_FORMAT, ".npy shape: a dim is too large");
					v = v * 10 + (*L.p++ - '0');
					digits++;
				}
				if (!digits)
					return fail(err, errlen, RT_ERR_FORMAT, ".npy header: 'shape' holds something other "
						    "than non-negative integers");
				skip_ws(&L);
				if (L.p < L.end && *L.p == 'L')   /* Python 2 longs */
					L.p++;
				a->dims[a->rank++] = v;
				if (!eat(&L, ',') && !(skip_ws(&L), L.p < L.end && *L.p == ')'))
					return fail(err, errlen, RT_ERR_FORMAT, ".npy header: malformed 'shape' tuple");
			}
			have_shape = 1;
		} else {
			return fail(err, errlen, RT_ERR_FORMAT, ".npy header: unknown key '%s'", key);
		}
		if (!eat(&L, ',')) {
			if (!eat(&L, '}'))
				return fail(err, errlen, RT_ERR_FORMAT, ".npy header: malformed dict (',' or '}' expected)");
			break;
		}
	}
	if (!have_descr || !have_order || !have_shape)
		return fail(err, errlen, RT_ERR_FORMAT, ".npy header lacks '%s'",
			    !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
	int swap = 0;
	if (!npy_descr(descr, &a->dtype, &swap))
		return fail(err, errlen, RT_ERR_FORMAT, ".npy dtype '%s' is not supported (float32, float64, "
			    "int64, int32, int16, int8, uint8)", descr);
	if (fortran && a->rank > 1)
		return fail(err, errlen, RT_ERR_FORMAT, ".npy array is in Fortran order; save it C-ordered "
			    "(numpy.ascontiguousarray)");
	return take_data(a, m, size, off + hl, swap, err, errlen);
}

/* ---- entry points ---- */

static int parse_any(rt_array *a, const unsigned char *m, size_t size, int depth, char *err, size_t errlen)
{
	memset(a, 0, sizeof *a);
	if (size >= 2 && m[0] == 0x1f && m[1] == 0x8b && depth == 0) {
		void *raw;
		size_t n;
		size_t cap = size > SIZE_MAX / INFLATE_RATIO ? SIZE_MAX : size * INFLATE_RATIO + 1024;
		char why[160];
		int st = rt_gunzip(m, size, cap, &raw, &n, why, sizeof why);
		if (st != RT_OK)
			return fail(err, errlen, st, "gzip: %s", why);
		st = parse_any(a, raw, n, 1, err, errlen);
		free(raw);
		return st;
	}
	if (size >= 6 && !memcmp(m, "\x93NUMPY", 6))
		return parse_npy(a, m, size, err, errlen);
	if (size >= 3 && m[0] == 0 && m[1] == 0)
		return parse_idx(a, m, size, err, errlen);
	return fail(err, errlen, size < 4 ? RT_ERR_TRUNCATED : RT_ERR_FORMAT,
		    "neither an IDX file, a .npy file nor a gzip-compressed one of them (%zu bytes)", size);
}

int rt_array_parse(rt_array *a, const void *mem, size_t size, char *err, size_t errlen)
{
	if (!a || (!mem && size))
		return RT_ERR_ARG;
	int st = parse_any(a, mem ? mem : "", size, 0, err, errlen);
	if (st != RT_OK)
		rt_array_free(a);
	return st;
}

int rt_array_read(rt_array *a, const char *path, char *err, size_t errlen)
{
	if (!a || !path)
		return RT_ERR_ARG;
	memset(a, 0, sizeof *a);
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errlen, RT_ERR_IO, "%s: %s", path, strerror(errno));
	unsigned char *buf = NULL;
	size_t n = 0, cap = 0;
	int st = RT_OK;
	for (;;) {
		if (n == cap) {
			size_t ncap = cap ? (cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2) : 1 << 20;
			unsigned char *b = ncap > cap ? realloc(buf, ncap) : NULL;
			if (!b) {
				st = fail(err, errlen, RT_ERR_NOMEM, "%s: out of memory", path);
				break;
			}
			buf = b;
			cap = ncap;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f))
				st = fail(err, errlen, RT_ERR_IO, "%s: read error", path);
			break;
		}
	}
	fclose(f);
	if (st == RT_OK) {
		char why[400];
		st = rt_array_parse(a, buf, n, why, sizeof why);
		if (st != RT_OK)
			fail(err, errlen, st, "%s: %s", path, why);
	}
	free(buf);
	return st;
}

void rt_array_free(rt_array *a)
{
	if (!a)
		return;
	free(a->data);
	memset(a, 0, sizeof *a);
}

int64_t rt_array_numel(const rt_array *a)
{
	int64_t n = 1;
	for (int i = 0; i < a->rank; i++)
		n *= a->dims[i];
	return n;
}

/* element i as double / as int64 (the value must be integral) */
static double get_f(const rt_array *a, size_t i)
{
	const unsigned char *p = (const unsigned char *)a->data + i * rt_dtype_size(a->dtype);
	switch (a->dtype) {
	case 1: { float v; memcpy(&v, p, 4); return v; }
	case 11: { double v; memcpy(&v, p, 8); return v; }
	case 2: return *p;
	case 3: return (signed char)*p;
	case 5: { int16_t v; memcpy(&v, p, 2); return v; }
	case 6: { int32_t v; memcpy(&v, p, 4); return v; }
	case 7: { int64_t v; memcpy(&v, p, 8); return (double)v; }
	}
	return 0;
}

static int convert(rt_array *a, int to, char *err, size_t errlen)
{
	if (a->dtype == to)
		return RT_OK;
	size_t n = a->nbytes / rt_dtype_size(a->dtype), es = rt_dtype_size(to);
	void *d = malloc(n ? n * es : 1);
	if (!d)
		return fail(err, errlen, RT_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (to == 1) {
			float v = (float)get_f(a, i);
			memcpy((char *)d + 4 * i, &v, 4);
		} else {
			int64_t v;
			if (a->dtype == 7)
				memcpy(&v, (const char *)a->data + 8 * i, 8);
			else {
				double x = get_f(a, i);
				if (!(x >= -9.2e18 && x <= 9.2e18) || x != (double)(int64_t)x) {
					free(d);
					return fail(err, errlen, RT_ERR_FORMAT, "element %zu (%g) is not an integer", i, x);
				}
				v = (int64_t)x;
			}
			memcpy((char *)d + 8 * i, &v, 8);
		}
	}
	free(a->data);
	a->data = d;
	a->dtype = to;
	a->nbytes = n * es;
	return RT_OK;
}

int rt_array_to_f32(rt_array *a, char *err, size_t errlen)
{
	return a ? convert(a, 1, err, errlen) : RT_ERR_ARG;
}

int rt_array_to_i64(rt_array *a, char *err, size_t errlen)
{
	return a ? convert(a, 7, err, errlen) : RT_ERR_ARG;
}
