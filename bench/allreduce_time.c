/* allreduce_time.c: the cost of the training program's per-step all-reduce
 * alone, without the waiting for a slower rank that the program's own
 * timing includes (bench/mpi_scaling.py runs it under mpirun).
 *
 *   mpirun -np P allreduce_time FLOATS [REPS]
 *
 * Every rank sums FLOATS floats in place with MPI_Allreduce (MPI_SUM), as
 * the training program does each step; a barrier lines the ranks up before
 * each call so that only the call is timed.  Rank 0 prints
 * "allreduce floats=N reps=R median_us=X min_us=Y".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	long n = argc > 1 ? atol(argv[1]) : 0, reps = argc > 2 ? atol(argv[2]) : 200;
	if (n < 1 || n > (1L << 30) || reps < 1) {
		if (rank == 0)
			fprintf(stderr, "usage: allreduce_time FLOATS [REPS]\n");
		MPI_Finalize();
		return 2;
	}
	float *v = malloc(sizeof(float) * (size_t)n);
	double *t = malloc(sizeof(double) * (size_t)reps);
	if (!v || !t)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (long i = 0; i < n; i++)
		v[i] = 1e-3f * (float)(i % 1000);
	for (long r = -10; r < reps; r++) {     /* 10 untimed calls first */
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		if (r >= 0)
			t[r] = MPI_Wtime() - t0;
		for (long i = 0; i < n; i += 4096)     /* keep the values bounded */
			v[i] *= 0.5f;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp);
	if (rank == 0)
		printf("allreduce floats=%ld reps=%ld median_us=%.1f min_us=%.1f\n", n, reps, 1e6 * t[reps / 2],
		       1e6 * t[0]);
	free(v);
	free(t);
	MPI_Finalize();
	return 0;
}
