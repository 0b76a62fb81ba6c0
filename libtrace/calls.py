"""The one table of MPI calls mpiadvise intercepts.

Every C wrapper and every Fortran wrapper (mpi_send_, mpi_send__, mpi_send, MPI_SEND, mpi_send_f08_) is
generated from this table by gen_wrappers.py, as mpiP generates its wrappers from one prototype file.
Prototypes are the MPI-3.1 standard's C bindings. Roles name the parameters that carry what the log
records:

  peer, tag, comm          a rank of comm (dest, source or root), a tag, the communicator
  bytes=(count, type)      bytes sent: count x PMPI_Type_size(type)
  sendbuf                  the send buffer of a point-to-point send: RESENT when it, the bytes and the type
                           are the thread's previous send's (every call's other writable buffers, void *
                           not const, are taken to be rewritten: mpa_written)
  bytes2=(count, type)     bytes received (posted)
  peer2, tag2              the receive half of Sendrecv
  bytes_v / bytes2_v=(counts, type)   per-peer counts summed over the communicator (over the remote
                           group of an intercommunicator)
  bytes_w=(counts, types)  per-peer counts and types (Alltoallw), summed
  bytes_local_v=(counts, type)  per-member counts summed over the local group (Reduce_scatter: the
                           counts say what each member of this group gets, even on an intercommunicator)
  bytes_blocks=(count, type)    count for every member of the local group (Reduce_scatter_block)
  bytes2_own=(counts, type)     the calling rank's entry of per-member counts (Reduce_scatter)
  per_member=(side, ...)    the sides ('bytes', 'bytes2') whose counts are also recorded member by member
                           (MPA_F_VCOUNTS): the first side the call records, in this order
  root_only                'bytes' or 'bytes2': that side is significant only at the root (elsewhere
                           its count and type may be anything, its counts array NULL)
  inplace                  the send buffer parameter: MPI_IN_PLACE means no separate send bytes
  inplace_recv             the receive buffer parameter: MPI_IN_PLACE (Scatter at the root) means no
                           separate receive bytes
  req_out, msg_out         request / message handle created by the call
  req_in, msg_in           request / message handle consumed by the call
  reqs_in=(n, array)       requests waited on, tested or started
  status                   status of a completed receive or probe
  completion               wait|test|waitall|testall|waitany|testany|waitsome|testsome|iprobe|improbe
                           (test-like calls that find nothing are folded into runs, see core.c)
  newcomm                  communicator created by the call
  freecomm                 communicator released by the call
  cancels                  the call cancels its req_in (MPI_Cancel): completions then say whether
                           the cancel succeeded (MPA_F_CANCELLED)
"""


class Call:
    def __init__(self, name, params, kind, **roles):
        self.name = name
        self.params = params
        self.kind = kind  # p2p | completion | coll | comm | core
        self.roles = roles


def p2p(name, params, **roles):
    return Call(name, params, "p2p", **roles)


def done(name, params, **roles):
    return Call(name, params, "completion", **roles)


def coll(name, params, **roles):
    return Call(name, params, "coll", **roles)


def comm(name, params, **roles):
    return Call(name, params, "comm", **roles)


SEND = "const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm"
ISEND = SEND + ", MPI_Request *request"
SEND_ROLES = dict(peer="dest", tag="tag", comm="comm", bytes=("count", "datatype"))
SENDS = dict(SEND_ROLES, sendbuf="buf")  # a send made now (not a persistent one's init)
RECV_ROLES = dict(peer="source", tag="tag", comm="comm", bytes2=("count", "datatype"))

CALLS = [
    # ---- point-to-point ------------------------------------------------------------------------------
    p2p("Send", SEND, **SENDS),
    p2p("Ssend", SEND, **SENDS),
    p2p("Bsend", SEND, **SENDS),
    p2p("Rsend", SEND, **SENDS),
    p2p("Isend", ISEND, req_out="request", **SENDS),
    p2p("Issend", ISEND, req_out="request", **SENDS),
    p2p("Ibsend", ISEND, req_out="request", **SENDS),
    p2p("Irsend", ISEND, req_out="request", **SENDS),
    p2p("Recv", "void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, "
        "MPI_Status *status", status="status", **RECV_ROLES),
    p2p("Irecv", "void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, "
        "MPI_Request *request", req_out="request", **RECV_ROLES),
    p2p("Sendrecv", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, "
        "void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, "
        "MPI_Status *status",
        peer="dest", tag="sendtag", bytes=("sendcount", "sendtype"), peer2="source", tag2="recvtag",
        bytes2=("recvcount", "recvtype"), comm="comm", status="status", sendbuf="sendbuf"),
    p2p("Sendrecv_replace", "void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, "
        "int source, int recvtag, MPI_Comm comm, MPI_Status *status",
        peer="dest", tag="sendtag", bytes=("count", "datatype"), peer2="source", tag2="recvtag",
        bytes2=("count", "datatype"), comm="comm", status="status"),
    p2p("Send_init", ISEND, req_out="request", **SEND_ROLES),
    p2p("Ssend_init", ISEND, req_out="request", **SEND_ROLES),
    p2p("Bsend_init", ISEND, req_out="request", **SEND_ROLES),
    p2p("Rsend_init", ISEND, req_out="request", **SEND_ROLES),
    p2p("Recv_init", "void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, "
        "MPI_Request *request", req_out="request", **RECV_ROLES),
    p2p("Start", "MPI_Request *request", req_in="request"),
    p2p("Startall", "int count, MPI_Request array_of_requests[]", reqs_in=("count", "array_of_requests")),
    p2p("Probe", "int source, int tag, MPI_Comm comm, MPI_Status *status",
        peer="source", tag="tag", comm="comm", status="status"),
    p2p("Iprobe", "int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status",
        peer="source", tag="tag", comm="comm", status="status", completion="iprobe"),
    p2p("Mprobe", "int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status",
        peer="source", tag="tag", comm="comm", status="status", msg_out="message"),
    p2p("Improbe", "int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, "
        "MPI_Status *status",
        peer="source", tag="tag", comm="comm", status="status", msg_out="message", completion="improbe"),
    p2p("Mrecv", "void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status",
        bytes2=("count", "datatype"), msg_in="message", status="status"),
    p2p("Imrecv", "void *buf, int count, MPI_Datatype datatype, MPI_Message *message, "
        "MPI_Request *request",
        bytes2=("count", "datatype"), msg_in="message", req_out="request"),

    # ---- completion ----------------------------------------------------------------------------------
    done("Wait", "MPI_Request *request, MPI_Status *status", req_in="request", status="status",
         completion="wait"),
    done("Waitall", "int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]",
         reqs_in=("count", "array_of_requests"), completion="waitall"),
    done("Waitany", "int count, MPI_Request array_of_requests[], int *index, MPI_Status *status",
         reqs_in=("count", "array_of_requests"), status="status", completion="waitany"),
    done("Waitsome", "int incount, MPI_Request array_of_requests[], int *outcount, "
         "int array_of_indices[], MPI_Status array_of_statuses[]",
         reqs_in=("incount", "array_of_requests"), completion="waitsome"),
    done("Test", "MPI_Request *request, int *flag, MPI_Status *status", req_in="request",
         status="status", completion="test"),
    done("Testall", "int count, MPI_Request array_of_requests[], int *flag, "
         "MPI_Status array_of_statuses[]",
         reqs_in=("count", "array_of_requests"), completion="testall"),
    done("Testany", "int count, MPI_Request array_of_requests[], int *index, int *flag, "
         "MPI_Status *status",
         reqs_in=("count", "array_of_requests"), status="status", completion="testany"),
    done("Testsome", "int incount, MPI_Request array_of_requests[], int *outcount, "
         "int array_of_indices[], MPI_Status array_of_statuses[]",
         reqs_in=("incount", "array_of_requests"), completion="testsome"),
    done("Request_free", "MPI_Request *request", req_in="request"),
    done("Cancel", "MPI_Request *request", req_in="request", cancels=True),
]

# ---- collectives, blocking and non-blocking ----------------------------------------------------------
REQ = ", MPI_Request *request"
COLLECTIVES = [
    ("Barrier", "MPI_Comm comm", dict()),
    ("Bcast", "void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm",
     dict(peer="root", bytes=("count", "datatype"))),
    ("Reduce", "const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, "
     "int root, MPI_Comm comm", dict(peer="root", bytes=("count", "datatype"), bytes2=("count", "datatype"),
                                     root_only="bytes2", inplace="sendbuf")),
    ("Allreduce", "const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, "
     "MPI_Comm comm", dict(bytes=("count", "datatype"), bytes2=("count", "datatype"), inplace="sendbuf")),
    ("Gather", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, "
     "int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm",
     dict(peer="root", bytes=("sendcount", "sendtype"), bytes2=("recvcount", "recvtype"),
          root_only="bytes2", inplace="sendbuf")),
    ("Gatherv", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, "
     "const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm",
     dict(peer="root", bytes=("sendcount", "sendtype"), bytes2_v=("recvcounts", "recvtype"),
          root_only="bytes2", inplace="sendbuf", per_member=("bytes2",))),
    ("Scatter", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, "
     "int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm",
     dict(peer="root", bytes=("sendcount", "sendtype"), bytes2=("recvcount", "recvtype"),
          root_only="bytes", inplace_recv="recvbuf")),
    ("Scatterv", "const void *sendbuf, const int sendcounts[], const int displs[], "
     "MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, "
     "MPI_Comm comm",
     dict(peer="root", bytes_v=("sendcounts", "sendtype"), bytes2=("recvcount", "recvtype"),
          root_only="bytes", inplace_recv="recvbuf", per_member=("bytes",))),
    ("Allgather", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, "
     "int recvcount, MPI_Datatype recvtype, MPI_Comm comm",
     dict(bytes=("sendcount", "sendtype"), bytes2=("recvcount", "recvtype"), inplace="sendbuf")),
    ("Allgatherv", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, "
     "const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm",
     dict(bytes=("sendcount", "sendtype"), bytes2_v=("recvcounts", "recvtype"), inplace="sendbuf",
          per_member=("bytes2",))),
    ("Alltoall", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, "
     "int recvcount, MPI_Datatype recvtype, MPI_Comm comm",
     dict(bytes=("sendcount", "sendtype"), bytes2=("recvcount", "recvtype"), inplace="sendbuf")),
    ("Alltoallv", "const void *sendbuf, const int sendcounts[], const int sdispls[], "
     "MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], "
     "MPI_Datatype recvtype, MPI_Comm comm",
     dict(bytes_v=("sendcounts", "sendtype"), bytes2_v=("recvcounts", "recvtype"), inplace="sendbuf",
          per_member=("bytes", "bytes2"))),
    ("Alltoallw", "const void *sendbuf, const int sendcounts[], const int sdispls[], "
     "const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], "
     "const MPI_Datatype recvtypes[], MPI_Comm comm",
     dict(bytes_w=("sendcounts", "sendtypes"), bytes2_w=("recvcounts", "recvtypes"), inplace="sendbuf",
          per_member=("bytes", "bytes2"))),
    ("Reduce_scatter", "const void *sendbuf, void *recvbuf, const int recvcounts[], "
     "MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
     dict(bytes_local_v=("recvcounts", "datatype"), bytes2_own=("recvcounts", "datatype"),
          inplace="sendbuf", per_member=("bytes",))),
    ("Reduce_scatter_block", "const void *sendbuf, void *recvbuf, int recvcount, "
     "MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
     dict(bytes_blocks=("recvcount", "datatype"), bytes2=("recvcount", "datatype"), inplace="sendbuf")),
    ("Scan", "const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, "
     "MPI_Comm comm", dict(bytes=("count", "datatype"), bytes2=("count", "datatype"), inplace="sendbuf")),
    ("Exscan", "const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, "
     "MPI_Comm comm", dict(bytes=("count", "datatype"), bytes2=("count", "datatype"), inplace="sendbuf")),
]
for name, params, roles in COLLECTIVES:
    CALLS.append(coll(name, params, comm="comm", **roles))
for name, params, roles in COLLECTIVES:
    CALLS.append(coll("I" + name.lower(), params + REQ, comm="comm", req_out="request", **roles))

# ---- communicators: each new one is defined in the log with its members as world ranks --------------
CALLS += [
    comm("Comm_dup", "MPI_Comm comm, MPI_Comm *newcomm", comm="comm", newcomm="newcomm"),
    comm("Comm_dup_with_info", "MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm", comm="comm",
         newcomm="newcomm"),
    # Defined when the call returns, not when the request completes: MPI sets the handle at once (Open
    # MPI, MPICH) and its groups can be read; a definition made at first use instead would be missing on
    # ranks that never use it, and their later communicators with these members would get other gids.
    comm("Comm_idup", "MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request", comm="comm",
         newcomm="newcomm", req_out="request"),
    comm("Comm_split", "MPI_Comm comm, int color, int key, MPI_Comm *newcomm", comm="comm",
         newcomm="newcomm"),
    comm("Comm_split_type", "MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm",
         comm="comm", newcomm="newcomm"),
    comm("Comm_create", "MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm", comm="comm",
         newcomm="newcomm"),
    comm("Comm_create_group", "MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm", comm="comm",
         newcomm="newcomm"),
    comm("Intercomm_create", "MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, "
         "int remote_leader, int tag, MPI_Comm *newintercomm", comm="local_comm",
         newcomm="newintercomm"),
    comm("Intercomm_merge", "MPI_Comm intercomm, int high, MPI_Comm *newintracomm", comm="intercomm",
         newcomm="newintracomm"),
    comm("Cart_create", "MPI_Comm comm_old, int ndims, const int dims[], const int periods[], "
         "int reorder, MPI_Comm *comm_cart", comm="comm_old", newcomm="comm_cart"),
    comm("Cart_sub", "MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm", comm="comm",
         newcomm="newcomm"),
    comm("Graph_create", "MPI_Comm comm_old, int nnodes, const int index[], const int edges[], "
         "int reorder, MPI_Comm *comm_graph", comm="comm_old", newcomm="comm_graph"),
    comm("Dist_graph_create", "MPI_Comm comm_old, int n, const int sources[], const int degrees[], "
         "const int destinations[], const int weights[], MPI_Info info, int reorder, "
         "MPI_Comm *comm_dist_graph", comm="comm_old", newcomm="comm_dist_graph"),
    comm("Dist_graph_create_adjacent", "MPI_Comm comm_old, int indegree, const int sources[], "
         "const int sourceweights[], int outdegree, const int destinations[], "
         "const int destweights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph",
         comm="comm_old", newcomm="comm_dist_graph"),
    comm("Comm_free", "MPI_Comm *comm", freecomm="comm"),
]

# ---- the tracer's life cycle: hand-written in core.c, listed here for ids and Fortran wrappers ------
CORE = ["Init", "Init_thread", "Finalize", "Abort", "Pcontrol"]
