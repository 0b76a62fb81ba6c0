/* What MPI answers the program about its own state, printed for the test that a traced run gets the
 * answers of the untraced one (tests/mpi_answers.cpp).
 *   answers init | single | funneled | serialized | multiple
 * Starts MPI with MPI_Init or with MPI_Init_thread at the level named, and prints from every rank, one
 * line per question and time: MPI_Initialized and MPI_Finalized before MPI_Init, the level provided,
 * MPI_Query_thread, MPI_Is_thread_main, MPI_Initialized and MPI_Finalized after it (and after a few
 * messages), MPI_Query_thread and MPI_Is_thread_main on a second thread where the level allows one to
 * call MPI, and MPI_Initialized and MPI_Finalized after MPI_Finalize. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int rank = -1;

static void *second_thread(void *arg)
{
  (void)arg;
  int level = -1, main_thread = -1;
  MPI_Query_thread(&level);
  MPI_Is_thread_main(&main_thread);
  printf("rank %d second thread: query_thread %d is_thread_main %d\n", rank, level, main_thread);
  return NULL;
}

int main(int argc, char **argv)
{
  const char *how = argc > 1 ? argv[1] : "init";
  static const char *const names[] = {"single", "funneled", "serialized", "multiple"};
  const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};
  int required = -1;
  for (int i = 0; i < 4; i++)
    if (!strcmp(how, names[i])) required = levels[i];
  if (required < 0 && strcmp(how, "init")) {
    fprintf(stderr, "answers: init, single, funneled, serialized or multiple, not %s\n", how);
    return 2;
  }
  int initialized = -1, finalized = -1, provided = -1, level = -1, main_thread = -1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  int before_initialized = initialized, before_finalized = finalized;
  if (required < 0) MPI_Init(&argc, &argv);
  else MPI_Init_thread(&argc, &argv, required, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  printf("rank %d before init: initialized %d finalized %d\n", rank, before_initialized, before_finalized);
  MPI_Query_thread(&level);
  MPI_Is_thread_main(&main_thread);
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  printf("rank %d after init: provided %d query_thread %d is_thread_main %d initialized %d finalized %d\n", rank,
         provided, level, main_thread, initialized, finalized);
  int size, token = rank;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Sendrecv_replace(&token, 1, MPI_INT, (rank + 1) % size, 0, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Query_thread(&level);
  MPI_Is_thread_main(&main_thread);
  printf("rank %d after messages: token %d query_thread %d is_thread_main %d\n", rank, token, level, main_thread);
  if (level >= MPI_THREAD_SERIALIZED) {
    pthread_t t;
    pthread_create(&t, NULL, second_thread, NULL);
    pthread_join(t, NULL);
  }
  MPI_Finalize();
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  printf("rank %d after finalize: initialized %d finalized %d\n", rank, initialized, finalized);
  return 0;
}
