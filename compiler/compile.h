/* compile.h: the pipeline (compile.c) as the subcommands use it. */
#ifndef CELLC_COMPILE_H
#define CELLC_COMPILE_H

#include "diag.h"
#include "emit.h"
#include "ir.h"
#include "onnx.h"
#include "passes.h"

#define CELLC_VERSION "0.1.0"

ir_graph *compile_load(arena *A, diag *D, const char *path, int nbind, const onnx_binding *bind);
/* Runs the passes; stops after `stop_after` when not NULL ("load" stops before
 * the first).  Returns the number of errors. */
int compile_passes(ir_graph *g, diag *D, const pass_opts *o, const char *stop_after);
int compile_pass_known(const char *name);
int compile_checking(void);     /* CELLC_VERIFY set: ir_verify after every pass */

/* subcommands (cmd_*.c); argv[0] is the subcommand name */
int cmd_compile(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_info(int argc, char **argv);

#endif
