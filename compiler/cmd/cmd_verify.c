/* cmd_verify.c: `cellc verify MODEL --data DIR...`: compile, build, run and
 * compare with reference outputs.
 *
 *   cellc verify MODEL --data DIR [--data DIR ...] [--rtol R] [--atol A]
 *                [--keep DIR] [--name NAME] [--no-hoist] [--no-fuse] [--werror-fallback]
 *
 * A data directory holds input_N and output_N files, .pb (serialized ONNX
 * TensorProtos, as in the ONNX backend tests) or .npy, read as
 * `compile --testbench` reads them (testdata.c); a directory holding
 * test_data_set_* subdirectories stands for all of them.  Input N feeds graph
 * input N, output N is compared with graph output N.  Data that do not fit
 * are refused (exit 2, the file and the tensor named), never scored: a
 * TensorProto name other than the model's at that position, a dtype, rank or
 * size the compiled model fixes other than its input's or output's.
 *
 * --dim and --bind are `cellc compile`'s (cmd_add_dim_bind, cmd_add_bind); a
 * --bind input is compiled as that constant, and every data set must hold
 * the value given (check_binds).  When the model does not get through
 * inference with its free symbols left symbolic (a reflect Pad over a
 * run-time length), each data set is compiled for its own sizes, read off
 * its inputs (verify_sizes), and a line on stderr says so and why.
 *
 * cellc fixes shapes at compile time, so graph inputs whose values decide a
 * shape (a Reshape target, Slice bounds, ...) or that are the weights of an
 * LSTM/GRU/RNN cannot be run-time inputs (found by walking the graph
 * backwards from those operands): they are bound to the constant from each
 * data directory (onnx_load_bound) and the model is compiled once per
 * directory.  Otherwise it is compiled once.
 *
 * Sequence and optional inputs are always bound (lower_seq.c resolves them
 * at compile time).  An output of sequence or optional type is read from
 * output_N.pb as a SequenceProto/OptionalProto and compared tensor by tensor
 * with the compiled outputs NAME_0, NAME_1, ... (onnx_seq_flatten); outputs
 * are matched by name, and the compiled model must have no others.
 *
 * Each compilation goes into a fresh directory (mkdtemp under $TMPDIR, or
 * --keep DIR, which is kept): emit_model's files, NAME_driver.c (the generic
 * driver, templates/driver.c), then `make` and the driver build with the
 * emitted code's warning flags.  Per data directory the remaining inputs are
 * written as a tensor file, the driver runs, and each output is compared:
 * same dtype and shape, then |got - ref| <= atol + rtol |ref| elementwise
 * (NaN matches NaN only; integer and bool types exactly).  Output:
 *
 *   PASS|FAIL <dir> <output> max_abs=<e> max_rel=<e>     one line per output
 *   N passed, M failed
 *
 * Exit status: 0 all pass, 1 any mismatch or failed run, 2 the model could
 * not be compiled or built, or the command line or data are unusable
 * (unreadable, or not the model's).
 *
 * Golden data without PyTorch:
 *
 *   cellc verify MODEL --oracle onnxruntime --inputs N [--dim SYM=V]...
 *                [--bind NAME=V]... [--seed S] [--save-golden DIR] [--report json FILE]
 *
 * makes N data sets of random inputs of the declared shapes (symbols set by
 * --dim, or by the size an operator makes them one with: V->gi; a --bind
 * input holds its value; floats uniform in [-1, 1), sequence_lens in [1, T], other integers
 * 0 or 1; a fixed generator seeded by --seed), writes them as input_N.pb in
 * DIR/test_data_set_K (the ONNX backend-test layout; a temporary directory
 * without --save-golden), runs ONNX Runtime on them (templates/ort_run.js
 * with npm's onnxruntime-node, found in $CELLC_ORT_DIR, a build tree's
 * build/ort or $XDG_CACHE_HOME/cellc/ort (cmd_home.c), else installed there
 * with `npm install --ignore-scripts`), writes its
 * outputs as output_N.pb (cmd_verify_oracle.c), and then verifies as with
 * --data.  ONNX Runtime
 * does not implement layout=1 for LSTM/GRU/RNN: such a model is reported as
 * refused (exit 2).  --report json FILE (either mode) writes every result
 * and the summary as JSON.
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

static const char usage[] =
	"usage: cellc verify MODEL --data DIR [--data DIR ...] [--dim SYM=N|OTHER]... [--bind NAME=V]... [options]\n"
	"       cellc verify MODEL --oracle onnxruntime [--inputs N] [--dim SYM=V]... [--bind NAME=V]... [options]\n"
	"\n"
	"Compiles MODEL (.onnx or .cell), builds it with a generic driver, runs it on the\n"
	"inputs of each data directory (input_N) and compares with its outputs\n"
	"(output_N).\n"
	"  --data DIR    a directory with input_N/output_N files (.pb or .npy), or one\n"
	"                with test_data_set_* subdirectories (repeatable)\n"
	"  --rtol R      relative tolerance (default 1e-4)\n"
	"  --atol A      absolute tolerance (default 1e-5): pass if |got-ref| <= A + R|ref|\n"
	"  --keep DIR    build in DIR and keep it (default: a temporary directory, removed)\n"
	"  --name NAME   prefix of the emitted API (default: from the model file name)\n"
	"  --dim SYM=N   as for `cellc compile`: fix symbol SYM to N (a model that holds a\n"
	"                size fixed when it was exported; with --oracle, see below)\n"
	"  --dim SYM=OTHER  as for `cellc compile`: symbols SYM and OTHER are one size\n"
	"  --bind NAME=FILE.pb, --bind NAME=NUMBER   as for `cellc compile`: input NAME is\n"
	"                compiled as that constant; every data set must hold that value\n"
	"                (with --oracle the random inputs give NAME that value)\n"
	"                A model that compiles only for fixed sizes (a reflect Pad or a strided\n"
	"                Conv over a symbolic length) is compiled for the sizes of each data\n"
	"                set, and verify says so: no --dim is needed for that.\n"
	"  --no-hoist, --no-fuse, --weights M   as for `cellc compile` (compare a bf16 or\n"
	"                int8 build with the float32 golden data, with tolerances that accept it)\n"
	"  --werror-fallback   as for `cellc compile`: a fallback (a traced loop left\n"
	"                unrolled, a time axis left fixed) is an error (exit status 2)\n"
	"Gradients (docs/training.md):\n"
	"  --train       compile with --train; the data sets hold the model's inputs, then\n"
	"                target [, mask]; outputs are matched by TensorProto name\n"
	"  --loss L, --loss-output NAME   as for `cellc compile` (default: from the target:\n"
	"                i64 [B] ce, i64 [T, B] ce-all, f32 mse, f32 and a mask masked-mse)\n"
	"  --freeze PREFIX   as for `cellc compile`: those weights get no grad.* output\n"
	"  --grad-rtol R  loss, grad.* and dstate pass when ||got-ref|| <= R ||ref|| (1e-4)\n"
	"Golden data from ONNX Runtime instead of --data:\n"
	"  --oracle onnxruntime  run the model with ONNX Runtime (npm onnxruntime-node) on\n"
	"                        random inputs and compare with its outputs\n"
	"  --inputs N            number of random data sets (default 1)\n"
	"  --dim SYM=V           value of dimension symbol SYM in the random inputs (each\n"
	"                        symbol needs one, or --dim SYM=OTHER, unless the model's\n"
	"                        operators make it one with another; the build stays\n"
	"                        generic where the model allows)\n"
	"  --seed S              seed of the input generator (default 1)\n"
	"  --save-golden DIR     keep the data sets in DIR/test_data_set_K (backend-test layout)\n"
	"  --report json FILE    write the results as JSON (also with --data)\n"
	"Prints `PASS|FAIL <dir> <output> max_abs=<e> max_rel=<e>` per output, then\n"
	"`N passed, M failed`.  Exit status: 0 all pass, 1 a mismatch, 2 the model could\n"
	"not be compiled or the command line or data were rejected.\n";

/* ---- data sets ---- */

/* Reads every reference input and checks the counts against the model. */
static int read_inputs(verify *V, diag *D)
{
	const ir_graph *g = V->g0;
	for (int i = 0; i < V->L.n; i++) {
		td_set *s = &V->L.sets[i];
		int extra = V->po.train ? 1 + (V->topts.loss == TRAIN_MASKED_MSE) : 0;
		if (V->po.train && !V->topts.loss_given && (s->nin == g->ninputs + 1 || s->nin == g->ninputs + 2))
			extra = s->nin - g->ninputs;
		if (s->nin != g->ninputs + extra || (!V->po.train && s->nout != g->noutputs)) {
			fprintf(stderr, "cellc verify: %s has %d input_N and %d output_N files (.pb or .npy); "
					"the model has %d inputs and %d outputs\n",
				s->dir, s->nin, s->nout, g->ninputs + extra, g->noutputs);
			return -1;
		}
		s->in = arena_array(&V->A, (size_t)(s->nin + 1), sizeof *s->in);
		for (int k = 0; k < s->nin; k++) {
			if (k < g->ninputs && g->inputs[k]->seq != IR_TENSOR)
				continue;       /* bound: the loader reads it (train builds' target and
				                   mask come after the model's inputs) */
			const char *p = td_path(&V->A, s, 0, k);
			D->file = "cellc verify";   /* the reader's messages name p */
			s->in[k] = td_read_file(V->scratch, D, p);
			if (!s->in[k] || D->nerrors)
				return -1;
			/* a name of the data that is not the model's: a mix-up the
			 * numbers would hide */
			if (k < g->ninputs && td_check_name(D, p, s->in[k], g->inputs[k], "input", k))
				return -1;
			if (k < g->ninputs)
				s->in[k] = td_widen(V->scratch, s->in[k], g->inputs[k]->narrow);
		}
		if (V->po.train && !V->topts.loss_given && i == 0 && s->nin > g->ninputs) {
			/* no --loss: the target says which (i64 [B]: ce, i64 [T, B]: ce-all,
			 * f32: mse, f32 with a mask input: masked-mse) */
			const ir_value *tg = s->in[g->ninputs];
			V->topts.loss = s->nin > g->ninputs + 1 ? TRAIN_MASKED_MSE
				      : tg->dtype != DT_I64 ? TRAIN_MSE : tg->shape.rank >= 2 ? TRAIN_CE_ALL : TRAIN_CE;
		}
	}
	D->file = V->model;
	return 0;
}

/* ---- inputs that determine shapes ---- */

/* Operands that must be compile-time constants: those whose values decide
 * an output shape, and the weights of the recurrent operators (lowering
 * splits them per gate and direction; the ONNX node tests pass them as graph
 * inputs).  An If's condition is not one: cellc decides it at run time,
 * and where its branches give different shapes the compile error names the
 * --bind that decides it. */
static int const_operand(ir_op op, int k)
{
	switch (op) {
	case OP_LSTM:
		return (k >= 1 && k <= 3) || k == 7;    /* W R B, P */
	case OP_GRU: case OP_RNN:
		return k >= 1 && k <= 3;                /* W R B */
	case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_SPLIT: case OP_EXPAND:
		return k == 1;
	case OP_SLICE:
		return k >= 1;
	case OP_CONSTOFSHAPE:
		return k == 0;
	case OP_LOOP:
		return k <= 1;                          /* M, cond: the number of iterations */
	case OP_SEQINSERT:
		return k == 2;                          /* positions in sequences */
	case OP_SEQAT: case OP_SEQERASE:
		return k == 1;
	default:
		return infer_shape_input(op, k) != NULL;        /* Pad's pads, reductions' axes */
	}
}

/* Whether If n chooses between tensors, which cellc selects at run time;
 * a sequence or an optional must be known at compile time, and so must the
 * condition then. */
static int if_of_tensors(const ir_node *n)
{
	static const char *const br[2] = {"then_branch", "else_branch"};
	for (int j = 0; j < n->nout; j++)
		if (n->out[j] && n->out[j]->seq != IR_TENSOR)
			return 0;
	for (int k = 0; k < 2; k++) {
		const ir_attr *a = ir_attr_find(n, br[k]);
		for (int j = 0; a && a->kind == ATTR_GRAPH && a->g && j < a->g->noutputs; j++)
			if (a->g->outputs[j] && a->g->outputs[j]->seq != IR_TENSOR)
				return 0;
	}
	return 1;
}

static int value_index(const ir_graph *g, const ir_value *v)
{
	if (v->id >= 0 && v->id < g->nvalues && g->values[v->id] == v)
		return v->id;
	for (int i = 0; i < g->nvalues; i++)
		if (g->values[i] == v)
			return i;
	return -1;  /* a value of another graph: nothing to bind there */
}

/* Walks the root graph backwards: a value is needed as a constant if it is a
 * constant operand (above) or an input of a node with a needed output; Shape needs only
 * its input's shape, which is known without binding. */
static void find_bound_inputs(verify *V)
{
	const ir_graph *g = V->g0;
	char *need = arena_alloc(&V->A, (size_t)g->nvalues + 1);
	V->bound = arena_alloc(&V->A, (size_t)g->ninputs + 1);
	for (int i = g->nnodes - 1; i >= 0; i--) {
		const ir_node *n = g->nodes[i];
		int out_needed = 0;
		for (int j = 0; j < n->nout; j++) {
			int x = n->out[j] ? value_index(g, n->out[j]) : -1;
			out_needed |= x >= 0 && need[x];
		}
		for (int j = 0; j < n->nin; j++) {
			if (!n->in[j] || !(const_operand(n->op, j) || (out_needed && n->op != OP_SHAPE) ||
					   (n->op == OP_IF && j == 0 && !if_of_tensors(n))))
				continue;
			int x = value_index(g, n->in[j]);
			if (x >= 0)
				need[x] = 1;
		}
	}
	for (int k = 0; k < g->ninputs; k++) {
		int x = value_index(g, g->inputs[k]);
		/* sequences and optionals are resolved at compile time: always bound */
		V->bound[k] = (x >= 0 && need[x]) || g->inputs[k]->seq != IR_TENSOR;
	}
}

/* ---- processes and files ---- */

/* Runs argv with stdout and stderr into `log`; returns the exit status,
 * 128 + signal, or -1 if it could not be started. */
int verify_run_logged(char *const *argv, const char *log)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		close(fd);
		/* A parent make's jobserver descriptors are not ours to inherit. */
		unsetenv("MAKEFLAGS");
		unsetenv("MFLAGS");
		unsetenv("MAKELEVEL");
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

void verify_show_file(const char *path, const char *prefix)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof line, f) && n++ < 200)
		fprintf(stderr, "%s%s", prefix, line);
	fclose(f);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	remove(p);
	return 0;
}

/* ---- one compilation ---- */

typedef struct unit {
	const char *dir;        /* where the model and driver are built */
	const char *driver;     /* path of the built driver */
	const char *weights;    /* NAME.weights */
	ir_graph *g;            /* the compiled graph (inputs: the unbound ones) */
} unit;

/* Writes NAME_driver.c: the driver template (embedded in cellc, see
 * templates/embed.sh) behind the model's header.  The emitted Makefile builds
 * NAME_driver whenever this file exists, with the model's own flags. */
static int write_driver(verify *V, const unit *u)
{
	const char *text = emit_template("driver.c");
	ASSERT(text);
	const char *out = arena_printf(&V->A, "%s/%s_driver.c", u->dir, V->name);
	FILE *f = fopen(out, "w");
	int ok = f != NULL;
	if (f) {
		fprintf(f, "/* %s_driver.c: templates/driver.c, written by cellc verify */\n"
			   "#define CELLC_MODEL %s\n#include \"%s.h\"\n\n",
			V->name, V->name, V->name);
		ok = fputs(text, f) >= 0;
		ok &= fclose(f) == 0;
	}
	if (!ok)
		fprintf(stderr, "cellc verify: cannot write '%s': %s\n", out, strerror(errno));
	return ok ? 0 : -1;
}

/* `make` in the model's directory: builds the model and the driver with the
 * emitted Makefile, which is thereby checked too. */
static int build(verify *V, unit *u)
{
	const char *log = arena_printf(&V->A, "%s/build.log", u->dir);
	const char *make = getenv("MAKE");
	char *mk[] = {(char *)(make && *make ? make : "make"), "-s", "-C", (char *)u->dir, NULL};
	int st = verify_run_logged(mk, log);
	if (st != 0) {
		fprintf(stderr, "cellc verify: `make -C %s` failed (status %d):\n", u->dir, st);
		verify_show_file(log, "  | ");
		return -1;
	}
	u->driver = arena_printf(&V->A, "%s/%s_driver", u->dir, V->name);
	if (access(u->driver, X_OK) != 0) {
		fprintf(stderr, "cellc verify: `make -C %s` did not build %s\n", u->dir, u->driver);
		return -1;
	}
	return 0;
}

/* compile_unit's emit stage: the model's files in u->dir. */
typedef struct unit_emit {
	verify *V;
	unit *u;
} unit_emit;

static int emit_unit(ir_graph *g, diag *D, void *ctx)
{
	unit_emit *e = ctx;
	if (cmd_mkdirs("verify", e->u->dir))
		return 1;
	emit_opts eo = {.name = e->V->name, .outdir = e->u->dir, .cmdline = e->V->cmdline};
	cmd_emit_home(&e->V->A, &eo);
	return emit_model(g, D, &eo) ? 1 : 0;
}

static int compile_unit(verify *V, unit *u, int iset, int nbind, const onnx_binding *bind, arena *A,
			diag *D)
{
	u->dir = iset < 0 ? arena_printf(&V->A, "%s/model", V->root)
			  : arena_printf(&V->A, "%s/set_%d", V->root, iset);
	unit_emit e = {V, u};
	/* every compilation is of the same loops: their fallbacks are told once */
	compile_job j = {.model = V->model, .nbind = nbind, .bind = bind, .po = &V->po,
			 .emit = emit_unit, .ctx = &e,
			 .fallbacks = V->werror_fallback ? FALLBACK_ERROR
				    : V->fallbacks_told ? FALLBACK_QUIET : FALLBACK_WARN};
	V->fallbacks_told = 1;
	int errs = compile_run(A, D, &j);
	u->g = j.g;
	if (errs)
		return -1;
	u->weights = arena_printf(&V->A, "%s/%s.weights", u->dir, V->name);
	if (write_driver(V, u) || build(V, u))
		return -1;
	return 0;
}

/* ---- running and comparing ---- */

static void record(verify *V, const char *set, const char *output, int pass, double max_abs,
		   double max_rel, const char *why)
{
	if (V->nres == V->capres) {
		int c = V->capres ? 2 * V->capres : 64;
		V->res = arena_grow(&V->A, V->res, (size_t)V->nres, (size_t)c, sizeof *V->res);
		V->capres = c;
	}
	/* copies: the names may belong to a compilation's arena, freed after it */
	V->res[V->nres++] = (result){arena_strdup(&V->A, set), arena_strdup(&V->A, output),
				     why ? arena_strdup(&V->A, why) : NULL, pass, max_abs, max_rel};
}

static void fail_all(verify *V, const td_set *s, const char *why)
{
	fprintf(stderr, "cellc verify: %s: %s\n", s->dir, why);
	for (int k = 0; k < V->g0->noutputs; k++) {
		record(V, s->dir, V->g0->outputs[k]->name, 0, NAN, NAN, why);
		printf("FAIL %s %s max_abs=nan max_rel=nan\n", s->dir, V->g0->outputs[k]->name);
		V->failed++;
	}
}

static int is_float(int dt) { return dt == DT_F32 || dt == DT_F64; }

static double elem(const void *p, int dt, size_t i)
{
	switch (dt) {
	case DT_F32: return ((const float *)p)[i];
	case DT_F64: return ((const double *)p)[i];
	case DT_I8: return ((const int8_t *)p)[i];
	case DT_U8: case DT_BOOL: return ((const uint8_t *)p)[i];
	case DT_I16: return ((const int16_t *)p)[i];
	case DT_U16: return ((const uint16_t *)p)[i];
	case DT_I32: return ((const int32_t *)p)[i];
	case DT_U32: return ((const uint32_t *)p)[i];
	case DT_I64: return (double)((const int64_t *)p)[i];
	case DT_U64: return (double)((const uint64_t *)p)[i];
	default: UNREACHABLE();
	}
}

/* Compares one output; prints its line. */
static void compare(verify *V, const td_set *s, const char *oname, const rt_tensor *got,
		    const ir_value *ref)
{
	const char *why = NULL;
	size_t es = ir_dtype_size(ref->dtype);
	int64_t n = ir_shape_const_numel(&ref->shape);
	ir_shape gs = {.rank = got->rank};
	for (int i = 0; i < got->rank; i++)
		gs.d[i] = ir_dim_const(got->dims[i]);
	if (got->dtype != (int)ref->dtype)
		why = arena_printf(&V->A, "dtype %s, reference %s", ir_dtype_name((ir_dtype)got->dtype),
				   ir_dtype_name(ref->dtype));
	else if (es == 0 || !ref->data || n < 0)
		why = arena_printf(&V->A, "dtype %s cannot be compared", ir_dtype_name(ref->dtype));
	else if (got->rank != ref->shape.rank)
		why = arena_printf(&V->A, "rank %d, reference rank %d", got->rank, ref->shape.rank);
	else if (!ir_shape_eq(&gs, &ref->shape))
		why = arena_printf(&V->A, "shape %s, reference %s", ir_shape_str(&V->A, V->scratch, &gs),
				   ir_shape_str(&V->A, V->scratch, &ref->shape));
	else if (got->nbytes != (size_t)n * es)
		why = "output size disagrees with its shape";
	if (why) {
		fprintf(stderr, "cellc verify: %s: output %s: %s\n", s->dir, oname, why);
		printf("FAIL %s %s max_abs=nan max_rel=nan\n", s->dir, oname);
		record(V, s->dir, oname, 0, NAN, NAN, why);
		V->failed++;
		return;
	}
	double max_abs = 0, max_rel = 0;
	int64_t nbad = 0, first_bad = -1;
	int fl = is_float(ref->dtype);
	for (size_t i = 0; i < (size_t)n; i++) {
		double a = elem(got->data, ref->dtype, i), b = elem(ref->data, ref->dtype, i);
		double d;
		int good;
		if (!fl) {
			/* exact: compare the bytes, so 64-bit values beyond 2^53 count too */
			good = memcmp((const char *)got->data + i * es, (const char *)ref->data + i * es, es) == 0;
			d = good ? 0 : fabs(a - b) > 0 ? fabs(a - b) : 1;
		} else if (isnan(a) || isnan(b)) {
			good = isnan(a) && isnan(b);
			d = good ? 0 : INFINITY;
		} else if (isinf(a) || isinf(b)) {
			good = a == b;
			d = good ? 0 : INFINITY;
		} else {
			d = fabs(a - b);
			good = d <= V->atol + V->rtol * fabs(b);
		}
		if (!good && nbad++ == 0)
			first_bad = (int64_t)i;
		double r = d == 0 ? 0 : b != 0 && isfinite(b) ? d / fabs(b) : INFINITY;
		if (d > max_abs)
			max_abs = d;
		if (r > max_rel)
			max_rel = r;
	}
	int ok = nbad == 0;
	if (!ok)
		fprintf(stderr, "cellc verify: %s: output %s: %" PRId64 " of %" PRId64 " elements out of "
				"tolerance; first at flat index %" PRId64 ": got %.9g, reference %.9g\n",
			s->dir, oname, nbad, n, first_bad, elem(got->data, ref->dtype, (size_t)first_bad),
			elem(ref->data, ref->dtype, (size_t)first_bad));
	printf("%s %s %s max_abs=%.3g max_rel=%.3g\n", ok ? "PASS" : "FAIL", s->dir, oname, max_abs, max_rel);
	record(V, s->dir, oname, ok, max_abs, max_rel,
	       ok ? NULL : arena_printf(&V->A, "%" PRId64 " of %" PRId64 " elements out of tolerance", nbad, n));
	if (ok)
		V->passed++;
	else
		V->failed++;
}

/* --train: loss, gradients and dstate pass when ||got - ref|| <= grad_rtol ||ref||
 * (a zero reference needs ||got|| <= grad_rtol). */
static void compare_norm(verify *V, const td_set *s, const char *oname, const rt_tensor *got,
			 const ir_value *ref)
{
	int64_t n = ir_shape_const_numel(&ref->shape);
	ir_shape gs = {.rank = got->rank};
	for (int i = 0; i < got->rank; i++)
		gs.d[i] = ir_dim_const(got->dims[i]);
	const char *why = NULL;
	if (got->dtype != DT_F32 || ref->dtype != DT_F32 || !ref->data)
		why = "not f32";
	else if (!ir_shape_eq(&gs, &ref->shape) && !(n == 1 && ir_shape_const_numel(&gs) == 1))
		why = arena_printf(&V->A, "shape %s, reference %s", ir_shape_str(&V->A, V->scratch, &gs),
				   ir_shape_str(&V->A, V->scratch, &ref->shape));
	if (why) {
		fprintf(stderr, "cellc verify: %s: output %s: %s\n", s->dir, oname, why);
		printf("FAIL %s %s max_abs=nan max_rel=nan\n", s->dir, oname);
		record(V, s->dir, oname, 0, NAN, NAN, why);
		V->failed++;
		return;
	}
	const float *a = got->data, *b = ref->data;
	double dd = 0, rr = 0, max_abs = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = (double)a[i] - b[i];
		dd += d * d;
		rr += (double)b[i] * b[i];
		if (!(fabs(d) <= max_abs))
			max_abs = fabs(d);
	}
	double rel = rr > 0 ? sqrt(dd / rr) : sqrt(dd);
	int ok = rel <= V->grad_rtol;
	/* the usual line; max_rel is the relative norm error here */
	printf("%s %s %s max_abs=%.3g max_rel=%.3g\n", ok ? "PASS" : "FAIL", s->dir, oname, max_abs, rel);
	record(V, s->dir, oname, ok, max_abs, rel, ok ? NULL : "relative norm error out of tolerance");
	if (ok)
		V->passed++;
	else
		V->failed++;
}

/* An input the compiled code never reads (CastLike's `like` lends only its
 * type; a sequence only counted): its data need not have the declared shape.
 * The driver gets zeros of the declared shape, a symbol there taking the
 * data's size where that is at least 1 (the generated code's run-time
 * dimensions are), 1 otherwise: nothing computed depends on it. */
static void unread_input(verify *V, rt_tensor *t, const ir_value *gi, const ir_value *x)
{
	int64_t n = 1;
	t->name = strlen(gi->name) < RT_TF_NAME ? gi->name : "input";
	t->dtype = (int)x->dtype;
	t->rank = gi->shape.rank;
	for (int i = 0; i < gi->shape.rank; i++) {
		ir_dim d = gi->shape.d[i];
		int64_t got = x->shape.rank == gi->shape.rank ? x->shape.d[i].k : 0;
		t->dims[i] = ir_dim_is_const(d) ? d.k : got >= 1 ? got : 1;
		n *= t->dims[i];
	}
	t->nbytes = (size_t)n * ir_dtype_size(x->dtype);
	t->data = arena_alloc(&V->A, t->nbytes ? t->nbytes : 1);       /* zeroed */
}

/* Whether a node of h (or of a graph in it) or an output of h reads v. */
static int is_read(const ir_graph *h, const ir_value *v)
{
	for (int i = 0; i < h->noutputs; i++)
		if (h->outputs[i] == v)
			return 1;
	for (int k = 0; !h->parent && k < h->ninputs; k++)
		if (h->inputs[k] == v && ir_input_value_sym(h, k) >= 0)
			return 1;       /* its value is a size, which the model checks */
	for (int i = 0; i < h->nnodes; i++)
		if (ir_node_reads(h->nodes[i], v))
			return 1;
	return 0;
}

/* A reference output against the compiled output of that name: its dtype,
 * rank and the sizes the compiled model fixes (not a data-dependent length,
 * whose bound is only an upper one).  The compiled shape, not the one the
 * ONNX model declares: exporters declare sizes a traced loop held (T = 8 for
 * a model cellc re-rolls) and ranks that are wrong. */
static int check_reference(verify *V, const ir_graph *g, diag *D, const char *path, const ir_value *ref,
			   const char *name)
{
	for (int j = 0; j < g->noutputs; j++) {
		const ir_value *go = g->outputs[j];
		if (strcmp(go->name, name) != 0)
			continue;
		ir_value want = *go;
		if (go->data_dep && go->dd_axis >= 0 && go->dd_axis < go->shape.rank)
			want.shape.d[go->dd_axis] = ir_dim_const(IR_DIM_UNKNOWN);
		return td_check_type(D, path, ref, &want, "output");
	}
	return 0;       /* no such output: reported where outputs are matched */
}

/* The reason a link of g gives for symbol name ("" if none). */
static const char *link_why(verify *V, const ir_graph *g, const char *name)
{
	for (int i = 0; i < g->nlinks; i++)
		if (!strcmp(g->links[i].name, name))
			return arena_printf(&V->A, " (node '%s': %s)", g->links[i].node, g->links[i].why);
	return "";
}


/* Whether the data give every free symbol of mask fr (val[] 0: not given). */
static int all_given(const ir_graph *g, unsigned fr, const int64_t *val)
{
	for (int i = 0; i < g->nsyms; i++)
		if ((fr >> i & 1) && !val[i])
			return 0;
	return 1;
}

/* "T1 = 3, T2 = 4": the free symbols of mask fr with their values. */
static const char *free_values(arena *A, const ir_graph *g, unsigned fr, const int64_t *val)
{
	const char *s = "";
	for (int i = 0; i < g->nsyms; i++)
		if (fr >> i & 1)
			s = arena_printf(A, "%s%s%s = %lld", s, *s ? ", " : "", g->syms[i], (long long)val[i]);
	return s;
}

/* The sizes of data set s (inputs t of the compiled model g) against the
 * least values and pinned sizes g was compiled for: NULL, or what a set of
 * other sizes breaks.  The driver still runs it: the generated code must
 * refuse it (RT_ERR_SHAPE), and run_driver says why. */
static const char *sizes_allowed(verify *V, const td_set *s, const ir_graph *g, const rt_tensor *t)
{
	int64_t val[IR_MAX_SYMS] = {0};
	for (int k = 0; k < g->ninputs; k++)
		for (int i = 0; i < g->inputs[k]->shape.rank && i < t[k].rank; i++) {
			int j = ir_dim_one_sym(g->inputs[k]->shape.d[i]);
			if (j >= 0 && ir_sym_free(g, j))
				val[j] = t[k].dims[i];
		}
	for (int j = 0; j < g->nsyms; j++) {    /* a size that is an input's value */
		int k = ir_sym_value_input(g, j);
		if (k < 0 || !t[k].data || !((t[k].dtype == DT_I64 && t[k].nbytes == sizeof(int64_t)) ||
					     (t[k].dtype == DT_I32 && t[k].nbytes == sizeof(int32_t))))
			continue;
		if (t[k].dtype == DT_I32) {
			int32_t v32;
			memcpy(&v32, t[k].data, sizeof v32);
			val[j] = v32;
		} else {
			memcpy(&val[j], t[k].data, sizeof val[j]);
		}
		if (val[j] < 1)
			return arena_printf(&V->A, "size '%s' is the value of input '%s', %lld in the data; the compiled "
					    "model runs for sizes of at least 1", g->syms[j], g->inputs[k]->name,
					    (long long)val[j]);
	}
	for (int j = 0; j < g->nsyms; j++) {
		unsigned fr = ir_sym_frees(g, j);
		if (!all_given(g, fr, val))
			continue;
		const char *msg = NULL;
		if (ir_sym_free(g, j) && val[j] < ir_sym_least(g, j))
			msg = arena_printf(&V->A, "size '%s' is %lld in the data, below the least value %lld the compiled "
					   "model needs%s", g->syms[j], (long long)val[j], (long long)ir_sym_least(g, j),
					   link_why(V, g, g->syms[j]));
		else if (!ir_sym_free(g, j) && g->sym_pin[j] && ir_sym_value(g, j, val) != g->sym_pin[j])
			msg = arena_printf(&V->A, "size '%s' = %s is %lld for the data's %s; the compiled model "
					   "needs %lld%s", g->syms[j], ir_sym_def_str(&V->A, g, j),
					   (long long)ir_sym_value(g, j, val), free_values(&V->A, g, fr, val),
					   (long long)g->sym_pin[j], link_why(V, g, g->syms[j]));
		if (msg)
			return msg;
	}
	int e = ir_sym_inexact(g, val);
	if (e >= 0 && all_given(g, ir_sym_frees(g, e), val))   /* (a size the data do not give is not judged) */
		return arena_printf(&V->A, "size '%s' = %s does not divide exactly for the data's %s; the "
				    "compiled model needs it to (its shapes are made of the quotient)", g->syms[e],
				    ir_sym_def_str(&V->A, g, e), free_values(&V->A, g, ir_sym_frees(g, e), val));
	return NULL;
}

/* The compiled model's inputs from data set s into t: an input it does not
 * read from the model's; 1, or 0 after failing the set, or -1 after a
 * diagnostic when the data do not fit the model. */
static int set_inputs(verify *V, const td_set *s, const ir_graph *g, diag *D, rt_tensor *t)
{
	V->sizes_msg = NULL;
	for (int k = 0; k < g->ninputs; k++) {
		const ir_value *gi = g->inputs[k];
		int j = 0;
		while (j < V->g0->ninputs && strcmp(V->g0->inputs[j]->name, gi->name) != 0)
			j++;
		if (j == V->g0->ninputs && V->po.train && k >= V->g0->ninputs)
			j = k;          /* target [, mask]: after the model's inputs */
		if (j >= s->nin) {
			fail_all(V, s, arena_printf(&V->A, "compiled input '%s' is not a model input", gi->name));
			return 0;
		}
		const ir_value *x = s->in[j];
		int64_t n = ir_shape_const_numel(&x->shape);
		if (!is_read(g, gi) && x->dtype == gi->dtype && gi->shape.rank >= 0 && gi->shape.rank <= RT_TF_MAXRANK &&
		    ir_dtype_size(x->dtype)) {
			unread_input(V, &t[k], gi, x);
			continue;
		}
		/* data the compiled model cannot take are refused, not scored:
		 * the dtype, the rank and the sizes it fixes (--dim included) */
		const char *p = td_path(&V->A, s, 0, j);
		D->file = "cellc verify";
		int bad = td_check_type(D, p, x, gi, "input");
		if (!bad && (n < 0 || x->shape.rank > RT_TF_MAXRANK || ir_dtype_size(x->dtype) == 0)) {
			diag_error(D, "%s: %s%s data cannot be passed to the compiled model", p,
				   ir_dtype_name(x->dtype), ir_shape_str(&V->A, x->graph, &x->shape));
			bad = 1;
		}
		D->file = V->model;
		if (bad)
			return -1;
		t[k].name = strlen(gi->name) < RT_TF_NAME ? gi->name : arena_printf(&V->A, "input_%d", k);
		t[k].dtype = (int)x->dtype;
		t[k].rank = x->shape.rank;
		for (int i = 0; i < x->shape.rank; i++)
			t[k].dims[i] = x->shape.d[i].k;
		t[k].data = x->data;
		t[k].nbytes = (size_t)n * ir_dtype_size(x->dtype);
	}
	V->sizes_msg = sizes_allowed(V, s, g, t);
	return 1;
}

/* Runs the unit's driver on the inputs t of data set iset; its outputs opened
 * in tf. 1, or 0 after failing the set. */
static int run_driver(verify *V, const unit *u, int iset, const rt_tensor *t, rt_tensorfile *tf)
{
	const td_set *s = &V->L.sets[iset];
	const ir_graph *g = u->g;
	const char *inf = arena_printf(&V->A, "%s/inputs_%d.tf", u->dir, iset);
	const char *outf = arena_printf(&V->A, "%s/outputs_%d.tf", u->dir, iset);
	const char *log = arena_printf(&V->A, "%s/run_%d.log", u->dir, iset);
	int st = rt_tf_write(inf, g->ninputs, t);
	if (st != RT_OK) {
		fail_all(V, s, arena_printf(&V->A, "cannot write %s: %s", inf, rt_status_str(st)));
		return 0;
	}
	char *argv[] = {(char *)u->driver, (char *)u->weights, (char *)inf, (char *)outf, NULL};
	remove(outf);
	int rc = verify_run_logged(argv, log);
	if (rc != 0) {
		fprintf(stderr, "cellc verify: %s: the driver %s (status %d):\n", s->dir,
			rc > 128 ? "was killed by a signal" : "failed", rc);
		verify_show_file(log, "  | ");
		fail_all(V, s, V->sizes_msg ? V->sizes_msg : "no outputs");
		return 0;
	}
	if (V->sizes_msg) {     /* the generated code's check let them through */
		fail_all(V, s, arena_printf(&V->A, "%s, and the compiled model did not refuse them", V->sizes_msg));
		return 0;
	}
	st = rt_tf_open(tf, outf);
	if (st != RT_OK) {
		fail_all(V, s, arena_printf(&V->A, "%s: %s", outf, rt_status_str(st)));
		return 0;
	}
	if (tf->count != g->noutputs) {
		rt_tf_close(tf);
		fail_all(V, s, arena_printf(&V->A, "the driver wrote %d outputs, the model has %d", tf->count,
					    g->noutputs));
		return 0;
	}
	return 1;
}

/* A train build's outputs: matched by the TensorProto's name; loss, grad.*
 * and dstate compared by relative norm error. Closes tf, but where a
 * reference cannot be read (-1). */
static int compare_train_outputs(verify *V, const td_set *s, const ir_graph *g, diag *D, rt_tensorfile *tf)
{
	for (int k = 0; k < s->nout; k++) {
		const char *p = td_path(&V->A, s, 1, k);
		D->file = "cellc verify";
		ir_value *ref = td_read_file(V->scratch, D, p);
		D->file = V->model;
		if (!ref)
			return -1;
		int at = k;     /* a .npy file has no name: by position */
		for (int j = 0; j < g->noutputs; j++)
			if (!strcmp(g->outputs[j]->name, ref->name))
				at = j;
		const char *oname = at < g->noutputs ? g->outputs[at]->name : p;
		if (at >= g->noutputs) {
			fprintf(stderr, "cellc verify: %s: no output matches %s\n", s->dir, p);
			printf("FAIL %s %s max_abs=nan max_rel=nan\n", s->dir, oname);
			record(V, s->dir, oname, 0, NAN, NAN, "no reference output");
			V->failed++;
			continue;
		}
		if ((!strcmp(oname, "loss") || !strcmp(oname, "dstate") || !strncmp(oname, "grad.", 5)))
			compare_norm(V, s, oname, &tf->t[at], ref);
		else
			compare(V, s, oname, &tf->t[at], ref);
	}
	rt_tf_close(tf);
	return 0;
}

/* Output k of the model is output_k.pb; a sequence (optional) there is
 * compared tensor by tensor with the compiled outputs named by
 * onnx_seq_flatten, all matched by name. Closes tf; -1 after a diagnostic
 * when the reference data are not the model's outputs. */
static int compare_outputs(verify *V, const td_set *s, const ir_graph *g, diag *D, rt_tensorfile *tf)
{
	int seen = 0;
	for (int k = 0; k < V->g0->noutputs; k++) {
		const ir_value *go = V->g0->outputs[k];
		const char *p = td_path(&V->A, s, 1, k);
		D->file = "cellc verify";
		ir_value *ref = go->seq != IR_TENSOR ? onnx_read_seq_file(V->scratch, D, p, go->seq, go->name)
						     : td_read_file(V->scratch, D, p);
		/* reference data that are not the model's output k are refused
		 * (exit 2) before anything is compared */
		int bad = !ref || (go->seq == IR_TENSOR && td_check_name(D, p, ref, go, "output", k));
		if (!bad && go->seq == IR_TENSOR) {
			ref = td_widen(V->scratch, ref, go->narrow);
			bad = check_reference(V, g, D, p, ref, go->name);
		}
		D->file = V->model;
		if (bad) {
			rt_tf_close(tf);
			return -1;
		}
		enum { MAXREF = 4096 };
		ir_value *vals[MAXREF];
		const char *names[MAXREF];
		int cnt = onnx_seq_flatten(&V->A, ref, go->name, vals, names, MAXREF);
		if (cnt < 0) {
			fprintf(stderr, "cellc verify: %s: cannot read the reference %s\n", s->dir, p);
			printf("FAIL %s %s max_abs=nan max_rel=nan\n", s->dir, go->name);
			record(V, s->dir, go->name, 0, NAN, NAN, "no reference output");
			V->failed++;
			continue;
		}
		for (int e = 0; e < cnt; e++) {
			int j = 0;
			while (j < g->noutputs && strcmp(g->outputs[j]->name, names[e]) != 0)
				j++;
			if (j == g->noutputs) {
				const char *why = arena_printf(&V->A, "the compiled model has no output '%s'", names[e]);
				fprintf(stderr, "cellc verify: %s: %s\n", s->dir, why);
				printf("FAIL %s %s max_abs=nan max_rel=nan\n", s->dir, names[e]);
				record(V, s->dir, names[e], 0, NAN, NAN, why);
				V->failed++;
				continue;
			}
			seen++;
			compare(V, s, names[e], &tf->t[j], vals[e]);
		}
	}
	if (seen != g->noutputs) {
		const char *why = arena_printf(&V->A, "the compiled model has %d outputs; the reference data "
					       "match %d of them", g->noutputs, seen);
		fprintf(stderr, "cellc verify: %s: %s\n", s->dir, why);
		printf("FAIL %s (outputs) max_abs=nan max_rel=nan\n", s->dir);
		record(V, s->dir, "(outputs)", 0, NAN, NAN, why);
		V->failed++;
	}
	rt_tf_close(tf);
	return 0;
}

/* Runs the unit's driver on data set s and compares its outputs; -1 after
 * a diagnostic when the data do not fit the model (exit 2: no comparison). */
static int run_set(verify *V, const unit *u, int iset, diag *D)
{
	const td_set *s = &V->L.sets[iset];
	const ir_graph *g = u->g;
	rt_tensor *t = arena_array(&V->A, (size_t)g->ninputs + 1, sizeof *t);
	int r = set_inputs(V, s, g, D, t);
	if (r <= 0)
		return r;
	rt_tensorfile tf;
	if (!run_driver(V, u, iset, t, &tf))
		return 0;
	if (V->po.train)
		return compare_train_outputs(V, s, g, D, &tf);
	return compare_outputs(V, s, g, D, &tf);
}

/* ---- the JSON report ---- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 32)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double x)
{
	if (isfinite(x))
		fprintf(f, "%.9g", x);
	else
		fputs("null", f);       /* JSON has no NaN or infinity */
}

static int write_report(verify *V, int rc)
{
	FILE *f = fopen(V->report, "w");
	if (!f) {
		fprintf(stderr, "cellc verify: cannot write report '%s': %s\n", V->report, strerror(errno));
		return -1;
	}
	fputs("{\n  \"model\": ", f);
	json_str(f, V->model);
	fputs(",\n  \"oracle\": ", f);
	if (V->oracle)
		json_str(f, V->oracle);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"seed\": %llu,\n  \"rtol\": ", (unsigned long long)V->seed);
	json_num(f, V->rtol);
	fputs(",\n  \"atol\": ", f);
	json_num(f, V->atol);
	fprintf(f, ",\n  \"status\": \"%s\",\n  \"exit_status\": %d,\n  \"passed\": %d,\n  \"failed\": %d,\n",
		rc == 0 ? "pass" : rc == 1 ? "fail" : "error", rc, V->passed, V->failed);
	fputs("  \"results\": [", f);
	for (int i = 0; i < V->nres; i++) {
		const result *r = &V->res[i];
		fputs(i ? ",\n    {\"set\": " : "\n    {\"set\": ", f);
		json_str(f, r->set);
		fputs(", \"output\": ", f);
		json_str(f, r->output);
		fprintf(f, ", \"pass\": %s, \"max_abs\": ", r->pass ? "true" : "false");
		json_num(f, r->max_abs);
		fputs(", \"max_rel\": ", f);
		json_num(f, r->max_rel);
		fputs(", \"reason\": ", f);
		if (r->why)
			json_str(f, r->why);
		else
			fputs("null", f);
		fputc('}', f);
	}
	fputs(V->nres ? "\n  ]\n}\n" : "]\n}\n", f);
	return fclose(f) == 0 ? 0 : -1;
}

/* ---- the command ---- */

static int parse_tol(const char *opt, const char *s, double *x)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v) || v < 0) {
		fprintf(stderr, "cellc verify: %s wants a finite number >= 0, got '%s'\n", opt, s);
		return -1;
	}
	*x = v;
	return 0;
}

/* What the options do not combine to (ndata: how many --data); -1 to go on,
 * or the exit status. */
static int check_args(verify *V, int ndata)
{
	if (!V->model || (!ndata && !V->oracle)) {
		fprintf(stderr, "cellc verify: %s\n%s", !V->model ? "no MODEL given" : "no --data DIR or --oracle given",
			usage);
		return 2;
	}
	if (!cmd_weights_check("verify", &V->po) || !cmd_train_check("verify", &V->po, &V->topts))
		return 2;
	if (V->po.train && V->oracle) {
		fprintf(stderr, "cellc verify: --train needs --data (gradients come from PyTorch, not ONNX Runtime)\n");
		return 2;
	}
	if (ndata && V->oracle) {
		fprintf(stderr, "cellc verify: --data and --oracle exclude each other\n");
		return 2;
	}
	if (!V->oracle && (V->ninputs || V->golden)) {
		fprintf(stderr, "cellc verify: --inputs and --save-golden go with --oracle\n");
		return 2;
	}
	if (V->oracle && !V->ninputs)
		V->ninputs = 1;
	if (V->name && !cmd_valid_name(V->name)) {
		fprintf(stderr, "cellc verify: --name '%s' is not usable as a C identifier prefix\n", V->name);
		return 2;
	}
	return -1;  /* go on */
}

static int parse_args(verify *V, int argc, char **argv)
{
	const char *val;
	int ndata = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return 0;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--data", &val))) {
			if (r < 0 || td_collect(&V->A, "verify", val, &V->L))
				return 2;
			ndata++;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--rtol", &val))) {
			if (r < 0 || parse_tol("--rtol", val, &V->rtol))
				return 2;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--atol", &val))) {
			if (r < 0 || parse_tol("--atol", val, &V->atol))
				return 2;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--keep", &val))) {
			if (r < 0)
				return 2;
			V->keep = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--name", &val))) {
			if (r < 0)
				return 2;
			V->name = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--oracle", &val))) {
			if (r < 0)
				return 2;
			if (strcmp(val, "onnxruntime") != 0) {
				fprintf(stderr, "cellc verify: --oracle: only 'onnxruntime' is known, got '%s'\n", val);
				return 2;
			}
			V->oracle = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--inputs", &val))) {
			char *end;
			long v = r < 0 ? 0 : strtol(val, &end, 10);
			if (r < 0 || *end || v < 1 || v > MAX_DATA) {
				fprintf(stderr, "cellc verify: --inputs wants a number of data sets in [1, %d]\n", MAX_DATA);
				return 2;
			}
			V->ninputs = (int)v;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--seed", &val))) {
			char *end;
			errno = 0;
			unsigned long long v = r < 0 ? 0 : strtoull(val, &end, 10);
			if (r < 0 || *end || errno || end == val) {
				fprintf(stderr, "cellc verify: --seed wants a non-negative integer\n");
				return 2;
			}
			V->seed = v;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--dim", &val))) {
			if (r < 0 || !cmd_add_dim_bind("verify", val, V->dims, &V->ndims))
				return 2;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--bind", &val))) {
			if (r < 0 || !cmd_add_bind("verify", val, V->binds, &V->nbinds))
				return 2;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--save-golden", &val))) {
			if (r < 0)
				return 2;
			V->golden = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--report", &val))) {
			if (r < 0 || strcmp(val, "json") != 0 || i + 1 >= argc) {
				fprintf(stderr, "cellc verify: --report wants `json FILE`\n");
				return 2;
			}
			V->report = argv[++i];
		} else if (!strcmp(a, "--werror-fallback")) {
			V->werror_fallback = 1;
		} else if (!strcmp(a, "--no-hoist")) {
			V->po.no_hoist = 1;
		} else if (!strcmp(a, "--no-fuse")) {
			V->po.no_fuse = 1;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--weights", &val))) {
			if (r < 0 || !cmd_weights_opt("verify", val, &V->po))
				return 2;
		} else if ((r = cmd_train_opt("verify", argc, argv, &i, &V->po, &V->topts))) {
			if (r < 0)
				return 2;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--grad-rtol", &val))) {
			if (r < 0 || parse_tol("--grad-rtol", val, &V->grad_rtol))
				return 2;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "cellc verify: unknown option '%s'\n%s", a, usage);
			return 2;
		} else if (V->model) {
			fprintf(stderr, "cellc verify: more than one MODEL ('%s', '%s')\n%s", V->model, a, usage);
			return 2;
		} else {
			V->model = a;
		}
	}
	return check_args(V, ndata);
}

/* --bind NAME=...: input NAME is compiled as a constant, as `cellc
 * compile --bind` does, with the value each data set gives it (check_binds:
 * the value given). */
static int apply_binds(verify *V)
{
	for (int j = 0; j < V->nbinds; j++) {
		int k = 0;
		while (k < V->g0->ninputs && strcmp(V->g0->inputs[k]->name, V->binds[j].name) != 0)
			k++;
		if (k == V->g0->ninputs) {
			char *all = "";
			for (int i = 0; i < V->g0->ninputs; i++)
				all = arena_printf(&V->A, "%s%s'%s'", all, i ? ", " : "", V->g0->inputs[i]->name);
			fprintf(stderr, "cellc verify: --bind %s: the model has no input of that name (it has %s)\n",
				V->binds[j].name, *all ? all : "none");
			return -1;
		}
		V->bound[k] = 1;
	}
	return 0;
}

/* Each data set's value of a --bind input is the value given (the
 * reference outputs were computed with the data's value). */
static int check_binds(verify *V)
{
	for (int j = 0; j < V->nbinds; j++) {
		const onnx_binding *b = &V->binds[j];
		int k = 0;
		while (strcmp(V->g0->inputs[k]->name, b->name) != 0)
			k++;
		const ir_value *want = NULL;
		diag D;
		diag_init(&D, b->path ? b->path : "cellc verify");
		if (b->path && !(want = td_read_file(V->scratch, &D, b->path))) {
			diag_finish(&D);
			return -1;
		}
		for (int i = 0; i < V->L.n; i++) {
			const ir_value *x = V->L.sets[i].in[k];
			int same = x && x->data;
			if (same && want)
				same = want->data && want->dtype == x->dtype && ir_shape_eq(&want->shape, &x->shape) &&
				       !memcmp(want->data, x->data, (size_t)ir_shape_const_numel(&x->shape) *
						ir_dtype_size(x->dtype));
			else if (same)
				same = ir_shape_const_numel(&x->shape) == 1 && elem(x->data, x->dtype, 0) ==
				       strtod(b->value, NULL);
			if (!same) {
				fprintf(stderr, "cellc verify: %s: input '%s' is not the value --bind %s=%s gives it "
						"(its reference outputs are for the data's value)\n", V->L.sets[i].dir,
					b->name, b->name, b->path ? b->path : b->value);
				return -1;
			}
		}
	}
	return 0;
}

static int make_root(verify *V)
{
	if (V->keep) {
		if (cmd_mkdirs("verify", V->keep))
			return -1;
		snprintf(V->root, sizeof V->root, "%s", V->keep);
		return 0;
	}
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	if ((size_t)snprintf(V->root, sizeof V->root, "%s/cellc-verify-XXXXXX", tmp) >= sizeof V->root ||
	    !mkdtemp(V->root)) {
		fprintf(stderr, "cellc verify: cannot create a temporary directory in %s: %s\n", tmp,
			strerror(errno));
		V->root[0] = 0;
		return -1;
	}
	return 0;
}

/* Whether a --dim names symbol `name`: SYM=OTHER (alias), SYM=N (numeric). */
static int dim_given(const verify *V, const char *name, int alias, int numeric)
{
	for (int j = 0; j < V->ndims; j++)
		if (!strcmp(V->dims[j].name, name) && (V->dims[j].same ? alias : numeric))
			return 1;
	return 0;
}

/* The bindings of the compilation for data set iset (-1: of all sets):
 * --dim (SYM=N with --data only: with --oracle it sizes the random inputs
 * and the build stays generic), with per-set sizes every other free symbol
 * that an input axis gives, fixed to the set's size (verify_sizes), and
 * the inputs that determine shapes, bound to the set's value.  Their count,
 * or -1 after a message. */
static int unit_binds(verify *V, int iset, int any_bound, onnx_binding *bind)
{
	int nbind = 0;
	for (int j = 0; j < V->ndims; j++)
		if (!V->oracle || V->dims[j].same)
			bind[nbind++] = V->dims[j];
	const ir_graph *g = V->g0;
	const td_set *s = iset >= 0 ? &V->L.sets[iset] : NULL;
	for (int i = 0; s && V->per_set_sizes && i < g->nsyms; i++) {
		/* not one a binding of this compilation names already */
		if (!ir_sym_free(g, i) || dim_given(V, g->syms[i], 1, V->oracle == NULL))
			continue;
		int64_t v = -1;
		for (int k = 0; k < g->ninputs && v < 0; k++)
			for (int a = 0; s->in[k] && a < g->inputs[k]->shape.rank && v < 0; a++)
				if (ir_dim_eq(g->inputs[k]->shape.d[a], ir_dim_sym(i)) && a < s->in[k]->shape.rank &&
				    ir_dim_is_const(s->in[k]->shape.d[a]))
					v = s->in[k]->shape.d[a].k;
		if (v < 1 || nbind == CMD_MAX_BIND)
			continue;
		bind[nbind++] = (onnx_binding){.name = g->syms[i], .dim = v};
	}
	for (int k = 0; s && any_bound && k < g->ninputs; k++) {
		if (!V->bound[k])
			continue;
		if (nbind == CMD_MAX_BIND) {
			fprintf(stderr, "cellc verify: more than %d inputs determine shapes\n", CMD_MAX_BIND);
			return -1;
		}
		const char *p = td_path(&V->A, s, 0, k);
		/* a .npy file is read here (the loader reads TensorProtos) */
		bind[nbind] = (onnx_binding){.name = g->inputs[k]->name, .path = p,
			.tensor = strcmp(p + strlen(p) - 4, ".npy") ? NULL : s->in[k]};
		nbind++;
	}
	return nbind;
}

/* The model through inference with these bindings, quietly: NULL if it
 * fails there, with the first error's text in why. */
static ir_graph *probe(verify *V, arena *A, int nbind, const onnx_binding *bind, char *why, size_t len)
{
	diag Q;
	diag_init(&Q, V->model);
	Q.quiet = 1;
	ir_graph *g = compile_build(A, &Q, V->model, nbind, bind, &V->po, "infer");
	snprintf(why, len, "%s", Q.last);
	return g;
}

/* With --data (or --oracle's data sets), the sizes come from the data: when
 * the model does not get through inference with its symbols left free (a
 * reflect Pad or a strided Conv over a symbolic length), each data set is
 * compiled for its own sizes, and that is said.  0, or 2 after a message. */
static int verify_sizes(verify *V, int any_bound)
{
	if (!V->L.n)
		return 0;
	onnx_binding bind[CMD_MAX_BIND];
	char why[1280], why2[1280];
	arena A;
	arena_init(&A);
	int nbind = unit_binds(V, any_bound ? 0 : -1, any_bound, bind);
	int ok = nbind >= 0 && probe(V, &A, nbind, bind, why, sizeof why);
	if (nbind >= 0 && !ok) {
		V->per_set_sizes = 1;
		nbind = unit_binds(V, 0, any_bound, bind);
		if (nbind >= 0 && probe(V, &A, nbind, bind, why2, sizeof why2)) {
			char *sizes = "";
			for (int j = 0; j < nbind; j++)
				if (bind[j].dim > 0 && !bind[j].same && !dim_given(V, bind[j].name, 1, V->oracle == NULL))
					sizes = arena_printf(&A, "%s%s%s=%lld", sizes, *sizes ? ", " : "", bind[j].name,
							     (long long)bind[j].dim);
			fprintf(stderr, "cellc verify: %s does not compile with its sizes left symbolic (%s); each data "
					"set is compiled for its own sizes (%s: %s)\n", V->model, why, V->L.sets[0].dir,
				sizes);
		} else {
			V->per_set_sizes = 0;   /* the compilation says why */
		}
	}
	arena_free(&A);
	return nbind < 0 ? 2 : 0;
}

/* Marks the graph inputs v is computed from (through at most depth producers). */
static void mark_sources(const ir_graph *g, const ir_value *v, char *mark, int depth)
{
	if (!v || depth < 0)
		return;
	for (int k = 0; k < g->ninputs; k++)
		if (g->inputs[k] == v)
			mark[k] = 1;
	if (v->producer)
		for (int j = 0; j < v->producer->nin; j++)
			mark_sources(g, v->producer->in[j], mark, depth - 1);
}

/* Inputs the model may take at run time but need not: a size that is an
 * input's value (size_inputs.c), and the inputs a top-level If's condition
 * is computed from (a C branch, pass_branch.c).  One compilation with them
 * left to run time is tried; where it fails (test_loop11's body indexes a
 * constant by the iteration number; a sample-rate switch whose branches
 * give different shapes), each data set is compiled with their values
 * bound, and verify says so. */
static void bind_value_inputs(verify *V)
{
	const ir_graph *g = V->g0;
	char *names = "";
	char *cand = arena_alloc(&V->A, (size_t)g->ninputs + 1);
	for (int k = 0; k < g->ninputs; k++)
		cand[k] = ir_input_value_sym(g, k) >= 0;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_IF && g->nodes[i]->nin > 0 && if_of_tensors(g->nodes[i]))
			mark_sources(g, g->nodes[i]->in[0], cand, 64);
	for (int k = 0; k < g->ninputs; k++) {
		cand[k] &= !V->bound[k];
		if (cand[k])
			names = arena_printf(&V->A, "%s%s'%s'", names, *names ? ", " : "", g->inputs[k]->name);
	}
	if (!*names || !V->L.n)
		return;
	onnx_binding bind[CMD_MAX_BIND];
	char why[1280];
	arena A;
	arena_init(&A);
	int per_set = V->per_set_sizes, any_bound = 0;
	for (int k = 0; k < g->ninputs; k++)
		any_bound |= V->bound[k];
	V->per_set_sizes = 1;
	int nbind = unit_binds(V, 0, any_bound, bind);
	V->per_set_sizes = per_set;
	if (nbind >= 0 && !probe(V, &A, nbind, bind, why, sizeof why)) {
		for (int k = 0; k < g->ninputs; k++)
			if (cand[k])
				V->bound[k] = 1;
		fprintf(stderr, "cellc verify: %s does not compile with the value of %s given at run time (%s); each "
				"data set is compiled with its value bound\n", V->model, names, why);
	}
	arena_free(&A);
}

/* All data sets on one compilation, or (bound inputs, sizes from the data)
 * one compilation each. */
static int run_all(verify *V, diag *D)
{
	bind_value_inputs(V);
	int any_bound = 0;
	for (int k = 0; k < V->g0->ninputs; k++)
		any_bound |= V->bound[k];
	if (verify_sizes(V, any_bound))
		return 2;
	int per_set = any_bound || V->per_set_sizes;
	int nunits = per_set ? V->L.n : 1;
	for (int iu = 0; iu < nunits; iu++) {
		onnx_binding bind[CMD_MAX_BIND];
		int nbind = unit_binds(V, per_set ? iu : -1, any_bound, bind);
		if (nbind < 0)
			return 2;
		arena A;
		arena_init(&A);
		unit u = {0};
		if (compile_unit(V, &u, per_set ? iu : -1, nbind, bind, &A, D)) {
			fprintf(stderr, "cellc verify: %s could not be compiled%s%s\n", V->model,
				per_set ? " with the shape inputs and sizes of " : "", per_set ? V->L.sets[iu].dir : "");
			arena_free(&A);
			return 2;
		}
		int bad = 0;
		for (int i = 0; i < V->L.n && !bad; i++)
			if (!per_set || i == iu)
				bad = run_set(V, &u, i, D);
		arena_free(&A);
		if (bad)
			return 2;
	}
	return 0;
}

int cmd_verify(int argc, char **argv)
{
	verify V0 = {0};
	verify *V = &V0;
	V->rtol = 1e-4;
	V->atol = 1e-5;
	V->grad_rtol = 1e-4;
	V->topts.loss = TRAIN_CE;
	V->seed = 1;
	arena_init(&V->A);
	int rc = parse_args(V, argc, argv);
	if (rc >= 0) {
		free(V->L.sets);
		arena_free(&V->A);
		return rc;
	}
	V->cmdline = cmd_line(&V->A, argc, argv);
	diag D;
	diag_init(&D, V->model);
	rc = 2;
	V->g0 = compile_build(&V->A, &D, V->model, 0, NULL, &V->po, "load");
	if (!V->g0) {
		fprintf(stderr, "cellc verify: %s could not be loaded\n", V->model);
		goto out;
	}
	if (!V->name)
		V->name = cmd_default_name(&V->A, V->model);
	V->scratch = ir_graph_new(&V->A, NULL, "data");
	find_bound_inputs(V);
	if (apply_binds(V))
		goto out;
	if (make_root(V))
		goto out;
	if (V->oracle) {
		/* the sizes the operators make one, so that one --dim sizes them all */
		arena_init(&V->gA);
		char why[1280];
		onnx_binding bind[2 * CMD_MAX_BIND];
		int nbind = 0;
		for (int j = 0; j < V->ndims; j++)
			bind[nbind++] = V->dims[j];
		for (int j = 0; j < V->nbinds; j++)
			bind[nbind++] = V->binds[j];
		V->gi = probe(V, &V->gA, nbind, bind, why, sizeof why);
		V->gi_why = V->gi ? NULL : arena_strdup(&V->gA, why);
		if (verify_oracle_make(V))
			goto out;
	}
	if (read_inputs(V, &D) || check_binds(V))
		goto out;
	rc = run_all(V, &D);
	if (rc == 0) {
		printf("%d passed, %d failed\n", V->passed, V->failed);
		rc = V->failed ? 1 : 0;
	}
out:
	diag_finish(&D);
	fflush(stdout);
	if (V->report && write_report(V, rc) && rc == 0)
		rc = 2;
	if (V->root[0] && !V->keep)
		nftw(V->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	else if (V->root[0])
		fprintf(stderr, "cellc verify: build kept in %s\n", V->keep);
	free(V->L.sets);
	if (V->oracle)
		arena_free(&V->gA);
	arena_free(&V->A);
	return rc;
}
