/* A traced rank that forks, as programs do to run a helper: the child never calls MPI and ends by
 *   forker exit | _exit | exec | signal [children]      (default: exit, 3 children; run with 2 ranks)
 * exit: the child returns through exit() (atexit handlers and destructors run, the usual end); _exit:
 * it calls _exit(); exec: it runs /bin/true; signal: it is ended by SIGTERM. Before every fork the ranks
 * exchange messages (tag 1), after it too (tag 2), so the parent's log holds events on both sides of
 * each fork. Rank 0 prints "forker: ok <children> <mode>" when every message arrived and every child
 * ended as expected; each rank prints to stderr how long its children took from fork to their end
 * ("forker: rank R: child 1.2 ms" per child), for a measurement by hand. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void exchange(int rank, int tag, int *errors)
{
  int out = rank * 10 + tag, in = -1, other = rank ^ 1;
  for (int i = 0; i < 20; i++) {
    MPI_Sendrecv(&out, 1, MPI_INT, other, tag, &in, 1, MPI_INT, other, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (in != other * 10 + tag) (*errors)++;
  }
}

static void child_atexit(void) { /* an atexit handler of the program's, as most have some */ }

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *mode = argc > 1 ? argv[1] : "exit";
  int children = argc > 2 ? atoi(argv[2]) : 3;
  if (size != 2 || (strcmp(mode, "exit") && strcmp(mode, "_exit") && strcmp(mode, "exec") && strcmp(mode, "signal"))) {
    if (rank == 0) fprintf(stderr, "forker: exit, _exit, exec or signal, with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  atexit(child_atexit);
  int errors = 0;
  for (int c = 0; c < children; c++) {
    exchange(rank, 1, &errors);
    fflush(stdout);
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid == 0) {
      if (!strcmp(mode, "exit")) exit(5);
      if (!strcmp(mode, "_exit")) _exit(5);
      if (!strcmp(mode, "exec")) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
      }
      pause(); /* signal: wait for the parent's SIGTERM */
      _exit(127);
    }
    if (pid < 0) {
      errors++;
      continue;
    }
    if (!strcmp(mode, "signal")) kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    double took = now_ms() - t0;
    fprintf(stderr, "forker: rank %d: child %.1f ms\n", rank, took);
    int expected_ok = !strcmp(mode, "exec") ? WIFEXITED(status) && WEXITSTATUS(status) == 0
                      : !strcmp(mode, "signal") ? WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM
                                                : WIFEXITED(status) && WEXITSTATUS(status) == 5;
    if (!expected_ok) errors++;
    exchange(rank, 2, &errors);
  }
  int all = 0;
  MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("forker: %s %d %s\n", all ? "FAILED" : "ok", children, mode);
  MPI_Finalize();
  return all ? 1 : 0;
}
