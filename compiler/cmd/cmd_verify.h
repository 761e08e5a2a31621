/* cmd_verify.h: what cmd_verify.c (`cellc verify`) and cmd_verify_oracle.c
 * (its --oracle: reference outputs from ONNX Runtime) share: the state of
 * one verify run and the process helpers.  Private to those two.
 */
#ifndef CELLC_CMD_VERIFY_H
#define CELLC_CMD_VERIFY_H

#include "cmd.h"
#include "testdata.h"

enum { MAX_DATA = TD_MAX_SETS };

typedef struct result {
	const char *set, *output, *why;
	int pass;
	double max_abs, max_rel;
} result;

enum { MAX_DIMOPT = 16 };

typedef struct verify {
	const char *model, *name, *keep;
	/* --oracle */
	const char *oracle, *golden, *report;
	int ninputs;
	uint64_t seed;
	/* --dim SYM=N | SYM=OTHER and --bind NAME=FILE.pb | NAME=NUMBER, parsed as
	 * `cellc compile` parses them (cmd_add_dim_bind, cmd_add_bind) */
	int ndims, nbinds;
	onnx_binding dims[CMD_MAX_BIND];
	onnx_binding binds[CMD_MAX_BIND];
	/* --oracle: the sizes the model's operators made one (ir_sym_link) in
	 * a look at it after inference with the options given, so that the
	 * random inputs need a --dim for one of them only; NULL if none */
	const ir_graph *gi;
	const char *sizes_msg;   /* the data set being run has sizes the compiled model refuses: why */
	const char *gi_why;      /* gi NULL: why the model did not get through inference */
	arena gA;               /* gi's */
	int per_set_sizes;      /* compiled for the sizes of each data set (verify_sizes) */
	int nres, capres;
	result *res;            /* every compared output, for --report */
	double rtol, atol;
	pass_opts po;
	train_opts topts;       /* --train: the loss; topts.loss etc. */
	double grad_rtol;       /* --train: relative norm error allowed for loss, grad.*, dstate */
	const char *cmdline;    /* for the provenance header of the emitted code */
	td_list L;              /* the data sets (testdata.h), as `compile --testbench` reads them */
	arena A;                /* data, paths and the unbound graph */
	ir_graph *scratch;      /* owns the reference tensors */
	ir_graph *g0;           /* the model loaded without bindings */
	char *bound;            /* [g0->ninputs] 1: must be a constant (shape operand, RNN weight) */
	int passed, failed;
	int werror_fallback;    /* --werror-fallback: a fallback is an error (compile.h) */
	int fallbacks_told;     /* the fallbacks were reported (by the first compilation) */
	char root[4096];        /* working directory of this run */
} verify;

/* Runs argv with stdout and stderr into `log`; returns the exit status,
 * 128 + signal, or -1 if it could not be started. */
int verify_run_logged(char *const *argv, const char *log);
/* Copies file `path` (its first 200 lines) to stderr, each after `prefix`. */
void verify_show_file(const char *path, const char *prefix);
/* The value of dimension symbol `name` of the loaded model from the --dim
 * options (SYM=OTHER followed) and, for a symbol an operator made one with
 * another or fixed (V->gi's links), from that one; -1 if none gives it. */
int64_t verify_sym_value(const verify *V, const char *name);
/* --oracle: makes V's data sets (one per --inputs) from random inputs and
 * ONNX Runtime's outputs on them; 0, or -1 after a message. */
int verify_oracle_make(verify *V);

#endif
