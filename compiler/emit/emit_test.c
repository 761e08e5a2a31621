/* emit_test.c: the golden regression test program of a compiled model,
 * DIR/NAME_test.c (cellc compile --testbench), and `make test` runs it.
 *
 * The program is self-contained: the golden inputs and outputs are static
 * arrays in NAME_test.c when they are small (emit_tb.embed_limit), else a
 * tensor file DIR/NAME_test.data beside it (cellrt.h format; tensors
 * s<set>_in<k> and s<set>_out<k>).  For every golden set it
 *   1. binds the dims from the input shapes, checks the output shapes, runs
 *      the whole sequence (NAME_run_generic) and compares every output with
 *      the golden one: max absolute, max relative and max ULP error, pass
 *      when |got - ref| <= ATOL + RTOL |ref| everywhere (NaN only matches
 *      NaN; integer outputs exactly);
 *   2. when the model has NAME_step: resets, feeds the same inputs one time
 *      step at a time and compares what the steps produce (per-step outputs
 *      stacked, the others after the last step) with the whole-sequence
 *      outputs of 1., with the same tolerance.  Models whose streaming is not
 *      comparable (a reverse direction, sequence lengths, a time axis folded
 *      into another dim) say so on a NOTE line instead.
 * It prints `PASS|FAIL <set> <output> max_abs=.. max_rel=.. max_ulp=..`
 * (`step:<output>` for 2.) and `N passed, M failed`; exit status 0 all pass,
 * 1 a mismatch, 2 it could not run (weights, data, create).
 *
 * The printed code knows the model's inputs and outputs (dtypes, time axes)
 * from the IR and uses only NAME.h and cellrt.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "emit.h"
#include "cellrt.h"
#include "version.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct tb {
	ir_graph *g;
	arena *A;
	diag *D;
	const emit_opts *o;
	const emit_tb *t;
	ew *w;
	const char *n;          /* model name */
	int embed;              /* golden data in the source */
	int time_sym;
	int *in_axis, *out_axis;/* time axis of each input/output, -1: none */
	const char *no_step;    /* why the step check is not done, NULL: done */
} tb;

/* ---- literals ---- */

static const char *str_lit(arena *A, const char *s)
{
	char *r = arena_alloc(A, 4 * strlen(s) + 3), *p = r;
	*p++ = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			*p++ = '\\', *p++ = (char)c;
		else if (c < 32 || c >= 127 || c == '?')
			p += sprintf(p, "\\%03o", c);
		else
			*p++ = (char)c;
	}
	*p++ = '"';
	*p = 0;
	return r;
}

static const char *elem_lit(tb *T, const ir_value *v, int64_t i)
{
	emit_ctx E = {.g = T->g, .A = T->A, .D = T->D, .o = T->o};
	switch (v->dtype) {
	case DT_F32: return emit_float(&E, ((const float *)v->data)[i], DT_F32);
	case DT_F64: return emit_float(&E, ((const double *)v->data)[i], DT_F64);
	case DT_U64: return arena_printf(T->A, "UINT64_C(%llu)", (unsigned long long)((const uint64_t *)v->data)[i]);
	case DT_U32: return arena_printf(T->A, "%lluu", (unsigned long long)((const uint32_t *)v->data)[i]);
	default: {
		int64_t x = ir_const_int(v, i);
		if (x == INT64_MIN)
			return "INT64_MIN";
		return x > INT32_MAX || x < -INT32_MAX ? arena_printf(T->A, "INT64_C(%lld)", (long long)x)
						       : arena_printf(T->A, "%lld", (long long)x);
	}
	}
}

/* ---- what can be streamed ---- */

/* Axis of s that is exactly the time symbol; -1 if none; -2 if the symbol
 * is part of another dim (then steps cannot be cut out of it). */
static int time_axis(const tb *T, const ir_shape *s)
{
	int axis = -1;
	for (int i = 0; i < s->rank; i++) {
		ir_dim d = s->d[i];
		if (!d.pow[T->time_sym])
			continue;
		if (!ir_dim_eq(d, ir_dim_sym(T->time_sym)) || axis >= 0)
			return -2;
		axis = i;
	}
	return axis;
}

static void plan_steps(tb *T)
{
	ir_graph *g = T->g;
	T->in_axis = arena_array(T->A, (size_t)g->ninputs + 1, sizeof *T->in_axis);
	T->out_axis = arena_array(T->A, (size_t)g->noutputs + 1, sizeof *T->out_axis);
	T->time_sym = emit_time_sym(g);
	if (T->time_sym < 0) {
		T->no_step = "the model has no streaming API (no symbolic time axis)";
		return;
	}
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *nd = g->nodes[i];
		if (nd->op != OP_RECURRENCE)
			continue;
		if (ir_attr_int(nd, "reverse", 0))
			T->no_step = "a recurrence runs backwards in time, which a stream cannot";
		else if (ir_attr_int(nd, "has_lens", 0))
			T->no_step = "the model takes sequence lengths, which a stream has not";
	}
	int any = 0;
	for (int k = 0; k < g->ninputs; k++) {
		T->in_axis[k] = time_axis(T, &g->inputs[k]->shape);
		if (T->in_axis[k] == -2)
			T->no_step = arena_printf(T->A, "input '%s' folds the time axis into another dim",
						  g->inputs[k]->name);
		any |= T->in_axis[k] >= 0;
	}
	for (int k = 0; k < g->noutputs; k++) {
		T->out_axis[k] = time_axis(T, &g->outputs[k]->shape);
		if (T->out_axis[k] == -2)
			T->no_step = arena_printf(T->A, "output '%s' folds the time axis into another dim",
						  g->outputs[k]->name);
	}
	if (!any && !T->no_step)
		T->no_step = "no input has the time axis";
	for (int k = 0; k < g->noutputs && !T->no_step; k++)
		if (g->outputs[k]->data_dep)
			T->no_step = arena_printf(T->A, "output '%s' has a data-dependent length", g->outputs[k]->name);
}

/* ---- golden data ---- */

static size_t value_bytes(const ir_value *v)
{
	return (size_t)ir_shape_const_numel(&v->shape) * ir_dtype_size(v->dtype);
}

static const char *dims_init(tb *T, const ir_value *v)
{
	char *s = "";
	for (int i = 0; i < v->shape.rank; i++)
		s = arena_printf(T->A, "%s%s%lld", s, i ? ", " : "", (long long)v->shape.d[i].k);
	return *s ? s : "0";
}

static void embed_array(tb *T, const char *name, const ir_value *v)
{
	ew *w = T->w;
	int64_t n = ir_shape_const_numel(&v->shape);
	const char *ct = ir_dtype_ctype(v->dtype);
	if (n == 0) {
		ew_line(w, "static const %s %s[1] = {0};", ct, name);
		return;
	}
	ew_open(w, "static const %s %s[%lld] =", ct, name, (long long)n);
	for (int64_t i = 0; i < n; i += 8) {
		char *line = "";
		for (int64_t j = i; j < n && j < i + 8; j++)
			line = arena_printf(T->A, "%s%s%s", line, j > i ? ", " : "", elem_lit(T, v, j));
		ew_line(w, "%s%s", line, i + 8 < n ? "," : "");
	}
	ew_close(w, ";");
}

/* Embedded: arrays and rt_tensor tables per set.  File: nothing here. */
static void print_golden(tb *T)
{
	ew *w = T->w;
	ir_graph *g = T->g;
	ew_line(w, "/* ---- golden data (%s) ---- */", T->embed ? "embedded"
		: arena_printf(T->A, "in %s_test.data, read at run time", T->n));
	for (int s = 0; s < T->t->nsets; s++) {
		const emit_tb_set *S = &T->t->sets[s];
		if (!T->embed)
			break;
		for (int o = 0; o < 2; o++)
			for (int k = 0; k < (o ? g->noutputs : g->ninputs); k++)
				embed_array(T, arena_printf(T->A, "s%d_%s%d", s, o ? "out" : "in", k),
					    (o ? S->out : S->in)[k]);
		for (int o = 0; o < 2; o++) {
			int cnt = o ? g->noutputs : g->ninputs;
			ew_open(w, "static const rt_tensor s%d_%s[%d] =", s, o ? "out" : "in", cnt ? cnt : 1);
			if (!cnt)
				ew_line(w, "{0}");
			for (int k = 0; k < cnt; k++) {
				const ir_value *v = (o ? S->out : S->in)[k];
				ew_line(w, "{%s, %d, %d, {%s}, s%d_%s%d, %zu},",
					str_lit(T->A, (o ? g->outputs : g->inputs)[k]->name), (int)v->dtype,
					v->shape.rank, dims_init(T, v), s, o ? "out" : "in", k, value_bytes(v));
			}
			ew_close(w, ";");
		}
	}
	char *labels = "";
	for (int s = 0; s < T->t->nsets; s++)
		labels = arena_printf(T->A, "%s\t%s,\n", labels, str_lit(T->A, T->t->sets[s].label));
	ew_line(w, "static const char *const set_label[NSETS] = {\n%s};", labels);
}

static int write_data(tb *T, const char *path)
{
	ir_graph *g = T->g;
	int per = g->ninputs + g->noutputs, cnt = per * T->t->nsets;
	rt_tensor *ts = arena_array(T->A, (size_t)cnt + 1, sizeof *ts);
	for (int s = 0; s < T->t->nsets; s++)
		for (int o = 0; o < 2; o++)
			for (int k = 0; k < (o ? g->noutputs : g->ninputs); k++) {
				const ir_value *v = (o ? T->t->sets[s].out : T->t->sets[s].in)[k];
				rt_tensor *t = &ts[s * per + (o ? g->ninputs : 0) + k];
				t->name = arena_printf(T->A, "s%d_%s%d", s, o ? "out" : "in", k);
				t->dtype = (int)v->dtype;
				t->rank = v->shape.rank;
				for (int i = 0; i < v->shape.rank; i++)
					t->dims[i] = v->shape.d[i].k;
				t->data = v->data;
				t->nbytes = value_bytes(v);
			}
	int st = rt_tf_write(path, cnt, ts);
	if (st != RT_OK)
		diag_error(T->D, "cannot write %s: %s", path, rt_status_str(st));
	return st != RT_OK;
}

/* ---- the program ---- */

/* The fixed helpers: element access, comparison, slicing. */
static const char prog_helpers[] =
	"/* Element i of a tensor of ONNX dtype dt as a double (integers exactly up to 2^53). */\n"
	"static double elem(const void *p, int dt, size_t i)\n"
	"{\n"
	"\tswitch (dt) {\n"
	"\tcase 1: return ((const float *)p)[i];\n"
	"\tcase 11: return ((const double *)p)[i];\n"
	"\tcase 2: case 9: return ((const uint8_t *)p)[i];\n"
	"\tcase 3: return ((const int8_t *)p)[i];\n"
	"\tcase 4: return ((const uint16_t *)p)[i];\n"
	"\tcase 5: return ((const int16_t *)p)[i];\n"
	"\tcase 6: return ((const int32_t *)p)[i];\n"
	"\tcase 12: return ((const uint32_t *)p)[i];\n"
	"\tcase 7: return (double)((const int64_t *)p)[i];\n"
	"\tcase 13: return (double)((const uint64_t *)p)[i];\n"
	"\tdefault: return NAN;\n"
	"\t}\n"
	"}\n"
	"\n"
	"/* Distance in units in the last place: the number of representable values\n"
	" * between a and b (floats ordered as integers); 0 for equal values. */\n"
	"static double ulp_dist(const void *a, const void *b, int dt, size_t i)\n"
	"{\n"
	"\tif (dt == 1) {\n"
	"\t\tint32_t x, y;\n"
	"\t\tmemcpy(&x, (const float *)a + i, 4);\n"
	"\t\tmemcpy(&y, (const float *)b + i, 4);\n"
	"\t\tint64_t ox = x < 0 ? (int64_t)INT32_MIN - x : x, oy = y < 0 ? (int64_t)INT32_MIN - y : y;\n"
	"\t\treturn (double)(ox > oy ? ox - oy : oy - ox);\n"
	"\t}\n"
	"\tif (dt == 11) {\n"
	"\t\tint64_t x, y;\n"
	"\t\tmemcpy(&x, (const double *)a + i, 8);\n"
	"\t\tmemcpy(&y, (const double *)b + i, 8);\n"
	"\t\tdouble ox = x < 0 ? -(double)(x & INT64_MAX) : (double)x;\n"
	"\t\tdouble oy = y < 0 ? -(double)(y & INT64_MAX) : (double)y;\n"
	"\t\treturn fabs(ox - oy);\n"
	"\t}\n"
	"\treturn fabs(elem(a, dt, i) - elem(b, dt, i));\n"
	"}\n"
	"\n"
	"/* Compares n elements of got with ref; prints one PASS|FAIL line. */\n"
	"static int compare(const char *set, const char *what, const void *got, const void *ref, int dt, size_t n)\n"
	"{\n"
	"\tdouble max_abs = 0, max_rel = 0, max_ulp = 0;\n"
	"\tsize_t bad = 0, first = 0;\n"
	"\tint fl = dt == 1 || dt == 11;\n"
	"\tfor (size_t i = 0; i < n; i++) {\n"
	"\t\tdouble a = elem(got, dt, i), b = elem(ref, dt, i), d;\n"
	"\t\tint good;\n"
	"\t\tif (!fl) {\n"
	"\t\t\td = fabs(a - b);\n"
	"\t\t\tgood = a == b;\n"
	"\t\t} else if (isnan(a) || isnan(b)) {\n"
	"\t\t\tgood = isnan(a) && isnan(b);\n"
	"\t\t\td = good ? 0 : INFINITY;\n"
	"\t\t} else if (isinf(a) || isinf(b)) {\n"
	"\t\t\tgood = a == b;\n"
	"\t\t\td = good ? 0 : INFINITY;\n"
	"\t\t} else {\n"
	"\t\t\td = fabs(a - b);\n"
	"\t\t\tgood = d <= ATOL + RTOL * fabs(b);\n"
	"\t\t}\n"
	"\t\tdouble r = d == 0 ? 0 : b != 0 && isfinite(b) ? d / fabs(b) : INFINITY;\n"
	"\t\tdouble u = d == 0 ? 0 : ulp_dist(got, ref, dt, i);\n"
	"\t\tif (!good && bad++ == 0)\n"
	"\t\t\tfirst = i;\n"
	"\t\tmax_abs = d > max_abs ? d : max_abs;\n"
	"\t\tmax_rel = r > max_rel ? r : max_rel;\n"
	"\t\tmax_ulp = u > max_ulp ? u : max_ulp;\n"
	"\t}\n"
	"\tprintf(\"%s %s %s max_abs=%.3g max_rel=%.3g max_ulp=%.0f\\n\", bad ? \"FAIL\" : \"PASS\", set, what,\n"
	"\t       max_abs, max_rel, max_ulp);\n"
	"\tif (bad)\n"
	"\t\tprintf(\"  %llu of %llu elements out of tolerance; first at flat index %llu: got %.9g, expected %.9g\\n\",\n"
	"\t\t       (unsigned long long)bad, (unsigned long long)n, (unsigned long long)first, elem(got, dt, first),\n"
	"\t\t       elem(ref, dt, first));\n"
	"\treturn bad == 0;\n"
	"}\n"
	"\n"
	"static size_t numel(int rank, const int64_t *dims)\n"
	"{\n"
	"\tsize_t n = 1;\n"
	"\tfor (int i = 0; i < rank; i++)\n"
	"\t\tn *= (size_t)dims[i];\n"
	"\treturn n;\n"
	"}\n";

/* Only with the step check (an unused static function is an error). */
static const char prog_slice[] =
	"/* Copies time step t of x (dims[rank], time axis `axis`) to y (the same\n"
	" * dims with 1 at the axis), or back from y to x when `back`. */\n"
	"static void time_slice(void *x, void *y, size_t esize, int rank, const int64_t *dims, int axis,\n"
	"\t\t       int64_t t, int back)\n"
	"{\n"
	"\tsize_t outer = numel(axis, dims), inner = numel(rank - axis - 1, dims + axis + 1) * esize;\n"
	"\tsize_t T = (size_t)dims[axis];\n"
	"\tfor (size_t o = 0; o < outer; o++) {\n"
	"\t\tunsigned char *px = (unsigned char *)x + (o * T + (size_t)t) * inner;\n"
	"\t\tunsigned char *py = (unsigned char *)y + o * inner;\n"
	"\t\tif (back)\n"
	"\t\t\tmemcpy(px, py, inner);\n"
	"\t\telse\n"
	"\t\t\tmemcpy(py, px, inner);\n"
	"\t}\n"
	"}\n";

static const char *io_arg(tb *T, int out, int k, const char *arr)
{
	const ir_value *v = (out ? T->g->outputs : T->g->inputs)[k];
	return arena_printf(T->A, "(%s%s *)%s[%d]", out ? "" : "const ", ir_dtype_ctype(v->dtype), arr, k);
}

/* The step check of one set: inputs in[], whole-run outputs got[]. */
static void print_step_fn(tb *T)
{
	ew *w = T->w;
	ir_graph *g = T->g;
	const char *n = T->n;
	if (T->no_step) {
		ew_line(w, "/* (no step check: %s) */", T->no_step);
		return;
	}
	fputs(prog_slice, w->f);
	ew_line(w, "%s", "");
	ew_line(w, "/* time axis of each input and output (-1: none, passed whole / compared after the last step) */");
	char *ia = "", *oa = "";
	for (int k = 0; k < g->ninputs; k++)
		ia = arena_printf(T->A, "%s%s%d", ia, k ? ", " : "", T->in_axis[k]);
	for (int k = 0; k < g->noutputs; k++)
		oa = arena_printf(T->A, "%s%s%d", oa, k ? ", " : "", T->out_axis[k]);
	ew_line(w, "static const int in_time_axis[NIN] = {%s};", ia);
	ew_line(w, "static const int out_time_axis[NOUT] = {%s};", oa);
	ew_line(w, "%s", "");
	ew_line(w, "/* Feeds the set's inputs one time step at a time (%s_step after a reset)", n);
	ew_line(w, " * and compares what comes out with the whole-sequence outputs got[]. */");
	ew_line(w, "static int step_check(%s *m, const %s_dims *d, const char *set, const rt_tensor *const *in,", n, n);
	ew_line(w, "\t\t      void *const *got)");
	ew_line(w, "{");
	w->indent++;
	ew_line(w, "void *sin[NIN + 1] = {0}, *sout[NOUT + 1] = {0}, *stacked[NOUT + 1] = {0};");
	ew_line(w, "int64_t odims[NOUT + 1][%d];", RT_TF_MAXRANK);
	ew_line(w, "int ok = 1, rc = -1, st;");
	ew_line(w, "int64_t T = 0;");
	ew_open(w, "for (int k = 0; k < NIN; k++)");
	ew_open(w, "if (in_time_axis[k] >= 0)");
	ew_line(w, "T = in[k]->dims[in_time_axis[k]];");
	ew_line(w, "sin[k] = malloc(in[k]->nbytes / (size_t)(T ? T : 1) + 1);");
	ew_line(w, "if (!sin[k])");
	ew_line(w, "\tgoto done;");
	ew_close(w, "");
	ew_close(w, "");
	ew_open(w, "for (int k = 0; k < NOUT; k++)");
	ew_line(w, "int r = %s_io_rank(1, k);", n);
	ew_line(w, "%s_io_shape(d, 1, k, odims[k]);", n);
	ew_line(w, "size_t es = rt_dtype_size(%s_io_dtype(1, k)), full = numel(r, odims[k]) * es;", n);
	ew_line(w, "stacked[k] = calloc(full + 1, 1);");
	ew_line(w, "sout[k] = calloc(full + 1, 1);");
	ew_line(w, "if (!stacked[k] || !sout[k])");
	ew_line(w, "\tgoto done;");
	ew_close(w, "");
	ew_line(w, "st = %s_reset(m);", n);
	ew_open(w, "for (int64_t t = 0; t < T && st == RT_OK; t++)");
	ew_line(w, "const void *a[NIN + 1];");
	ew_open(w, "for (int k = 0; k < NIN; k++)");
	ew_line(w, "a[k] = in[k]->data;");
	ew_open(w, "if (in_time_axis[k] >= 0)");
	ew_line(w, "time_slice((void *)in[k]->data, sin[k], rt_dtype_size(in[k]->dtype), in[k]->rank, in[k]->dims,");
	ew_line(w, "\t   in_time_axis[k], t, 0);");
	ew_line(w, "a[k] = sin[k];");
	ew_close(w, "");
	ew_close(w, "");
	char *args = arena_printf(T->A, "m, d");
	for (int k = 0; k < g->ninputs; k++)
		args = arena_printf(T->A, "%s, %s", args, io_arg(T, 0, k, "a"));
	for (int k = 0; k < g->noutputs; k++)
		args = arena_printf(T->A, "%s, %s", args, io_arg(T, 1, k, "sout"));
	ew_line(w, "st = %s_step(%s);", n, args);
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\tbreak;");
	ew_line(w, "for (int k = 0; k < NOUT; k++)");
	ew_open(w, "\tif (out_time_axis[k] >= 0)");
	ew_line(w, "time_slice(stacked[k], sout[k], rt_dtype_size(%s_io_dtype(1, k)), %s_io_rank(1, k), odims[k],", n, n);
	ew_line(w, "\t   out_time_axis[k], t, 1);");
	ew_close(w, "");
	ew_close(w, "");
	ew_open(w, "if (st != RT_OK)");
	ew_line(w, "printf(\"FAIL %%s step: %s_step returned %%d (%%s)\\n\", set, st, %s_status_str(st));", n, n);
	ew_line(w, "rc = 0;");
	ew_line(w, "goto done;");
	ew_close(w, "");
	ew_open(w, "for (int k = 0; k < NOUT; k++)");
	ew_line(w, "char what[200];");
	ew_line(w, "snprintf(what, sizeof what, \"step:%%s\", %s_io_name(1, k));", n);
	ew_line(w, "ok &= compare(set, what, out_time_axis[k] >= 0 ? stacked[k] : sout[k], got[k],");
	ew_line(w, "\t      %s_io_dtype(1, k), numel(%s_io_rank(1, k), odims[k]));", n, n);
	ew_close(w, "");
	ew_line(w, "rc = ok;");
	ew_line(w, "done:");
	ew_open(w, "for (int k = 0; k < NIN; k++)");
	ew_line(w, "free(sin[k]);");
	ew_close(w, "");
	ew_open(w, "for (int k = 0; k < NOUT; k++)");
	ew_line(w, "free(sout[k]);");
	ew_line(w, "free(stacked[k]);");
	ew_close(w, "");
	ew_line(w, "if (rc < 0)");
	ew_line(w, "\tprintf(\"FAIL %%s step: out of memory\\n\", set);");
	ew_line(w, "return rc > 0;");
	w->indent--;
	ew_line(w, "}");
}

/* One set: bind, check shapes, run, compare, step check. */
static void print_run_set(tb *T)
{
	ew *w = T->w;
	const char *n = T->n;
	ew_line(w, "/* Runs one golden set; adds to *passed / *failed.  Returns 0, or 2 when");
	ew_line(w, " * the set does not fit the model. */");
	ew_line(w, "static int run_set(%s *m, const char *set, const rt_tensor *const *in, const rt_tensor *const *ref,", n);
	ew_line(w, "\t\t   int *passed, int *failed)");
	ew_line(w, "{");
	w->indent++;
	ew_line(w, "const int64_t *in_dims[NIN + 1] = {0};");
	ew_line(w, "const void *inp[NIN + 1] = {0};");
	ew_line(w, "void *got[NOUT + 1] = {0};");
	ew_line(w, "%s_dims d;", n);
	ew_line(w, "int rc = 2, st;");
	ew_open(w, "for (int k = 0; k < NIN; k++)");
	ew_open(w, "if (in[k]->dtype != %s_io_dtype(0, k) || in[k]->rank != %s_io_rank(0, k))", n, n);
	ew_line(w, "fprintf(stderr, \"%%s: input %%d: dtype %%d rank %%d, the model wants dtype %%d rank %%d\\n\", set, k,");
	ew_line(w, "\tin[k]->dtype, in[k]->rank, %s_io_dtype(0, k), %s_io_rank(0, k));", n, n);
	ew_line(w, "return 2;");
	ew_close(w, "");
	ew_line(w, "in_dims[k] = in[k]->dims;");
	ew_line(w, "inp[k] = in[k]->data;");
	ew_close(w, "");
	ew_line(w, "st = %s_bind_values(in_dims, inp, &d);", n);
	ew_open(w, "if (st != RT_OK)");
	ew_line(w, "fprintf(stderr, \"%%s: input shapes: %%s\\n\", set, %s_status_str(st));", n);
	ew_line(w, "return 2;");
	ew_close(w, "");
	char *dda = "";
	for (int k = 0; k < T->g->noutputs; k++)
		dda = arena_printf(T->A, "%s%s%d", dda, k ? ", " : "",
				   T->g->outputs[k]->data_dep ? T->g->outputs[k]->dd_axis : -1);
	ew_line(w, "/* the axis of each output whose length the data decide (-1: none): its");
	ew_line(w, " * buffer holds the bound, the run's length is checked after the run */");
	ew_line(w, "static const int dd_axis[NOUT + 1] = {%s};", *dda ? dda : "-1");
	ew_open(w, "for (int k = 0; k < NOUT; k++)");
	ew_line(w, "int64_t dims[%d];", RT_TF_MAXRANK);
	ew_line(w, "int r = %s_io_rank(1, k);", n);
	ew_line(w, "st = %s_io_shape(&d, 1, k, dims);", n);
	ew_line(w, "int same = st == RT_OK && r == ref[k]->rank && %s_io_dtype(1, k) == ref[k]->dtype;", n);
	ew_line(w, "for (int i = 0; same && i < r; i++)");
	ew_line(w, "\tsame = dims[i] == ref[k]->dims[i] || i == dd_axis[k];");
	ew_open(w, "if (!same)");
	ew_line(w, "fprintf(stderr, \"%%s: output %%s: the golden tensor's dtype or shape is not the model's\\n\", set,");
	ew_line(w, "\t%s_io_name(1, k));", n);
	ew_line(w, "goto done;");
	ew_close(w, "");
	ew_line(w, "size_t bytes = numel(r, dims) * rt_dtype_size(ref[k]->dtype);");
	ew_line(w, "got[k] = calloc((bytes > ref[k]->nbytes ? bytes : ref[k]->nbytes) + 1, 1);");
	ew_line(w, "if (!got[k])");
	ew_line(w, "\tgoto done;");
	ew_close(w, "");
	ew_line(w, "st = %s_run_generic(m, &d, inp, got);", n);
	ew_open(w, "if (st != RT_OK)");
	ew_line(w, "printf(\"FAIL %%s run: %s_run returned %%d (%%s)\\n\", set, st, %s_status_str(st));", n, n);
	ew_line(w, "++*failed;");
	ew_line(w, "rc = 0;");
	ew_line(w, "goto done;");
	ew_close(w, "");
	ew_open(w, "for (int k = 0; k < NOUT; k++)");
	ew_open(w, "if (dd_axis[k] >= 0)");
	ew_line(w, "int64_t dims[%d];", RT_TF_MAXRANK);
	ew_line(w, "st = %s_output_dims(m, &d, k, dims);", n);
	ew_open(w, "if (st != RT_OK || dims[dd_axis[k]] != ref[k]->dims[dd_axis[k]])");
	ew_line(w, "printf(\"FAIL %%s %%s: length %%lld on axis %%d, the golden data's %%lld\\n\", set, %s_io_name(1, k),", n);
	ew_line(w, "\t(long long)dims[dd_axis[k]], dd_axis[k], (long long)ref[k]->dims[dd_axis[k]]);");
	ew_line(w, "++*failed;");
	ew_line(w, "continue;");
	ew_close(w, "");
	ew_close(w, "");
	ew_line(w, "if (compare(set, %s_io_name(1, k), got[k], ref[k]->data, ref[k]->dtype, numel(ref[k]->rank, ref[k]->dims)))", n);
	ew_line(w, "\t++*passed;");
	ew_line(w, "else");
	ew_line(w, "\t++*failed;");
	ew_close(w, "");
	if (T->no_step) {
		ew_line(w, "printf(\"NOTE %%s step: not checked: %%s\\n\", set, %s);", str_lit(T->A, T->no_step));
	} else {
		ew_line(w, "if (step_check(m, &d, set, in, got))");
		ew_line(w, "\t++*passed;");
		ew_line(w, "else");
		ew_line(w, "\t++*failed;");
	}
	ew_line(w, "rc = 0;");
	ew_line(w, "done:");
	ew_line(w, "for (int k = 0; k < NOUT; k++)");
	ew_line(w, "\tfree(got[k]);");
	ew_line(w, "return rc;");
	w->indent--;
	ew_line(w, "}");
}

static void print_main(tb *T)
{
	ew *w = T->w;
	const char *n = T->n;
	int file_w = !T->o->embed_weights;
	ew_line(w, "int main(int argc, char **argv)");
	ew_line(w, "{");
	w->indent++;
	ew_line(w, "const char *weights = argc > 1 ? argv[1] : %s;", str_lit(T->A, arena_printf(T->A, "%s.weights", n)));
	ew_line(w, "const char *data = argc > 2 ? argv[2] : %s;", str_lit(T->A, arena_printf(T->A, "%s_test.data", n)));
	ew_line(w, "%s *m = NULL;", n);
	ew_line(w, "int passed = 0, failed = 0, rc = 2, st;");
	ew_line(w, "const rt_tensor *in[NSETS][NIN + 1], *ref[NSETS][NOUT + 1];");
	if (T->embed) {
		ew_line(w, "(void)data; /* the golden data are embedded */");
		for (int s = 0; s < T->t->nsets; s++) {
			ew_line(w, "for (int k = 0; k < NIN; k++)");
			ew_line(w, "\tin[%d][k] = &s%d_in[k];", s, s);
			ew_line(w, "for (int k = 0; k < NOUT; k++)");
			ew_line(w, "\tref[%d][k] = &s%d_out[k];", s, s);
		}
	} else {
		ew_line(w, "rt_tensorfile tf;");
		ew_line(w, "st = rt_tf_open(&tf, data);");
		ew_open(w, "if (st != RT_OK || tf.count != NSETS * (NIN + NOUT))");
		ew_line(w, "fprintf(stderr, \"%%s: %%s\\n\", data, st != RT_OK ? rt_status_str(st) : \"not this model's golden data\");");
		ew_line(w, "if (st == RT_OK)");
		ew_line(w, "\trt_tf_close(&tf);");
		ew_line(w, "return 2;");
		ew_close(w, "");
		ew_open(w, "for (int s = 0; s < NSETS; s++)");
		ew_line(w, "for (int k = 0; k < NIN; k++)");
		ew_line(w, "\tin[s][k] = &tf.t[s * (NIN + NOUT) + k];");
		ew_line(w, "for (int k = 0; k < NOUT; k++)");
		ew_line(w, "\tref[s][k] = &tf.t[s * (NIN + NOUT) + NIN + k];");
		ew_close(w, "");
	}
	const char *wa = file_w ? "weights" : "NULL";
	if (!file_w)
		ew_line(w, "(void)weights; /* the weights are embedded */");
	if (T->o->no_malloc) {
		ew_line(w, "/* the model allocates nothing: all its memory is this arena */");
		ew_line(w, "static _Alignas(64) unsigned char arena[%s_ARENA_BYTES];", n);
		ew_line(w, "st = %s_create_in(&m, arena, sizeof arena, %s);", n, wa);
	} else {
		ew_line(w, "st = %s_create(&m, %s);", n, wa);
	}
	ew_open(w, "if (st != RT_OK)");
	ew_line(w, "fprintf(stderr, \"%s_create: %%s%%s%%s\\n\", %s_status_str(st), %s, %s);", n, n,
		file_w ? "\": \"" : "\"\"", file_w ? "weights" : "\"\"");
	ew_line(w, "goto done;");
	ew_close(w, "");
	ew_line(w, "printf(\"%s: %%d golden set%%s, rtol %%g, atol %%g\\n\", NSETS, NSETS == 1 ? \"\" : \"s\", RTOL, ATOL);", n);
	ew_open(w, "for (int s = 0; s < NSETS; s++)");
	ew_line(w, "if (run_set(m, set_label[s], in[s], ref[s], &passed, &failed))");
	ew_line(w, "\tgoto done;");
	ew_close(w, "");
	ew_line(w, "printf(\"%%d passed, %%d failed\\n\", passed, failed);");
	ew_line(w, "rc = failed ? 1 : 0;");
	ew_line(w, "done:");
	ew_line(w, "%s_destroy(m);", n);
	if (!T->embed)
		ew_line(w, "rt_tf_close(&tf);");
	ew_line(w, "return rc;");
	w->indent--;
	ew_line(w, "}");
}

int emit_testbench(ir_graph *g, diag *D, const emit_opts *o, const emit_tb *t)
{
	tb T0 = {.g = g, .A = g->A, .D = D, .o = o, .t = t, .n = o->name}, *T = &T0;
	ASSERT(t->nsets > 0);
	size_t total = 0;
	for (int s = 0; s < t->nsets; s++)
		for (int oo = 0; oo < 2; oo++)
			for (int k = 0; k < (oo ? g->noutputs : g->ninputs); k++) {
				const ir_value *v = (oo ? t->sets[s].out : t->sets[s].in)[k];
				if (!v || !v->data || !ir_dtype_ctype(v->dtype) || v->shape.rank > RT_TF_MAXRANK) {
					diag_error(D, "--testbench: golden %s %d of %s is not usable", oo ? "output" : "input",
						   k, t->sets[s].label);
					return D->nerrors;
				}
				total += value_bytes(v);
			}
	T->embed = total <= t->embed_limit;
	plan_steps(T);
	const char *dpath = arena_printf(T->A, "%s/%s_test.data", o->outdir, T->n);
	remove(dpath);
	if (!T->embed && write_data(T, dpath))
		return D->nerrors;
	const char *path = arena_printf(T->A, "%s/%s_test.c", o->outdir, T->n);
	FILE *f = fopen(path, "w");
	if (!f) {
		diag_error(D, "cannot write %s: %s", path, strerror(errno));
		return D->nerrors;
	}
	ew w = {.f = f};
	T->w = &w;
	const char *n = T->n;
	ew_line(&w, "/* %s_test.c: golden regression test of model %s, generated by cellc %s -- do not edit.", n, n,
		CELLC_VERSION);
	ew_line(&w, " *");
	ew_line(&w, " *   ./%s_test [WEIGHTS [DATA]]      (`make test` runs it in this directory)", n);
	ew_line(&w, " *");
	ew_line(&w, " * WEIGHTS: %s (default %s.weights); DATA: the golden data file (default",
		o->embed_weights ? "ignored, the weights are embedded" : "the weights file", n);
	ew_line(&w, " * %s_test.data; %s).", n, T->embed ? "ignored, the golden data are embedded below"
							  : "the golden data are too large to embed");
	ew_line(&w, " * For each golden set it runs the whole sequence and compares every output");
	ew_line(&w, " * with the golden one, then %s.", T->no_step ? "notes why streaming is not checked"
		: arena_printf(T->A, "feeds the inputs one step at a time (%s_step) and compares the result with the whole-sequence outputs", n));
	ew_line(&w, " * Prints `PASS|FAIL <set> <output> max_abs= max_rel= max_ulp=` and");
	ew_line(&w, " * `N passed, M failed`; pass: |got - ref| <= ATOL + RTOL |ref| (NaN matches");
	ew_line(&w, " * only NaN, integers exactly).  Exit status 0: all pass; 1: a mismatch;");
	ew_line(&w, " * 2: the test could not run.");
	ew_line(&w, " */");
	ew_line(&w, "#include \"%s.h\"", n);
	ew_line(&w, "%s", "");
	ew_line(&w, "#include \"cellrt.h\"");
	ew_line(&w, "%s", "");
	ew_line(&w, "#include <math.h>");
	ew_line(&w, "#include <stdio.h>");
	ew_line(&w, "#include <stdlib.h>");
	ew_line(&w, "#include <string.h>");
	ew_line(&w, "%s", "");
	if (!T->embed) {
		ew_line(&w, "#if RT_BARE_METAL");
		ew_line(&w, "#error \"%s_test.c: its golden data are in %s_test.data, and a target without an OS has no "
			"files: compile with a --testbench-embed of at least %zu bytes\"", n, n, total);
		ew_line(&w, "#endif");
		ew_line(&w, "%s", "");
	}
	ew_line(&w, "/* tolerance chosen at compile time (cellc compile --rtol/--atol) */");
	ew_line(&w, "#define RTOL %.17g", t->rtol);
	ew_line(&w, "#define ATOL %.17g", t->atol);
	ew_line(&w, "#define NSETS %d", t->nsets);
	ew_line(&w, "#define NIN %s_NUM_INPUTS", n);
	ew_line(&w, "#define NOUT %s_NUM_OUTPUTS", n);
	ew_line(&w, "%s", "");
	print_golden(T);
	ew_line(&w, "%s", "");
	fputs(prog_helpers, f);
	ew_line(&w, "%s", "");
	print_step_fn(T);
	ew_line(&w, "%s", "");
	print_run_set(T);
	ew_line(&w, "%s", "");
	print_main(T);
	if (ferror(f) | (fclose(f) != 0))
		diag_error(D, "cannot write %s: %s", path, strerror(errno));
	return D->nerrors;
}
