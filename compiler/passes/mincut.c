/* mincut.c: Dinic's maximum flow and the minimum cut it leaves (mincut.h). */
#include "mincut.h"

#include <string.h>

typedef struct mc_arc {
	int to, next;           /* head vertex; next arc out of the same tail (-1: none) */
	int64_t cap;            /* residual capacity */
} mc_arc;

struct mc_graph {
	int nv, narcs, maxarcs;
	int *first;             /* [nv] first arc out of each vertex (-1: none) */
	int *level;             /* [nv] BFS level in the residual graph (-1: unreached) */
	int *cur;               /* [nv] the next arc to try in the blocking-flow search */
	int *queue;             /* [nv] */
	mc_arc *arc;            /* arc 2k is an edge, arc 2k+1 its reverse */
};

mc_graph *mc_new(arena *A, int nv, int max_edges)
{
	mc_graph *G = arena_alloc(A, sizeof *G);
	G->nv = nv;
	G->maxarcs = 2 * max_edges;
	G->first = arena_array(A, (size_t)nv + 1, sizeof *G->first);
	G->level = arena_array(A, (size_t)nv + 1, sizeof *G->level);
	G->cur = arena_array(A, (size_t)nv + 1, sizeof *G->cur);
	G->queue = arena_array(A, (size_t)nv + 1, sizeof *G->queue);
	G->arc = arena_array(A, (size_t)G->maxarcs + 1, sizeof *G->arc);
	for (int v = 0; v < nv; v++)
		G->first[v] = -1;
	return G;
}

int mc_edge(mc_graph *G, int u, int v, int64_t cap)
{
	if (u < 0 || v < 0 || u >= G->nv || v >= G->nv || G->narcs + 2 > G->maxarcs || cap < 0)
		return -1;
	if (cap > MC_INF)
		cap = MC_INF;
	mc_arc *a = &G->arc[G->narcs];
	a[0] = (mc_arc){v, G->first[u], cap};
	G->first[u] = G->narcs;
	a[1] = (mc_arc){u, G->first[v], 0};
	G->first[v] = G->narcs + 1;
	G->narcs += 2;
	return 0;
}

/* Levels from s over arcs with residual capacity; whether t was reached. */
static int levels(mc_graph *G, int s, int t)
{
	for (int v = 0; v < G->nv; v++)
		G->level[v] = -1;
	int head = 0, tail = 0;
	G->level[s] = 0;
	G->queue[tail++] = s;
	while (head < tail) {
		int u = G->queue[head++];
		for (int e = G->first[u]; e >= 0; e = G->arc[e].next)
			if (G->arc[e].cap > 0 && G->level[G->arc[e].to] < 0) {
				G->level[G->arc[e].to] = G->level[u] + 1;
				G->queue[tail++] = G->arc[e].to;
			}
	}
	return G->level[t] >= 0;
}

/* Pushes up to f from u towards t along arcs one level down; the amount
 * pushed.  The depth is at most the number of vertices, and the graphs here
 * are a recurrence body's values (hundreds at most). */
static int64_t push(mc_graph *G, int u, int t, int64_t f)
{
	if (u == t)
		return f;
	for (; G->cur[u] >= 0; G->cur[u] = G->arc[G->cur[u]].next) {
		mc_arc *a = &G->arc[G->cur[u]];
		if (a->cap <= 0 || G->level[a->to] != G->level[u] + 1)
			continue;
		int64_t got = push(G, a->to, t, f < a->cap ? f : a->cap);
		if (got > 0) {
			a->cap -= got;
			G->arc[G->cur[u] ^ 1].cap += got;
			return got;
		}
	}
	return 0;
}

int64_t mc_cut(mc_graph *G, int s, int t, char *side)
{
	int64_t flow = 0;
	while (flow < MC_INF && levels(G, s, t)) {
		memcpy(G->cur, G->first, (size_t)G->nv * sizeof *G->cur);
		int64_t f;
		while (flow < MC_INF && (f = push(G, s, t, MC_INF)) > 0)
			flow += f;
	}
	if (flow > MC_INF)
		flow = MC_INF;
	levels(G, s, t);
	for (int v = 0; v < G->nv; v++)
		side[v] = G->level[v] >= 0;
	return flow;
}
