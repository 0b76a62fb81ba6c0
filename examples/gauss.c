/* Gaussian elimination with rows distributed cyclically and pivot rows sent with blocking MPI_Send: the
 * program of the paper (Ino, Fujimoto, Hagihara 2001, section 4.3). At step k the owner of row k sends
 * its remaining n - k + 1 values to every other rank in turn; a row longer than the eager limit S makes
 * the owner wait for each receiver, which is still eliminating the previous step (the send-wait).
 *   gauss [n]        (default 1024; a row of n doubles is 8n bytes: above 64 KiB from n = 8192)
 * Prints the residual of the solution and the time from rank 0. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  /* rows r with r % size == rank, each n + 1 values (the right-hand side last) */
  int mine = 0;
  for (int r = rank; r < n; r += size) mine++;
  double *a = malloc(sizeof(double) * (size_t)mine * (size_t)(n + 1));
  double *pivot = malloc(sizeof(double) * (size_t)(n + 1));
  for (int i = 0, r = rank; r < n; r += size, i++)
    for (int j = 0; j <= n; j++) /* diagonally dominant, so no pivoting is needed */
      a[(size_t)i * (n + 1) + j] = j == n ? 1.0 : (r == j ? 2.0 * n : 1.0 / (1.0 + abs(r - j)));
  double t0 = MPI_Wtime();
  for (int k = 0; k < n; k++) {
    int owner = k % size, len = n + 1 - k;
    if (rank == owner) {
      const double *row = &a[(size_t)(k / size) * (n + 1) + k];
      for (int j = 0; j < len; j++) pivot[j] = row[j];
      for (int p = 0; p < size; p++)
        if (p != rank) MPI_Send(pivot, len, MPI_DOUBLE, p, k, MPI_COMM_WORLD); /* waits above S */
    } else {
      MPI_Recv(pivot, len, MPI_DOUBLE, owner, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int i = 0, r = rank; r < n; r += size, i++) {
      if (r <= k) continue;
      double *row = &a[(size_t)i * (n + 1) + k];
      double f = row[0] / pivot[0];
      for (int j = 0; j < len; j++) row[j] -= f * pivot[j];
    }
  }
  /* back substitution on rank 0 after gathering the reduced rows: check the result */
  double *x = calloc((size_t)n, sizeof(double));
  for (int k = n - 1; k >= 0; k--) {
    int owner = k % size;
    double v = 0;
    if (rank == owner) {
      const double *row = &a[(size_t)(k / size) * (n + 1)];
      double s = row[n];
      for (int j = k + 1; j < n; j++) s -= row[j] * x[j];
      v = s / row[k];
    }
    MPI_Bcast(&v, 1, MPI_DOUBLE, owner, MPI_COMM_WORLD);
    x[k] = v;
  }
  double elapsed = MPI_Wtime() - t0;
  /* residual of the original system, row by row, on the ranks that own them */
  double worst = 0;
  for (int r = rank; r < n; r += size) {
    double s = 0;
    for (int j = 0; j < n; j++) s += (r == j ? 2.0 * n : 1.0 / (1.0 + abs(r - j))) * x[j];
    worst = fmax(worst, fabs(s - 1.0));
  }
  double all = 0;
  MPI_Reduce(&worst, &all, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("gauss: n = %d on %d ranks, residual %.1e, %.3f s\n", n, size, all, elapsed);
  free(a);
  free(pivot);
  free(x);
  MPI_Finalize();
  return all < 1e-8 ? 0 : 1;
}
