/* compile.c: the whole pipeline in one place.
 *
 *   load (ONNX | native text) -> verify -> infer shapes and fold constants
 *   -> lower RNN operators -> hoist input projections -> fuse -> plan memory
 *   -> emit C
 *
 * compile_load runs the front end; compile_passes runs the list below, with
 * ir_verify between passes when checking is on, stopping early for
 * `cellc dump --after PASS`.
 */
#include "compile.h"
#include "onnx.h"
#include "txt.h"
#include "util.h"

#include <string.h>

const pass_desc pass_list[] = {
	{"infer", pass_infer},
	{"canon", pass_canon},
	{"reroll", pass_reroll},
	{"cells", pass_lower_cell},
	{"lower", pass_lower_rnn},
	{"hoist", pass_hoist},
	{"split", pass_split},
	{"grad", pass_grad},
	{"fuse", pass_fuse},
	{"plan", pass_plan},
};
const int pass_count = (int)COUNTOF(pass_list);

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

ir_graph *compile_load(arena *A, diag *D, const char *path, int nbind, const onnx_binding *bind)
{
	A->file = path;
	ir_names_reset();
	if (has_suffix(path, ".cell")) {
		if (nbind)
			diag_error(D, "--bind and --dim apply to ONNX models; a .cell model has no such inputs "
				      "(its symbols are sized at run time)");
		ir_graph *t = nbind ? NULL : txt_load(A, D, path);
		if (t && D->nerrors == 0 && compile_checking())
			ir_verify(t, "load");
		return D->nerrors ? NULL : t;
	}
	ir_graph *g = onnx_load_bound(A, D, path, nbind, bind);
	if (g && D->nerrors == 0 && compile_checking())
		ir_verify(g, "load");
	return D->nerrors ? NULL : g;
}

int compile_checking(void)
{
	const char *e = getenv("CELLC_VERIFY");
	return e && *e && strcmp(e, "0") != 0;
}

int compile_passes(ir_graph *g, diag *D, const pass_opts *o, const char *stop_after)
{
	for (int i = 0; i < pass_count; i++) {
		int errs = pass_list[i].run(g, D, o);
		if (errs || D->nerrors)
			return D->nerrors ? D->nerrors : errs;
		if (compile_checking())
			ir_verify(g, pass_list[i].name);
		if (stop_after && strcmp(stop_after, pass_list[i].name) == 0)
			return 0;
	}
	return 0;
}

int compile_pass_known(const char *name)
{
	if (strcmp(name, "load") == 0)
		return 1;
	for (int i = 0; i < pass_count; i++)
		if (strcmp(pass_list[i].name, name) == 0)
			return 1;
	return 0;
}
