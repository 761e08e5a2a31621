/* testdata.c: reading golden data sets (testdata.h): ONNX backend-test
 * directories of TensorProto files, or the same layout with .npy files.
 *
 * The .npy reader takes what numpy.save writes for plain arrays: magic
 * "\x93NUMPY", version 1.0 (u16 header length) or 2.0/3.0 (u32), then a
 * Python dict literal with 'descr', 'fortran_order' and 'shape', padded
 * with spaces, then the data in C order.  Anything else (big-endian data,
 * Fortran order, object or string arrays, a size that disagrees with the
 * shape) is refused with the reason.
 */
#define _POSIX_C_SOURCE 200809L

#include "testdata.h"
#include "onnx.h"
#include "util.h"
#include "cellrt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { TD_MAX_FILES = 1024, NPY_LIMIT_MB = 2048 };

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "input_12.pb" -> 12 for prefix "input_" and suffix ".pb"; -1 otherwise. */
static int file_index(const char *name, const char *prefix, const char *suffix)
{
	size_t n = strlen(prefix);
	if (strncmp(name, prefix, n) != 0)
		return -1;
	const char *p = name + n;
	if (!(*p >= '0' && *p <= '9') || (*p == '0' && p[1] >= '0' && p[1] <= '9'))
		return -1;
	int k = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		if ((k = k * 10 + (*p - '0')) >= TD_MAX_FILES)
			return -1;
	return strcmp(p, suffix) == 0 ? k : -1;
}

/* Counts the data files of dir: 0 and *nin = *nout = 0 when it has none;
 * -1 after a message for gaps or a k given both as .pb and .npy. */
static int scan(const char *cmd, const char *dir, int *nin, int *nout)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "cellc %s: cannot read data directory '%s': %s\n", cmd, dir, strerror(errno));
		return -1;
	}
	static const char *const pre[2] = {"input_", "output_"}, *const suf[2] = {".pb", ".npy"};
	int cnt[2] = {0, 0}, max[2] = {-1, -1};
	struct dirent *e;
	while ((e = readdir(d)))
		for (int o = 0; o < 2; o++)
			for (int f = 0; f < 2; f++) {
				int k = file_index(e->d_name, pre[o], suf[f]);
				if (k >= 0) {
					cnt[o]++;
					if (k > max[o])
						max[o] = k;
				}
			}
	closedir(d);
	for (int o = 0; o < 2; o++)
		if (max[o] + 1 != cnt[o]) {
			fprintf(stderr, "cellc %s: %s: %sN files are not numbered 0..%d once each (.pb or .npy)\n",
				cmd, dir, pre[o], max[o]);
			return -1;
		}
	*nin = cnt[0];
	*nout = cnt[1];
	return 0;
}

static int add_set(const char *cmd, const char *dir, int nin, int nout, td_list *L)
{
	if (L->n == TD_MAX_SETS) {
		fprintf(stderr, "cellc %s: more than %d data sets\n", cmd, TD_MAX_SETS);
		return -1;
	}
	if (L->n == L->cap) {
		L->cap = L->cap ? 2 * L->cap : 8;
		L->sets = realloc(L->sets, (size_t)L->cap * sizeof *L->sets);
		if (!L->sets)
			arena_oom(NULL, (size_t)L->cap * sizeof *L->sets, "reading test data");
	}
	L->sets[L->n++] = (td_set){.dir = dir, .nin = nin, .nout = nout};
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int td_collect(arena *A, const char *cmd, const char *arg, td_list *L)
{
	if (!is_dir(arg)) {
		fprintf(stderr, "cellc %s: data '%s' is not a directory\n", cmd, arg);
		return -1;
	}
	size_t len = strlen(arg);
	while (len > 1 && arg[len - 1] == '/')
		len--;
	const char *dir = arena_strndup(A, arg, len);
	int nin, nout;
	if (scan(cmd, dir, &nin, &nout))
		return -1;
	if (nin || nout)
		return add_set(cmd, dir, nin, nout, L);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	char *subs[TD_MAX_SETS];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "test_data_set_", 14) && n < TD_MAX_SETS) {
			char *p = arena_printf(A, "%s/%s", dir, e->d_name);
			if (is_dir(p))
				subs[n++] = p;
		}
	closedir(d);
	if (n == 0) {
		fprintf(stderr, "cellc %s: '%s' holds neither input_N/output_N files (.pb or .npy) nor "
				"test_data_set_* directories\n", cmd, dir);
		return -1;
	}
	qsort(subs, (size_t)n, sizeof *subs, cmp_str);
	for (int i = 0; i < n; i++) {
		if (scan(cmd, subs[i], &nin, &nout))
			return -1;
		if (add_set(cmd, subs[i], nin, nout, L))
			return -1;
	}
	return 0;
}

/* ---- .npy ---- */

/* The value text after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key)
{
	char pat[32];
	snprintf(pat, sizeof pat, "'%s'", key);
	const char *p = strstr(h, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	if (*p != ':')
		return NULL;
	p++;
	while (*p == ' ')
		p++;
	return p;
}

static ir_dtype npy_dtype(const char *d, size_t n)
{
	static const struct { const char *descr; ir_dtype dt; } map[] = {
		{"<f4", DT_F32}, {"<f8", DT_F64}, {"|i1", DT_I8}, {"<i2", DT_I16}, {"<i4", DT_I32},
		{"<i8", DT_I64}, {"|u1", DT_U8}, {"<u2", DT_U16}, {"<u4", DT_U32}, {"<u8", DT_U64},
		{"|b1", DT_BOOL}, {"<f2", DT_F16},
	};
	for (size_t i = 0; i < COUNTOF(map); i++)
		if (n == 3 && !strncmp(d, map[i].descr, 3))
			return map[i].dt;
	return DT_UNDEF;
}

static const char *npy_parse(ir_graph *g, const unsigned char *b, size_t len, const char *path,
			     ir_value **out)
{
	if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
		return "not a .npy file (no \\x93NUMPY magic)";
	int major = b[6];
	size_t hl, off;
	if (major == 1) {
		hl = (size_t)b[8] | (size_t)b[9] << 8;
		off = 10;
	} else if (major == 2 || major == 3) {
		if (len < 12)
			return "truncated header";
		hl = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
		off = 12;
	} else {
		return "unknown .npy format version";
	}
	if (hl > len - off)
		return "truncated header";
	char *h = arena_strndup(g->A, (const char *)b + off, hl);
	off += hl;
	const char *d = dict_value(h, "descr"), *fo = dict_value(h, "fortran_order"),
		   *sh = dict_value(h, "shape");
	if (!d || !fo || !sh || *d != '\'' || *sh != '(')
		return "header lacks descr, fortran_order or shape";
	const char *de = strchr(d + 1, '\'');
	ir_dtype dt = de ? npy_dtype(d + 1, (size_t)(de - d - 1)) : DT_UNDEF;
	if (dt == DT_UNDEF)
		return "dtype not supported (little-endian f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1 only)";
	if (strncmp(fo, "False", 5) != 0)
		return "Fortran-order arrays are not supported (save a C-order copy)";
	ir_shape s = {.rank = 0};
	const char *p = sh + 1;
	for (;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ')')
			break;
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || v < 0)
			return "malformed shape";
		if (s.rank == IR_MAX_RANK)
			return "rank above 8";
		s.d[s.rank++] = ir_dim_const(v);
		p = end;
	}
	int64_t n = ir_shape_const_numel(&s);
	size_t es = dt == DT_F16 ? 2 : ir_dtype_size(dt);
	if (n < 0 || (uint64_t)n > (len - off) / es || (size_t)n * es != len - off)
		return "data size disagrees with the shape";
	const char *slash = strrchr(path, '/');
	if (dt == DT_F16) {
		*out = ir_const_new(g, slash ? slash + 1 : path, DT_U16, &s, b + off);
		*out = td_widen(g, *out, DT_F16);
		return NULL;
	}
	*out = ir_const_new(g, slash ? slash + 1 : path, dt, &s, b + off);
	return NULL;
}

ir_value *td_widen(ir_graph *g, ir_value *v, ir_dtype narrow)
{
	if (!v || !v->data || v->dtype != DT_U16 || (narrow != DT_F16 && narrow != DT_BF16))
		return v;
	int64_t n = ir_shape_const_numel(&v->shape);
	float *f = arena_alloc(g->A, (size_t)n * 4 + 1);
	for (int64_t i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, (const unsigned char *)v->data + 2 * i, 2);
		f[i] = narrow == DT_F16 ? rt_f16_to_f32(h) : rt_bf16_to_f32(h);
	}
	ir_value *w = ir_const_new(g, v->name, DT_F32, &v->shape, f);
	w->narrow = narrow;
	return w;
}

ir_value *td_read_npy(ir_graph *g, diag *D, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		diag_error(D, "%s: %s", path, strerror(errno));
		return NULL;
	}
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 1 << 16;
			if (cap > (size_t)NPY_LIMIT_MB << 20) {
				fclose(f);
				free(buf);
				diag_error(D, "%s: larger than %d MiB", path, NPY_LIMIT_MB);
				return NULL;
			}
			buf = realloc(buf, cap);
			if (!buf)
				arena_oom(NULL, cap, "reading test data");
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	int err = ferror(f);
	fclose(f);
	ir_value *v = NULL;
	const char *why = err ? "read error" : npy_parse(g, buf, len, path, &v);
	free(buf);  /* ir_const_new copied the data */
	if (why) {
		diag_error(D, "%s: %s", path, why);
		return NULL;
	}
	return v;
}

const char *td_path(arena *A, const td_set *s, int output, int k)
{
	const char *pb = arena_printf(A, "%s/%s_%d.pb", s->dir, output ? "output" : "input", k);
	struct stat st;
	return stat(pb, &st) == 0 ? pb : arena_printf(A, "%s/%s_%d.npy", s->dir, output ? "output" : "input", k);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

ir_value *td_read_file(ir_graph *g, diag *D, const char *path)
{
	return ends_with(path, ".npy") ? td_read_npy(g, D, path) : onnx_read_tensor_file(g, D, path);
}

const char *td_tensor_name(const ir_value *v, const char *path)
{
	/* both readers name a tensor without one after its file */
	const char *slash = strrchr(path, '/');
	return ends_with(path, ".npy") || !strcmp(v->name, slash ? slash + 1 : path) ? NULL : v->name;
}

static const char *tensor_desc(const ir_value *x, const char *path)
{
	const char *name = td_tensor_name(x, path);
	return name ? arena_printf(x->graph->A, "tensor '%s'", name) : "the tensor";
}

int td_check_name(diag *D, const char *path, const ir_value *x, const ir_value *want, const char *role, int k)
{
	const char *name = td_tensor_name(x, path);
	if (!name || !strcmp(name, want->name))
		return 0;
	diag_error(D, "%s: tensor '%s' is not the model's %s %d '%s' (data are matched by position: %s_%d "
		      "is %s '%s')", path, name, role, k, want->name, role, k, role, want->name);
	return -1;
}

int td_check_type(diag *D, const char *path, const ir_value *x, const ir_value *want, const char *role)
{
	int ok = (want->dtype == DT_UNDEF || x->dtype == want->dtype) &&
		 (want->shape.rank < 0 || x->shape.rank == want->shape.rank);
	for (int i = 0; ok && i < want->shape.rank; i++)
		ok = !ir_dim_is_const(want->shape.d[i]) || want->shape.d[i].k == x->shape.d[i].k;
	if (ok)
		return 0;
	arena *A = x->graph->A;
	diag_error(D, "%s: %s is %s%s; the model's %s '%s' is %s%s", path, tensor_desc(x, path),
		   ir_dtype_name(x->dtype), ir_shape_str(A, x->graph, &x->shape), role, want->name,
		   ir_dtype_name(want->dtype), ir_shape_str(A, want->graph, &want->shape));
	return -1;
}

int td_read(ir_graph *g, diag *D, td_set *s)
{
	s->in = arena_array(g->A, (size_t)s->nin + 1, sizeof *s->in);
	s->out = arena_array(g->A, (size_t)s->nout + 1, sizeof *s->out);
	for (int o = 0; o < 2; o++)
		for (int k = 0; k < (o ? s->nout : s->nin); k++) {
			ir_value *v = td_read_file(g, D, td_path(g->A, s, o, k));
			if (!v || D->nerrors)
				return -1;
			(o ? s->out : s->in)[k] = v;
		}
	return 0;
}
