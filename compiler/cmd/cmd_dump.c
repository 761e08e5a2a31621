/* cmd_dump.c: `cellc dump MODEL [--after PASS]`: the IR as native text.
 *
 * Runs the pipeline up to and including PASS (default: every pass; "load":
 * right after loading) and prints the graph with ir_print, so any stage of
 * any compilation can be inspected and IR tests can compare text.
 */
#include "cmd.h"
#include "train.h"

#include <string.h>

static void print_usage(FILE *f)
{
	fputs("usage: cellc dump MODEL [--after PASS] [--bind NAME=FILE.pb]... [options]\n"
	      "\n"
	      "Prints the IR of MODEL (.onnx or .cell) in the native text format after a pass.\n"
	      "  --after PASS          the last pass to run (default: the last), one of:\n"
	      "                        ", f);
	for (int i = 0, first = 1; i < compile_nstages; i++)
		if (compile_stages[i].kind != STAGE_EMIT) {
			fprintf(f, "%s%s", first ? "" : ", ", compile_stages[i].name);
			first = 0;
		}
	fputs("\n                        (", f);
	for (int i = 0, k = 0; i < compile_nstages; i++)
		if (compile_stages[i].kind == STAGE_RESOLVE) {
			int more = i + 1 < compile_nstages && compile_stages[i + 1].kind == STAGE_RESOLVE;
			fprintf(f, "%s%s", k == 0 ? "" : more ? ", " : " and ", compile_stages[i].name);
			k++;
		}
	fputs(" run as rounds until nothing changes: --after\n"
	      "                        any of them stops after the last round)\n"
	      "  --bind NAME=FILE.pb   compile graph input NAME as the constant in FILE.pb\n"
	      "  --bind NAME=NUMBER    the same for a scalar input given on the command line\n"
	      "  --dim SYM=N, --dim SYM=OTHER  as for `cellc compile`\n"
	      "  --no-hoist, --no-fuse, --no-malloc, --embed-weights, --weights M  as for `cellc compile`\n"
	      "  --train, --loss L, --loss-output NAME, --freeze PREFIX   as for `cellc compile`\n"
	      "                        (the gradient graph)\n"
	      "Exit status: 0 ok, 2 model or command line rejected.\n", f);
}

/* The default of --after: the pass before "emit". */
static const char *last_pass(void)
{
	int i = compile_nstages - 1;
	while (compile_stages[i].kind != STAGE_PASS)
		i--;
	return compile_stages[i].name;
}

int cmd_dump(int argc, char **argv)
{
	const char *model = NULL, *after = NULL, *val;
	onnx_binding bind[CMD_MAX_BIND];
	int nbind = 0;
	pass_opts po = {0};
	train_opts topts = {.loss = TRAIN_CE};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			print_usage(stdout);
			return 0;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--after", &val))) {
			if (r < 0)
				return 2;
			after = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--bind", &val))) {
			if (r < 0)
				return 2;
			if (!cmd_add_bind("dump", val, bind, &nbind))
				return 2;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--dim", &val))) {
			if (r < 0 || !cmd_add_dim_bind("dump", val, bind, &nbind))
				return 2;
		} else if (!strcmp(a, "--no-hoist")) {
			po.no_hoist = 1;
		} else if (!strcmp(a, "--no-fuse")) {
			po.no_fuse = 1;
		} else if (!strcmp(a, "--no-malloc")) {
			po.no_malloc = 1;
		} else if (!strcmp(a, "--embed-weights")) {
			po.embed_weights = 1;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--weights", &val))) {
			if (r < 0 || !cmd_weights_opt("dump", val, &po))
				return 2;
		} else if ((r = cmd_train_opt("dump", argc, argv, &i, &po, &topts))) {
			if (r < 0)
				return 2;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "cellc dump: unknown option '%s'\n", a);
			print_usage(stderr);
			return 2;
		} else if (model) {
			fprintf(stderr, "cellc dump: more than one MODEL ('%s', '%s')\n", model, a);
			return 2;
		} else {
			model = a;
		}
	}
	if (!model) {
		fputs("cellc dump: no MODEL given\n", stderr);
		print_usage(stderr);
		return 2;
	}
	if (!cmd_weights_check("dump", &po) || !cmd_train_check("dump", &po, &topts))
		return 2;
	if (after && !compile_dumpable(after)) {
		fprintf(stderr, "cellc dump: unknown pass '%s'\n", after);
		print_usage(stderr);
		return 2;
	}

	arena A;
	arena_init(&A);
	diag D;
	diag_init(&D, model);
	ir_graph *g = compile_build(&A, &D, model, nbind, bind, &po, after);
	diag_finish(&D);
	if (g) {
		/* no path or version here: IR tests compare this text */
		printf("# IR after %s\n", after ? after : last_pass());
		ir_print(stdout, g);
	}
	arena_free(&A);
	if (fflush(stdout) != 0) {
		fputs("cellc dump: could not write the output\n", stderr);
		return 2;
	}
	return g ? 0 : 2;
}
