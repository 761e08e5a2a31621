/* diag.c: printing located diagnostics (see diag.h). */
#include "diag.h"
#include "ir.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

_Noreturn void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("cellc: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

void diag_init(diag *D, const char *file)
{
	memset(D, 0, sizeof *D);
	D->file = file;
	D->max_errors = 20;
}

void diag_vemit(diag *D, const char *kind, const char *where, const char *fmt, va_list ap)
{
	char msg[400];
	vsnprintf(msg, sizeof msg, fmt, ap);
	snprintf(D->last, sizeof D->last, "%s: %s%s%s: %s", D->file ? D->file : "cellc",
		 where ? where : "", where ? ": " : "", kind, msg);
	/* Keep the simple "FILE: error: msg" form when there is no location. */
	if (!where)
		snprintf(D->last, sizeof D->last, "%s: %s: %s", D->file ? D->file : "cellc", kind, msg);
	if (!D->quiet)
		fprintf(stderr, "%s\n", D->last);
}

void diag_error(diag *D, const char *fmt, ...)
{
	va_list ap;
	if (++D->nerrors > D->max_errors)
		return;
	va_start(ap, fmt);
	diag_vemit(D, "error", NULL, fmt, ap);
	va_end(ap);
}

void diag_warn(diag *D, const char *fmt, ...)
{
	va_list ap;
	D->nwarnings++;
	va_start(ap, fmt);
	diag_vemit(D, "warning", NULL, fmt, ap);
	va_end(ap);
}

void diag_node(diag *D, const ir_node *n, const char *fmt, ...)
{
	va_list ap;
	char where[300];
	if (++D->nerrors > D->max_errors)
		return;
	snprintf(where, sizeof where, "node '%s' (%s%s%s, opset %d)", n->name ? n->name : "?",
		 n->domain && *n->domain ? n->domain : "", n->domain && *n->domain ? "." : "",
		 n->op_type ? n->op_type : ir_op_name(n->op), n->opset);
	va_start(ap, fmt);
	diag_vemit(D, "error", where, fmt, ap);
	va_end(ap);
}

void diag_at(diag *D, const char *src, int line, int col, const char *fmt, ...)
{
	va_list ap;
	char where[64];
	if (++D->nerrors > D->max_errors)
		return;
	/* "FILE:LINE:COL: error: msg", the form editors and compilers use */
	char msg[400];
	snprintf(where, sizeof where, "%d:%d", line, col);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(D->last, sizeof D->last, "%s:%s: error: %s", D->file ? D->file : "cellc", where, msg);
	if (!D->quiet)
		fprintf(stderr, "%s\n", D->last);
	if (D->quiet || !src)
		return;
	/* Print the offending line and a caret under the column. */
	const char *p = src;
	for (int l = 1; l < line && *p; p++)
		if (*p == '\n')
			l++;
	const char *e = strchr(p, '\n');
	int len = e ? (int)(e - p) : (int)strlen(p);
	fprintf(stderr, "  %.*s\n  %*s^\n", len, p, col > 0 ? col - 1 : 0, "");
}
