/* cmd_compile.c: `cellc compile MODEL -o DIR [options]`, and the helpers
 * every subcommand shares (cmd.h).
 *
 *   cellc compile MODEL -o DIR [--name NAME] [--bind NAME=FILE.pb]...
 *                 [--no-hoist] [--no-fuse]
 *
 * Loads the model, runs the whole pipeline and writes DIR/NAME.h, NAME.c,
 * NAME.weights and a Makefile (emit_model).  DIR is created when missing.
 * --bind replaces a graph input by the constant in FILE.pb (a serialized
 * TensorProto): inputs that determine shapes must be bound, because cellc
 * fixes every shape at compile time up to the dimension symbols.
 */
#define _POSIX_C_SOURCE 200809L

#include "cmd.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef CELLC_SHARE
#define CELLC_SHARE "."
#endif

static const char usage[] =
	"usage: cellc compile MODEL -o DIR [--name NAME] [--bind NAME=FILE.pb]... [--no-hoist] [--no-fuse]\n"
	"\n"
	"Compiles MODEL (.onnx) to C: writes DIR/NAME.h, DIR/NAME.c, DIR/NAME.weights and\n"
	"DIR/Makefile (DIR is created if missing).\n"
	"  -o, --out DIR         output directory\n"
	"  --name NAME           prefix of the emitted API, a C identifier\n"
	"                        (default: the model file name, made into an identifier)\n"
	"  --bind NAME=FILE.pb   compile graph input NAME as the constant stored in FILE.pb\n"
	"                        (a serialized ONNX TensorProto); needed for inputs that\n"
	"                        determine shapes (e.g. a Reshape target)\n"
	"  --no-hoist            keep input projections inside the time loop (testing)\n"
	"  --no-fuse             one loop per element-wise operation (testing)\n"
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

int cmd_parse_bind(const char *cmd, char *arg, onnx_binding *b)
{
	char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1]) {
		fprintf(stderr, "cellc %s: --bind wants NAME=FILE.pb, got '%s'\n", cmd, arg);
		return 0;
	}
	*eq = 0;
	b->name = arg;
	b->path = eq + 1;
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
		die("out of memory");
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

const char *cmd_share_dir(void)
{
	const char *e = getenv("CELLC_SHARE");
	return e && *e ? e : CELLC_SHARE;
}

const char *cmd_line(arena *A, int argc, char **argv)
{
	char *s = arena_strdup(A, "cellc");
	for (int i = 0; i < argc; i++)
		s = arena_printf(A, "%s %s", s, argv[i]);
	return s;
}

ir_graph *cmd_build(arena *A, diag *D, const char *model, int nbind, const onnx_binding *bind,
		    const pass_opts *po, const char *stop_after)
{
	ir_graph *g = compile_load(A, D, model, nbind, bind);
	if (!g || D->nerrors)
		return NULL;
	if (stop_after && strcmp(stop_after, "load") == 0)
		return g;
	if (compile_passes(g, D, po, stop_after) || D->nerrors)
		return NULL;
	return g;
}

/* ---- the command ---- */

int cmd_compile(int argc, char **argv)
{
	const char *model = NULL, *outdir = NULL, *name = NULL, *val;
	onnx_binding bind[CMD_MAX_BIND];
	int nbind = 0;
	pass_opts po = {0};
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
			outdir = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--name", &val))) {
			if (r < 0)
				return 2;
			name = val;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--bind", &val))) {
			if (r < 0)
				return 2;
			if (nbind == CMD_MAX_BIND) {
				fprintf(stderr, "cellc compile: at most %d --bind options\n", CMD_MAX_BIND);
				return 2;
			}
			/* val points into argv, which is ours to modify */
			if (!cmd_parse_bind("compile", (char *)val, &bind[nbind]))
				return 2;
			nbind++;
		} else if (!strcmp(a, "--no-hoist")) {
			po.no_hoist = 1;
		} else if (!strcmp(a, "--no-fuse")) {
			po.no_fuse = 1;
		} else if (!strcmp(a, "--train")) {
			fprintf(stderr, "cellc compile: --train is not available in this version of cellc\n");
			return 2;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "cellc compile: unknown option '%s'\n%s", a, usage);
			return 2;
		} else if (model) {
			fprintf(stderr, "cellc compile: more than one MODEL ('%s', '%s')\n%s", model, a, usage);
			return 2;
		} else {
			model = a;
		}
	}
	if (!model || !outdir) {
		fprintf(stderr, "cellc compile: %s\n%s", !model ? "no MODEL given" : "no output directory (-o DIR)",
			usage);
		return 2;
	}
	if (name && !cmd_valid_name(name)) {
		fprintf(stderr, "cellc compile: --name '%s' is not usable as a C identifier prefix "
				"(letters, digits, '_', not a keyword, at most 64 characters)\n", name);
		return 2;
	}

	arena A;
	arena_init(&A);
	diag D;
	diag_init(&D, model);
	int rc = 2;
	if (!name)
		name = cmd_default_name(&A, model);
	ir_graph *g = cmd_build(&A, &D, model, nbind, bind, &po, NULL);
	if (g && cmd_mkdirs("compile", outdir) == 0) {
		emit_opts eo = {
			.name = name, .outdir = outdir, .cmdline = cmd_line(&A, argc, argv),
			.rtdir = cmd_share_dir(),
		};
		if (emit_model(g, &D, &eo) == 0 && D.nerrors == 0)
			rc = 0;
	}
	if (rc)
		fprintf(stderr, "cellc compile: %s was not compiled\n", model);
	arena_free(&A);
	return rc;
}
