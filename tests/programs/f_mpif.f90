! The calls of fortran_calls.inc through the mpif.h binding. Run with 4 ranks. Rank 0 prints
! "f_mpif: ok <checksum>" when every message arrived intact. f_usempi.f90 and f_f08.f90 make the same
! calls through the other two bindings.
program f_mpif
  implicit none
  include 'mpif.h'
  character(*), parameter :: me = 'f_mpif'
  include 'fortran_calls.inc'
end program f_mpif
