/* main.c: the cellc command line.
 *
 *   cellc compile MODEL -o DIR [--name NAME] [options]
 *   cellc verify  MODEL --data DIR [--data DIR ...] [options]
 *   cellc verify  MODEL --oracle onnxruntime [--inputs N] [--dim SYM=V]... [options]
 *   cellc dump    MODEL [--after PASS] [options]
 *   cellc info    MODEL [--bind NAME=FILE.pb|NUMBER]... [--dim SYM=N]... [--unsupported]
 *                 [--werror-fallback]
 *   cellc export  MODEL.onnx WEIGHTS -o OUT.onnx [--strict] [--report]
 *   cellc --help | --version
 *
 * MODEL is an ONNX model (.onnx) or a model in cellc's text format (.cell).
 * Each command's options are listed by `cellc COMMAND --help`, in the man
 * page cellc(1) (man/cellc.1) and in docs/commands.md; tests/test_install.py checks
 * that the four agree.
 *
 * Exit status: 0 success; 1 a verification mismatch; 2 the model could not
 * be compiled (reason on stderr) or the command line is wrong.
 */
#include "arena.h"
#include "cmd.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: cellc compile MODEL -o DIR [--name NAME] [options]\n"
	"       cellc verify  MODEL --data DIR [--data DIR ...] [options]\n"
	"       cellc verify  MODEL --oracle onnxruntime [--inputs N] [--dim SYM=V]... [options]\n"
	"       cellc dump    MODEL [--after PASS] [options]\n"
	"       cellc info    MODEL [--bind NAME=FILE.pb|NUMBER]... [--dim SYM=N]... [--unsupported]\n"
	"                     [--werror-fallback]\n"
	"       cellc export  MODEL.onnx WEIGHTS -o OUT.onnx [--strict] [--report]\n"
	"       cellc --help | --version\n"
	"\n"
	"Commands: compile (MODEL to C), verify (compile, build, run and compare with\n"
	"reference outputs), dump (the IR after a pass), info (what a model holds and\n"
	"what cellc makes of it), export (trained weights back into the ONNX model).\n"
	"MODEL is an ONNX model (.onnx) or a model in cellc's text format (.cell).\n"
	"`cellc COMMAND --help` lists a command's options; `man cellc` describes them all.\n"
	"Every command takes --max-memory SIZE (default 2G): the most memory a compilation\n"
	"may use for the model's constants, parameters, unrolled loops and IR.\n"
	"Exit status: 0 ok, 1 verification mismatch, 2 model or command line rejected.\n";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	/* --max-memory SIZE, before or after the command: the memory budget of
	 * the compilation (arena.h) */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		int used = 0;
		if (!strcmp(a, "--max-memory") && i + 1 < argc)
			val = argv[i + 1], used = 2;
		else if (!strncmp(a, "--max-memory=", 13))
			val = a + 13, used = 1;
		else if (!strcmp(a, "--max-memory"))
			val = "", used = 1;
		if (!used)
			continue;
		size_t b = arena_parse_size(val);
		if (!b) {
			fprintf(stderr, "cellc: --max-memory wants a size of at least 16M (bytes, or a number "
				"with K, M or G), got '%s'\n", val);
			return 2;
		}
		arena_budget = b;
		for (int j = i; j + used <= argc; j++)
			argv[j] = argv[j + used];
		argc -= used;
		i--;
	}
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("cellc %s\n", CELLC_VERSION);
		return 0;
	}
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{"compile", cmd_compile}, {"verify", cmd_verify},
		{"dump", cmd_dump},       {"info", cmd_info},
		{"export", cmd_export},
	};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(cmd, cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "cellc: unknown command '%s'\n%s", cmd, usage);
	return 2;
}
