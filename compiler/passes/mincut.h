/* mincut.h: a minimum s-t cut of a small directed graph with integer
 * capacities (maximum flow by Dinic's algorithm: breadth-first levels, then
 * blocking flows along depth-first paths that only step one level down).
 *
 * pass_grad uses it to choose what a forward recurrence saves for its
 * backward pass: the cheapest set of per-step values from which the backward
 * can recompute everything it reads (pass_grad.c, choose_saves).
 *
 *   mc_graph *G = mc_new(A, nvertices, max_edges);
 *   mc_edge(G, u, v, cap);           ... (cap >= 0; MC_INF: never cut)
 *   int64_t f = mc_cut(G, s, t, side);
 *
 * side[v] is 1 for the vertices on the source's side of a minimum cut (those
 * the source still reaches in the residual graph), 0 for the others; the
 * cut's edges are those from side 1 to side 0, and their capacities sum to
 * the returned maximum flow.  A flow of MC_INF or more means every s-t path
 * crosses an edge of capacity MC_INF: no finite cut exists.
 */
#ifndef CELLC_MINCUT_H
#define CELLC_MINCUT_H

#include <stdint.h>

#include "arena.h"

#define MC_INF ((int64_t)1 << 50)

typedef struct mc_graph mc_graph;

/* A graph of nv vertices (0 .. nv-1) with room for max_edges edges. */
mc_graph *mc_new(arena *A, int nv, int max_edges);
/* Adds edge u -> v of capacity cap; 0 on success, -1 when the graph is full
 * or a vertex is out of range. */
int mc_edge(mc_graph *G, int u, int v, int64_t cap);
/* The maximum s-t flow (capped at MC_INF) and a minimum cut's sides. */
int64_t mc_cut(mc_graph *G, int s, int t, char *side);

#endif
