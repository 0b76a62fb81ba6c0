! A Fortran job that hangs for good (use mpi), for the test that the Fortran wrappers record the call
! in progress as C's do (tests/mpi_hang.cpp). 2 ranks: 3 exchanges (tag 3) complete; then rank 0 posts
! MPI_Irecv from rank 1 (tag 11) and waits on it in MPI_Wait, while rank 1 calls MPI_Recv from rank 0
! (tag 12). Each rank prints "f_hang: rank R ready" just before the call it hangs in.
program f_hang
  use mpi
  implicit none
  integer :: ierr, rank, v, i, req
  integer :: st(MPI_STATUS_SIZE)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  v = rank
  do i = 1, 3
    if (rank == 0) then
      call MPI_Send(v, 1, MPI_INTEGER, 1, 3, MPI_COMM_WORLD, ierr)
      call MPI_Recv(v, 1, MPI_INTEGER, 1, 3, MPI_COMM_WORLD, st, ierr)
    else
      call MPI_Recv(v, 1, MPI_INTEGER, 0, 3, MPI_COMM_WORLD, st, ierr)
      call MPI_Send(v, 1, MPI_INTEGER, 0, 3, MPI_COMM_WORLD, ierr)
    end if
  end do
  if (rank == 0) then
    call MPI_Irecv(v, 1, MPI_INTEGER, 1, 11, MPI_COMM_WORLD, req, ierr)
    print '(a,i0,a)', 'f_hang: rank ', rank, ' ready'
    flush(6)
    call MPI_Wait(req, st, ierr)
  else
    print '(a,i0,a)', 'f_hang: rank ', rank, ' ready'
    flush(6)
    call MPI_Recv(v, 1, MPI_INTEGER, 0, 12, MPI_COMM_WORLD, st, ierr)
  end if
  call MPI_Finalize(ierr)
end program f_hang
