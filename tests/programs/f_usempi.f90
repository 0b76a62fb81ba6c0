! The calls tests/mpi_fortran.cpp checks, through the `use mpi` binding, with arguments the test knows.
! Run with 4 ranks. Rank 0 prints "f_usempi: ok <checksum>" when every message arrived intact.
! The same calls, tags and buffers as f_mpif.f90 (see there), so that the test expects the same log of
! all three bindings. Open MPI's `use mpi` module only declares interfaces: the program itself calls the
! mpif.h entry points (mpi_send_).
program f_usempi
  use mpi
  implicit none
  integer :: ierr, rank, size, other, errors, checksum, i
  integer :: half, hrank, dup, vec, idx, outcount, done
  integer :: ten(10), grid(40), rq(3), pr(1), indices(3), v(3), mine(1), theirs(1), x(1)
  integer :: bval(5), red(3), red_sum(3), pair(2), pair_sum(2), sums(4), gathered(8), toall(4), fromall(4)
  integer :: one(1), total(1), counts(2), all_counts(2)
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 3)
  double precision :: t
  logical :: flag

  errors = 0
  checksum = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  if (size /= 4) then
    if (rank == 0) write (0, '(a)') 'f_usempi: run with 4 ranks'
    call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
  end if
  other = ieor(rank, 1)  ! 0 <-> 1, 2 <-> 3

  ! 1. a split communicator: even world ranks {0,2}, odd {1,3}; local 0 sends 10 integers to local 1
  !    (tag 11), received with MPI_STATUS_IGNORE
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  call MPI_COMM_RANK(half, hrank, ierr)
  do i = 1, 10
    ten(i) = rank * 100 + i
  end do
  if (hrank == 0) then
    call MPI_SEND(ten, 10, MPI_INTEGER, 1, 11, half, ierr)
  else
    call MPI_RECV(ten, 10, MPI_INTEGER, 0, 11, half, MPI_STATUS_IGNORE, ierr)
    call expect(ten(3) == (rank - 2) * 100 + 3, 'split receive')
  end if

  if (rank < 2) then
    ! 2. a derived datatype (4 blocks of 3 integers, stride 5: 48 bytes), two of them (96 bytes), to a
    !    receive from MPI_ANY_SOURCE with MPI_ANY_TAG and a real status
    call MPI_TYPE_VECTOR(4, 3, 5, MPI_INTEGER, vec, ierr)
    call MPI_TYPE_COMMIT(vec, ierr)
    do i = 1, 40
      grid(i) = merge(i, -1, rank == 0)
    end do
    if (rank == 0) then
      call MPI_SEND(grid, 2, vec, 1, 12, MPI_COMM_WORLD, ierr)
    else
      call MPI_RECV(grid, 2, vec, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
      call expect(st(MPI_SOURCE) == 0 .and. st(MPI_TAG) == 12 .and. grid(6) == 6, 'any-source receive')
      checksum = checksum + grid(6)
    end if
    call MPI_TYPE_FREE(vec, ierr)

    ! 3. Irecv + Isend + Waitall with MPI_STATUSES_IGNORE (tag 13)
    mine = rank + 1
    theirs = 0
    call MPI_IRECV(theirs, 1, MPI_INTEGER, other, 13, MPI_COMM_WORLD, rq(1), ierr)
    call MPI_ISEND(mine, 1, MPI_INTEGER, other, 13, MPI_COMM_WORLD, rq(2), ierr)
    call MPI_WAITALL(2, rq, MPI_STATUSES_IGNORE, ierr)
    call expect(theirs(1) == other + 1, 'Waitall')

    ! 4. Waitany over two receives (tags 14, 15); the sender sends 15 first
    if (rank == 0) then
      v = 0
      call MPI_IRECV(v(1), 1, MPI_INTEGER, 1, 14, MPI_COMM_WORLD, rq(1), ierr)
      call MPI_IRECV(v(2), 1, MPI_INTEGER, 1, 15, MPI_COMM_WORLD, rq(2), ierr)
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)  ! receives posted
      do i = 1, 2
        call MPI_WAITANY(2, rq, idx, st, ierr)
        call expect(st(MPI_TAG) == 13 + idx, 'Waitany index, 1-based')
      end do
      call expect(v(1) == 14 .and. v(2) == 15, 'Waitany')
    else
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      x = 15
      call MPI_SEND(x, 1, MPI_INTEGER, 0, 15, MPI_COMM_WORLD, ierr)
      x = 14
      call MPI_SEND(x, 1, MPI_INTEGER, 0, 14, MPI_COMM_WORLD, ierr)
    end if

    ! 5. Testsome over three receives (tags 16, 17, 18) with real statuses; the sender waits 50 ms so
    !    that rank 0 polls
    if (rank == 0) then
      v = 0
      do i = 1, 3
        call MPI_IRECV(v(i), 1, MPI_INTEGER, 1, 15 + i, MPI_COMM_WORLD, rq(i), ierr)
      end do
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      done = 0
      do while (done < 3)
        call MPI_TESTSOME(3, rq, outcount, indices, sts, ierr)
        if (outcount == MPI_UNDEFINED) exit
        do i = 1, outcount
          call expect(sts(MPI_TAG, i) == 15 + indices(i), 'Testsome indices, 1-based')
        end do
        done = done + outcount
      end do
      call expect(v(1) == 16 .and. v(2) == 17 .and. v(3) == 18, 'Testsome')
    else
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      t = MPI_WTIME()
      do while (MPI_WTIME() - t < 0.05d0)
      end do
      do i = 1, 3
        x = 15 + i
        call MPI_SEND(x, 1, MPI_INTEGER, 0, 15 + i, MPI_COMM_WORLD, ierr)
      end do
    end if

    ! 6. Waitsome over three receives (tags 40, 41, 42) with MPI_STATUSES_IGNORE, sent in reverse
    if (rank == 0) then
      v = 0
      do i = 1, 3
        call MPI_IRECV(v(i), 1, MPI_INTEGER, 1, 39 + i, MPI_COMM_WORLD, rq(i), ierr)
      end do
      done = 0
      do while (done < 3)
        call MPI_WAITSOME(3, rq, outcount, indices, MPI_STATUSES_IGNORE, ierr)
        if (outcount == MPI_UNDEFINED) exit
        done = done + outcount
      end do
      call expect(v(1) == 40 .and. v(2) == 41 .and. v(3) == 42, 'Waitsome')
    else
      do i = 3, 1, -1
        x = 39 + i
        call MPI_SEND(x, 1, MPI_INTEGER, 0, 39 + i, MPI_COMM_WORLD, ierr)
      end do
    end if

    ! 7. persistent requests (tag 19): Send_init / Recv_init, Start x3 + Wait, Startall x2 + Waitall,
    !    Request_free
    x = 0
    if (rank == 0) then
      call MPI_SEND_INIT(x, 1, MPI_INTEGER, 1, 19, MPI_COMM_WORLD, pr(1), ierr)
    else
      call MPI_RECV_INIT(x, 1, MPI_INTEGER, 0, 19, MPI_COMM_WORLD, pr(1), ierr)
    end if
    do i = 1, 3
      if (rank == 0) x = 100 + i
      call MPI_START(pr(1), ierr)
      call MPI_WAIT(pr(1), MPI_STATUS_IGNORE, ierr)
      if (rank == 1) call expect(x(1) == 100 + i, 'persistent receive')
    end do
    do i = 1, 2
      call MPI_STARTALL(1, pr, ierr)
      call MPI_WAITALL(1, pr, MPI_STATUSES_IGNORE, ierr)
    end do
    call MPI_REQUEST_FREE(pr(1), ierr)

    ! 8. Sendrecv (tag 28) with MPI_STATUS_IGNORE
    mine = rank + 7
    theirs = -1
    call MPI_SENDRECV(mine, 1, MPI_INTEGER, other, 28, theirs, 1, MPI_INTEGER, other, 28, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE, ierr)
    call expect(theirs(1) == other + 7, 'Sendrecv')

    ! 9. Probe + Recv (tag 31), Iprobe polling from MPI_ANY_SOURCE + Recv (tag 32)
    if (rank == 1) then
      v = (/ 31, 32, 0 /)
      do i = 1, 2
        call MPI_SEND(v(i), 1, MPI_INTEGER, 0, 30 + i, MPI_COMM_WORLD, ierr)
      end do
    else
      call MPI_PROBE(1, 31, MPI_COMM_WORLD, st, ierr)
      call MPI_RECV(x, 1, MPI_INTEGER, st(MPI_SOURCE), st(MPI_TAG), MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call expect(x(1) == 31, 'Probe')
      flag = .false.
      do while (.not. flag)
        call MPI_IPROBE(MPI_ANY_SOURCE, 32, MPI_COMM_WORLD, flag, st, ierr)
      end do
      call MPI_RECV(x, 1, MPI_INTEGER, 1, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call expect(x(1) == 32 .and. st(MPI_SOURCE) == 1, 'Iprobe')
      checksum = checksum + x(1)
    end if

    ! 10. Test polling, with a real status, on a receive (tag 35) the sender delays by 20 ms
    if (rank == 0) then
      call MPI_IRECV(x, 1, MPI_INTEGER, 1, 35, MPI_COMM_WORLD, rq(1), ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_TEST(rq(1), flag, st, ierr)
      end do
      call expect(x(1) == 35 .and. st(MPI_SOURCE) == 1 .and. st(MPI_TAG) == 35, 'Test')
    else
      t = MPI_WTIME()
      do while (MPI_WTIME() - t < 0.02d0)
      end do
      x = 35
      call MPI_SEND(x, 1, MPI_INTEGER, 0, 35, MPI_COMM_WORLD, ierr)
    end if
  else
    ! ranks 2 and 3 take part in the barriers of ranks 0 and 1 (MPI_COMM_WORLD)
    do i = 1, 2
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    end do
  end if

  ! 11. collectives over MPI_COMM_WORLD: Bcast from 1 (20 bytes), Reduce to 2 (12 bytes), Allreduce
  !     (8 bytes) and in place, Gather to 0 (8 bytes each), Alltoall (4 bytes each), Ibarrier + Wait
  bval = merge(7, 0, rank == 1)
  call MPI_BCAST(bval, 5, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)
  call expect(all(bval == 7), 'Bcast')
  red = rank
  call MPI_REDUCE(red, red_sum, 3, MPI_INTEGER, MPI_SUM, 2, MPI_COMM_WORLD, ierr)
  if (rank == 2) call expect(all(red_sum == 6), 'Reduce')
  pair = (/ rank, 1 /)
  call MPI_ALLREDUCE(pair(1), pair_sum, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(pair_sum(1) == 6 .and. pair_sum(2) == 4, 'Allreduce')
  sums = rank
  call MPI_ALLREDUCE(MPI_IN_PLACE, sums, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(all(sums == 6), 'Allreduce in place')
  call MPI_GATHER(pair, 2, MPI_INTEGER, gathered, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call expect(gathered(7) == 3, 'Gather')
  do i = 1, 4
    toall(i) = rank * 10 + i - 1
  end do
  call MPI_ALLTOALL(toall, 1, MPI_INTEGER, fromall, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call expect(fromall(4) == 30 + rank, 'Alltoall')
  call MPI_IBARRIER(MPI_COMM_WORLD, rq(1), ierr)
  call MPI_WAIT(rq(1), MPI_STATUS_IGNORE, ierr)

  ! 12. a duplicate of MPI_COMM_WORLD, used once and freed; the split communicator freed
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  one = rank
  call MPI_ALLREDUCE(one(1), total, 1, MPI_INTEGER, MPI_SUM, dup, ierr)
  call expect(total(1) == 6, 'Allreduce on the duplicate')
  call MPI_COMM_FREE(dup, ierr)
  call MPI_COMM_FREE(half, ierr)

  ! 13. tracing paused around one exchange (tag 77)
  call MPI_PCONTROL(0)
  if (rank < 2) then
    mine = rank
    call MPI_SENDRECV(mine, 1, MPI_INTEGER, other, 77, theirs, 1, MPI_INTEGER, other, 77, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE, ierr)
    call expect(theirs(1) == other, 'paused Sendrecv')
  end if
  call MPI_PCONTROL(1)

  counts = (/ errors, checksum /)
  all_counts = 0
  call MPI_REDUCE(counts, all_counts, 2, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(3a, i0)') 'f_usempi: ', trim(merge('ok    ', 'FAILED', all_counts(1) == 0)), ' ', &
                                       all_counts(2)
  call MPI_FINALIZE(ierr)
  if (all_counts(1) /= 0) stop 1

contains

  subroutine expect(cond, what)
    logical, intent(in) :: cond
    character(*), intent(in) :: what
    if (.not. cond) then
      write (0, '(a, i0, 2a)') 'f_usempi: rank ', rank, ': failed: ', what
      errors = errors + 1
    end if
  end subroutine expect

end program f_usempi
