/* diag.c: printing located diagnostics (see diag.h). */
#include "diag.h"
#include "ir.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
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
	char msg[1024];         /* a fallback's sentence (compile.c) runs to 600 characters */
	vsnprintf(msg, sizeof msg, fmt, ap);
	snprintf(D->last, sizeof D->last, "%s: %s%s%s: %s", D->file ? D->file : "cellc",
		 where ? where : "", where ? ": " : "", kind, msg);
	/* Keep the simple "FILE: error: msg" form when there is no location. */
	if (!where)
		snprintf(D->last, sizeof D->last, "%s: %s: %s", D->file ? D->file : "cellc", kind, msg);
	if (D->quiet)
		return;
	if (D->skip > 0) {
		D->skip--;
		return;
	}
	D->nprinted++;
	if (!D->hold) {
		fprintf(stderr, "%s\n", D->last);
		return;
	}
	size_t n = strlen(D->last);
	char *h = realloc(D->held, D->held_len + n + 2);
	if (!h)
		die("out of memory holding a diagnostic");
	memcpy(h + D->held_len, D->last, n);
	h[D->held_len + n] = '\n';
	h[D->held_len + n + 1] = 0;
	D->held = h;
	D->held_len += n + 1;
}

void diag_hold(diag *D)
{
	if (D->hold)
		return;
	D->hold = 1;
	D->hold_from = D->nprinted;
}

void diag_note(diag *D, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vemit(D, "note", NULL, fmt, ap);
	va_end(ap);
}

void diag_flush(diag *D)
{
	if (D->held_len)
		fwrite(D->held, 1, D->held_len, stderr);
	diag_drop(D);
}

void diag_drop(diag *D)
{
	free(D->held);
	D->held = NULL;
	D->held_len = 0;
	D->hold = 0;
}

/* Counts one error about operator `op` ("": no node) with message fmt;
 * returns 1 when it is to be printed. */
static int tally(diag *D, const char *op, const char *fmt, va_list ap)
{
	D->nerrors++;
	int shown = !(D->collect && *op) && ++D->nshown <= D->max_errors;
	diag_kind *k = NULL;
	for (int i = 0; i < D->nkinds && !k; i++)
		if (strcmp(D->kinds[i].op, op) == 0)
			k = &D->kinds[i];
	if (!k && D->nkinds < DIAG_KINDS) {
		k = &D->kinds[D->nkinds++];
		snprintf(k->op, sizeof k->op, "%s", op);
		vsnprintf(k->first, sizeof k->first, fmt, ap);
	}
	if (k) {
		k->n++;
		k->hidden += !shown;
	} else if (!shown) {
		D->lost++;
	}
	return shown;
}

void diag_error(diag *D, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int shown = tally(D, "", fmt, ap);
	va_end(ap);
	if (!shown)
		return;
	va_start(ap, fmt);
	diag_vemit(D, "error", NULL, fmt, ap);
	va_end(ap);
}

void diag_finish(diag *D)
{
	int hidden = 0, distinct = 0;
	for (int i = 0; i < D->nkinds; i++)
		if (D->kinds[i].hidden) {
			hidden += D->kinds[i].hidden;
			distinct++;
		}
	if (D->collect || D->quiet || hidden + D->lost == 0)
		return;
	fprintf(stderr, "%s: ... and %d more error%s (%d distinct:", D->file ? D->file : "cellc",
		hidden + D->lost, hidden + D->lost == 1 ? "" : "s", distinct + (D->lost > 0));
	/* by count, most frequent first (ties: first seen first); "\xc3\x97" is U+00D7 '×' */
	int done[DIAG_KINDS] = {0};
	for (int printed = 0; printed < distinct; printed++) {
		int best = -1;
		for (int i = 0; i < D->nkinds; i++)
			if (!done[i] && D->kinds[i].hidden && (best < 0 || D->kinds[i].hidden > D->kinds[best].hidden))
				best = i;
		done[best] = 1;
		fprintf(stderr, "%s %s \xc3\x97%d", printed ? "," : "",
			*D->kinds[best].op ? D->kinds[best].op : "other", D->kinds[best].hidden);
	}
	if (D->lost)
		fprintf(stderr, "%s other operators \xc3\x97%d", distinct ? "," : "", D->lost);
	fputs(")\n", stderr);
}

void diag_warn(diag *D, const char *fmt, ...)
{
	va_list ap;
	D->nwarnings++;
	va_start(ap, fmt);
	diag_vemit(D, "warning", NULL, fmt, ap);
	va_end(ap);
}

void diag_nodev(diag *D, const ir_node *n, const char *fmt, va_list ap)
{
	char where[300], op[64];
	snprintf(op, sizeof op, "%s%s%s", n->domain && *n->domain ? n->domain : "",
		 n->domain && *n->domain ? "." : "", n->op_type ? n->op_type : ir_op_name(n->op));
	va_list aq;
	va_copy(aq, ap);
	int shown = tally(D, op, fmt, aq);
	va_end(aq);
	if (!shown)
		return;
	snprintf(where, sizeof where, "node '%s' (%s%s%s, opset %d)", n->name ? n->name : "?",
		 n->domain && *n->domain ? n->domain : "", n->domain && *n->domain ? "." : "",
		 n->op_type ? n->op_type : ir_op_name(n->op), n->opset);
	diag_vemit(D, "error", where, fmt, ap);
}

void diag_node(diag *D, const ir_node *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_nodev(D, n, fmt, ap);
	va_end(ap);
}

void diag_at(diag *D, const char *src, int line, int col, const char *fmt, ...)
{
	va_list ap;
	char where[64];
	va_start(ap, fmt);
	int shown = tally(D, "", fmt, ap);
	va_end(ap);
	if (!shown)
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
