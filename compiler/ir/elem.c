/* elem.c: the element-wise operators' table of elem.def (see elem.h). */
#include "elem.h"
#include "util.h"

#include <math.h>
#include <string.h>

const elem_row elem_rows[OP_COUNT] = {
#define ATTR(tok, nm, d) {#tok, nm, ATTR_FLOAT, d},
#define IATTR(tok, nm, d) {#tok, nm, ATTR_INT, d},
#define NOATTR
#define ELEM(e, f, i, u, st, attrs) [OP_##e] = {1, #f, #i, #u, #st, {attrs}},
#define ELEM_CODE(e, attrs) [OP_##e] = {1, NULL, NULL, NULL, NULL, {attrs}},
#include "elem.def"
#undef ELEM
#undef ELEM_CODE
#undef NOATTR
#undef IATTR
#undef ATTR
};

const elem_row *elem_row_of(ir_op op)
{
	return op < OP_COUNT && elem_rows[op].present ? &elem_rows[op] : NULL;
}

const elem_attr *elem_attr_of(ir_op op, const char *name)
{
	const elem_row *r = elem_row_of(op);
	for (int k = 0; r && k < ELEM_MAX_ATTRS && r->attrs[k].name; k++)
		if (!strcmp(r->attrs[k].name, name))
			return &r->attrs[k];
	return NULL;
}

const char *elem_expr_for(ir_op op, int is_float, int is_unsigned)
{
	const elem_row *r = elem_row_of(op);
	if (!r || !r->expr)
		return NULL;
	if (is_float)
		return r->expr;
	const char *e = is_unsigned && strcmp(r->uexpr, "SAME") ? r->uexpr : r->iexpr;
	if (!strcmp(e, "NONE"))
		return NULL;
	return strcmp(e, "SAME") ? e : r->expr;
}

const char *elem_step(ir_op op)
{
	const elem_row *r = elem_row_of(op);
	return r && r->step && strcmp(r->step, "NONE") ? r->step : NULL;
}

float elem_attr_float(const ir_node *n, const char *name)
{
	const elem_attr *a = elem_attr_of(n->op, name);
	ASSERT(a && a->kind == ATTR_FLOAT);
	return ir_attr_float(n, name, (float)a->def);
}

int64_t elem_attr_int(const ir_node *n, const char *name)
{
	const elem_attr *a = elem_attr_of(n->op, name);
	ASSERT(a && a->kind == ATTR_INT);
	return ir_attr_int(n, name, (int64_t)a->def);
}

/* The float expressions of elem.def, compiled in double (elem_double). */
#define X in[0]
#define Y in[1]
#define Z in[2]
#define T double
#define ATTR(tok, nm, d) const double tok = ir_attr_float(n, nm, d);
#define IATTR(tok, nm, d)
#define NOATTR
#define ELEM(e, f, i, u, st, attrs) \
	static double elem_##e(const ir_node *n, const double *in) { (void)n; attrs return (double)(f); }
#define ELEM_CODE(e, attrs)
#include "elem.def"
#undef ELEM
#define ELEM(e, f, i, u, st, attrs) [OP_##e] = elem_##e,
static const elem_dfn elem_fns[OP_COUNT] = {
#include "elem.def"
};
#undef ELEM
#undef ELEM_CODE
#undef NOATTR
#undef IATTR
#undef ATTR
#undef T
#undef Z
#undef Y
#undef X

elem_dfn elem_double(ir_op op)
{
	return (int)op >= 0 && op < OP_COUNT ? elem_fns[op] : NULL;
}
