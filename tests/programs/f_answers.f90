! What MPI answers a Fortran program about its own state (the Fortran side of answers.c), for the test
! that a traced run gets the answers of the untraced one. The first argument names the start:
! init (MPI_INIT) or single, funneled, serialized, multiple (MPI_INIT_THREAD at that level). Every rank
! prints MPI_INITIALIZED and MPI_FINALIZED before and after, the level provided, MPI_QUERY_THREAD and
! MPI_IS_THREAD_MAIN.
program f_answers
  use mpi
  implicit none
  character(len=32) :: how
  integer :: ierr, rank, required, provided, level
  logical :: initialized, finalized, main_thread, before_initialized, before_finalized
  how = 'init'
  if (command_argument_count() > 0) call get_command_argument(1, how)
  select case (trim(how))
  case ('single')
    required = MPI_THREAD_SINGLE
  case ('funneled')
    required = MPI_THREAD_FUNNELED
  case ('serialized')
    required = MPI_THREAD_SERIALIZED
  case ('multiple')
    required = MPI_THREAD_MULTIPLE
  case default
    required = -1
  end select
  provided = -1
  call MPI_INITIALIZED(before_initialized, ierr)
  call MPI_FINALIZED(before_finalized, ierr)
  if (required < 0) then
    call MPI_INIT(ierr)
  else
    call MPI_INIT_THREAD(required, provided, ierr)
  end if
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_QUERY_THREAD(level, ierr)
  call MPI_IS_THREAD_MAIN(main_thread, ierr)
  call MPI_INITIALIZED(initialized, ierr)
  call MPI_FINALIZED(finalized, ierr)
  print '(a,i0,a,2l2,a,2i3,3l2)', 'rank ', rank, ' before init:', before_initialized, before_finalized, &
    ' after init: provided, query_thread, is_thread_main, initialized, finalized', provided, level, &
    main_thread, initialized, finalized
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FINALIZE(ierr)
  call MPI_INITIALIZED(initialized, ierr)
  call MPI_FINALIZED(finalized, ierr)
  print '(a,i0,a,2l2)', 'rank ', rank, ' after finalize: initialized, finalized', initialized, finalized
end program f_answers
