"""Pickled objects through mpi4py's comm.send / comm.recv, which receive with MPI_Mprobe + MPI_Mrecv.

  mpirun -np 2 python3 mpi4py_sendrecv.py [messages]

Rank 1 sends `messages` dictionaries to rank 0, which receives them from any source; rank 0 answers each
with comm.isend, which rank 1 receives with comm.irecv. Prints "mpi4py_sendrecv: ok N" from rank 0."""
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
messages = int(sys.argv[1]) if len(sys.argv) > 1 else 10
ok = True
if rank == 1:
    for i in range(messages):
        comm.send({"i": i, "payload": list(range(i))}, dest=0, tag=i)
        reply = comm.irecv(source=0, tag=1000 + i).wait()
        ok = ok and reply == i * i
elif rank == 0:
    for i in range(messages):
        status = MPI.Status()
        obj = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
        ok = ok and obj["i"] == i and status.Get_source() == 1 and status.Get_tag() == i
        comm.isend(i * i, dest=1, tag=1000 + i).wait()
ok = comm.allreduce(1 if ok else 0, op=MPI.MIN) == 1
if rank == 0:
    print("mpi4py_sendrecv: %s %d" % ("ok" if ok else "FAILED", messages))
sys.exit(0 if ok else 1)
