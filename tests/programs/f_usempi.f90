! The calls of fortran_calls.inc through the `use mpi` binding. Run with 4 ranks. Rank 0 prints
! "f_usempi: ok <checksum>" when every message arrived intact. Open MPI's `use mpi` module only declares
! interfaces: the program itself calls the mpif.h entry points (mpi_send_).
program f_usempi
  use mpi
  implicit none
  character(*), parameter :: me = 'f_usempi'
  include 'fortran_calls.inc'
end program f_usempi
