/* txt_weights.c: the `weights "FILE"` directive of .cell files.
 *
 * FILE is a cellrt tensor file (runtime/cellrt.h), the same contract the
 * emitted code reads: a path relative to the .cell file's directory unless
 * absolute.  rt_tf_open checks the whole file (sizes, offsets, checksum)
 * before anything here looks at it.  A parameter found in the file must
 * have the declared dtype and shape; the error points at the declaration.
 */
#include "txt.h"
#include "cellrt.h"
#include "util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int txt_weights_open(txt *X, txt_weights *W, const txt_tok *tok)
{
	const char *p = tok->str;
	if (p[0] != '/') {
		const char *slash = strrchr(X->path, '/');
		if (slash)
			p = arena_printf(X->A, "%.*s/%s", (int)(slash - X->path), X->path, p);
	}
	rt_tensorfile *tf = calloc(1, sizeof *tf);
	if (!tf)
		arena_oom(NULL, sizeof *tf, "a weights file");
	int st = rt_tf_open(tf, p);
	if (st != RT_OK) {
		txt_error(X, tok, "cannot read weights file '%s': %s", p, rt_status_str(st));
		free(tf);
		return 0;
	}
	W->tf = tf;
	W->path = p;
	return 1;
}

void txt_weights_close(txt_weights *W)
{
	if (W->tf) {
		rt_tf_close(W->tf);
		free(W->tf);
		W->tf = NULL;
	}
}

static const char *dims_str(arena *A, int rank, const int64_t *d)
{
	char *s = arena_strdup(A, "[");
	for (int i = 0; i < rank; i++)
		s = arena_printf(A, "%s%s%" PRId64, s, i ? ", " : "", d[i]);
	return arena_printf(A, "%s]", s);
}

int txt_weights_fill(txt *X, txt_weights *W, ir_value *v, const txt_tok *at, int required)
{
	const rt_tensor *t = W->tf ? rt_tf_find(W->tf, v->name) : NULL;
	if (!t) {
		if (required)
			txt_error(X, at, "parameter '%s' is not in weights file '%s'", v->name,
				  W->path ? W->path : "?");
		return 0;
	}
	int64_t want[IR_MAX_RANK];
	int ok = t->dtype == (int)v->dtype && t->rank == v->shape.rank;
	for (int i = 0; i < v->shape.rank; i++) {
		want[i] = ir_dim_is_const(v->shape.d[i]) ? v->shape.d[i].k : -1;
		ok &= t->dims[i] == want[i];
	}
	int64_t n = ir_shape_const_numel(&v->shape);
	size_t bytes = n >= 0 ? (size_t)n * ir_dtype_size(v->dtype) : 0;
	if (!ok || t->nbytes != bytes) {
		txt_error(X, at, "'%s' in weights file '%s' is %s%s; the model needs %s%s", v->name, W->path,
			  ir_dtype_name((ir_dtype)t->dtype), dims_str(X->A, t->rank, t->dims),
			  ir_dtype_name(v->dtype), dims_str(X->A, v->shape.rank, want));
		return -1;
	}
	v->data = arena_alloc(v->graph->A, bytes + 1);
	memcpy(v->data, t->data, bytes);
	return 1;
}
