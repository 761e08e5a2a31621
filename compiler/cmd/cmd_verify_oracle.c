/* cmd_verify_oracle.c: `cellc verify --oracle` for cmd_verify.c: random
 * inputs for the model (fixed by the seed, shaped by the --dim values) and
 * the reference outputs ONNX Runtime gives on them (node runs the
 * ort_run.js template with onnxruntime-node), written as the data sets
 * `verify` then compares against.  cmd_verify.h: what the two share.
 */
#define _XOPEN_SOURCE 700

#include "infer.h"
#include "cmd.h"
#include "cmd_verify.h"
#include "testdata.h"
#include "lower.h"
#include "train.h"
#include "util.h"
#include "cellrt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the ONNX Runtime oracle ---- */

/* splitmix64: a small generator whose sequence is fixed by the seed. */
static uint64_t next_rand(uint64_t *st)
{
	uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int64_t verify_sym_value(const verify *V, const char *name)
{
	/* each step follows one --dim SYM=OTHER or one link: at most as many as there are */
	for (int hop = 0; name && hop <= V->ndims + (V->gi ? V->gi->nlinks : 0); hop++) {
		const char *next = NULL;
		for (int j = 0; j < V->ndims && !next; j++)
			if (!strcmp(V->dims[j].name, name)) {
				if (!V->dims[j].same)
					return V->dims[j].dim;
				next = V->dims[j].same;
			}
		for (int j = 0; !next && V->gi && j < V->gi->nlinks; j++)
			if (!V->gi->links[j].at_least && !strcmp(V->gi->links[j].name, name)) {
				if (!V->gi->links[j].into)
					return V->gi->links[j].value;
				next = V->gi->links[j].into;
			}
		name = next;
	}
	return -1;
}

/* A dim of the loaded graph with the --dim values; -1 after a message. */
static int64_t dim_value(verify *V, ir_dim d, const char *what)
{
	int64_t v = d.k;
	const ir_graph *g = V->g0;
	for (int i = 0; i < g->nsyms; i++) {
		if (!d.pow[i])
			continue;
		/* derived: from the values of the free symbols it is made of */
		unsigned fr = ir_sym_frees(g, i);
		int64_t fv[IR_MAX_SYMS] = {0};
		const char *given = "";
		for (int b = 0; b < g->nsyms; b++) {
			if (!(fr >> b & 1))
				continue;
			int64_t bv = verify_sym_value(V, g->syms[b]);
			if (bv < 0) {
				char *all = "";
				for (int k = 0; k < g->nsyms; k++)
					if (ir_sym_free(g, k))
						all = arena_printf(&V->A, "%s%s%s", all, *all ? ", " : "", g->syms[k]);
				fprintf(stderr, "cellc verify: %s has the dimension symbol '%s': give the value of '%s' "
						"with --dim %s=V, or --dim %s=OTHER if it is another symbol's (the model's "
						"symbols: %s)%s%s\n",
					what, g->syms[i], g->syms[b], g->syms[b], g->syms[b], all,
					V->gi_why ? "; with the sizes given, the model does not compile, so which sizes "
					"its operators make one is not known: " : "", V->gi_why ? V->gi_why : "");
				return -1;
			}
			if (bv < ir_sym_least(g, b)) {
				fprintf(stderr, "cellc verify: %s: '%s' = %lld is below its least value (%lld: a "
						"slice of that axis by a constant bound needs it)\n", what, g->syms[b],
					(long long)bv, (long long)ir_sym_least(g, b));
				return -1;
			}
			fv[b] = bv;
			given = arena_printf(&V->A, "%s%s%s = %lld", given, *given ? ", " : "", g->syms[b], (long long)bv);
		}
		int64_t x = ir_sym_value(g, i, fv);
		if (x < 1) {
			fprintf(stderr, "cellc verify: %s: '%s' = %s is %lld with %s; it must be at least 1\n", what,
				g->syms[i], ir_sym_def_str(&V->A, g, i), (long long)x, given);
			return -1;
		}
		for (int p = 0; p < d.pow[i]; p++)
			v *= x;
	}
	return v;
}

/* How graph input x feeds a recurrent operator: 1 as a weight (W, R, B, P),
 * 2 as sequence_lens (*T set to the sequence length), 0 otherwise. */
static int rnn_role(verify *V, const ir_value *x, int64_t *T)
{
	for (int i = 0; i < V->g0->nnodes; i++) {
		const ir_node *n = V->g0->nodes[i];
		if (n->op != OP_LSTM && n->op != OP_GRU && n->op != OP_RNN)
			continue;
		for (int k = 1; k < n->nin; k++) {
			if (n->in[k] != x)
				continue;
			if (k == 4) {
				int lay = (int)ir_attr_int(n, "layout", 0);
				*T = n->in[0] && n->in[0]->shape.rank == 3
					? dim_value(V, n->in[0]->shape.d[lay ? 1 : 0], "the sequence input") : 1;
				return 2;
			}
			if (k <= 3 || (k == 7 && n->op == OP_LSTM))
				return 1;
		}
	}
	return 0;
}

static int write_all(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(data, 1, n, f) == n;
	if (f)
		ok &= fclose(f) == 0;
	if (!ok)
		fprintf(stderr, "cellc verify: cannot write '%s': %s\n", path, strerror(errno));
	return ok ? 0 : -1;
}

/* A serialized TensorProto (what onnx.numpy_helper.from_array writes). */
static int write_pb(verify *V, const char *path, const char *name, int dtype, int rank,
		    const int64_t *dims, const void *data, size_t nbytes)
{
	size_t n;
	uint8_t *buf = onnx_tensor_pack(&V->A, name, dtype, rank, dims, data, nbytes, &n);
	return write_all(path, buf, n);
}

/* The --bind given for input x, or NULL. */
static const onnx_binding *bind_of(const verify *V, const ir_value *x)
{
	for (int j = 0; j < V->nbinds; j++)
		if (!strcmp(V->binds[j].name, x->name))
			return &V->binds[j];
	return NULL;
}

/* Input x's data from its --bind b (a number for a scalar input, or the
 * tensor of a file, which must have x's dtype and shape dims[rank]): *data
 * and *nb; 0, or -1 after a message. */
static int bound_data(verify *V, const ir_value *x, const onnx_binding *b, const int64_t *dims, int64_t n,
		      unsigned char **data, size_t *nb)
{
	size_t es = ir_dtype_size(x->dtype);
	if (b->value) {
		if (n != 1 || x->narrow || !es) {
			fprintf(stderr, "cellc verify: --bind %s=%s: input '%s' is %s, not one number: bind it to a "
					"TensorProto file (--bind %s=FILE.pb)\n", b->name, b->value, x->name,
				ir_shape_str(&V->A, V->g0, &x->shape), b->name);
			return -1;
		}
		char *end;
		double v = strtod(b->value, &end);
		*data = arena_alloc(&V->A, es + 8);
		*nb = es;
		int is_int = x->dtype != DT_F32 && x->dtype != DT_F64;
		if (is_int && (v != floor(v) || fabs(v) > 9.0e15)) {
			fprintf(stderr, "cellc verify: --bind %s=%s: input '%s' is %s and cannot hold %s\n", b->name,
				b->value, x->name, ir_dtype_name(x->dtype), b->value);
			return -1;
		}
		switch (x->dtype) {
		case DT_F32: *(float *)*data = (float)v; break;
		case DT_F64: *(double *)*data = v; break;
		case DT_I64: *(int64_t *)*data = (int64_t)v; break;
		case DT_I32: *(int32_t *)*data = (int32_t)v; break;
		case DT_U64: *(uint64_t *)*data = (uint64_t)v; break;
		case DT_U32: *(uint32_t *)*data = (uint32_t)v; break;
		case DT_I16: case DT_U16: *(int16_t *)*data = (int16_t)v; break;
		default: **data = (unsigned char)v; break;
		}
		return 0;
	}
	diag D;
	diag_init(&D, b->path);
	ir_value *t = td_read_file(V->scratch, &D, b->path);
	int bad = !t || D.nerrors;
	ir_shape want = {.rank = x->shape.rank};
	for (int i = 0; i < want.rank; i++)
		want.d[i] = ir_dim_const(dims[i]);
	if (!bad && (t->dtype != x->dtype || !ir_shape_eq(&t->shape, &want) || !t->data)) {
		fprintf(stderr, "cellc verify: --bind %s=%s: the file holds %s%s; input '%s' is %s%s here\n", b->name,
			b->path, ir_dtype_name(t->dtype), ir_shape_str(&V->A, V->scratch, &t->shape), x->name,
			ir_dtype_name(x->dtype), ir_shape_str(&V->A, V->scratch, &want));
		bad = 1;
	}
	diag_finish(&D);
	if (bad)
		return -1;
	*data = t->data;
	*nb = (size_t)n * es;
	return 0;
}

/* Random inputs of set dir: input_K.pb for cellc, input_K.bin and
 * inputs.txt for ort_run.js; an input given by --bind holds its value. */
static int make_inputs(verify *V, const char *dir, uint64_t *rng)
{
	const ir_graph *g = V->g0;
	FILE *list = fopen(arena_printf(&V->A, "%s/inputs.txt", dir), "w");
	if (!list) {
		fprintf(stderr, "cellc verify: cannot write in '%s': %s\n", dir, strerror(errno));
		return -1;
	}
	int rc = 0;
	for (int k = 0; k < g->ninputs && !rc; k++) {
		const ir_value *x = g->inputs[k];
		int64_t dims[RT_TF_MAXRANK], n = 1, T = 1;
		const char *what = arena_printf(&V->A, "input '%s'", x->name);
		if (x->shape.rank < 0 || x->shape.rank > RT_TF_MAXRANK) {
			fprintf(stderr, "cellc verify: %s has no usable shape for random data\n", what);
			rc = -1;
			break;
		}
		for (int i = 0; i < x->shape.rank && !rc; i++) {
			dims[i] = dim_value(V, x->shape.d[i], what);
			rc = dims[i] < 0 ? -1 : 0;
			n *= dims[i] > 0 ? dims[i] : 0;
		}
		if (rc)
			break;
		int role = rnn_role(V, x, &T);
		if (T < 1) {
			rc = -1;
			break;
		}
		const onnx_binding *bd = bind_of(V, x);
		if (V->bound[k] && role != 1 && !bd) {
			fprintf(stderr, "cellc verify: %s determines a shape, so random values cannot be used; "
					"give its value with --bind %s=NUMBER or --bind %s=FILE.pb, or verify with --data\n",
				what, x->name, x->name);
			rc = -1;
			break;
		}
		/* a FLOAT16 input (float32 inside) is written as float16 encodings */
		int fdt = x->narrow ? (int)x->narrow : (int)x->dtype;
		size_t es = x->narrow ? 2 : ir_dtype_size(x->dtype);
		if (!es || x->dtype == DT_STRING || x->narrow == DT_BF16) {
			fprintf(stderr, "cellc verify: %s: random %s data are not supported\n", what,
				ir_dtype_name(x->narrow ? x->narrow : x->dtype));
			rc = -1;
			break;
		}
		unsigned char *data = NULL;
		size_t nb = (size_t)n * es;
		if (bd && bound_data(V, x, bd, dims, n, &data, &nb)) {
			rc = -1;
			break;
		}
		if (!bd)
			data = arena_alloc(&V->A, (size_t)n * es + 1);
		/* an input whose value is a size (a Loop's trip count): that size */
		int vs = ir_input_value_sym(g, k);
		if (vs >= 0 && !bd) {
			int64_t v = dim_value(V, ir_dim_sym(vs), what);
			if (v < 0) {
				rc = -1;
				break;
			}
			int32_t v32 = (int32_t)v;       /* sizes are within INT32_MAX */
			if (x->dtype == DT_I32)
				memcpy(data, &v32, sizeof v32);
			else
				memcpy(data, &v, sizeof v);     /* int64 or int32, one element (ir_verify) */
		}
		for (int64_t i = 0; !bd && vs < 0 && i < n; i++) {
			uint64_t r = next_rand(rng);
			double u = (double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0;  /* [-1, 1) */
			int64_t iv = role == 2 ? 1 + (int64_t)(r % (uint64_t)T) : (int64_t)(r & 1);
			switch (x->narrow ? DT_F16 : x->dtype) {
			case DT_F16: ((uint16_t *)data)[i] = rt_f32_to_f16((float)u); break;
			case DT_F32: ((float *)data)[i] = (float)u; break;
			case DT_F64: ((double *)data)[i] = u; break;
			case DT_I32: ((int32_t *)data)[i] = (int32_t)iv; break;
			case DT_I64: ((int64_t *)data)[i] = iv; break;
			case DT_U32: ((uint32_t *)data)[i] = (uint32_t)iv; break;
			case DT_U64: ((uint64_t *)data)[i] = (uint64_t)iv; break;
			case DT_I16: case DT_U16: ((int16_t *)data)[i] = (int16_t)iv; break;
			default: data[i] = (unsigned char)iv; break;    /* 1-byte types */
			}
		}
		char *dl = "";
		for (int i = 0; i < x->shape.rank; i++)
			dl = arena_printf(&V->A, "%s%s%lld", dl, i ? "," : "", (long long)dims[i]);
		fprintf(list, "%s\t%d\t%s\tinput_%d.bin\n", x->name, fdt, dl, k);
		rc = write_pb(V, arena_printf(&V->A, "%s/input_%d.pb", dir, k), x->name, fdt,
			      x->shape.rank, dims, data, nb) ||
		     write_all(arena_printf(&V->A, "%s/input_%d.bin", dir, k), data, nb) ? -1 : 0;
	}
	if (fclose(list) != 0)
		rc = -1;
	return rc;
}

/* ONNX Runtime's outputs of set dir (outputs.txt, output_K.bin) as output_K.pb. */
static int convert_outputs(verify *V, const char *dir)
{
	const char *lp = arena_printf(&V->A, "%s/outputs.txt", dir);
	FILE *f = fopen(lp, "r");
	if (!f) {
		fprintf(stderr, "cellc verify: onnxruntime wrote no %s\n", lp);
		return -1;
	}
	char line[4096];
	int k = 0, rc = 0;
	while (!rc && fgets(line, sizeof line, f)) {
		/* name TAB dtype TAB dims TAB file (dims empty for a scalar) */
		char *field[4] = {line, NULL, NULL, NULL};
		for (int i = 1; i < 4 && field[i - 1]; i++) {
			field[i] = strchr(field[i - 1], '\t');
			if (field[i])
				*field[i]++ = 0;
		}
		if (!field[3]) {
			fprintf(stderr, "cellc verify: %s: malformed line %d\n", lp, k + 1);
			rc = -1;
			break;
		}
		field[3][strcspn(field[3], "\r\n")] = 0;
		char *name = field[0], *dt = field[1], *dl = field[2], *file = field[3];
		int64_t dims[RT_TF_MAXRANK];
		int rank = 0;
		for (char *p = dl; *p && rank < RT_TF_MAXRANK;) {
			dims[rank++] = strtoll(p, &p, 10);
			if (*p == ',')
				p++;
			else
				break;
		}
		const char *bp = arena_printf(&V->A, "%s/%s", dir, file);
		FILE *b = fopen(bp, "rb");
		size_t cap = 1 << 16, n = 0, got;
		unsigned char *buf = malloc(cap);
		while (b && buf && (got = fread(buf + n, 1, cap - n, b)) > 0) {
			n += got;
			if (n == cap)
				buf = realloc(buf, cap *= 2);
		}
		if (!b || !buf) {
			fprintf(stderr, "cellc verify: cannot read %s\n", bp);
			rc = -1;
		} else {
			rc = write_pb(V, arena_printf(&V->A, "%s/output_%d.pb", dir, k), name, atoi(dt), rank, dims,
				      buf, n);
		}
		if (b)
			fclose(b);
		free(buf);
		k++;
	}
	fclose(f);
	if (!rc && k != V->g0->noutputs) {
		fprintf(stderr, "cellc verify: onnxruntime gave %d outputs, the model has %d\n", k, V->g0->noutputs);
		rc = -1;
	}
	return rc;
}

/* Where onnxruntime-node is (DIR/node_modules/onnxruntime-node), installed
 * there with npm when missing; NULL after a message. */
static const char *ort_find(verify *V)
{
	const char *dir = cmd_ort_dir(&V->A);
	if (!dir) {
		fprintf(stderr, "cellc verify: no place for onnxruntime-node (neither HOME nor XDG_CACHE_HOME "
				"is set): set CELLC_ORT_DIR to a directory holding node_modules/onnxruntime-node\n");
		return NULL;
	}
	if (access(arena_printf(&V->A, "%s/node_modules/onnxruntime-node/package.json", dir), R_OK) == 0)
		return dir;
	fprintf(stderr, "cellc verify: installing onnxruntime-node into %s (npm install --ignore-scripts)\n", dir);
	if (cmd_mkdirs("verify", dir))
		return NULL;
	const char *log = arena_printf(&V->A, "%s/npm.log", V->root);
	char *argv[] = {"npm", "install", "--prefix", (char *)dir, "--ignore-scripts", "--no-audit", "--no-fund",
			"onnxruntime-node", NULL};
	int st = verify_run_logged(argv, log);
	if (st != 0 || access(arena_printf(&V->A, "%s/node_modules/onnxruntime-node/package.json", dir), R_OK) != 0) {
		fprintf(stderr, "cellc verify: `npm install onnxruntime-node --ignore-scripts` failed (status %d); "
				"set CELLC_ORT_DIR to a directory holding node_modules/onnxruntime-node:\n", st);
		verify_show_file(log, "  | ");
		return NULL;
	}
	return dir;
}

/* Why ONNX Runtime may refuse the model, for the message. */
static const char *ort_hint(verify *V)
{
	for (int i = 0; i < V->g0->nnodes; i++) {
		const ir_node *n = V->g0->nodes[i];
		if ((n->op == OP_LSTM || n->op == OP_GRU || n->op == OP_RNN) && ir_attr_int(n, "layout", 0))
			return arena_printf(&V->A, "\ncellc verify: node '%s' (%s) has layout=1 (batch first), which "
					     "ONNX Runtime does not implement; verify such a model with --data "
					     "(golden outputs from another oracle, e.g. PyTorch)", n->name,
					     ir_op_name(n->op));
	}
	return "";
}

/* Makes the golden data sets with ONNX Runtime and adds them as --data. */
int verify_oracle_make(verify *V)
{
	for (int k = 0; k < V->g0->ninputs; k++)
		if (V->g0->inputs[k]->seq != IR_TENSOR) {
			fprintf(stderr, "cellc verify: input '%s' is a sequence or optional; --oracle makes random "
					"tensors only: use --data\n", V->g0->inputs[k]->name);
			return -1;
		}
	const char *gdir = V->golden ? V->golden : arena_printf(&V->A, "%s/golden", V->root);
	uint64_t rng = V->seed;
	char **argv = arena_array(&V->A, (size_t)V->ninputs + 5, sizeof *argv);
	const char *script = arena_printf(&V->A, "%s/ort_run.js", V->root);
	const char *text = emit_template("ort_run.js");
	ASSERT(text);
	if (write_all(script, text, strlen(text)))
		return -1;
	int na = 0;
	argv[na++] = "node";
	argv[na++] = (char *)script;
	argv[na++] = (char *)V->model;
	for (int sidx = 0; sidx < V->ninputs; sidx++) {
		const char *d = arena_printf(&V->A, "%s/test_data_set_%d", gdir, sidx);
		if (cmd_mkdirs("verify", d) || make_inputs(V, d, &rng))
			return -1;
		argv[na++] = (char *)d;
	}
	argv[na] = NULL;
	const char *ort = ort_find(V);
	if (!ort)
		return -1;
	setenv("NODE_PATH", arena_printf(&V->A, "%s/node_modules", ort), 1);
	const char *log = arena_printf(&V->A, "%s/ort.log", V->root);
	int st = verify_run_logged(argv, log);
	if (st != 0) {
		fprintf(stderr, "cellc verify: %s %s (node exit status %d):\n", st == 3 ? "onnxruntime refuses" :
			"onnxruntime could not be run on", V->model, st);
		verify_show_file(log, "  | ");
		fprintf(stderr, "%s\n", ort_hint(V) + (*ort_hint(V) ? 1 : 0));
		return -1;
	}
	for (int sidx = 0; sidx < V->ninputs; sidx++) {
		const char *d = arena_printf(&V->A, "%s/test_data_set_%d", gdir, sidx);
		if (convert_outputs(V, d) || td_collect(&V->A, "verify", d, &V->L))
			return -1;
		/* the raw files were for ort_run.js only: the set is in the backend-test layout */
		for (int k = 0; k < V->g0->ninputs; k++)
			remove(arena_printf(&V->A, "%s/input_%d.bin", d, k));
		for (int k = 0; k < V->g0->noutputs; k++)
			remove(arena_printf(&V->A, "%s/output_%d.bin", d, k));
		remove(arena_printf(&V->A, "%s/inputs.txt", d));
		remove(arena_printf(&V->A, "%s/outputs.txt", d));
	}
	if (V->golden)
		fprintf(stderr, "cellc verify: golden data (ONNX Runtime) saved in %s\n", V->golden);
	return 0;
}
