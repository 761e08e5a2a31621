/* cmd_export.c: `cellc export MODEL.onnx WEIGHTS -o OUT.onnx [--strict]
 * [--report]`: trained weights back into the source ONNX model.
 *
 * WEIGHTS is a cellc weights file: the NAME.weights of a `--train` build, or
 * a checkpoint the training program saved (its "@..." optimiser tensors are
 * skipped).  The work is onnx_export (onnx_export.c); this file is the
 * command line.  A .cell model is refused: it reads its weights from a file
 * (`weights "FILE"`), so the trained weights file is already what it loads.
 */
#include "cmd.h"

#include <string.h>

static void print_usage(FILE *f)
{
	fputs("usage: cellc export MODEL.onnx WEIGHTS -o OUT.onnx [--strict] [--report]\n"
	      "\n"
	      "Writes OUT.onnx: a copy of MODEL.onnx whose initializers hold the tensors of\n"
	      "the same name from WEIGHTS (a cellc weights file, e.g. the NAME.weights or a\n"
	      "checkpoint of a `cellc compile --train` build; tensors named \"@...\", the\n"
	      "optimiser state of a checkpoint, are ignored).  Graph, opsets, metadata and\n"
	      "everything else stay as they were.  Every WEIGHTS tensor must match an\n"
	      "initializer in element type and shape; nothing is written unless all do.\n"
	      "  -o, --out OUT.onnx  the file to write (atomically: temporary file, rename)\n"
	      "  --strict            every float initializer the model uses must be in WEIGHTS\n"
	      "  --report            list every initializer (replaced or kept) on stdout\n"
	      "Exit status: 0 ok, 2 a file or the command line rejected (nothing written).\n", f);
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

int cmd_export(int argc, char **argv)
{
	const char *model = NULL, *weights = NULL, *out = NULL, *val;
	onnx_export_opts o = {0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			print_usage(stdout);
			return 0;
		} else if ((r = cmd_opt_value(argc, argv, &i, "-o", &val)) ||
			   (r = cmd_opt_value(argc, argv, &i, "--out", &val))) {
			if (r < 0)
				return 2;
			out = val;
		} else if (!strcmp(a, "--strict")) {
			o.strict = 1;
		} else if (!strcmp(a, "--report")) {
			o.report = 1;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "cellc export: unknown option '%s'\n", a);
			print_usage(stderr);
			return 2;
		} else if (!model) {
			model = a;
		} else if (!weights) {
			weights = a;
		} else {
			fprintf(stderr, "cellc export: more than MODEL and WEIGHTS given ('%s')\n", a);
			print_usage(stderr);
			return 2;
		}
	}
	if (!model || !weights || !out || !*out) {
		fprintf(stderr, "cellc export: %s\n", !model ? "no MODEL given" : !weights ? "no WEIGHTS given"
			: "no -o OUT.onnx given");
		print_usage(stderr);
		return 2;
	}
	if (has_suffix(model, ".cell")) {
		fprintf(stderr, "%s: error: cellc export writes ONNX models; a .cell model needs no export: it "
			"loads its weights from a file (`weights \"FILE\"` in the model), so point that line at "
			"the trained weights file '%s' itself\n", model, weights);
		return 2;
	}
	diag D;
	diag_init(&D, model);
	if (onnx_export(&D, model, weights, out, &o) != 0) {
		diag_finish(&D);
		return 2;
	}
	if (fflush(stdout) != 0) {
		fputs("cellc export: could not write the report\n", stderr);
		return 2;
	}
	return 0;
}
