/* compile.h: the pipeline (compile.c) as the subcommands use it. */
#ifndef CELLC_COMPILE_H
#define CELLC_COMPILE_H

#include "diag.h"
#include "emit.h"
#include "ir.h"
#include "onnx.h"
#include "passes.h"
#include "version.h"

/* The stages of a compilation, in order (compile.c): "load" (the front end
 * the file's suffix picks), the resolving stages (infer, seq, loops: rounds
 * until nothing changes, passes.h), the passes (passes.h), "emit" (the
 * caller's). */
typedef enum { STAGE_LOAD, STAGE_RESOLVE, STAGE_PASS, STAGE_EMIT } compile_stage_kind;
typedef struct compile_stage {
	const char *name;       /* for `cellc dump --after NAME` and ir_verify's messages */
	compile_stage_kind kind;
	pass_fn run;            /* STAGE_PASS */
	round_fn round;         /* STAGE_RESOLVE: one round */
	int (*finish)(ir_graph *g, diag *D);    /* STAGE_RESOLVE: after the last round, or NULL */
	int (*claims)(const ir_node *n);        /* STAGE_RESOLVE: the nodes it rewrites, or NULL */
} compile_stage;
extern const compile_stage compile_stages[];
extern const int compile_nstages;

/* Fallbacks: what compiles correctly but not as well as the model could --
 * a traced loop pass_reroll left unrolled (ir_unrolled: the code grows
 * with T, no streaming step) and a recurrence whose time axis stays fixed
 * (its attribute time_note: no streaming step, no other length).  They are
 * in the IR (`cellc dump` prints both); `cellc info` lists them, compile
 * and verify report them before they write anything: a warning each, or
 * with --werror-fallback an error each (exit status 2). */
typedef enum {
	FALLBACK_QUIET,         /* not reported (dump; info lists them itself) */
	FALLBACK_WARN,
	FALLBACK_ERROR,
} compile_fallback_mode;
int compile_nfallbacks(const ir_graph *g);
/* The k-th fallback as one sentence, without the file name. */
const char *compile_fallback_text(arena *A, const ir_graph *g, int k);
/* Reports every fallback of g in D as mode says; the number of errors. */
/* A warning for each size an operator's contract fixed to a constant
 * (ir_sym_link with no `into`): the model then runs for that size only. */
void compile_fixed_sizes(arena *A, const ir_graph *g, diag *D);
int compile_fallbacks(arena *A, const ir_graph *g, diag *D, compile_fallback_mode mode);

/* One compilation as a command asks for it. */
typedef struct compile_job {
	const char *model;      /* .onnx or .cell */
	int nbind;              /* --bind / --dim (ONNX only) */
	const onnx_binding *bind;
	const pass_opts *po;    /* NULL: defaults */
	const char *stop_after; /* the last stage to run (load or a pass); NULL: all */
	/* the "emit" stage: writes what the command makes of the planned graph
	 * and returns its number of errors; NULL: the pipeline ends after "plan" */
	int (*emit)(ir_graph *g, diag *D, void *ctx);
	/* called after every stage that succeeded (after ir_verify), or NULL */
	void (*after)(const char *stage, ir_graph *g, void *ctx);
	void *ctx;              /* for emit and after */
	compile_fallback_mode fallbacks; /* reported before the emit stage (0: not) */
	/* Ifs decided by a size (ir_graph.choice_take): compile_run's own */
	const signed char *choice_take; /* the options the first nchoice such Ifs take */
	int nchoice;
	int choice_hold;        /* hold the diagnostics once an If has another option */
	int skip_after;         /* after-calls already made by an earlier try */
	int nafter;             /* out: after-calls made */
	ir_graph *g;            /* out: the graph as far as it got (NULL: not loaded) */
	const char *failed;     /* out: the stage that failed, or NULL */
} compile_job;

/* Runs the stages of j in order; 0, or the number of errors (diagnostics in
 * D) with j->failed naming the stage that reported them. */
int compile_run(arena *A, diag *D, compile_job *j);
/* compile_run without hooks or emitter: the graph after stop_after (NULL:
 * after the last pass), or NULL after the diagnostics. */
ir_graph *compile_build(arena *A, diag *D, const char *model, int nbind, const onnx_binding *bind,
			const pass_opts *po, const char *stop_after);
/* 1 if `cellc dump --after name` knows the stage (load or a pass). */
int compile_dumpable(const char *name);
/* 1 if name is one of the resolving stages (STAGE_RESOLVE). */
int compile_resolving(const char *name);
int compile_checking(void);     /* CELLC_VERIFY set: ir_verify after every stage */

/* subcommands (cmd_*.c); argv[0] is the subcommand name */
int cmd_compile(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_info(int argc, char **argv);

#endif
