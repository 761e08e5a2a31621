/* validate.h: translation validation of the passes (validate.c), switched
 * on by CELLC_VALIDATE=1 (2: also a summary of what was checked). */
#ifndef CELLC_VALIDATE_H
#define CELLC_VALIDATE_H

#include "diag.h"
#include "ir.h"

struct pass_opts;
typedef struct validate validate;

int validate_level(void);       /* 0 off, 1 on, 2 on with a summary on stderr */
validate *validate_new(void);   /* NULL when off */
/* After `stage` has run on g: runs g in the reference interpreter and
 * compares with the run before the stage; a difference is an error in D. */
void validate_stage(validate *V, ir_graph *g, const char *stage, const struct pass_opts *po, diag *D);
/* The summary (CELLC_VALIDATE=2, CELLC_VALIDATE_LOG) and the end. */
void validate_end(validate *V, const char *model);

#endif
