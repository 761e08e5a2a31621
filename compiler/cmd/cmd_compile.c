/* cmd_compile.c: `cellc compile MODEL -o DIR [options]`, and the helpers
 * every subcommand shares (cmd.h).
 *
 *   cellc compile MODEL -o DIR [--name NAME] [--bind NAME=FILE.pb|NUMBER]... [--dim SYM=N|OTHER]...
 *                 [--carry IN=OUT]... [--werror-fallback] [--no-hoist] [--no-fuse]
 *                 [--embed-weights] [--no-malloc]
 *                 [--max-dim SYM=N]... [--testbench DATA]... [--rtol R] [--atol A]
 *                 [--testbench-embed BYTES] [--train [--loss L] [--loss-output NAME]
 *                 [--freeze PREFIX]...]
 *
 * Loads the model, runs the whole pipeline and writes DIR/NAME.h, NAME.c,
 * NAME.weights, a Makefile and a CMakeLists.txt (emit_model); before
 * writing, each fallback (compile.h) is a warning, or with
 * --werror-fallback an error.  DIR is
 * created when missing.  Where the Makefile finds libcellrt comes from
 * where this cellc lies (cmd_home.c).
 * --embed-weights and --no-malloc choose the deployment mode (emit.h);
 * --testbench adds NAME_test.c (emit_test.c) from golden data sets
 * (testdata.h), whose inputs are matched to the compiled model's inputs by
 * name through the model as loaded (bound inputs are not run-time inputs).
 * --bind replaces a graph input by the constant in FILE.pb (a serialized
 * TensorProto; a SequenceProto or OptionalProto for an input of that type):
 * inputs that determine shapes must be bound, because cellc fixes every
 * shape at compile time up to the dimension symbols, and so must sequence
 * and optional inputs (lower_seq.c).  `--bind NAME=NUMBER` binds a scalar
 * input (the type the model declares) without a file.  --dim fixes a
 * dimension symbol to a size, or to another symbol, when the model is loaded
 * (onnx_binding.dim): models whose sizes cellc cannot keep symbolic (a Pad or
 * Conv along a symbolic axis) compile at a fixed size.
 */
#define _POSIX_C_SOURCE 200809L

#include "cmd.h"
#include "train.h"
#include "testdata.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
	"usage: cellc compile MODEL -o DIR [--name NAME] [--bind NAME=FILE.pb]... [options]\n"
	"\n"
	"Compiles MODEL (.onnx or .cell) to C: writes DIR/NAME.h, DIR/NAME.c, DIR/NAME.weights,\n"
	"DIR/Makefile and DIR/CMakeLists.txt (DIR is created if missing).\n"
	"  -o, --out DIR         output directory\n"
	"  --name NAME           prefix of the emitted API, a C identifier\n"
	"                        (default: the model file name, made into an identifier)\n"
	"  --bind NAME=FILE.pb   compile graph input NAME as the constant stored in FILE.pb\n"
	"                        (a serialized ONNX TensorProto); needed for inputs that\n"
	"                        determine shapes (e.g. a Reshape target) or an If branch\n"
	"  --bind NAME=NUMBER    the same for a scalar input given on the command line\n"
	"                        (e.g. --bind sr=16000)\n"
	"  --dim SYM=N           fix dimension symbol SYM (as `cellc info` lists it; INPUT_AXIS\n"
	"                        for a dimension the model leaves unnamed) to the size N\n"
	"  --dim SYM=OTHER       make symbol SYM the same as symbol OTHER of an earlier input\n"
	"  --carry IN=OUT        also write NAME_stream: input IN is carried state, fed from\n"
	"                        output OUT of the previous call (zeros after reset);\n"
	"                        repeatable (e.g. --carry h=hn --carry c=cn)\n"
	"  --werror-fallback     a fallback is an error: a traced loop left unrolled (the\n"
	"                        code grows with T) or a time axis left fixed (no streaming\n"
	"                        step); each is otherwise a warning (`cellc info` lists them)\n"
	"  --no-hoist            keep input projections inside the time loop (testing)\n"
	"  --no-fuse             one loop per element-wise operation (testing)\n"
	"  --weights f32|bf16|int8  precision of the products' weights (default f32);\n"
	"                        bf16 rounds them to bfloat16 (half the bytes per batch-1\n"
	"                        step), int8 to 8-bit steps of a scale per output (a\n"
	"                        quarter; the batch-1 step then also quantizes its\n"
	"                        activations); docs/deploying.md: the error to expect\n"
	"Deployment (docs/deploying.md):\n"
	"  --embed-weights       weights as aligned static const arrays in NAME.c (no\n"
	"                        NAME.weights; NAME_create takes NULL as the path)\n"
	"  --no-malloc           no allocation: NAME_create_in places everything in a\n"
	"                        caller-provided arena of NAME_ARENA_BYTES (NAME.h)\n"
	"  --max-dim SYM=N       largest value of dimension symbol SYM that the arena must\n"
	"                        hold (--no-malloc needs one per symbol; `cellc info` lists them)\n"
	"  --js                  also write NAME.mjs, the JavaScript API (createModel, step,\n"
	"                        run, reset) of the WebAssembly module NAME.wasm that\n"
	"                        make TARGET=wasm32 builds, for web pages and Node\n"
	"Golden regression test (docs/deploying.md):\n"
	"  --testbench DATA      also write NAME_test.c and a `make test` target from the golden\n"
	"                        inputs/outputs in DATA: input_N/output_N files (.pb TensorProtos\n"
	"                        or .npy arrays), or a directory of test_data_set_* (repeatable)\n"
	"  --rtol R, --atol A    the test's tolerance: |got-ref| <= A + R|ref| (1e-4, 1e-5)\n"
	"  --testbench-embed B   embed golden data up to B bytes in NAME_test.c, else write\n"
	"                        NAME_test.data beside it (default 262144)\n"
	"Training (docs/training.md):\n"
	"  --train               also compute the loss and the gradients of every parameter\n"
	"                        and f32 input (outputs loss, grad.<P>, grad.<X>, dstate)\n"
	"  --loss L              ce (default; last step), ce-all, mse or masked-mse\n"
	"  --loss-output NAME    the output the loss reads (default: the first)\n"
	"  --freeze PREFIX       hold the weights whose names start with PREFIX fixed: no\n"
	"                        gradient, not trained (repeatable)\n"
	"Exit status: 0 ok, 2 model or command line rejected (reasons on stderr).\n";

/* ---- shared helpers (cmd.h) ---- */

int cmd_opt_value(int argc, char **argv, int *i, const char *opt, const char **val)
{
	const char *a = argv[*i];
	size_t n = strlen(opt);
	if (strncmp(a, opt, n) != 0)
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n] != 0)
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "cellc %s: option %s needs a value\n", argv[0], opt);
		return -1;
	}
	*val = argv[++*i];
	return 1;
}

int cmd_weights_opt(const char *cmd, const char *mode, pass_opts *po)
{
	int m = weights_mode_lookup(mode);
	if (m < 0) {
		fprintf(stderr, "cellc %s: --weights wants ", cmd);
		for (int k = 0; k < WEIGHTS_COUNT; k++)
			fprintf(stderr, "%s%s", k == 0 ? "" : k + 1 < WEIGHTS_COUNT ? ", " : " or ",
				weights_mode_names[k]);
		fprintf(stderr, ", got '%s'\n", mode);
		return 0;
	}
	po->weights = m;
	return 1;
}

int cmd_train_opt(const char *cmd, int argc, char **argv, int *i, pass_opts *po, train_opts *t)
{
	const char *val;
	int r;
	if (!strcmp(argv[*i], "--train")) {
		po->train = 1;
		po->topts = t;
		return 1;
	}
	if ((r = cmd_opt_value(argc, argv, i, "--loss", &val))) {
		if (r > 0 && (t->loss = train_loss_lookup(val)) < 0) {
			fprintf(stderr, "cellc %s: --loss wants ce, ce-all, mse or masked-mse, got '%s'\n", cmd, val);
			r = -1;
		}
		t->loss_given = 1;
		return r;
	}
	if ((r = cmd_opt_value(argc, argv, i, "--loss-output", &val))) {
		t->loss_output = r > 0 ? val : NULL;
		return r;
	}
	if ((r = cmd_opt_value(argc, argv, i, "--freeze", &val))) {
		if (r > 0 && (!val[0] || t->nfreeze == TRAIN_MAX_FREEZE)) {
			fprintf(stderr, "cellc %s: --freeze wants a weight name or prefix (at most %d of them)\n", cmd,
				TRAIN_MAX_FREEZE);
			r = -1;
		}
		if (r > 0)
			t->freeze[t->nfreeze++] = val;
		return r;
	}
	return 0;
}

int cmd_train_check(const char *cmd, const pass_opts *po, const train_opts *t)
{
	if (!po->train && (t->loss_given || t->loss_output || t->nfreeze)) {
		fprintf(stderr, "cellc %s: --loss, --loss-output and --freeze shape a training build; "
				"there is no --train\n", cmd);
		return 0;
	}
	return 1;
}

int cmd_weights_check(const char *cmd, const pass_opts *po)
{
	if (po->train && po->weights != WEIGHTS_F32) {
		fprintf(stderr, "cellc %s: --weights %s is for inference builds; --train keeps its parameters in "
				"float32\n", cmd, weights_mode_names[po->weights]);
		return 0;
	}
	return 1;
}

int cmd_parse_bind(const char *cmd, char *arg, onnx_binding *b)
{
	char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1]) {
		fprintf(stderr, "cellc %s: --bind wants NAME=FILE.pb or NAME=NUMBER, got '%s'\n", cmd, arg);
		return 0;
	}
	*eq = 0;
	memset(b, 0, sizeof *b);
	b->name = arg;
	/* a number is the value itself (a scalar input such as a sample rate);
	 * anything else names a file (./16000 for a file called 16000) */
	char *end;
	errno = 0;
	double x = strtod(eq + 1, &end);
	if (end != eq + 1 && !*end && !errno && isfinite(x))
		b->value = eq + 1;
	else
		b->path = eq + 1;
	return 1;
}

static int ident_char(char c, int first);

int cmd_add_dim_bind(const char *cmd, const char *val, onnx_binding *bind, int *nbind)
{
	if (*nbind == CMD_MAX_BIND) {
		fprintf(stderr, "cellc %s: at most %d --bind and --dim options in all\n", cmd, CMD_MAX_BIND);
		return 0;
	}
	onnx_binding *b = &bind[*nbind];
	memset(b, 0, sizeof *b);
	char *eq = strchr((char *)val, '='), *end = NULL;
	errno = 0;
	long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
	int alias = eq && ident_char(eq[1], 1);
	for (const char *c = eq && alias ? eq + 1 : ""; *c; c++)
		alias &= ident_char(*c, 0);
	if (!eq || eq == val || !eq[1] || (!alias && (*end || errno || v < 1 || v > INT32_MAX))) {
		fprintf(stderr, "cellc %s: --dim wants SYM=N with N in [1, 2^31), or SYM=OTHER (another symbol), "
			"got '%s'\n", cmd, val);
		return 0;
	}
	*eq = 0;        /* argv is ours to modify */
	b->name = (char *)val;
	b->dim = alias ? 1 : v;
	b->same = alias ? eq + 1 : NULL;
	for (int i = 0; i < *nbind; i++)
		if (bind[i].dim > 0 && strcmp(bind[i].name, b->name) == 0) {
			fprintf(stderr, "cellc %s: --dim %s is given twice\n", cmd, b->name);
			return 0;
		}
	(*nbind)++;
	return 1;
}

int cmd_add_bind(const char *cmd, const char *val, onnx_binding *bind, int *nbind)
{
	if (*nbind == CMD_MAX_BIND) {
		fprintf(stderr, "cellc %s: at most %d --bind options\n", cmd, CMD_MAX_BIND);
		return 0;
	}
	if (!cmd_parse_bind(cmd, (char *)val, &bind[*nbind]))
		return 0;
	(*nbind)++;
	return 1;
}

static int ident_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

int cmd_valid_name(const char *s)
{
	static const char *const keywords[] = {
		"auto", "break", "case", "char", "const", "continue", "default", "do", "double",
		"else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
		"register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
		"switch", "typedef", "union", "unsigned", "void", "volatile", "while", "main",
	};
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!ident_char(s[i], i == 0))
			return 0;
	/* Reserved identifiers (_X..., __...) and the runtime's own prefix. */
	if ((s[0] == '_' && (s[1] == '_' || (s[1] >= 'A' && s[1] <= 'Z'))) || strncmp(s, "rt_", 3) == 0)
		return 0;
	for (size_t i = 0; i < COUNTOF(keywords); i++)
		if (strcmp(s, keywords[i]) == 0)
			return 0;
	return 1;
}

const char *cmd_default_name(arena *A, const char *model_path)
{
	const char *base = strrchr(model_path, '/');
	base = base ? base + 1 : model_path;
	const char *dot = strrchr(base, '.');
	size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	if (n > 48)
		n = 48;
	char *s = arena_alloc(A, n + 3);
	size_t k = 0;
	if (n == 0 || !ident_char(base[0], 1))
		s[k++] = 'm', s[k++] = '_';   /* "2layer" -> "m_2layer" */
	for (size_t i = 0; i < n; i++)
		s[k++] = ident_char(base[i], 0) ? base[i] : '_';
	s[k] = 0;
	if (!cmd_valid_name(s))
		return arena_printf(A, "m_%s", s[0] == '_' ? s + 1 : s);
	return s;
}

int cmd_mkdirs(const char *cmd, const char *dir)
{
	size_t n = strlen(dir);
	char *p = malloc(n + 1);
	if (!p)
		arena_oom(NULL, n + 1, "a path");
	memcpy(p, dir, n + 1);
	int rc = 0;
	for (size_t i = 1; i <= n && rc == 0; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char c = p[i];
		p[i] = 0;
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			fprintf(stderr, "cellc %s: cannot create directory '%s': %s\n", cmd, p, strerror(errno));
			rc = -1;
		}
		p[i] = c;
	}
	struct stat st;
	if (rc == 0 && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
		fprintf(stderr, "cellc %s: '%s' is not a directory\n", cmd, dir);
		rc = -1;
	}
	free(p);
	return rc;
}

void cmd_emit_home(arena *A, emit_opts *eo)
{
	const cmd_home *h = cmd_home_get(A);
	eo->rtdir = h->tree ? h->tree : "";
	eo->pcdir = h->pcdir;
}

const char *cmd_line(arena *A, int argc, char **argv)
{
	char *s = arena_strdup(A, "cellc");
	for (int i = 0; i < argc; i++)
		s = arena_printf(A, "%s %s", s, argv[i]);
	return s;
}

/* ---- deployment and testbench options ---- */

enum { MAX_MAXDIM = 16, MAX_TB = 64 };

typedef struct named_dim {
	const char *name;
	int64_t value;
} named_dim;

/* SYM=N with N a positive integer; 0 and a message if malformed. */
int cmd_parse_dim(const char *cmd, const char *opt, const char *arg, arena *A, const char **name,
		  int64_t *value)
{
	const char *eq = strchr(arg, '=');
	char *end;
	errno = 0;
	long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
	if (!eq || eq == arg || !eq[1] || *end || errno || v < 1 || v > INT32_MAX) {
		fprintf(stderr, "cellc %s: %s wants SYM=N with N in [1, 2^31), got '%s'\n", cmd, opt, arg);
		return 0;
	}
	*name = arena_strndup(A, arg, (size_t)(eq - arg));
	*value = v;
	return 1;
}

static int parse_tol(const char *opt, const char *s, double *x)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v) || v < 0) {
		fprintf(stderr, "cellc compile: %s wants a finite number >= 0, got '%s'\n", opt, s);
		return -1;
	}
	*x = v;
	return 0;
}

/* The --max-dim values in symbol order (0: not given; `all`: every symbol
 * must have one); NULL after a message. */
static int64_t *max_dims(arena *A, diag *D, const ir_graph *g, const named_dim *md, int nmd, int all)
{
	int64_t *v = arena_array(A, (size_t)g->nsyms + 1, sizeof *v);
	for (int j = 0; j < nmd; j++) {
		int i = 0;
		while (i < g->nsyms && (strcmp(g->syms[i], md[j].name) != 0 || !ir_sym_free(g, i)))
			i++;
		if (i == g->nsyms) {
			char *known = "";
			for (int k = 0; k < g->nsyms; k++)
				if (ir_sym_free(g, k))
					known = arena_printf(A, "%s%s'%s'", known, *known ? ", " : "", g->syms[k]);
			const char *made = "";
			for (int k = 0; k < g->nlinks; k++)
				if (!g->links[k].at_least && !strcmp(g->links[k].name, md[j].name))
					made = g->links[k].into
						? arena_printf(A, "; '%s' is '%s' (node '%s' makes them one): give --max-dim %s",
							       md[j].name, g->links[k].into, g->links[k].node, g->links[k].into)
						: arena_printf(A, "; '%s' is %lld (node '%s' fixes it)", md[j].name,
							       (long long)g->links[k].value, g->links[k].node);
			diag_error(D, "--max-dim %s: the model has no free dimension symbol of that name (it has %s)%s",
				   md[j].name, *known ? known : "none", made);
			return NULL;
		}
		v[i] = md[j].value;
	}
	for (int i = 0; i < g->nsyms && all; i++)
		if (!v[i] && ir_sym_free(g, i)) {
			diag_error(D, "--no-malloc: give the largest value of dimension symbol '%s' with "
				      "--max-dim %s=N (the arena is sized for it)", g->syms[i], g->syms[i]);
			return NULL;
		}
	return v;
}

/* Reads the golden sets and matches them to g's inputs (by name, through
 * the model as loaded: input_N is the loaded graph's input N) and outputs
 * (by position).  Returns 0 or -1 after a diagnostic. */
static int load_testbench(arena *A, diag *D, const char *model, ir_graph *g, td_list *L,
			  const int64_t *maxd, emit_tb_set **out)
{
	ir_graph *g0 = compile_build(A, D, model, 0, NULL, NULL, "load");
	if (!g0)
		return -1;
	for (int k = 0; k < g0->noutputs; k++)
		if (g0->outputs[k]->seq != IR_TENSOR) {
			diag_error(D, "--testbench: output '%s' is a %s; golden data of sequences and optionals "
				      "are compared by `cellc verify`, not by the test program", g0->outputs[k]->name,
				   g0->outputs[k]->seq == IR_OPT ? "optional" : "sequence");
			return -1;
		}
	ir_graph *scratch = ir_graph_new(A, NULL, "golden");
	emit_tb_set *sets = arena_array(A, (size_t)L->n, sizeof *sets);
	for (int s = 0; s < L->n; s++) {
		td_set *t = &L->sets[s];
		if (t->nin != g0->ninputs || t->nout != g->noutputs) {
			diag_error(D, "--testbench %s: %d inputs and %d outputs; the model has %d inputs and %d "
				      "outputs", t->dir, t->nin, t->nout, g0->ninputs, g->noutputs);
			return -1;
		}
		if (td_read(scratch, D, t))
			return -1;
		sets[s].label = t->dir;
		sets[s].in = arena_array(A, (size_t)g->ninputs + 1, sizeof *sets[s].in);
		sets[s].out = t->out;
		for (int o = 0; o < 2; o++)
			for (int k = 0; k < (o ? g->noutputs : g->ninputs); k++) {
				const ir_value *gv = o ? g->outputs[k] : g->inputs[k];
				int j = k;
				if (!o)
					for (j = 0; j < g0->ninputs && strcmp(g0->inputs[j]->name, gv->name); j++)
						;
				if (j == (o ? g->noutputs : g0->ninputs)) {
					diag_error(D, "--testbench: compiled input '%s' is not an input of the model", gv->name);
					return -1;
				}
				/* data are matched by position: a TensorProto named otherwise is a mix-up */
				if (td_check_name(D, td_path(A, t, o, j), o ? t->out[j] : t->in[j], o ? gv : g0->inputs[j],
						  o ? "output" : "input", j))
					return -1;
				/* FLOAT16 / BFLOAT16 data as the float32 the model computes in */
				ir_value *x = td_widen(scratch, o ? t->out[j] : t->in[j], gv->narrow);
				if (o)
					t->out[j] = x;
				int ok = x->dtype == gv->dtype && x->shape.rank == gv->shape.rank;
				for (int i = 0; ok && i < gv->shape.rank; i++) {
					ir_dim d = gv->shape.d[i];
					/* a data-dependent length is checked when the program runs;
					 * here only against a constant bound */
					if (o && gv->data_dep && i == gv->dd_axis)
						ok = !ir_dim_is_const(d) || x->shape.d[i].k <= d.k;
					else
						ok = !ir_dim_is_const(d) || d.k == x->shape.d[i].k;
					for (int y = 0; ok && maxd && y < g->nsyms; y++)
						if (ir_sym_free(g, y) && ir_dim_eq(d, ir_dim_sym(y)) && x->shape.d[i].k > maxd[y]) {
							diag_error(D, "--testbench %s: %s '%s' has %s = %lld, above its --max-dim %lld",
								   t->dir, o ? "output" : "input", gv->name, g->syms[y],
								   (long long)x->shape.d[i].k, (long long)maxd[y]);
							return -1;
						}
				}
				if (!ok) {
					diag_error(D, "--testbench %s: %s_%d is %s%s, the model's %s '%s' is %s%s", t->dir,
						   o ? "output" : "input", j, ir_dtype_name(x->dtype),
						   ir_shape_str(A, scratch, &x->shape), o ? "output" : "input", gv->name,
						   ir_dtype_name(gv->dtype), ir_shape_str(A, g, &gv->shape));
					return -1;
				}
				if (!o)
					sets[s].in[k] = x;
			}
	}
	*out = sets;
	return 0;
}

/* ---- the command ---- */

/* What `cellc compile` writes (the pipeline's emit stage). */
typedef struct compile_out {
	arena *A;
	const char *model, *name, *outdir, *cmdline;
	int embed, no_malloc, train, js;
	const named_dim *md;    /* --max-dim */
	int nmd;
	int ncarry;             /* --carry */
	const char **carry_in, **carry_out;
	td_list *L;             /* --testbench data sets */
	double rtol, atol;
	long long tb_embed;
} compile_out;

static int emit_compiled(ir_graph *g, diag *D, void *ctx)
{
	const compile_out *c = ctx;
	const int64_t *maxd = NULL;
	if (g->train && (c->embed || c->no_malloc || c->L->n || c->ncarry)) {
		/* --train, or a training build read back from a dump */
		diag_error(D, "a training build does not combine with --embed-weights, --no-malloc, --testbench "
			      "or --carry (its parameters must be a writable weights file)");
		return 1;
	}
	for (int i = 0; c->no_malloc && i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_ODEBLOCK || g->nodes[i]->op == OP_ODERNN) {
			/* rt_ode.c allocates its stage buffers on each call */
			diag_node(D, g->nodes[i], "--no-malloc: an ODE block's solver allocates its stage buffers; "
				  "compile this model without --no-malloc");
			return 1;
		}
	if ((c->nmd || c->no_malloc) && !(maxd = max_dims(c->A, D, g, c->md, c->nmd, c->no_malloc)))
		return 1;
	emit_tb_set *sets = NULL;
	if (c->L->n && load_testbench(c->A, D, c->model, g, c->L, c->no_malloc ? maxd : NULL, &sets))
		return 1;
	if (cmd_mkdirs("compile", c->outdir))
		return 1;
	emit_opts eo = {
		.name = c->name, .outdir = c->outdir, .cmdline = c->cmdline,
		.embed_weights = c->embed, .no_malloc = c->no_malloc, .js = c->js,
		.max_dims = maxd, .ncarry = c->ncarry, .carry_in = c->carry_in, .carry_out = c->carry_out,
	};
	cmd_emit_home(c->A, &eo);
	emit_tb tb = {.nsets = c->L->n, .sets = sets, .rtol = c->rtol, .atol = c->atol,
		      .embed_limit = (size_t)c->tb_embed};
	if (emit_model(g, D, &eo) || D->nerrors)
		return 1;
	if (c->L->n && (emit_testbench(g, D, &eo, &tb) || D->nerrors))
		return 1;
	return g->train && emit_train_program(c->A, D, &eo) ? 1 : 0;
}

/* The command line of cellc compile. */
typedef struct compile_args {
	const char *model, *outdir, *name;
	onnx_binding bind[CMD_MAX_BIND];        /* --bind, --dim */
	int nbind;
	const char *carry_in[CMD_MAX_BIND], *carry_out[CMD_MAX_BIND];   /* --carry */
	int ncarry;
	pass_opts po;
	train_opts topts;
	int embed, no_malloc, werror_fallback, js;
	named_dim md[MAX_MAXDIM];               /* --max-dim */
	int nmd;
	const char *tbdirs[MAX_TB];             /* --testbench */
	int ntb;
	double rtol, atol;
	long long tb_embed;
} compile_args;

/* The options and the model into C: -1, or the command's exit status
 * (--help, a wrong option). */
static int parse_compile_args(int argc, char **argv, arena *A, compile_args *C)
{
	const char *val;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return 0;
		} else if ((r = cmd_opt_value(argc, argv, &i, "-o", &val)) ||
			   (r = cmd_opt_value(argc, argv, &i, "--out", &val))) {
			if (r < 0)
				return 2;
			C->outdir = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--name", &val))) {
			if (r < 0)
				return 2;
			C->name = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--bind", &val))) {
			if (r < 0)
				return 2;
			if (!cmd_add_bind("compile", val, C->bind, &C->nbind))
				return 2;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--dim", &val))) {
			if (r < 0 || !cmd_add_dim_bind("compile", val, C->bind, &C->nbind))
				return 2;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--carry", &val))) {
			char *eq = r > 0 ? strchr((char *)val, '=') : NULL;
			if (!eq || eq == val || !eq[1] || C->ncarry == CMD_MAX_BIND) {
				if (r > 0)
					fprintf(stderr, "cellc compile: --carry wants IN=OUT (a state input and the "
						"output that feeds it), got '%s'\n", val);
				arena_free(A);
				return 2;
			}
			*eq = 0;
			C->carry_in[C->ncarry] = val;
			C->carry_out[C->ncarry++] = eq + 1;
		} else if (!strcmp(a, "--werror-fallback")) {
			C->werror_fallback = 1;
		} else if (!strcmp(a, "--no-hoist")) {
			C->po.no_hoist = 1;
		} else if (!strcmp(a, "--no-fuse")) {
			C->po.no_fuse = 1;
		} else if (!strcmp(a, "--embed-weights")) {
			C->embed = C->po.embed_weights = 1;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--weights", &val))) {
			if (r < 0 || !cmd_weights_opt("compile", val, &C->po)) {
				arena_free(A);
				return 2;
			}
		} else if (!strcmp(a, "--no-malloc")) {
			C->no_malloc = C->po.no_malloc = 1;
		} else if (!strcmp(a, "--js")) {
			C->js = 1;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--max-dim", &val))) {
			if (r < 0 || C->nmd == MAX_MAXDIM ||
			    !cmd_parse_dim("compile", "--max-dim", val, A, &C->md[C->nmd].name, &C->md[C->nmd].value)) {
				arena_free(A);
				return 2;
			}
			C->nmd++;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--testbench-embed", &val))) {
			char *end;
			if (r < 0 || (C->tb_embed = strtoll(val, &end, 10)) < 0 || *end || end == val) {
				fprintf(stderr, "cellc compile: --testbench-embed wants a number of bytes\n");
				arena_free(A);
				return 2;
			}
		} else if ((r = cmd_opt_value(argc, argv, &i, "--testbench", &val))) {
			if (r < 0 || C->ntb == MAX_TB) {
				arena_free(A);
				return 2;
			}
			C->tbdirs[C->ntb++] = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--rtol", &val)) ||
			   (r = cmd_opt_value(argc, argv, &i, "--atol", &val))) {
			if (r < 0 || parse_tol(a, val, strstr(a, "--rtol") ? &C->rtol : &C->atol)) {
				arena_free(A);
				return 2;
			}
		} else if ((r = cmd_train_opt("compile", argc, argv, &i, &C->po, &C->topts))) {
			if (r < 0) {
				arena_free(A);
				return 2;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "cellc compile: unknown option '%s'\n%s", a, usage);
			return 2;
		} else if (C->model) {
			fprintf(stderr, "cellc compile: more than one MODEL ('%s', '%s')\n%s", C->model, a, usage);
			return 2;
		} else {
			C->model = a;
		}
	}
	return -1;
}

/* What the options do not combine to: -1, or the exit status. */
static int check_compile_args(arena *A, compile_args *C)
{
	if (!C->model || !C->outdir) {
		fprintf(stderr, "cellc compile: %s\n%s", !C->model ? "no MODEL given" : "no output directory (-o DIR)",
			usage);
		return 2;
	}
	if (!cmd_weights_check("compile", &C->po))
		return 2;
	if (C->po.train && (C->embed || C->no_malloc || C->ntb)) {
		fprintf(stderr, "cellc compile: --train does not combine with --embed-weights, --no-malloc "
				"or --testbench yet (the parameters must be a writable weights file)\n");
		return 2;
	}
	if (C->js && (C->no_malloc || C->po.train)) {
		fprintf(stderr, "cellc compile: --js does not combine with %s: the JavaScript API makes its "
				"instance with the module's malloc and runs inference\n", C->no_malloc ? "--no-malloc" : "--train");
		return 2;
	}
	if (!cmd_train_check("compile", &C->po, &C->topts)) {
		arena_free(A);
		return 2;
	}
	if (C->name && !cmd_valid_name(C->name)) {
		fprintf(stderr, "cellc compile: --name '%s' is not usable as a C identifier prefix "
				"(letters, digits, '_', not a keyword, at most 64 characters)\n", C->name);
		return 2;
	}
	return -1;
}

int cmd_compile(int argc, char **argv)
{
	compile_args C0 = {.topts = {.loss = TRAIN_CE}, .rtol = 1e-4, .atol = 1e-5, .tb_embed = 262144}, *C = &C0;
	arena A;
	arena_init(&A);
	int st = parse_compile_args(argc, argv, &A, C);
	if (st < 0)
		st = check_compile_args(&A, C);
	if (st >= 0)
		return st;
	const char *model = C->model, *name = C->name;
	diag D;
	diag_init(&D, model);
	int rc = 2;
	td_list L = {0};
	for (int i = 0; i < C->ntb; i++)
		if (td_collect(&A, "compile", C->tbdirs[i], &L)) {
			free(L.sets);
			arena_free(&A);
			return 2;
		}
	if (!name)
		name = cmd_default_name(&A, model);
	compile_out out = {
		.A = &A, .model = model, .name = name, .outdir = C->outdir, .cmdline = cmd_line(&A, argc, argv),
		.embed = C->embed, .no_malloc = C->no_malloc, .train = C->po.train, .js = C->js, .md = C->md,
		.nmd = C->nmd,
		.ncarry = C->ncarry, .carry_in = C->carry_in, .carry_out = C->carry_out, .L = &L, .rtol = C->rtol,
		.atol = C->atol, .tb_embed = C->tb_embed,
	};
	compile_job j = {.model = model, .nbind = C->nbind, .bind = C->bind, .po = &C->po, .emit = emit_compiled,
			 .ctx = &out, .fallbacks = C->werror_fallback ? FALLBACK_ERROR : FALLBACK_WARN};
	if (compile_run(&A, &D, &j) == 0)
		rc = 0;
	free(L.sets);
	diag_finish(&D);
	if (rc)
		fprintf(stderr, "cellc compile: %s was not compiled\n", model);
	arena_free(&A);
	return rc;
}
