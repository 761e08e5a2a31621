/* cmd.h: helpers the subcommands (cmd_*.c) share; defined in cmd_compile.c.
 *
 * Option syntax for every subcommand: `--opt VALUE` or `--opt=VALUE`, flags
 * without a value, and exactly one MODEL operand.  A wrong command line is a
 * usage error: message plus the command's usage on stderr, exit status 2.
 */
#ifndef CELLC_CMD_H
#define CELLC_CMD_H

#include "compile.h"
#include "train.h"

enum { CMD_MAX_BIND = 64 };

/* If argv[*i] is option `opt`, stores its value (the next argument or the
 * text after '=') in *val, advances *i past it and returns 1; returns -1 after
 * printing an error when the value is missing; 0 if argv[*i] is not `opt`. */
int cmd_opt_value(int argc, char **argv, int *i, const char *opt, const char **val);

/* Parses NAME=FILE.pb into b (pointers into arg); 0 and a message if malformed. */
int cmd_parse_bind(const char *cmd, char *arg, onnx_binding *b);
/* Appends the binding of one `--bind NAME=FILE.pb` (val points into argv,
 * which is ours to modify) to bind[*nbind]; 0 and a message if malformed or
 * if there are more than CMD_MAX_BIND. */
int cmd_add_bind(const char *cmd, const char *val, onnx_binding *bind, int *nbind);
/* Appends `--dim SYM=N` (a dimension symbol fixed at compile time) to the
 * bindings; 0 and a message if malformed or repeated. */
int cmd_add_dim_bind(const char *cmd, const char *val, onnx_binding *bind, int *nbind);
/* Parses SYM=N (N in [1, 2^31)) for option `opt`: *name in A; 0 and a message if malformed. */
int cmd_parse_dim(const char *cmd, const char *opt, const char *arg, arena *A, const char **name,
		  int64_t *value);

/* `--weights MODE` (f32 or bf16) into po->weights; 0 and a message if MODE is
 * none of them.  cmd_weights_check: 0 and a message when the options do not
 * combine (--train keeps float32 parameters). */
int cmd_weights_opt(const char *cmd, const char *mode, pass_opts *po);
int cmd_weights_check(const char *cmd, const pass_opts *po);

/* The training options of every command that builds a training graph
 * (compile, dump, verify): --train, --loss L, --loss-output NAME and
 * --freeze PREFIX (repeatable), into po and t.  1 when argv[*i] was one
 * (*i past its value), 0 when it is none of them, -1 and a message when
 * its value is bad.  cmd_train_check: 0 and a message when --loss,
 * --loss-output or --freeze come without --train. */
int cmd_train_opt(const char *cmd, int argc, char **argv, int *i, pass_opts *po, train_opts *t);
int cmd_train_check(const char *cmd, const pass_opts *po, const train_opts *t);

/* The model file's stem made into a C identifier ("my-model.onnx" -> "my_model"). */
const char *cmd_default_name(arena *A, const char *model_path);
/* 1 if s can prefix the emitted API: a C identifier, not a keyword, short. */
int cmd_valid_name(const char *s);

/* mkdir -p; 0 on success, else prints why and returns -1. */
int cmd_mkdirs(const char *cmd, const char *dir);

/* Where the running cellc's libcellrt is (cmd_home.c): a build tree, an
 * install prefix, or neither (pkg-config's own search path). */
typedef struct cmd_home {
	const char *tree;       /* a cellc build tree (runtime/cellrt.h, build/libcellrt.a), or NULL */
	const char *prefix;     /* the prefix cellc is installed in (PREFIX/bin/cellc), or NULL */
	const char *pcdir;      /* directory holding cellrt.pc, or "" (pkg-config's search path) */
} cmd_home;
const cmd_home *cmd_home_get(arena *A);
/* Where onnxruntime-node is or goes (DIR/node_modules/onnxruntime-node):
 * $CELLC_ORT_DIR, a build tree's build/ort, else the user's cache
 * directory; NULL when there is none (no HOME). */
const char *cmd_ort_dir(arena *A);
/* The emit options every command fills the same way (runtime location). */
void cmd_emit_home(arena *A, emit_opts *eo);

/* The command line as one string, for provenance headers. */
const char *cmd_line(arena *A, int argc, char **argv);

/* `cellc export MODEL.onnx WEIGHTS -o OUT.onnx` (cmd_export.c). */
int cmd_export(int argc, char **argv);

#endif
