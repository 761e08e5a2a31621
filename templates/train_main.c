/* train_main.c: the training program that `cellc compile --train` writes
 * beside a model as NAME_train.c (`make NAME_train` builds it).
 *
 *   NAME_train --train-data F [--train-labels F] [--test-data F --test-labels F]
 *              [--epochs N] [--batch B] [--optimizer sgd|rmsprop|adam|adagrad|cm|nag]
 *              [--lr X] ... (`NAME_train --help` lists every option)
 *
 * Data: IDX files (Fashion-MNIST's format, gzipped or not) or .npy arrays,
 * [N, ...] samples; images [N, H, W] become sequences by --input rows (T = H,
 * I = W) or pixels (T = H W, I = 1), optionally scaled (--scale: x / 255) and
 * with their pixels permuted by a fixed permutation (--permute SEED).  Labels
 * are class indices for the ce losses, float targets for mse (masked-mse:
 * NaN marks a missing target, whose mask is 0).
 *
 * Each optimiser step runs the model's train graph on one batch (outputs
 * `loss`, `grad.<P>`, `dstate`), clips the gradient norm (--clip), and
 * updates every parameter with the optimiser of runtime/rt_optim.c (calls
 * to it only in the "optimiser adapter" section).  Each epoch ends with an
 * evaluation on the test set (forward only: loss, and accuracy for the ce
 * losses from the logits output), a line on stdout, the CSV logs, the plots
 * and a checkpoint.  A checkpoint is one weights file (NAME_save, written to
 * a temporary file and renamed) holding the parameters and "@opt/<P>/<slot>"
 * and "@train/<field>" tensors, from which --resume continues exactly.
 *
 * Data parallelism over MPI: built with -DCELLC_MPI (`make NAME_train MPI=1`,
 * mpicc), `mpirun -np P NAME_train ...` runs P ranks that each hold the model
 * and the optimiser state and draw the same sample order; rank r takes its
 * contiguous share of every global batch (--batch stays the global size),
 * and one MPI_Allreduce per step sums the gradients and the loss, each
 * rank's weighted by its share of what the loss averages (samples, or the
 * unmasked targets of masked-mse), so every rank applies the update of the
 * whole batch.  Evaluation splits each test batch the same way.  Rank 0
 * alone prints, logs, plots and writes checkpoints; a failure while setting
 * up is agreed on by all ranks (the first failing rank's message, its exit
 * status), one while training ends the job with MPI_Abort.  Everything MPI
 * is in the "ranks" section; without CELLC_MPI there is one rank and no
 * MPI call.
 *
 * Exit status: 0 done; 1 NaN or infinite loss or gradient (the last
 * checkpoint is kept), or a failure while running or writing; 2 bad usage
 * or data.
 *
 * It uses only the generic and training API of the emitted header; cellc
 * writes NAME_train.c as
 *
 *     #define _POSIX_C_SOURCE 200809L
 *     #define CELLC_MODEL NAME
 *     #include "NAME.h"
 *     ...this file...
 *
 * Dimension legend: N samples in a data set, B batch, T time steps, S
 * floats per sample, Y label values per sample.
 */
#ifndef CELLC_MODEL
#error "define CELLC_MODEL as the model's NAME and include NAME.h before train_main.c"
#endif

#include <dirent.h>
#include <errno.h>
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cellrt.h"
#ifdef CELLC_MPI
#include <mpi.h>
#endif

#define TR_CAT_(a, b) a##b
#define TR_CAT(a, b) TR_CAT_(a, b)
#define M(x) TR_CAT(CELLC_MODEL, x)     /* M(_run_generic) is NAME_run_generic */
#define TR_STR_(a) #a
#define TR_STR(a) TR_STR_(a)

#define NIN M(_NUM_INPUTS)
#define NOUT M(_NUM_OUTPUTS)
#define NPAR M(_NUM_PARAMS)
#define INFO M(_TRAIN_INFO)

enum { EXIT_NAN = 1, EXIT_USAGE = 2, EXIT_HELP = -1, MAX_GROUPS = 32, LOSS_CE, LOSS_CE_ALL, LOSS_MSE, LOSS_MASKED };

/* This process among the ranks of an MPI run (one rank without CELLC_MPI). */
typedef struct ranks {
	int rank, size;
	int hold;               /* keep messages in `held` (ranks > 0 while setting up) */
	int for_all;            /* messages speak for the job: no "rank r:" */
	char held[8192];
	size_t nheld;
	float *flat;            /* [nflat + 1]: the weighted gradients, then the weighted loss */
	int64_t nflat;
	double reduce_s;        /* seconds in the per-step all-reduce, this epoch */
} ranks;

static ranks R = {.rank = 0, .size = 1};

/* One message line on stderr (or into R.held): "NAME_train: [rank r: ]text tail". */
static void vmessage(const char *fmt, va_list ap, const char *tail)
{
	char line[8192];
	int k = R.size > 1 && !R.for_all ? snprintf(line, sizeof line, "%s_train: rank %d: ", TR_STR(CELLC_MODEL), R.rank)
			   : snprintf(line, sizeof line, "%s_train: ", TR_STR(CELLC_MODEL));
	vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
	size_t n = strlen(line);
	snprintf(line + n, sizeof line - n, "%s\n", tail);
	if (!R.hold) {
		fputs(line, stderr);
		return;
	}
	n = strlen(line);
	if (R.nheld + n < sizeof R.held) {
		memcpy(R.held + R.nheld, line, n + 1);
		R.nheld += n;
	}
}

static int say(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage(fmt, ap, "");
	va_end(ap);
	return rc;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- options ---------------------------------------------------------------- */

typedef struct lr_group {
	const char *prefix;     /* parameters whose name starts with it */
	double lr;
} lr_group;

typedef struct opts {
	const char *train_data, *train_labels, *test_data, *test_labels;
	int input;              /* 0 samples as stored, 1 rows, 2 pixels */
	int permute;            /* --permute given */
	uint64_t permute_seed;
	int scale;              /* x / 255 */
	long epochs, batch, max_steps, checkpoint_every;
	uint64_t seed;
	int shuffle, drop_last, quiet;
	int seq_acc;            /* --seq-acc: ce-all's test accuracy per sequence */
	int optimizer;          /* rt_optim_kind */
	double lr, momentum, dampening, weight_decay, alpha, beta1, beta2, eps, mu_max, clip;
	double tol;             /* --tol: the mse losses' test accuracy (0: none) */
	long final_low;
	int nesterov, have_lr, have_momentum, have_alpha, have_beta1, have_beta2, have_eps, have_mu_max;
	lr_group groups[MAX_GROUPS];
	int ngroups;
	const char *log, *epoch_log, *checkpoint, *resume, *grad_norms, *plot, *weights;
} opts;

static const char usage_text[] =
	"usage: %s_train --train-data F [--train-labels F] [options]\n"
	"Data (IDX files as in Fashion-MNIST, gzipped or not, or .npy arrays; [N, ...]):\n"
	"  --train-data F --train-labels F   training samples and labels (class indices for\n"
	"                        the ce losses, float targets for mse; NaN = missing for masked-mse)\n"
	"  --test-data F --test-labels F     evaluated after every epoch\n"
	"  --input rows|pixels   images [N, H, W] as sequences of rows (T = H, I = W) or\n"
	"                        pixels (T = H*W, I = 1); default: samples as stored\n"
	"  --permute SEED        a fixed random permutation of each sample's values\n"
	"                        (pixels: the permuted sequential task), made from SEED\n"
	"  --scale               divide the inputs by 255\n"
	"Schedule:\n"
	"  --epochs N (1)  --batch B (32)  --max-steps N (optimiser steps in all)\n"
	"  --seed S (0, the shuffling)  --no-shuffle  --drop-last (skip a last short batch)\n"
	"Optimiser (PyTorch's defaults unless given):\n"
	"  --optimizer sgd|rmsprop|adam|adagrad|cm|nag (adam)  --lr X\n"
	"  --momentum M  --nesterov  --dampening D  --weight-decay W  --alpha A (rmsprop)\n"
	"  --beta1 B1 --beta2 B2 (adam)  --eps E  --mu-max M (cm, nag: schedule cap)\n"
	"  --final-low N (cm, nag: momentum 0.9 for the last N updates)\n"
	"  --clip NORM (gradient-norm clipping)  --lr-group PREFIX=LR (repeatable: parameters\n"
	"                        whose name starts with PREFIX; the longest prefix wins)\n"
	"Output:\n"
	"  --log F.csv           step,epoch,loss,grad_norm,seconds per optimiser step\n"
	"  --epoch-log F.csv     epoch,train_loss,test_loss,test_acc,seconds,step per epoch\n"
	"  --tol X               (mse losses) test_acc: the share of test samples whose every\n"
	"                        output is within X of its target (1 - the zero-one error)\n"
	"  --seq-acc             (ce-all) test_acc: the share of test sequences whose every\n"
	"                        step is predicted right (default: the share of steps)\n"
	"  --grad-norms F.csv    epoch,t,grad_norm: ||dL/dh_t|| over the last batch of each epoch\n"
	"  --plot DIR            DIR/loss.svg and DIR/grad_norms.svg\n"
	"  --checkpoint F [--checkpoint-every N]   written atomically after every epoch (and\n"
	"                        every N steps); --resume F continues from one\n"
	"  --weights F           initial weights (default: %s.weights beside the program)\n"
	"  --quiet               no progress display\n"
	"Several processes (a build by `make NAME_train MPI=1`): mpirun -np P %s_train ...\n"
	"  trains data-parallel, --batch being the global batch; rank 0 writes every file.\n"
	"Exit status: 0 done, 1 NaN/Inf loss or gradient or a failure while training, 2 bad\n"
	"usage or data.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage(fmt, ap, " (" TR_STR(CELLC_MODEL) "_train --help lists the options)");
	va_end(ap);
	return EXIT_USAGE;
}

static int parse_long(const char *opt, const char *s, long lo, long *v)
{
	char *end;
	errno = 0;
	long x = strtol(s, &end, 10);
	if (end == s || *end || errno || x < lo)
		return usage_error("%s wants an integer >= %ld, got '%s'", opt, lo, s);
	*v = x;
	return 0;
}

static int parse_u64(const char *opt, const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (end == s || *end || errno || s[0] == '-')
		return usage_error("%s wants a non-negative integer, got '%s'", opt, s);
	*v = x;
	return 0;
}

static int parse_double(const char *opt, const char *s, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(x) || x < 0)
		return usage_error("%s wants a finite number >= 0, got '%s'", opt, s);
	*v = x;
	return 0;
}

static int parse_opts(int argc, char **argv, opts *o)
{
	static const char *const optimizers[] = {"sgd", "rmsprop", "adam", "adagrad", "cm", "nag"};
	static const int kinds[] = {RT_OPT_SGD, RT_OPT_RMSPROP, RT_OPT_ADAM, RT_OPT_ADAGRAD, RT_OPT_CM, RT_OPT_NAG};
	memset(o, 0, sizeof *o);
	o->epochs = 1;
	o->batch = 32;
	o->shuffle = 1;
	o->optimizer = RT_OPT_ADAM;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			if (R.rank == 0)
				printf(usage_text, TR_STR(CELLC_MODEL), TR_STR(CELLC_MODEL), TR_STR(CELLC_MODEL));
			return EXIT_HELP;
		}
		/* flags */
		int *flag = !strcmp(a, "--scale") ? &o->scale : !strcmp(a, "--nesterov") ? &o->nesterov
			  : !strcmp(a, "--drop-last") ? &o->drop_last : !strcmp(a, "--quiet") ? &o->quiet
			  : !strcmp(a, "--seq-acc") ? &o->seq_acc : NULL;
		if (flag) {
			*flag = 1;
			continue;
		}
		if (!strcmp(a, "--no-shuffle")) {
			o->shuffle = 0;
			continue;
		}
		if (strncmp(a, "--", 2) != 0)
			return usage_error("unexpected argument '%s'", a);
		if (i + 1 >= argc)
			return usage_error("%s needs a value, or is not an option", a);
		const char *v = argv[++i];
		const char **str = !strcmp(a, "--train-data") ? &o->train_data
				 : !strcmp(a, "--train-labels") ? &o->train_labels
				 : !strcmp(a, "--test-data") ? &o->test_data
				 : !strcmp(a, "--test-labels") ? &o->test_labels
				 : !strcmp(a, "--log") ? &o->log : !strcmp(a, "--epoch-log") ? &o->epoch_log
				 : !strcmp(a, "--checkpoint") ? &o->checkpoint : !strcmp(a, "--resume") ? &o->resume
				 : !strcmp(a, "--grad-norms") ? &o->grad_norms : !strcmp(a, "--plot") ? &o->plot
				 : !strcmp(a, "--weights") ? &o->weights : NULL;
		struct { const char *name; double *v; int *have; } dbl[] = {
			{"--lr", &o->lr, &o->have_lr}, {"--momentum", &o->momentum, &o->have_momentum},
			{"--dampening", &o->dampening, NULL}, {"--weight-decay", &o->weight_decay, NULL},
			{"--alpha", &o->alpha, &o->have_alpha}, {"--beta1", &o->beta1, &o->have_beta1},
			{"--beta2", &o->beta2, &o->have_beta2}, {"--eps", &o->eps, &o->have_eps},
			{"--mu-max", &o->mu_max, &o->have_mu_max}, {"--clip", &o->clip, NULL},
			{"--tol", &o->tol, NULL},
		};
		struct { const char *name; long *v; long lo; } lng[] = {
			{"--epochs", &o->epochs, 1}, {"--batch", &o->batch, 1}, {"--max-steps", &o->max_steps, 1},
			{"--checkpoint-every", &o->checkpoint_every, 1}, {"--final-low", &o->final_low, 0},
		};
		int done = 0;
		if (str) {
			if (!*v)
				return usage_error("%s wants a file name", a);
			*str = v;
			done = 1;
		}
		for (size_t k = 0; !done && k < sizeof dbl / sizeof dbl[0]; k++)
			if (!strcmp(a, dbl[k].name)) {
				if (parse_double(a, v, dbl[k].v))
					return EXIT_USAGE;
				if (dbl[k].have)
					*dbl[k].have = 1;
				done = 1;
			}
		for (size_t k = 0; !done && k < sizeof lng / sizeof lng[0]; k++)
			if (!strcmp(a, lng[k].name)) {
				if (parse_long(a, v, lng[k].lo, lng[k].v))
					return EXIT_USAGE;
				done = 1;
			}
		if (done)
			continue;
		if (!strcmp(a, "--seed")) {
			if (parse_u64(a, v, &o->seed))
				return EXIT_USAGE;
		} else if (!strcmp(a, "--permute")) {
			if (parse_u64(a, v, &o->permute_seed))
				return EXIT_USAGE;
			o->permute = 1;
		} else if (!strcmp(a, "--input")) {
			if (strcmp(v, "rows") && strcmp(v, "pixels"))
				return usage_error("--input wants rows or pixels, got '%s'", v);
			o->input = !strcmp(v, "rows") ? 1 : 2;
		} else if (!strcmp(a, "--optimizer")) {
			size_t k = 0;
			while (k < 6 && strcmp(v, optimizers[k]))
				k++;
			if (k == 6)
				return usage_error("--optimizer wants sgd, rmsprop, adam, adagrad, cm or nag, got '%s'", v);
			o->optimizer = kinds[k];
		} else if (!strcmp(a, "--lr-group")) {
			const char *eq = strrchr(v, '=');
			if (!eq || eq == v)
				return usage_error("--lr-group wants PREFIX=LR, got '%s'", v);
			if (o->ngroups == MAX_GROUPS)
				return usage_error("at most %d --lr-group options", MAX_GROUPS);
			lr_group *g = &o->groups[o->ngroups++];
			char *p = strdup(v);
			if (!p)
				return say(EXIT_USAGE, "out of memory");
			p[eq - v] = 0;
			g->prefix = p;      /* lives as long as the program */
			if (parse_double("--lr-group", eq + 1, &g->lr))
				return EXIT_USAGE;
		} else {
			return usage_error("unknown option '%s'", a);
		}
	}
	if (!o->train_data)
		return usage_error("no training data (--train-data F)");
	if (!o->train_labels)
		return usage_error("no training labels (--train-labels F)");
	if (!o->test_data != !o->test_labels)
		return usage_error("--test-data and --test-labels go together");
	if (o->checkpoint_every && !o->checkpoint)
		return usage_error("--checkpoint-every needs --checkpoint F");
	if (o->tol > 0 && INFO.loss_kind != 2 && INFO.loss_kind != 3)
		return usage_error("--tol is for the mse losses; this model trains with %s", INFO.loss_kind ? "ce-all" : "ce");
	if (o->seq_acc && INFO.loss_kind != 1)
		return usage_error("--seq-acc is for the ce-all loss; this model trains with %s",
				   INFO.loss_kind == 0 ? "ce" : INFO.loss_kind == 2 ? "mse" : "masked-mse");
	return 0;
}

/* ---- data sets ----------------------------------------------------------------- */

typedef struct dataset {
	const char *xpath, *ypath;
	rt_array x;             /* float32 [N, sample dims] after --input/--scale/--permute */
	rt_array y;             /* int64 (ce losses) or float32 labels [N, ...] */
	int64_t n, S, Y;        /* samples, floats per sample, label values per sample */
	int srank;              /* sample rank (x's rank - 1) */
	int64_t sdims[RT_TF_MAXRANK];
} dataset;

static int ce_loss(void) { return INFO.loss_kind == 0 || INFO.loss_kind == 1; }

/* The permutation of --permute: a seeded Fisher-Yates shuffle of [0, n). */
static int64_t *make_perm(uint64_t seed, int64_t n)
{
	int64_t *p = malloc(sizeof *p * (size_t)(n ? n : 1));
	if (!p)
		return NULL;
	rt_rng r;
	rt_rng_seed(&r, seed);
	for (int64_t i = 0; i < n; i++)
		p[i] = i;
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)(rt_rng_next(&r) % (uint64_t)(i + 1));
		int64_t t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
	return p;
}

static int load_data(dataset *ds, const opts *o)
{
	char err[600];
	int st = rt_array_read(&ds->x, ds->xpath, err, sizeof err);
	if (st != RT_OK)
		return say(EXIT_USAGE, "%s", err);
	if ((st = rt_array_to_f32(&ds->x, err, sizeof err)) != RT_OK)
		return say(EXIT_USAGE, "%s: %s", ds->xpath, err);
	st = rt_array_read(&ds->y, ds->ypath, err, sizeof err);
	if (st != RT_OK)
		return say(EXIT_USAGE, "%s", err);
	st = ce_loss() ? rt_array_to_i64(&ds->y, err, sizeof err) : rt_array_to_f32(&ds->y, err, sizeof err);
	if (st != RT_OK)
		return say(EXIT_USAGE, "%s: %s%s", ds->ypath, err, ce_loss() ? " (the ce losses want class indices)" : "");
	rt_array *x = &ds->x, *y = &ds->y;
	if (x->rank < 1 || y->rank < 1 || x->dims[0] != y->dims[0])
		return say(EXIT_USAGE, "%s holds %lld samples, %s %lld labels", ds->xpath,
			   (long long)(x->rank ? x->dims[0] : 0), ds->ypath, (long long)(y->rank ? y->dims[0] : 0));
	ds->n = x->dims[0];
	if (ds->n < 1)
		return say(EXIT_USAGE, "%s holds no samples", ds->xpath);
	ds->S = rt_array_numel(x) / ds->n;
	ds->Y = rt_array_numel(y) / ds->n;
	ds->srank = x->rank - 1;
	memcpy(ds->sdims, x->dims + 1, sizeof(int64_t) * (size_t)ds->srank);
	if (o->input) {
		if (ds->srank != 2 && !(ds->srank == 3 && ds->sdims[2] == 1))
			return say(EXIT_USAGE, "%s: --input %s wants images [N, H, W], the samples are rank %d",
				   ds->xpath, o->input == 1 ? "rows" : "pixels", ds->srank);
		int64_t h = ds->sdims[0], w = ds->sdims[1];
		ds->srank = 2;
		ds->sdims[0] = o->input == 1 ? h : h * w;
		ds->sdims[1] = o->input == 1 ? w : 1;
	}
	float *xf = x->data;
	if (o->scale)
		for (int64_t i = 0; i < ds->n * ds->S; i++)
			xf[i] /= 255.0f;
	if (o->permute) {
		int64_t *p = make_perm(o->permute_seed, ds->S);
		float *tmp = malloc(sizeof(float) * (size_t)ds->S);
		if (!p || !tmp) {
			free(p), free(tmp);
			return say(EXIT_USAGE, "out of memory");
		}
		for (int64_t s = 0; s < ds->n; s++) {
			float *v = xf + s * ds->S;
			for (int64_t i = 0; i < ds->S; i++)
				tmp[i] = v[p[i]];
			memcpy(v, tmp, sizeof(float) * (size_t)ds->S);
		}
		free(p), free(tmp);
	}
	if (ce_loss() && INFO.nclasses > 0) {
		const int64_t *l = y->data;
		for (int64_t i = 0; i < ds->n * ds->Y; i++)
			if (l[i] < 0 || l[i] >= INFO.nclasses)
				return say(EXIT_USAGE, "%s: label %lld of sample %lld is outside [0, %d)", ds->ypath,
					   (long long)l[i], (long long)(i / ds->Y), INFO.nclasses);
	}
	return 0;
}

/* ---- the model's inputs and outputs for a batch size ---------------------------- */

typedef struct io {
	int64_t dims[RT_TF_MAXRANK];
	int rank, dtype;
	int batch_axis;         /* -1: does not depend on the batch size */
	int64_t outer, inner;   /* elements before / after the batch axis */
	size_t bytes, cap;      /* current size, allocated size */
	void *buf;
} io;

typedef struct model {
	CELLC_MODEL *m;
	M(_dims) d;
	io in[NIN + 1], out[NOUT + 1];
	int x_in, target_in, mask_in, loss_out, dstate_out, logits_out;
	int64_t B;              /* batch size bound now (0: none) */
	/* parameters */
	const char *pname[NPAR + 1];
	float *p[NPAR + 1], *g[NPAR + 1];
	int64_t numel[NPAR + 1];
	double lr[NPAR + 1];
} model;

static int find_io(int is_output, const char *name)
{
	for (int k = 0; k < (is_output ? NOUT : NIN); k++) {
		const char *n = M(_io_name)(is_output, k);
		if (n && !strcmp(n, name))
			return k;
	}
	return -1;
}

static const char *shape_str(char *buf, size_t n, int rank, const int64_t *dims)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* Binds the dims for batch size B and samples of ds's shape: the data input's
 * dims come from the data; the other inputs' dims are placeholders replaced by
 * NAME_io_shape of what bind_dims read, until bind_dims accepts them (the
 * symbols are read from the data input when it comes first, so this settles
 * in two rounds).  Fills every io's dims; 0 or -1 with *why set. */
static int bind(model *md, const dataset *ds, int64_t B, const char **why)
{
	int64_t dims[NIN + 1][RT_TF_MAXRANK];
	const int64_t *dp[NIN + 1];
	int xr = M(_io_rank)(0, md->x_in);
	*why = NULL;
	if (xr != ds->srank + 1) {
		*why = "rank";
		return -1;
	}
	for (int k = 0; k < NIN; k++) {
		dp[k] = dims[k];
		for (int i = 0; i < RT_TF_MAXRANK; i++)
			dims[k][i] = 1;
	}
	for (int i = 0, j = 0; i < xr; i++)
		dims[md->x_in][i] = i == INFO.batch_axis ? B : ds->sdims[j++];
	int st = RT_ERR_SHAPE;
	for (int round = 0; round < 4 && st != RT_OK; round++) {
		st = M(_bind_dims)(dp, &md->d);
		if (st == RT_OK)
			break;
		for (int k = 0; k < NIN; k++)
			if (k != md->x_in && M(_io_shape)(&md->d, 0, k, dims[k]) != RT_OK)
				break;
	}
	if (st != RT_OK) {
		*why = "bind";
		return -1;
	}
	for (int o = 0; o < 2; o++)
		for (int k = 0; k < (o ? NOUT : NIN); k++) {
			io *t = o ? &md->out[k] : &md->in[k];
			t->rank = M(_io_rank)(o, k);
			t->dtype = M(_io_dtype)(o, k);
			if (t->rank < 0 || t->rank > RT_TF_MAXRANK || !rt_dtype_size(t->dtype) ||
			    M(_io_shape)(&md->d, o, k, t->dims) != RT_OK) {
				*why = "io";
				return -1;
			}
			t->bytes = rt_dtype_size(t->dtype);
			for (int i = 0; i < t->rank; i++)
				t->bytes *= (size_t)t->dims[i];
		}
	md->B = B;
	return 0;
}

/* Elements before and after the batch axis of t. */
static void outer_inner(io *t)
{
	t->outer = t->inner = 1;
	for (int i = 0; i < t->rank; i++)
		if (i < t->batch_axis)
			t->outer *= t->dims[i];
		else if (i > t->batch_axis)
			t->inner *= t->dims[i];
}

/* The batch axis of every input and output: the axis whose dim follows the
 * batch size (bound for B = 2 and B = 3). */
static int find_batch_axes(model *md, const dataset *ds)
{
	const char *why;
	int64_t d2[2][NIN + NOUT + 2][RT_TF_MAXRANK];
	for (int r = 0; r < 2; r++) {
		if (bind(md, ds, 2 + r, &why)) {
			char s[200];
			if (!strcmp(why, "rank"))
				return say(EXIT_USAGE, "%s: samples are %s (rank %d); the model's input '%s' has rank %d "
					   "with the batch on axis %d%s", ds->xpath,
					   shape_str(s, sizeof s, ds->srank, ds->sdims), ds->srank,
					   M(_io_name)(0, md->x_in), M(_io_rank)(0, md->x_in), INFO.batch_axis,
					   ds->srank == 2 ? "" : " (images want --input rows or pixels)");
			return say(EXIT_USAGE, "%s: samples of shape %s do not fit the model's input '%s' "
				   "(other sizes? --input rows|pixels?)", ds->xpath,
				   shape_str(s, sizeof s, ds->srank, ds->sdims), M(_io_name)(0, md->x_in));
		}
		for (int k = 0; k < NIN; k++)
			memcpy(d2[r][k], md->in[k].dims, sizeof md->in[k].dims);
		for (int k = 0; k < NOUT; k++)
			memcpy(d2[r][NIN + k], md->out[k].dims, sizeof md->out[k].dims);
	}
	for (int k = 0; k < NIN + NOUT; k++) {
		io *t = k < NIN ? &md->in[k] : &md->out[k - NIN];
		t->batch_axis = -1;
		for (int i = 0; i < t->rank && t->batch_axis < 0; i++)
			if (d2[0][k][i] == 2 && d2[1][k][i] == 3)
				t->batch_axis = i;
		outer_inner(t);
	}
	md->B = 0;      /* bound for sizes 2 and 3, but no buffer allocated: use_batch binds again */
	return 0;
}

/* Binds batch size B and makes every buffer large enough; non-data inputs
 * (initial states) stay zero. */
static int use_batch(model *md, const dataset *ds, int64_t B)
{
	const char *why;
	if (md->B == B)
		return 0;
	if (bind(md, ds, B, &why))
		return say(EXIT_USAGE, "batch size %lld does not fit the model", (long long)B);
	for (int o = 0; o < 2; o++)
		for (int k = 0; k < (o ? NOUT : NIN); k++) {
			io *t = o ? &md->out[k] : &md->in[k];
			outer_inner(t);
			if (t->bytes > t->cap) {
				free(t->buf);
				t->buf = calloc(t->bytes, 1);
				if (!t->buf)
					return say(1, "out of memory for %zu bytes", t->bytes);
				t->cap = t->bytes;
			}
		}
	return 0;
}

/* Copies samples order[0..B) of ds into the data, target (and mask) inputs. */
static void fill_batch(model *md, const dataset *ds, const int64_t *order, int64_t B)
{
	io *x = &md->in[md->x_in], *t = &md->in[md->target_in];
	for (int64_t b = 0; b < B; b++) {
		const float *s = (const float *)ds->x.data + order[b] * ds->S;
		for (int64_t q = 0; q < ds->S; q++) {
			int64_t at = ((q / x->inner) * B + b) * x->inner + q % x->inner;
			if (x->dtype == 7)              /* token indices (setup_model checked them) */
				((int64_t *)x->buf)[at] = (int64_t)s[q];
			else if (x->dtype == 6)
				((int32_t *)x->buf)[at] = (int32_t)s[q];
			else
				((float *)x->buf)[at] = s[q];
		}
		for (int64_t q = 0; q < ds->Y; q++) {
			int64_t at = ((q / t->inner) * B + b) * t->inner + q % t->inner;
			if (t->dtype == 7) {
				((int64_t *)t->buf)[at] = ((const int64_t *)ds->y.data)[order[b] * ds->Y + q];
			} else {
				float v = ((const float *)ds->y.data)[order[b] * ds->Y + q];
				int missing = INFO.loss_kind == 3 && isnan(v);
				((float *)t->buf)[at] = missing ? 0.0f : v;
				if (md->mask_in >= 0)
					((float *)md->in[md->mask_in].buf)[at] = missing ? 0.0f : 1.0f;
			}
		}
	}
}

static int run(model *md, double *loss)
{
	const void *in[NIN + 1];
	void *out[NOUT + 1];
	for (int k = 0; k < NIN; k++)
		in[k] = md->in[k].buf;
	for (int k = 0; k < NOUT; k++)
		out[k] = md->out[k].buf;
	int st = M(_run_generic)(md->m, &md->d, in, out);
	if (st != RT_OK)
		return say(1, "running the model: %s", M(_status_str)(st));
	*loss = *(const float *)md->out[md->loss_out].buf;
	return 0;
}

/* Finds the inputs and outputs by name and checks them against the data. */
static int setup_model(model *md, const dataset *tr, const dataset *te, const opts *o)
{
	md->x_in = INFO.x_input;
	md->target_in = find_io(0, "target");
	md->mask_in = find_io(0, "mask");
	md->loss_out = find_io(1, "loss");
	md->dstate_out = find_io(1, "dstate");
	md->logits_out = ce_loss() ? INFO.logits_output : -1;
	int xdt = md->x_in >= 0 && md->x_in < NIN ? M(_io_dtype)(0, md->x_in) : 0;
	if (xdt != 1 && xdt != 7 && xdt != 6)
		return say(EXIT_USAGE, "the model's data input (%d) is neither float nor integer (int64, "
			   "int32: token indices)", md->x_in);
	/* integer data (token indices of an embedding): the samples must hold
	 * integers that the input's type can take (the readers keep them as
	 * float32, exact below 2^24) */
	for (int s = 0; s < 2 && xdt != 1; s++) {
		const dataset *ds = s ? te : tr;
		if (!ds)
			continue;
		const float *v = ds->x.data;
		for (int64_t i = 0; i < ds->n * ds->S; i++)
			if (v[i] != floorf(v[i]) || fabsf(v[i]) > 16777216.0f)
				return say(EXIT_USAGE, "%s: the model's data input '%s' takes integer token indices, "
					   "but sample %lld holds %g", ds->xpath, M(_io_name)(0, md->x_in),
					   (long long)(i / (ds->S ? ds->S : 1)), (double)v[i]);
	}
	if (md->target_in < 0 || md->loss_out < 0 || (INFO.loss_kind == 3 && md->mask_in < 0))
		return say(EXIT_USAGE, "the model has no '%s' %s: compile it with cellc compile --train",
			   md->target_in < 0 ? "target" : md->loss_out < 0 ? "loss" : "mask",
			   md->loss_out < 0 && md->target_in >= 0 ? "output" : "input");
	if ((M(_io_dtype)(0, md->target_in) == 7) != ce_loss())
		return say(EXIT_USAGE, "the model's target input has dtype %d, unexpected for loss kind %d",
			   M(_io_dtype)(0, md->target_in), INFO.loss_kind);
	for (int k = 0; k < NIN; k++)
		if (k != md->x_in && k != md->target_in && k != md->mask_in && M(_io_dtype)(0, k) != 1)
			return say(EXIT_USAGE, "the model's input '%s' is not a float (initial state) input; the "
				   "training program feeds only the data, target and mask", M(_io_name)(0, k));
	if (find_batch_axes(md, tr))
		return EXIT_USAGE;
	if (md->in[md->x_in].batch_axis != INFO.batch_axis)
		return say(EXIT_USAGE, "the model's data input does not follow the batch size on axis %d",
			   INFO.batch_axis);
	const dataset *sets[2] = {tr, te};
	for (int s = 0; s < 2 && sets[s]; s++) {
		const dataset *ds = sets[s];
		if (s && (ds->srank != tr->srank || memcmp(ds->sdims, tr->sdims, sizeof(int64_t) * (size_t)tr->srank)))
			return say(EXIT_USAGE, "%s: test samples differ in shape from the training samples", ds->xpath);
		const io *t = &md->in[md->target_in];
		if (t->batch_axis < 0 || t->outer * t->inner != ds->Y) {
			char a[200], b[200];
			return say(EXIT_USAGE, "%s: labels of shape %s per sample; the model's target is %s for "
				   "batch size 3", ds->ypath, shape_str(a, sizeof a, ds->y.rank - 1, ds->y.dims + 1),
				   shape_str(b, sizeof b, t->rank, t->dims));
		}
	}
	if (md->logits_out >= 0) {
		const io *l = &md->out[md->logits_out];
		if (md->logits_out >= NOUT || l->batch_axis < 0 || (l->outer * l->inner) % tr->Y)
			return say(EXIT_USAGE, "the model's logits output %d does not fit the labels", md->logits_out);
	}
	/* parameters, their gradients and learning rates */
	for (int k = 0; k < NPAR; k++) {
		int st = M(_param)(md->m, k, &md->pname[k], &md->p[k], &md->numel[k]);
		if (st != RT_OK)
			return say(1, "parameter %d: %s", k, M(_status_str)(st));
		size_t best = 0;
		md->lr[k] = o->lr;
		for (int j = 0; j < o->ngroups; j++) {
			size_t n = strlen(o->groups[j].prefix);
			if (n >= best && !strncmp(md->pname[k], o->groups[j].prefix, n)) {
				best = n;
				md->lr[k] = o->groups[j].lr;
			}
		}
	}
	for (int j = 0; j < o->ngroups; j++) {
		int used = 0;
		for (int k = 0; k < NPAR && !used; k++)
			used = !strncmp(md->pname[k], o->groups[j].prefix, strlen(o->groups[j].prefix));
		if (!used)
			return usage_error("--lr-group %s: no parameter name starts with it", o->groups[j].prefix);
	}
	return 0;
}

/* The gradient outputs: looked up after use_batch (whose buffers they are). */
static int bind_grads(model *md)
{
	char name[RT_TF_NAME + 8];
	for (int k = 0; k < NPAR; k++) {
		snprintf(name, sizeof name, "grad.%s", md->pname[k]);
		int j = find_io(1, name);
		if (j < 0)
			return say(EXIT_USAGE, "the model has no output '%s'", name);
		if (md->out[j].bytes != sizeof(float) * (size_t)md->numel[k])
			return say(EXIT_USAGE, "output '%s' does not have the parameter's %lld elements", name,
				   (long long)md->numel[k]);
		md->g[k] = md->out[j].buf;
	}
	return 0;
}

/* ---- ranks: data parallelism over MPI (every MPI call of the program) ------------ */

#ifdef CELLC_MPI
/* When the user sets no thread count: the node's CPUs shared among the
 * ranks on it (CELLRT_NUM_THREADS for the recurrences; OpenBLAS's pool
 * through openblas_set_num_threads, a weak reference: absent when the
 * program is linked without OpenBLAS). */
void openblas_set_num_threads(int n) __attribute__((weak));

static int threads_per_rank(void)
{
	MPI_Comm node;
	int local = 1;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, R.rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
		MPI_Comm_size(node, &local);
		MPI_Comm_free(&node);
	}
	const char *set[3] = {getenv("CELLRT_NUM_THREADS"), getenv("OPENBLAS_NUM_THREADS"), getenv("OMP_NUM_THREADS")};
	if ((set[0] && *set[0]) || (set[1] && *set[1]) || (set[2] && *set[2]))
		return 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cpus > local ? (int)(cpus / local) : 1;
	char v[16];
	snprintf(v, sizeof v, "%d", n);
	setenv("CELLRT_NUM_THREADS", v, 1);
	if (openblas_set_num_threads)
		openblas_set_num_threads(n);
	return n;
}
#endif

/* MPI_Init; setting-up messages of ranks > 0 are held until ranks_agree. */
static void ranks_init(int *argc, char ***argv)
{
#ifdef CELLC_MPI
	MPI_Init(argc, argv);   /* MPI's errors are fatal to the job (MPI_ERRORS_ARE_FATAL) */
	MPI_Comm_rank(MPI_COMM_WORLD, &R.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &R.size);
	R.hold = R.rank > 0;
#else
	(void)argc, (void)argv;
#endif
}

/* The end of setting up: every rank learns whether any failed.  The first
 * failing rank prints its message (rank 0 printed it already) and its
 * status becomes everyone's, so the job ends with one message and no rank
 * waits for another. */
static int ranks_agree(int rc)
{
#ifdef CELLC_MPI
	if (R.size > 1) {
		int mine = rc ? R.rank : R.size, first;
		MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
		if (first < R.size) {
			if (R.rank == first && R.nheld) {
				fputs(R.held, stderr);
				fflush(stderr);
			}
			MPI_Bcast(&rc, 1, MPI_INT, first, MPI_COMM_WORLD);
		}
	}
#endif
	R.hold = 0;
	R.nheld = 0;
	return rc;
}

/* A failure of this rank alone while training: ends every rank (the others
 * wait in the next all-reduce) with status rc.  One rank: returns rc. */
static int ranks_abort(int rc)
{
#ifdef CELLC_MPI
	if (R.size > 1) {
		fflush(stdout);
		fflush(stderr);
		MPI_Abort(MPI_COMM_WORLD, rc);
	}
#endif
	return rc;
}

static void ranks_finish(void)
{
#ifdef CELLC_MPI
	MPI_Finalize();
#endif
}

/* Rank R.rank's share [lo, hi) of a batch of B samples: contiguous, sizes
 * differing by at most one. */
static void share(int64_t B, int64_t *lo, int64_t *hi)
{
	*lo = B * R.rank / R.size;
	*hi = B * (R.rank + 1) / R.size;
}

/* What the loss of samples order[0..B) averages over, in order[lo..hi):
 * samples, or for masked-mse the targets present (the mask's sum). */
static double loss_count(const dataset *ds, const int64_t *order, int64_t lo, int64_t hi)
{
	if (INFO.loss_kind != 3)
		return (double)(hi - lo);
	int64_t c = 0;
	const float *y = ds->y.data;
	for (int64_t b = lo; b < hi; b++)
		for (int64_t q = 0; q < ds->Y; q++)
			c += !isnan(y[order[b] * ds->Y + q]);
	return (double)c;
}

/* The weight of this rank's loss (and gradient) in the batch's: its share of
 * what the batch's loss averages over (1 with one rank). */
static double loss_weight(const dataset *ds, const int64_t *order, int64_t B)
{
	if (R.size == 1)
		return 1;
	int64_t lo, hi;
	share(B, &lo, &hi);
	double all = loss_count(ds, order, 0, B);
	return all > 0 ? loss_count(ds, order, lo, hi) / all : 0;
}

/* The flat buffer of the all-reduce: every gradient and the loss. */
static int ranks_alloc(const model *md)
{
	if (R.size == 1)
		return 0;
	R.nflat = 0;
	for (int k = 0; k < NPAR; k++)
		R.nflat += md->numel[k];
	if (R.nflat >= 2147483647)      /* MPI counts are ints */
		return say(1, "%lld parameters: too many for one MPI_Allreduce", (long long)R.nflat);
	R.flat = malloc(sizeof(float) * (size_t)(R.nflat + 1));
	return R.flat ? 0 : say(1, "out of memory for the gradient buffer (%lld floats)", (long long)R.nflat + 1);
}

/* Several ranks: sums w x (this rank's gradients and loss) over the ranks in
 * one MPI_Allreduce (zeros from a rank without samples in the batch, have
 * = 0); md->g then points into the sum, the same on every rank, and *loss
 * is the batch's loss. */
static void ranks_sum_grads(model *md, int have, double w, double *loss)
{
#ifdef CELLC_MPI
	float *f = R.flat, wf = (float)w;
	for (int k = 0; k < NPAR; k++) {
		if (have)
			for (int64_t i = 0; i < md->numel[k]; i++)
				f[i] = wf * md->g[k][i];
		else
			memset(f, 0, sizeof(float) * (size_t)md->numel[k]);
		md->g[k] = f;
		f += md->numel[k];
	}
	*f = have ? (float)(w * *loss) : 0.0f;
	double t = now();
	MPI_Allreduce(MPI_IN_PLACE, R.flat, (int)(R.nflat + 1), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	R.reduce_s += now() - t;
	*loss = R.flat[R.nflat];
#else
	(void)md, (void)have, (void)w, (void)loss;
#endif
}

/* Several ranks: v[0..n) summed over the ranks, in place (doubles). */
static void ranks_sum(double *v, int n)
{
#ifdef CELLC_MPI
	if (R.size > 1)
		MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#else
	(void)v, (void)n;
#endif
}

/* Several ranks: whether every rank holds the same parameters (a 64-bit
 * FNV-1a hash of their bytes, its max and min over the ranks). */
static int ranks_same_params(const model *md)
{
#ifdef CELLC_MPI
	if (R.size == 1)
		return 1;
	uint64_t h = 14695981039346656037ull;
	for (int k = 0; k < NPAR; k++) {
		const unsigned char *b = (const unsigned char *)md->p[k];
		for (size_t i = 0; i < sizeof(float) * (size_t)md->numel[k]; i++)
			h = (h ^ b[i]) * 1099511628211ull;
	}
	uint64_t v[2] = {h, ~h}, m[2];
	MPI_Allreduce(v, m, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
	return m[0] == ~m[1];
#else
	(void)md;
	return 1;
#endif
}

/* ---- optimiser adapter: every call into rt_optim ----------------------------- */

typedef struct optim {
	rt_optim o;
	int slots;              /* floats of state per parameter element */
	float *state[NPAR + 1]; /* [slots * numel[k]], slot-major */
	float *point[NPAR + 1]; /* NAG: the parameters kept for evaluation (rt_optim_params) */
} optim;

static int optim_init(optim *op, const opts *o, model *md, long total_steps)
{
	rt_optim_defaults(&op->o, o->optimizer);
	static const double default_lr[RT_OPT_COUNT] = {
		[RT_OPT_SGD] = 0.01, [RT_OPT_RMSPROP] = 0.01, [RT_OPT_ADAM] = 0.001,
		[RT_OPT_ADAGRAD] = 0.01, [RT_OPT_CM] = 0.01, [RT_OPT_NAG] = 0.01,
	};
	if (o->have_momentum)
		op->o.momentum = o->momentum;
	op->o.nesterov = o->nesterov;
	op->o.dampening = o->dampening;
	op->o.weight_decay = o->weight_decay;
	if (o->have_alpha)
		op->o.alpha = o->alpha;
	if (o->have_beta1)
		op->o.beta1 = o->beta1;
	if (o->have_beta2)
		op->o.beta2 = o->beta2;
	if (o->have_eps)
		op->o.eps = o->eps;
	if (o->have_mu_max)
		op->o.mu_max = o->mu_max;
	op->o.final_low_steps = o->final_low;
	op->o.total_steps = total_steps;
	const char *bad = rt_optim_invalid(&op->o);
	if (bad)
		return usage_error("--optimizer: %s", bad);
	op->slots = rt_optim_slots(&op->o);
	for (int k = 0; k < NPAR; k++) {
		if (!o->have_lr && md->lr[k] == 0)
			md->lr[k] = default_lr[o->optimizer];
		op->state[k] = malloc(sizeof(float) * (size_t)(md->numel[k] * (op->slots ? op->slots : 1)));
		op->point[k] = malloc(sizeof(float) * (size_t)md->numel[k]);
		if (!op->state[k] || !op->point[k])
			return say(1, "out of memory for the optimiser state");
		rt_optim_init_state(&op->o, op->state[k], md->numel[k]);
	}
	return 0;
}

static const char *optim_slot_name(const optim *op, int s) { return rt_optim_slot_name(&op->o, s); }

/* The gradient norm before clipping (clipped to max_norm when > 0). */
static double optim_clip(model *md, double max_norm)
{
	if (max_norm > 0)
		return rt_clip_grad_norm(NPAR, md->g, md->numel, (float)max_norm);
	double s = 0;
	for (int k = 0; k < NPAR; k++)
		for (int64_t i = 0; i < md->numel[k]; i++)
			s += (double)md->g[k][i] * md->g[k][i];
	return sqrt(s);
}

static int optim_step(optim *op, model *md)
{
	rt_optim_begin_step(&op->o);
	for (int k = 0; k < NPAR; k++) {
		int st = rt_optim_update(&op->o, md->lr[k], md->p[k], md->g[k], op->state[k], md->numel[k]);
		if (st != RT_OK)
			return say(1, "optimiser update of '%s': %s", md->pname[k], rt_status_str(st));
	}
	return 0;
}

/* Swaps the parameters to be evaluated into the model (only NAG's differ
 * from its buffers); again to swap back. */
static void optim_eval_params(optim *op, model *md, int in)
{
	if (op->o.kind != RT_OPT_NAG)
		return;
	for (int k = 0; k < NPAR; k++) {
		size_t n = sizeof(float) * (size_t)md->numel[k];
		if (in) {
			memcpy(op->point[k], md->p[k], n);
			rt_optim_params(&op->o, md->p[k], op->point[k], op->state[k], md->numel[k]);
		} else {
			memcpy(md->p[k], op->point[k], n);
		}
	}
}

/* ---- training state, checkpoints ---------------------------------------------- */

typedef struct state {
	int64_t step;           /* optimiser steps done */
	int64_t epoch;          /* epoch in progress, 0-based */
	int64_t batch;          /* next batch of that epoch */
	rt_rng rng;             /* the shuffling stream at the start of that epoch */
	double seconds;         /* training time before this run */
	double epoch_loss[2];   /* sum of batch losses x batch sizes, samples, of the epoch so far */
} state;

/* Writes a checkpoint: the parameters, the optimiser state (NAG: the
 * parameters proper as the weights, its look-ahead buffer as a slot) and
 * the training state. */
static int save_checkpoint(const char *path, model *md, optim *op, const state *s, const opts *o)
{
	enum { NTRAIN = 9 };
	if (R.rank)
		return 0;       /* one writer */
	int nx = NPAR * (op->slots + 1) + NTRAIN, n = 0;
	rt_tensor *x = calloc((size_t)nx, sizeof *x);
	char (*names)[RT_TF_NAME] = calloc((size_t)nx, RT_TF_NAME);
	if (!x || !names) {
		free(x), free(names);
		return say(1, "out of memory for a checkpoint");
	}
	int nag = op->o.kind == RT_OPT_NAG;
	for (int k = 0; k < NPAR; k++)
		for (int sl = 0; sl < op->slots + nag; sl++) {
			rt_tensor *t = &x[n];
			snprintf(names[n], RT_TF_NAME, "@opt/%s/%s", md->pname[k], sl < op->slots ? optim_slot_name(op, sl)
												  : "point");
			t->name = names[n++];
			t->dtype = 1;
			t->rank = 1;
			t->dims[0] = md->numel[k];
			/* NAG's look-ahead buffer: in op->point once optim_eval_params swapped it out */
			t->data = sl < op->slots ? op->state[k] + sl * md->numel[k] : (const float *)op->point[k];
			t->nbytes = sizeof(float) * (size_t)md->numel[k];
		}
	int64_t i64[6] = {s->step, s->epoch, s->batch, o->batch, (int64_t)o->seed,
			  o->permute ? (int64_t)o->permute_seed : -1};
	static const char *const i64_names[6] = {"@train/step", "@train/epoch", "@train/batch",
						 "@train/batch_size", "@train/seed", "@train/permute_seed"};
	for (int j = 0; j < 6; j++)
		x[n++] = (rt_tensor){.name = i64_names[j], .dtype = 7, .rank = 1, .dims = {1}, .data = &i64[j], .nbytes = 8};
	x[n++] = (rt_tensor){.name = "@train/rng", .dtype = 13, .rank = 1, .dims = {4}, .data = s->rng.s, .nbytes = 32};
	double f64[3] = {s->seconds, s->epoch_loss[0], s->epoch_loss[1]};
	x[n++] = (rt_tensor){.name = "@train/seconds", .dtype = 11, .rank = 1, .dims = {1}, .data = &f64[0], .nbytes = 8};
	x[n++] = (rt_tensor){.name = "@train/epoch_loss", .dtype = 11, .rank = 1, .dims = {2}, .data = &f64[1], .nbytes = 16};
	/* NAG: the weights file holds the parameters proper */
	optim_eval_params(op, md, 1);
	int st = M(_save)(md->m, path, n, x);
	optim_eval_params(op, md, 0);
	free(x), free(names);
	if (st != RT_OK)
		return say(1, "writing checkpoint %s: %s", path, M(_status_str)(st));
	return 0;
}

/* A write killed half-way leaves its temporary file behind (rt_tf_write's
 * F.tmp.XXXXXX, beside F): removed before training writes F again. */
static void remove_stale_temps(const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char dir[4096], full[8192];
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	if (slash == path)
		snprintf(dir, sizeof dir, "/");
	size_t n = strlen(base);
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		if (!strncmp(e->d_name, base, n) && !strncmp(e->d_name + n, ".tmp.", 5) && strlen(e->d_name + n) == 11) {
			snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
			if (remove(full) == 0)
				say(0, "removed %s, left by an interrupted checkpoint write", full);
		}
	closedir(d);
}

static const rt_tensor *need(const rt_tensorfile *tf, const char *path, const char *name, int dtype,
			     int64_t count)
{
	const rt_tensor *t = rt_tf_find(tf, name);
	if (!t || t->dtype != dtype || t->nbytes != rt_dtype_size(dtype) * (size_t)count) {
		say(EXIT_USAGE, "%s is not a checkpoint of this training setup: '%s' is %s", path, name,
		    t ? "of another type or size" : "missing");
		return NULL;
	}
	return t;
}

/* Reads the optimiser and training state of a checkpoint (the parameters
 * came in through NAME_create). */
static int load_checkpoint(const char *path, model *md, optim *op, state *s, const opts *o)
{
	rt_tensorfile tf;
	int st = rt_tf_open(&tf, path);
	if (st != RT_OK)
		return say(EXIT_USAGE, "%s: %s", path, rt_status_str(st));
	int rc = EXIT_USAGE;
	char name[RT_TF_NAME + 64];
	const rt_tensor *t;
	int nag = op->o.kind == RT_OPT_NAG;
	for (int k = 0; k < NPAR; k++)
		for (int sl = 0; sl < op->slots + nag; sl++) {
			snprintf(name, sizeof name, "@opt/%s/%s", md->pname[k], sl < op->slots ? optim_slot_name(op, sl) : "point");
			if (!(t = need(&tf, path, name, 1, md->numel[k])))
				goto done;
			memcpy(sl < op->slots ? op->state[k] + sl * md->numel[k] : md->p[k], t->data, t->nbytes);
		}
	int64_t v[6];
	static const char *const i64_names[6] = {"@train/step", "@train/epoch", "@train/batch",
						 "@train/batch_size", "@train/seed", "@train/permute_seed"};
	for (int j = 0; j < 6; j++) {
		if (!(t = need(&tf, path, i64_names[j], 7, 1)))
			goto done;
		memcpy(&v[j], t->data, 8);
	}
	s->step = v[0], s->epoch = v[1], s->batch = v[2];
	if (v[3] != o->batch || (uint64_t)v[4] != o->seed || v[5] != (o->permute ? (int64_t)o->permute_seed : -1)) {
		say(EXIT_USAGE, "%s was written with --batch %lld --seed %lld%s%lld; resume with the same values",
		    path, (long long)v[3], (long long)v[4], v[5] >= 0 ? " --permute " : " and no --permute", v[5] >= 0 ? (long long)v[5] : 0LL);
		goto done;
	}
	if (s->step < 0 || s->epoch < 0 || s->batch < 0) {
		say(EXIT_USAGE, "%s: negative step, epoch or batch", path);
		goto done;
	}
	if (!(t = need(&tf, path, "@train/rng", 13, 4)))
		goto done;
	memcpy(s->rng.s, t->data, 32);
	double f[3];
	if (!(t = need(&tf, path, "@train/seconds", 11, 1)))
		goto done;
	memcpy(&f[0], t->data, 8);
	if (!(t = need(&tf, path, "@train/epoch_loss", 11, 2)))
		goto done;
	memcpy(&f[1], t->data, 16);
	s->seconds = f[0], s->epoch_loss[0] = f[1], s->epoch_loss[1] = f[2];
	op->o.step = s->step;
	rc = 0;
done:
	rt_tf_close(&tf);
	return rc;
}

/* ---- CSV logs and plots ------------------------------------------------------ */

typedef struct series {
	double *x, *y;
	int64_t n, cap;
} series;

static int push(series *s, double x, double y)
{
	if (s->n == s->cap) {
		int64_t cap = s->cap ? 2 * s->cap : 256;
		double *nx = realloc(s->x, sizeof(double) * (size_t)cap);
		if (nx)
			s->x = nx;
		double *ny = nx ? realloc(s->y, sizeof(double) * (size_t)cap) : NULL;
		if (!ny)
			return say(1, "out of memory");
		s->y = ny;
		s->cap = cap;
	}
	s->x[s->n] = x;
	s->y[s->n++] = y;
	return 0;
}

typedef struct logs {
	FILE *step, *epoch, *norms;
	series loss, epoch_train, epoch_test;   /* x: step */
	series *norm;           /* [epochs]: x t, y ||dL/dh_t|| */
	int64_t nnorm;
	double *norm_acc;       /* [T] of the current epoch's last batch */
} logs;

/* Opens a CSV log.  A resumed run keeps the rows whose first column is at
 * most `keep` (what the checkpoint covers) and passes each kept row's
 * numbers to `row`; otherwise the file starts anew with the header. */
static FILE *open_log(const char *path, const char *header, int resume, double keep,
		      void (*row)(logs *, const double *, int), logs *L)
{
	char *kept = NULL;
	size_t nkept = 0;
	if (resume) {
		FILE *f = fopen(path, "r");
		char line[4096];
		int first = 1;
		while (f && fgets(line, sizeof line, f)) {
			if (first) {
				first = 0;
				continue;       /* the header */
			}
			double v[8];
			int nv = 0;
			char *p = line, *end;
			while (nv < 8) {
				v[nv] = strtod(p, &end);
				if (end == p)
					v[nv] = NAN;
				nv++;
				p = strchr(end, ',');
				if (!p)
					break;
				p++;
			}
			if (!(v[0] <= keep))
				break;
			size_t n = strlen(line);
			char *k = realloc(kept, nkept + n + 1);
			if (!k)
				break;
			kept = k;
			memcpy(kept + nkept, line, n + 1);
			nkept += n;
			if (row)
				row(L, v, nv);
		}
		if (f)
			fclose(f);
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		say(EXIT_USAGE, "cannot write %s: %s", path, strerror(errno));
		free(kept);
		return NULL;
	}
	fprintf(f, "%s\n", header);
	if (kept)
		fputs(kept, f);
	fflush(f);
	free(kept);
	return f;
}

static void step_row(logs *L, const double *v, int n)
{
	if (n >= 3)
		push(&L->loss, v[0], v[2]);
}

static void epoch_row(logs *L, const double *v, int n)
{
	if (n >= 6) {
		push(&L->epoch_train, v[5], v[1]);
		if (isfinite(v[2]))
			push(&L->epoch_test, v[5], v[2]);
	}
}

static void norm_row(logs *L, const double *v, int n)
{
	if (n < 3 || !(v[0] >= 1) || v[0] > 1e6)
		return;
	int64_t e = (int64_t)v[0];
	if (e > L->nnorm) {
		series *s = realloc(L->norm, sizeof *s * (size_t)e);
		if (!s)
			return;
		memset(s + L->nnorm, 0, sizeof *s * (size_t)(e - L->nnorm));
		L->norm = s;
		L->nnorm = e;
	}
	push(&L->norm[e - 1], v[1], v[2]);
}

static int write_plots(const char *dir, logs *L)
{
	char path[4096];
	rt_series s[3] = {
		{"train loss (step)", L->loss.n, L->loss.x, L->loss.y},
		{"train loss (epoch)", L->epoch_train.n, L->epoch_train.x, L->epoch_train.y},
		{"test loss (epoch)", L->epoch_test.n, L->epoch_test.x, L->epoch_test.y},
	};
	snprintf(path, sizeof path, "%s/loss.svg", dir);
	int st = rt_svg_plot(path, &(rt_plot){TR_STR(CELLC_MODEL) ": loss", "optimiser step", "loss", 0}, 3, s);
	if (st != RT_OK)
		return say(1, "writing %s: %s", path, rt_status_str(st));
	/* at most 10 epochs: the first, the last and evenly spaced ones between */
	rt_series g[10];
	char names[10][32];
	int ng = 0;
	int64_t have = 0;
	for (int64_t e = 0; e < L->nnorm; e++)
		have += L->norm[e].n > 0;
	for (int64_t e = 0, seen = 0; e < L->nnorm && ng < 10; e++) {
		if (!L->norm[e].n)
			continue;
		int64_t want = have <= 10 ? seen : (int64_t)((double)ng * (double)(have - 1) / 9.0 + 0.5);
		if (seen++ != want)
			continue;
		snprintf(names[ng], sizeof names[ng], "epoch %lld", (long long)e + 1);
		g[ng] = (rt_series){names[ng], L->norm[e].n, L->norm[e].x, L->norm[e].y};
		ng++;
	}
	snprintf(path, sizeof path, "%s/grad_norms.svg", dir);
	st = rt_svg_plot(path, &(rt_plot){TR_STR(CELLC_MODEL) ": ||dL/dh_t|| (last batch of the epoch)",
					  "time step t", "||dL/dh_t||", 1}, ng, g);
	if (st != RT_OK)
		return say(1, "writing %s: %s", path, rt_status_str(st));
	return 0;
}

/* ||dL/dh_t|| for every t of the dstate output [T, B, H] into L->norm[epoch]:
 * with several ranks the sum over the ranks of w^2 ||dL_r/dh_t||^2 (have: this
 * rank ran samples of the batch, w: its loss weight). */
static int record_norms(model *md, logs *L, int64_t epoch, int have, double w)
{
	const io *d = &md->out[md->dstate_out];
	int64_t T = d->rank ? d->dims[0] : 0, per = 1;
	for (int i = 1; i < d->rank; i++)
		per *= d->dims[i];
	double *acc = calloc((size_t)(T ? T : 1), sizeof *acc);
	if (!acc)
		return say(1, "out of memory");
	for (int64_t t = 0; t < T && have; t++) {
		const float *v = (const float *)d->buf + t * per;
		for (int64_t j = 0; j < per; j++)
			acc[t] += (double)v[j] * v[j];
		acc[t] *= w * w;
	}
	ranks_sum(acc, (int)T);
	if (epoch >= L->nnorm) {
		series *s = realloc(L->norm, sizeof *s * (size_t)(epoch + 1));
		if (!s) {
			free(acc);
			return say(1, "out of memory");
		}
		memset(s + L->nnorm, 0, sizeof *s * (size_t)(epoch + 1 - L->nnorm));
		L->norm = s;
		L->nnorm = epoch + 1;
	}
	series *s = &L->norm[epoch];
	s->n = 0;
	for (int64_t t = 0; t < T; t++)
		if (push(s, (double)(t + 1), sqrt(acc[t]))) {
			free(acc);
			return 1;
		}
	free(acc);
	return 0;
}

/* ---- progress ----------------------------------------------------------------- */

typedef struct progress {
	int tty, quiet;
	double last;            /* time of the last update */
	int64_t last_line;      /* batch of the last plain line */
} progress;

static void show(progress *pg, long epoch, long epochs, int64_t done, int64_t total, double loss,
		 double rate, int final)
{
	if (pg->quiet)
		return;
	double t = now();
	if (pg->tty) {
		if (!final && t - pg->last < 0.1)
			return;
		pg->last = t;
		char bar[31];
		int fill = total ? (int)(30 * done / total) : 30;
		for (int i = 0; i < 30; i++)
			bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
		bar[30] = 0;
		double eta = rate > 0 ? (double)(total - done) / rate : 0;
		fprintf(stderr, "\repoch %ld/%ld [%s] %lld/%lld loss %.4f %.0f samples/s ETA %d:%02d \033[K", epoch,
			epochs, bar, (long long)done, (long long)total, loss, rate, (int)eta / 60, (int)eta % 60);
		if (final)
			fputc('\n', stderr);
		fflush(stderr);
		return;
	}
	if (final || done - pg->last_line >= total / 10) {
		pg->last_line = final ? 0 : done;
		if (!final)
			fprintf(stderr, "epoch %ld/%ld %lld/%lld loss %.4f %.0f samples/s\n", epoch, epochs,
				(long long)done, (long long)total, loss, rate);
	}
}

/* ---- evaluation --------------------------------------------------------------- */

/* Mean loss and accuracy over a data set, forward only: batches of `batch`
 * samples in file order, each split over the ranks as the training batches
 * are (the batch's loss is the sum of the ranks' weighted losses), the sums
 * reduced over the ranks at the end.  The accuracy is, with tol (mse losses),
 * the share of samples whose every output is within tol; for the ce losses
 * the share of argmax predictions that are right, or with seq_acc (ce-all)
 * the share of samples whose every step's prediction is; NAN otherwise. */
static int evaluate(model *md, optim *op, const dataset *ds, long batch, double tol, int seq_acc, double *loss,
		    double *acc)
{
	int64_t *order = malloc(sizeof *order * (size_t)batch);
	if (!order)
		return say(1, "out of memory");
	M(_set_forward_only)(md->m, 1);
	optim_eval_params(op, md, 1);
	double sums[3] = {0, 0, 0};     /* loss x batch size, right predictions, predictions */
	int rc = 0;
	for (int64_t at0 = 0; at0 < ds->n && !rc; at0 += batch) {
		int64_t B0 = ds->n - at0 < batch ? ds->n - at0 : batch, first, end;
		for (int64_t b = 0; b < B0; b++)
			order[b] = at0 + b;
		share(B0, &first, &end);
		if (end == first)
			continue;
		double w = loss_weight(ds, order, B0), l;
		int64_t at = at0 + first, B = end - first;
		if ((rc = use_batch(md, ds, B)))
			break;
		fill_batch(md, ds, order + first, B);
		if ((rc = run(md, &l)))
			break;
		sums[0] += w * l * (double)B0;
		if (tol > 0) {          /* a sample is right when every output it has a target for is near it */
			const io *yo = &md->out[INFO.logits_output], *t = &md->in[md->target_in];
			const float *y = yo->buf, *tv = t->buf, *mk = md->mask_in >= 0 ? md->in[md->mask_in].buf : NULL;
			for (int64_t b = 0; b < B; b++) {
				int right = 1;
				for (int64_t q = 0; q < ds->Y && right; q++) {
					int64_t i = ((q / t->inner) * B + b) * t->inner + q % t->inner;
					right = (mk && mk[i] == 0.0f) || fabsf(y[i] - tv[i]) <= (float)tol;
				}
				sums[1] += right;
				sums[2]++;
			}
			continue;
		}
		if (md->logits_out < 0)
			continue;
		const io *lo = &md->out[md->logits_out];
		const float *z = lo->buf;
		int64_t C = lo->outer * lo->inner / ds->Y;
		for (int64_t b = 0; b < B; b++) {
			int64_t right = 0;
			for (int64_t p = 0; p < ds->Y; p++) {
				int64_t best = 0;
				float bz = -INFINITY;
				for (int64_t c = 0; c < C; c++) {
					int64_t q = p * C + c;
					float v = z[((q / lo->inner) * B + b) * lo->inner + q % lo->inner];
					if (v > bz) {
						bz = v;
						best = c;
					}
				}
				right += best == ((const int64_t *)ds->y.data)[(at + b) * ds->Y + p];
			}
			sums[1] += seq_acc ? (double)(right == ds->Y) : (double)right;
			sums[2] += seq_acc ? 1 : (double)ds->Y;
		}
	}
	optim_eval_params(op, md, 0);
	M(_set_forward_only)(md->m, 0);
	free(order);
	if (rc)
		return rc;
	ranks_sum(sums, 3);
	*loss = sums[0] / (double)ds->n;
	*acc = (md->logits_out >= 0 || tol > 0) && sums[2] > 0 ? sums[1] / sums[2] : NAN;
	return 0;
}

/* ---- the program ------------------------------------------------------------------ */

static void fmt_num(char *buf, size_t n, double v)
{
	if (isnan(v))
		buf[0] = 0;
	else
		snprintf(buf, n, "%.9g", v);
}

/* The default weights: NAME.weights in the program's directory. */
static const char *default_weights(const char *argv0)
{
	static char path[4096];
	const char *slash = strrchr(argv0, '/');
	int n = slash ? (int)(slash - argv0) : 1;
	snprintf(path, sizeof path, "%.*s/%s.weights", n, slash ? argv0 : ".", TR_STR(CELLC_MODEL));
	return path;
}

typedef struct trainer {
	opts o;
	dataset train, test;
	model md;
	optim op;
	state s;
	logs L;
	progress pg;
	int64_t *order;         /* [train.n] this epoch's sample order */
	int together;           /* the status train() returns is every rank's (not a failure of this one) */
} trainer;

/* The loss and gradients of samples order[0..B): this rank runs its share
 * (none when B is smaller than the number of ranks), then the ranks' weighted
 * gradients and losses are summed (several ranks). *w: this rank's weight. */
static int train_batch(trainer *T, const int64_t *order, int64_t B, double *loss, double *w, int *have)
{
	model *md = &T->md;
	int64_t lo, hi;
	share(B, &lo, &hi);
	*loss = 0;
	*w = loss_weight(&T->train, order, B);
	*have = hi > lo;
	if (*have) {
		int rc = use_batch(md, &T->train, hi - lo);
		if (!rc)
			rc = bind_grads(md);
		if (rc)
			return rc;
		fill_batch(md, &T->train, order + lo, hi - lo);
		if ((rc = run(md, loss)))
			return rc;
		if (R.size > 1 && !isfinite(*loss))     /* which rank: the sum below tells every rank */
			say(0, "the loss of its share of step %lld (samples %lld to %lld of the batch) is %s",
			    (long long)T->s.step + 1, (long long)lo + 1, (long long)hi, isnan(*loss) ? "NaN" : "infinite");
	}
	if (R.size > 1)
		ranks_sum_grads(md, *have, *w, loss);
	return 0;
}

static int train(trainer *T)
{
	opts *o = &T->o;
	model *md = &T->md;
	state *s = &T->s;
	logs *L = &T->L;
	const int64_t N = T->train.n;
	const int64_t nbatch = o->drop_last ? N / o->batch : (N + o->batch - 1) / o->batch;     /* >= 1 (setup) */
	double t0 = now() - s->seconds;
	for (; s->epoch < o->epochs; s->epoch++, s->batch = 0) {
		rt_rng epoch_rng = s->rng;      /* the checkpoint's copy: it redraws this epoch's order */
		for (int64_t i = 0; i < N; i++)
			T->order[i] = i;
		for (int64_t i = N - 1; i > 0 && o->shuffle; i--) {
			int64_t j = (int64_t)(rt_rng_next(&s->rng) % (uint64_t)(i + 1));
			int64_t t = T->order[i];
			T->order[i] = T->order[j];
			T->order[j] = t;
		}
		rt_rng next_rng = s->rng;
		s->rng = epoch_rng;
		double te = now();
		int64_t seen = 0;
		for (; s->batch < nbatch; s->batch++) {
			if (o->max_steps && s->step >= o->max_steps) {
				s->seconds = now() - t0;
				return 0;
			}
			int64_t at = s->batch * o->batch, B = N - at < o->batch ? N - at : o->batch;
			double loss, w;
			int have;
			int rc = train_batch(T, T->order + at, B, &loss, &w, &have);
			if (rc)
				return rc;
			/* with several ranks the same loss and gradients on every rank from here */
			double gnorm = optim_clip(md, o->clip);
			if (!isfinite(loss) || !isfinite(gnorm)) {
				T->together = 1;
				if (R.rank)
					return EXIT_NAN;
				if (!T->pg.quiet && T->pg.tty)
					fputc('\n', stderr);
				double bad = isfinite(loss) ? gnorm : loss;
				R.for_all = 1;  /* rank 0 speaks for the job: no "rank 0:" */
				say(EXIT_NAN, "step %lld (epoch %lld, batch %lld): the %s is %s; stopping",
				    (long long)s->step + 1, (long long)s->epoch + 1, (long long)s->batch + 1,
				    isfinite(loss) ? "gradient norm" : "loss", isnan(bad) ? "NaN" : "infinite");
				if (o->checkpoint)
					say(EXIT_NAN, "the last checkpoint, %s, is kept as it was", o->checkpoint);
				return EXIT_NAN;
			}
			if (s->batch == nbatch - 1 && md->dstate_out >= 0 && (rc = record_norms(md, L, s->epoch, have, w)))
				return rc;
			if ((rc = optim_step(&T->op, md)))
				return rc;
			s->step++;
			s->epoch_loss[0] += loss * (double)B;
			s->epoch_loss[1] += (double)B;
			seen += B;
			double secs = now() - t0;
			if (L->step) {
				fprintf(L->step, "%lld,%lld,%.9g,%.9g,%.3f\n", (long long)s->step, (long long)s->epoch + 1,
					loss, gnorm, secs);
				push(&L->loss, (double)s->step, loss);
			}
			double el = now() - te;
			show(&T->pg, (long)s->epoch + 1, o->epochs, at + B, N, s->epoch_loss[0] / s->epoch_loss[1],
			     el > 0 ? (double)seen / el : 0, 0);
			if (o->checkpoint_every && s->step % o->checkpoint_every == 0 && s->batch + 1 < nbatch) {
				s->batch++;     /* the checkpoint resumes at the next batch */
				s->seconds = now() - t0;
				if (L->step)
					fflush(L->step);
				rc = save_checkpoint(o->checkpoint, md, &T->op, s, o);
				s->batch--;
				if (rc)
					return rc;
			}
		}
		/* the end of an epoch */
		double el = now() - te;
		show(&T->pg, (long)s->epoch + 1, o->epochs, N, N, s->epoch_loss[0] / s->epoch_loss[1],
		     el > 0 ? (double)seen / el : 0, 1);
		double tl = NAN, ta = NAN, trl = s->epoch_loss[0] / s->epoch_loss[1];
		int rc;
		if (T->test.n && (rc = evaluate(md, &T->op, &T->test, o->batch, o->tol, o->seq_acc, &tl, &ta)))
			return rc;
		if (!ranks_same_params(md)) {    /* every rank learns it */
			T->together = 1;
			if (R.rank)
				return 1;
			R.for_all = 1;
			return say(1, "after epoch %lld the ranks' parameters differ (the all-reduce gave the ranks "
				   "different sums)", (long long)s->epoch + 1);
		}
		double secs = now() - t0;
		char a[40], b[40];
		if (R.rank == 0) {
			printf("epoch %lld/%ld: train_loss %.6f", (long long)s->epoch + 1, o->epochs, trl);
			if (T->test.n)
				printf(" test_loss %.6f", tl);
			if (!isnan(ta))
				printf(" test_acc %.4f", ta);
			printf(" (%.1f s, %.0f samples/s", el, el > 0 ? (double)seen / el : 0);
			if (R.size > 1)
				printf("; %d ranks, all-reduce %.3f s", R.size, R.reduce_s);
			printf(")\n");
			fflush(stdout);
		}
		R.reduce_s = 0;
		if (L->epoch) {
			fmt_num(a, sizeof a, tl);
			fmt_num(b, sizeof b, ta);
			fprintf(L->epoch, "%lld,%.9g,%s,%s,%.3f,%lld\n", (long long)s->epoch + 1, trl, a, b, secs,
				(long long)s->step);
			fflush(L->epoch);
		}
		push(&L->epoch_train, (double)s->step, trl);
		if (T->test.n)
			push(&L->epoch_test, (double)s->step, tl);
		if (L->norms && s->epoch < L->nnorm) {
			for (int64_t t = 0; t < L->norm[s->epoch].n; t++)
				fprintf(L->norms, "%lld,%lld,%.9g\n", (long long)s->epoch + 1, (long long)t + 1,
					L->norm[s->epoch].y[t]);
			fflush(L->norms);
		}
		if (L->step)
			fflush(L->step);
		if (o->plot && R.rank == 0 && (rc = write_plots(o->plot, L)))
			return rc;
		s->epoch_loss[0] = s->epoch_loss[1] = 0;
		s->rng = next_rng;
		if (o->checkpoint) {
			state c = *s;
			c.epoch++;
			c.batch = 0;
			c.seconds = now() - t0;
			if ((rc = save_checkpoint(o->checkpoint, md, &T->op, &c, o)))
				return rc;
		}
	}
	return 0;
}

/* Flush-to-zero and denormals-are-zero (x86): over long sequences the state
 * gradients shrink into subnormal floats, on which the BLAS kernels run 10-20
 * times slower (MomentumLSTM, T = 784: 42 s against 3.7 s per step); values
 * below 1.2e-38 change no loss the program prints. */
static void flush_denormals(void)
{
#if defined(__SSE__) || defined(__x86_64__)
	_mm_setcsr(_mm_getcsr() | 0x8040);
#endif
}

/* 0 when a file can be created in dir (one is, and removed), else errno:
 * what access(W_OK) says is not what writing finds (root, read-only
 * mounts). */
static int probe_dir(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/.%s_train.probe.XXXXXX", dir, TR_STR(CELLC_MODEL));
	int fd = mkstemp(path);
	if (fd < 0)
		return errno;
	close(fd);
	remove(path);
	return 0;
}

/* The checkpoint and the plots are first written after an epoch: their
 * paths are tried now, so that a mistyped one costs no training.  A
 * checkpoint is written beside F and renamed over it (its directory must
 * take a new file, F must not be a directory); the plots are DIR/loss.svg
 * and DIR/grad_norms.svg, opened for writing where they exist. */
static int check_outputs(const opts *o)
{
	struct stat st;
	int e;
	if (o->checkpoint) {
		const char *slash = strrchr(o->checkpoint, '/');
		char dir[4096];
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - o->checkpoint) : 1, slash ? o->checkpoint : ".");
		if (slash == o->checkpoint)
			snprintf(dir, sizeof dir, "/");
		if (stat(o->checkpoint, &st) == 0 && S_ISDIR(st.st_mode))
			return say(EXIT_USAGE, "--checkpoint %s: is a directory", o->checkpoint);
		if ((e = probe_dir(dir)))
			return say(EXIT_USAGE, "--checkpoint %s: cannot write in %s: %s", o->checkpoint, dir, strerror(e));
	}
	if (o->plot) {
		if (stat(o->plot, &st) != 0 || !S_ISDIR(st.st_mode))
			return say(EXIT_USAGE, "--plot %s: not a directory", o->plot);
		if ((e = probe_dir(o->plot)))
			return say(EXIT_USAGE, "--plot %s: not a writable directory: %s", o->plot, strerror(e));
		static const char *const files[2] = {"loss.svg", "grad_norms.svg"};
		for (int i = 0; i < 2; i++) {
			char path[4200];
			snprintf(path, sizeof path, "%s/%s", o->plot, files[i]);
			if (stat(path, &st) != 0)
				continue;       /* made when written */
			FILE *f = S_ISDIR(st.st_mode) ? NULL : fopen(path, "r+");
			if (!f)
				return say(EXIT_USAGE, "--plot %s: cannot write %s: %s", o->plot, path,
					   S_ISDIR(st.st_mode) ? "a directory" : strerror(errno));
			fclose(f);
		}
	}
	return 0;
}

/* Everything before the first step: options, data, model, optimiser,
 * checkpoint; rank 0 also opens the logs and checks the plot directory.
 * Every rank runs it; main agrees on the outcome. */
static int setup(trainer *T, int argc, char **argv)
{
	int rc = parse_opts(argc, argv, &T->o);
	if (rc)
		return rc;
	opts *o = &T->o;
	T->train.xpath = o->train_data, T->train.ypath = o->train_labels;
	T->test.xpath = o->test_data, T->test.ypath = o->test_labels;
	if ((rc = load_data(&T->train, o)) || (o->test_data && (rc = load_data(&T->test, o))))
		return rc;
	const char *wpath = o->resume ? o->resume : o->weights ? o->weights : default_weights(argv[0]);
	int st = M(_create)(&T->md.m, wpath);
	if (st != RT_OK)
		return say(EXIT_USAGE, "%s: %s", wpath, M(_status_str)(st));
	T->order = malloc(sizeof *T->order * (size_t)T->train.n);
	if (!T->order)
		return say(1, "out of memory");
	if ((rc = setup_model(&T->md, &T->train, o->test_data ? &T->test : NULL, o)))
		return rc;
	int64_t nbatch = o->drop_last ? T->train.n / o->batch : (T->train.n + o->batch - 1) / o->batch;
	if (nbatch < 1)
		return usage_error("--drop-last with --batch %ld leaves no batch of %lld samples", o->batch,
				   (long long)T->train.n);
	long total = o->max_steps ? o->max_steps : (long)(nbatch * o->epochs);
	if ((rc = optim_init(&T->op, o, &T->md, total)) || (rc = ranks_alloc(&T->md)))
		return rc;
	rt_rng_seed(&T->s.rng, o->seed);
	if (o->resume && (rc = load_checkpoint(o->resume, &T->md, &T->op, &T->s, o)))
		return rc;
	if (R.rank)
		return 0;
	int res = o->resume != NULL;
	if (o->log && !(T->L.step = open_log(o->log, "step,epoch,loss,grad_norm,seconds", res, (double)T->s.step,
					       step_row, &T->L)))
		return EXIT_USAGE;
	if (o->epoch_log && !(T->L.epoch = open_log(o->epoch_log, "epoch,train_loss,test_loss,test_acc,seconds,step",
						    res, (double)T->s.epoch, epoch_row, &T->L)))
		return EXIT_USAGE;
	if (o->grad_norms && !(T->L.norms = open_log(o->grad_norms, "epoch,t,grad_norm", res, (double)T->s.epoch,
						     norm_row, &T->L)))
		return EXIT_USAGE;
	if ((rc = check_outputs(o)))
		return rc;
	if (o->checkpoint)
		remove_stale_temps(o->checkpoint);
	return 0;
}

int main(int argc, char **argv)
{
	static trainer T;       /* large: not on the stack */
	flush_denormals();
	ranks_init(&argc, &argv);
	int rc = setup(&T, argc, argv);
	if (rc == EXIT_HELP) {
		ranks_finish();
		return 0;
	}
	if ((rc = ranks_agree(rc))) {
		ranks_finish();
		return rc;
	}
	opts *o = &T.o;
	int threads = 0;
#ifdef CELLC_MPI
	if (R.size > 1)
		threads = threads_per_rank();
#endif
	T.pg.tty = isatty(fileno(stderr));
	T.pg.quiet = o->quiet || R.rank;
	if (R.rank == 0 && R.size > 1) {
		printf("data-parallel over %d ranks", R.size);
		if (threads)
			printf(", %d thread%s each", threads, threads > 1 ? "s" : "");
		printf("; all-reduce of %lld floats (%.3g MB) per step\n", (long long)R.nflat + 1,
		       4e-6 * (double)(R.nflat + 1));
	}
	if (R.rank == 0 && o->resume)
		printf("resuming from %s at step %lld (epoch %lld, batch %lld)\n", o->resume, (long long)T.s.step,
		       (long long)T.s.epoch + 1, (long long)T.s.batch + 1);
	if (R.rank == 0 && T.s.epoch >= o->epochs)
		printf("the checkpoint has finished all %ld epochs: nothing to train\n", o->epochs);
	rc = train(&T);
	if (rc == 0 && o->max_steps && T.s.step >= o->max_steps) {
		if (R.rank == 0)
			printf("stopped after %lld steps (--max-steps)\n", (long long)T.s.step);
		if (o->checkpoint)
			rc = save_checkpoint(o->checkpoint, &T.md, &T.op, &T.s, o);
		if (!rc && o->plot && R.rank == 0)
			rc = write_plots(o->plot, &T.L);
	}
	FILE *fs[3] = {T.L.step, T.L.epoch, T.L.norms};
	for (int i = 0; i < 3; i++)
		if (fs[i] && fclose(fs[i]) != 0 && !rc)
			rc = say(1, "writing a log: %s", strerror(errno));
	if (rc && !T.together)
		ranks_abort(rc);        /* this rank alone failed: end them all */
	M(_destroy)(T.md.m);
	ranks_finish();
	return rc;
}
