/* elem.h: the element-wise operators' table (rows in elem.def): each one's C
 * expression and its attributes with their ONNX defaults, read by the ONNX
 * loader, the emitters, the lowering of ONNX RNNs, the gradient rules and
 * (through elem.def itself) the constant folder. */
#ifndef CELLC_ELEM_H
#define CELLC_ELEM_H

#include "ir.h"

#define ELEM_MAX_ATTRS 2

typedef struct elem_attr {
	const char *token;      /* its name in the expressions: "ALPHA" */
	const char *name;       /* the ONNX attribute: "alpha"; NULL ends the list */
	ir_attrkind kind;       /* ATTR_FLOAT or ATTR_INT */
	double def;             /* the ONNX default */
} elem_attr;

/* The columns' text as elem.def writes them ("SAME", "NONE" included): read
 * the forms with elem_expr_for and elem_step. */
typedef struct elem_row {
	int present;            /* the op has a row in elem.def */
	const char *expr;       /* float expression; NULL: built in code (ELEM_CODE) */
	const char *iexpr;      /* integer and bool tensors */
	const char *uexpr;      /* unsigned integer tensors */
	const char *step;       /* libcellrt kernel of recurrence steps */
	elem_attr attrs[ELEM_MAX_ATTRS];
} elem_row;

extern const elem_row elem_rows[OP_COUNT];

/* Row of op; NULL if op is not element-wise. */
const elem_row *elem_row_of(ir_op op);

/* Attribute `name` of op's row; NULL if it has none of that name. */
const elem_attr *elem_attr_of(ir_op op, const char *name);

/* Expression of op for a tensor of the kind given, NULL if the op does not
 * exist for it (or is built in code). */
const char *elem_expr_for(ir_op op, int is_float, int is_unsigned);

/* The libcellrt kernel recurrence steps call for op, or NULL. */
const char *elem_step(ir_op op);

/* elem.def's float expression of op compiled in double: f(n, in) evaluates
 * it on the operands in[] with n's attributes (or their defaults); NULL for
 * an op built in code (ELEM_CODE) or not element-wise.  The constant folder
 * and the reference interpreter evaluate the very expression the emitter
 * prints. */
typedef double (*elem_dfn)(const ir_node *n, const double *in);
elem_dfn elem_double(ir_op op);

/* The value of attribute `name` of element-wise node n: the node's, or the
 * table's default (the attribute must be in n's row). */
float elem_attr_float(const ir_node *n, const char *name);
int64_t elem_attr_int(const ir_node *n, const char *name);

#endif
