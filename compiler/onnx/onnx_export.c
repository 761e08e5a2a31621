/* onnx_export.c: trained weights back into a copy of the source ONNX model
 * (`cellc export`, see onnx.h).
 *
 * The model is read with the loader's own guards (size limit, wire check
 * before protobuf-c unpacks it), then every initializer is indexed: those of
 * the main graph and those of the bodies nested in node attributes (Loop,
 * Scan, If), at any depth.  Each tensor of the weights file replaces the data
 * of the initializer of the same name after its element type and dims were
 * checked; the tensor keeps its storage form (float_data stays float_data,
 * anything else becomes little-endian raw_data).  Tensors whose names start
 * with '@' (optimiser state and counters of a training checkpoint) are not
 * weights and are skipped.  Nothing else of the message is touched, and
 * protobuf-c keeps the fields our schema does not know as unknown fields and
 * packs them again, so graph, opset imports, metadata and doc strings come
 * out as they went in (field order on the wire may differ: protobuf-c packs
 * in field-number order, which any reader accepts).
 *
 * Every check runs before anything is written, and all problems are reported
 * together; the result goes to a temporary file beside OUT that is fsynced
 * and renamed into place, so a failure never leaves a partial or stale-mixed
 * OUT.  Initializers kept in external data files are refused: their locations
 * are relative to the model's directory and the copy could silently point at
 * the old values.
 */
#define _POSIX_C_SOURCE 200809L  /* mkstemp, fsync, fchmod */
#include "onnx_priv.h"
#include "util.h"
#include "cellrt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MODEL_FILE_LIMIT = 2147483647 };   /* protobuf messages stop at 2 GiB */

static const char main_graph[] = "the main graph";

typedef struct init_ref {
	Onnx__TensorProto *t;   /* the initializer in the unpacked model */
	const char *where;      /* "the main graph", "the body of node 'N'" */
	int count;              /* initializers of this name in the whole model */
	int used;               /* a node or graph output refers to it (--strict) */
	int replaced;
} init_ref;

typedef struct export_ctx {
	arena *A;
	diag *D;
	const char *model, *weights;
	init_ref *inits;        /* [ninits] in file order, main graph first */
	int ninits, cap;
	onnx_map by_name;       /* initializer name -> its first init_ref */
	onnx_map used;          /* names that node inputs and graph outputs use */
	onnx_map sparse;        /* names of sparse initializers (never replaced) */
	onnx_map inputs;        /* graph input names, for a better message */
	int nunknown;           /* WEIGHTS tensors with no initializer */
	int errors_before;      /* D->nerrors when the export began */
} export_ctx;

static void export_note(export_ctx *X, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void export_note(export_ctx *X, const char *file, const char *fmt, ...)
{
	va_list ap;
	X->D->file = file;
	va_start(ap, fmt);
	diag_vemit(X->D, "note", NULL, fmt, ap);
	va_end(ap);
}

/* An error about `file` (the model or the weights file). */
static void export_error(export_ctx *X, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void export_error(export_ctx *X, const char *file, const char *fmt, ...)
{
	va_list ap;
	if (++X->D->nerrors > (X->D->max_errors ? X->D->max_errors : 20))
		return;
	X->D->file = file;
	va_start(ap, fmt);
	diag_vemit(X->D, "error", NULL, fmt, ap);
	va_end(ap);
}

static const char *dims_str(arena *A, int rank, const int64_t *dims)
{
	char *s = arena_strdup(A, "[");
	for (int k = 0; k < rank; k++)
		s = arena_printf(A, "%s%s%lld", s, k ? "," : "", (long long)dims[k]);
	return arena_printf(A, "%s]", s);
}

static const char *init_type(arena *A, const Onnx__TensorProto *t)
{
	int64_t dims[64];
	int rank = t->n_dims < 64 ? (int)t->n_dims : 64;
	for (int k = 0; k < rank; k++)
		dims[k] = t->dims[k];
	return arena_printf(A, "%s %s", t->has_data_type ? onnx_dtype_name(t->data_type) : "UNDEFINED",
			    dims_str(A, rank, dims));
}

/* ---- indexing the model ---- */

static void add_init(export_ctx *X, Onnx__TensorProto *t, const char *where)
{
	if (!t->name || !*t->name)
		return;         /* nothing can name it */
	if (X->ninits == X->cap) {
		int ncap = X->cap ? 2 * X->cap : 64;
		X->inits = arena_grow(X->A, X->inits, (size_t)X->cap, (size_t)ncap, sizeof *X->inits);
		X->cap = ncap;
	}
	init_ref *r = &X->inits[X->ninits++];
	*r = (init_ref){.t = t, .where = where, .count = 1};
	init_ref *first = onnx_map_get(&X->by_name, t->name);
	if (first)
		first->count++;
	else
		onnx_map_put(X->A, &X->by_name, t->name, r);
}

static void mark_used(export_ctx *X, const char *name)
{
	if (name && *name)
		onnx_map_put(X->A, &X->used, name, (void *)1);
}

/* Indexes gp's initializers and the names its nodes use, then the graphs
 * nested in its nodes' attributes (the wire check bounded their depth). */
static void index_graph(export_ctx *X, Onnx__GraphProto *gp, const char *where)
{
	for (size_t k = 0; k < gp->n_initializer; k++)
		add_init(X, gp->initializer[k], where);
	for (size_t k = 0; k < gp->n_sparse_initializer; k++) {
		const Onnx__SparseTensorProto *sp = gp->sparse_initializer[k];
		if (sp->values && sp->values->name)
			onnx_map_put(X->A, &X->sparse, sp->values->name, (void *)1);
	}
	for (size_t k = 0; k < gp->n_input; k++)
		if (gp->input[k]->name)
			onnx_map_put(X->A, &X->inputs, gp->input[k]->name, (void *)1);
	for (size_t k = 0; k < gp->n_output; k++)
		mark_used(X, gp->output[k]->name);
	for (size_t k = 0; k < gp->n_node; k++) {
		const Onnx__NodeProto *np = gp->node[k];
		for (size_t i = 0; i < np->n_input; i++)
			mark_used(X, np->input[i]);
		const char *body = arena_printf(X->A, "the body of node '%s' (%s)",
						np->name && *np->name ? np->name : "(unnamed)",
						np->op_type ? np->op_type : "?");
		for (size_t a = 0; a < np->n_attribute; a++) {
			Onnx__AttributeProto *at = np->attribute[a];
			if (at->g)
				index_graph(X, at->g, body);
			for (size_t i = 0; i < at->n_graphs; i++)
				index_graph(X, at->graphs[i], body);
		}
	}
}

static int is_external(const Onnx__TensorProto *t)
{
	return t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

static const char *external_location(const Onnx__TensorProto *t)
{
	for (size_t k = 0; k < t->n_external_data; k++)
		if (t->external_data[k]->key && strcmp(t->external_data[k]->key, "location") == 0)
			return t->external_data[k]->value ? t->external_data[k]->value : "";
	return "";
}

/* ---- replacing one initializer ---- */

/* Copies n little-endian elements of size es from src to host order in dst. */
static void from_le(void *dst, const void *src, size_t es, size_t n)
{
	memcpy(dst, src, es * n);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	unsigned char *p = dst;
	for (size_t k = 0; k < n; k++, p += es)
		for (size_t a = 0, b = es - 1; a < b; a++, b--) {
			unsigned char c = p[a];
			p[a] = p[b];
			p[b] = c;
		}
#endif
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		arena_oom(NULL, n, "a buffer");
	return p;
}

/* Clears every place t could hold data (typed fields, raw_data) with the
 * allocator protobuf-c unpacked with (the default: malloc/free). */
static void clear_data(Onnx__TensorProto *t)
{
	free(t->float_data), t->float_data = NULL, t->n_float_data = 0;
	free(t->int32_data), t->int32_data = NULL, t->n_int32_data = 0;
	free(t->int64_data), t->int64_data = NULL, t->n_int64_data = 0;
	free(t->double_data), t->double_data = NULL, t->n_double_data = 0;
	free(t->uint64_data), t->uint64_data = NULL, t->n_uint64_data = 0;
	free(t->raw_data.data), t->raw_data.data = NULL, t->raw_data.len = 0;
	t->has_raw_data = 0;
}

/* w's bytes (little-endian, numel elements) into t, keeping float_data as the
 * home of a FLOAT tensor that had its values there. */
static void replace_data(Onnx__TensorProto *t, const rt_tensor *w, size_t numel)
{
	int in_float_data = t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && !t->has_raw_data &&
			    t->n_float_data > 0;
	clear_data(t);
	if (in_float_data) {
		t->float_data = xmalloc(numel * sizeof(float));
		from_le(t->float_data, w->data, sizeof(float), numel);
		t->n_float_data = numel;
	} else {
		t->raw_data.data = xmalloc(w->nbytes);
		memcpy(t->raw_data.data, w->data, w->nbytes);
		t->raw_data.len = w->nbytes;
		t->has_raw_data = 1;
	}
}

/* Checks weights tensor w against initializer r; 0 when it may replace it. */
static int check_tensor(export_ctx *X, const init_ref *r, const rt_tensor *w, size_t *numel)
{
	const Onnx__TensorProto *t = r->t;
	arena *A = X->A;
	const char *wt = arena_printf(A, "%s %s", onnx_dtype_name(w->dtype), dims_str(A, w->rank, w->dims));
	if (r->count > 1) {
		export_error(X, X->weights, "tensor '%s': %s has %d initializers of that name (in %s and "
			     "nested graphs); cellc export cannot tell which one it is", w->name, X->model,
			     r->count, r->where);
		return -1;
	}
	if (t->segment) {
		export_error(X, X->model, "initializer '%s' is a segment of a larger tensor, which cellc "
			     "export does not rewrite", w->name);
		return -1;
	}
	int same = t->has_data_type && t->data_type == w->dtype && t->n_dims == (size_t)w->rank;
	for (int k = 0; same && k < w->rank; k++)
		same = t->dims[k] == w->dims[k];
	if (!same) {
		int in_main = r->where == main_graph;
		export_error(X, X->weights, "tensor '%s' is %s; initializer '%s' of %s%s%s is %s", w->name, wt,
			     w->name, X->model, in_main ? "" : " in ", in_main ? "" : r->where, init_type(A, t));
		return -1;
	}
	size_t es = rt_dtype_size(w->dtype), n = 1;
	for (int k = 0; k < w->rank; k++)
		n *= (size_t)w->dims[k];    /* rt_tf_open bounded these by the file size */
	if (!es || n * es != w->nbytes) {
		export_error(X, X->weights, "tensor '%s' (%s) has %zu bytes of data; cellc export cannot "
			     "store it", w->name, wt, w->nbytes);
		return -1;
	}
	*numel = n;
	return 0;
}

/* ---- writing ---- */

/* buf[len] to path through a temporary beside it, fsynced, then renamed. */
static int write_atomic(export_ctx *X, const char *path, const void *buf, size_t len)
{
	size_t plen = strlen(path);
	char *tmp = xmalloc(plen + sizeof ".tmp.XXXXXX");
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
	int fd = mkstemp(tmp);
	if (fd < 0) {
		export_error(X, path, "cannot create a temporary file beside it: %s", strerror(errno));
		free(tmp);
		return -1;
	}
	const unsigned char *p = buf;
	size_t left = len;
	int bad = fchmod(fd, 0644) != 0;
	while (!bad && left) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			bad = 1;
		else
			p += w, left -= (size_t)w;
	}
	bad = bad || fsync(fd) != 0;
	int e = errno;
	bad |= close(fd) != 0;
	if (!bad && rename(tmp, path) != 0) {
		e = errno;
		bad = 1;
	}
	if (bad) {
		export_error(X, path, "cannot write the exported model: %s", strerror(e ? e : EIO));
		unlink(tmp);
	}
	free(tmp);
	return bad ? -1 : 0;
}

/* ---- the whole export ---- */

static void report(export_ctx *X, const char *out, int nskipped)
{
	int nrep = 0;
	for (int k = 0; k < X->ninits; k++) {
		const init_ref *r = &X->inits[k];
		nrep += r->replaced;
		int in_main = r->where == main_graph;
		printf("%-8s %s %s%s%s\n", r->replaced ? "replaced" : "kept", r->t->name, init_type(X->A, r->t),
		       in_main ? "" : " in ", in_main ? "" : r->where);
	}
	printf("%d of %d initializers replaced (%d checkpoint tensors '@...' ignored); wrote %s\n", nrep,
	       X->ninits, nskipped, out);
}

/* Replaces the initializers named in tf; returns the '@' tensors skipped. */
static int replace_all(export_ctx *X, const rt_tensorfile *tf)
{
	int skipped = 0;
	for (int i = 0; i < tf->count; i++) {
		const rt_tensor *w = &tf->t[i];
		if (w->name[0] == '@') {
			skipped++;
			continue;
		}
		init_ref *r = onnx_map_get(&X->by_name, w->name);
		if (!r) {
			const char *why = onnx_map_get(&X->sparse, w->name) ? " (it is a sparse initializer, which "
				"cellc export does not rewrite)" : onnx_map_get(&X->inputs, w->name) ? " (it is a "
				"graph input, not an initializer)" : "";
			export_error(X, X->weights, "tensor '%s' has no initializer of that name in %s%s", w->name,
				     X->model, why);
			X->nunknown++;
			continue;
		}
		size_t numel;
		if (check_tensor(X, r, w, &numel) != 0)
			continue;
		if (is_external(r->t))
			continue;       /* reported already */
		replace_data(r->t, w, numel);
		r->replaced = 1;
	}
	return skipped;
}

static void check_strict(export_ctx *X)
{
	for (int k = 0; k < X->ninits; k++) {
		const init_ref *r = &X->inits[k];
		if (!r->replaced && r->t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
		    onnx_map_get(&X->used, r->t->name) && onnx_map_get(&X->by_name, r->t->name) == r)
			export_error(X, X->weights, "no tensor for initializer '%s' (%s) of %s (--strict wants "
				     "every float initializer the model uses)", r->t->name, init_type(X->A, r->t),
				     X->model);
	}
}

static int export_model(export_ctx *X, Onnx__ModelProto *m, const char *out, const onnx_export_opts *o)
{
	index_graph(X, m->graph, main_graph);
	for (int k = 0; k < X->ninits; k++)
		if (is_external(X->inits[k].t))
			export_error(X, X->model, "initializer '%s' keeps its data in the external file '%s'; "
				     "cellc export rewrites only initializers stored inside the model file (save it "
				     "with onnx.save_model(model, path, save_as_external_data=False) first)",
				     X->inits[k].t->name, external_location(X->inits[k].t));
	rt_tensorfile tf;
	int st = rt_tf_open(&tf, X->weights);
	if (st != RT_OK) {
		export_error(X, X->weights, "cannot read the weights file: %s", rt_status_str(st));
		return -1;
	}
	int skipped = replace_all(X, &tf);
	if (X->nunknown)
		export_note(X, X->weights, "a weights file to export holds the model's own initializers, as the "
			    "NAME.weights of a `cellc compile --train` build and its checkpoints do; an inference "
			    "build's NAME.weights holds weights cellc derived from them");
	if (o->strict)
		check_strict(X);
	rt_tf_close(&tf);
	if (X->D->nerrors > X->errors_before)
		return -1;
	size_t len = onnx__model_proto__get_packed_size(m);
	if (len > MODEL_FILE_LIMIT) {
		export_error(X, out, "the exported model would have %zu bytes, over protobuf's 2 GiB limit", len);
		return -1;
	}
	unsigned char *buf = xmalloc(len);
	size_t packed = onnx__model_proto__pack(m, buf);
	ASSERT(packed == len);
	int rc = write_atomic(X, out, buf, len);
	free(buf);
	if (rc == 0 && o->report)
		report(X, out, skipped);
	return rc;
}

int onnx_export(diag *D, const char *model, const char *weights, const char *out, const onnx_export_opts *o)
{
	char err[400];
	unsigned char *buf;
	size_t len;
	arena A;
	int errors_before = D->nerrors;
	export_ctx X = {.A = &A, .D = D, .model = model, .weights = weights, .errors_before = errors_before};
	D->file = model;
	if (onnx_read_file(model, MODEL_FILE_LIMIT, &buf, &len, err, sizeof err) != 0) {
		diag_error(D, "cannot read the model: %s", err);
		return -1;
	}
	if (len == 0 || onnx_wire_check(buf, len, &onnx__model_proto__descriptor, err, sizeof err) != 0) {
		diag_error(D, "not a valid ONNX model: %s", len ? err : "the file is empty");
		free(buf);
		return -1;
	}
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
	free(buf);
	if (!m || !m->graph) {
		diag_error(D, "not a valid ONNX model: %s", m ? "no graph (is this an ONNX file?)"
			   : "protobuf parse failed (the file is truncated, damaged or not an ONNX protobuf)");
		if (m)
			onnx__model_proto__free_unpacked(m, NULL);
		return -1;
	}
	arena_init(&A);
	int rc = export_model(&X, m, out, o);
	arena_free(&A);
	onnx__model_proto__free_unpacked(m, NULL);
	return rc == 0 && D->nerrors == errors_before ? 0 : -1;
}
