#!/usr/bin/env python3
"""Generate the C and Fortran wrappers of libmpiadvise from calls.py.

  gen_wrappers.py OUTDIR   writes OUTDIR/wrappers.c and OUTDIR/call_ids.h

Each call gets one C wrapper (MPI_X calls PMPI_X) and one Fortran body shared by five entry points
(mpi_x_, mpi_x__, mpi_x, MPI_X, mpi_x_f08_), each of which forwards to the library's own Fortran
PMPI entry of the same mangling. Record code is emitted once per call and used by both: the Fortran
body first turns Fortran handles into C-typed locals named as the C parameters.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calls import CALLS, CORE  # noqa: E402

FORTRAN_MANGLINGS = ["{l}_", "{l}__", "{l}", "{u}", "{l}_f08_"]
# MPICH's mpi_f08 entries of the calls with a buffer: TS 29113, the buffer passed as a descriptor
F08TS_MANGLING = "{l}_f08ts_"


class Param:
    def __init__(self, text):
        text = text.strip()
        m = re.match(r"^(.*?)(\w+)\s*(\[\])?$", text)
        self.ctype = m.group(1).strip()
        self.name = m.group(2)
        self.array = bool(m.group(3))
        self.text = text
        base = self.ctype.replace("const", "").strip()
        self.base = base  # e.g. "int", "int *", "MPI_Comm *", "void *"


def parse(params):
    return [Param(p) for p in params.split(",")]


def call_id(call_name):
    return "MPA_CALL_" + call_name


# ---------------------------------------------------------------- record code shared by C and Fortran
def record_code(call, params):
    r = call.roles
    out = []
    o = out.append
    comm_expr = r.get("comm")
    if comm_expr:
        o("  ev.mask |= MPA_F_COMM; ev.comm = mpa_cid;")
    if "peer" in r:
        o(f"  ev.mask |= MPA_F_PEER; ev.peer = mpa_rank_code({r['peer']});")
    if "tag" in r:
        o(f"  ev.mask |= MPA_F_TAG; ev.tag = mpa_tag_code({r['tag']});")
    if "peer2" in r:
        o(f"  ev.mask |= MPA_F_PEER2; ev.peer2 = mpa_rank_code({r['peer2']});")
    if "tag2" in r:
        o(f"  ev.mask |= MPA_F_TAG2; ev.tag2 = mpa_tag_code({r['tag2']});")

    root_only = r.get("root_only")
    root_cond = f"mpa_is_root({comm_expr}, {r.get('peer')})" if root_only else None

    # How each form of a byte role counts, by the suffix after "bytes" / "bytes2".
    def amount(form, counts, types, each):
        # each: the counts are also recorded member by member (MPA_F_VCOUNTS)
        sum_v = "mpa_each_bytes_v(&ev, ts, " if each else "mpa_sum_bytes_v("
        sum_w = "mpa_each_bytes_w(&ev, ts, " if each else "mpa_sum_bytes_w("
        if form == "":
            return f"mpa_type_bytes({counts}, {types})"
        if form == "_v":
            return f"{sum_v}{counts}, {types}, mpa_comm_peers({comm_expr}))"
        if form == "_w":
            return f"{sum_w}{counts}, {types}, mpa_comm_peers({comm_expr}), mpa_fortran)"
        if form == "_local_v":
            return f"{sum_v}{counts}, {types}, mpa_comm_local_size({comm_expr}))"
        if form == "_blocks":
            return f"mpa_type_bytes({counts}, {types}) * (uint64_t)mpa_comm_local_size({comm_expr})"
        if form == "_own":
            return f"mpa_own_bytes({counts}, {types}, {comm_expr})"
        raise SystemExit(f"gen_wrappers: unknown byte role form {form!r} in {call.name}")

    def bytes_stmt(field, mask, inplace):
        forms = [k[len(field):] for k in r if k.startswith(field) and k[len(field):] in
                 ("", "_v", "_w", "_local_v", "_blocks", "_own")]
        if not forms:
            return
        if len(forms) > 1:
            raise SystemExit(f"gen_wrappers: {call.name} has more than one role for {field}")
        counts, types = r[field + forms[0]]
        each = field in r.get("per_member", ())
        if each and forms[0] not in ("_v", "_w", "_local_v"):
            raise SystemExit(f"gen_wrappers: {call.name}'s per_member {field} has no counts array")
        stmt = f"{{ ev.mask |= {mask}; ev.{field} = {amount(forms[0], counts, types, each)}; }}"
        conds = []
        if inplace:
            conds.append(f"!mpa_in_place({inplace}, mpa_fortran)")
        if root_only == field:
            conds.append(root_cond)
        if conds:
            stmt = f"if ({' && '.join(conds)}) {stmt}"
        o("  " + stmt)

    bytes_stmt("bytes", "MPA_F_BYTES", r.get("inplace"))
    bytes_stmt("bytes2", "MPA_F_BYTES2", r.get("inplace_recv"))
    if "sendbuf" in r:
        o(f"  if (mpa_resent(ts, {r['sendbuf']}, ev.bytes, (uintptr_t){r['bytes'][1]}, mpa_fortran)) "
          "ev.mask |= MPA_F_RESENT;")
    # a buffer the call may write (a receive's, a collective's, Sendrecv_replace's): the data there is
    # no longer what the thread last sent from it
    for name in re.findall(r"(?<!const )\bvoid \*(\w+)", call.params):
        o(f"  mpa_written(ts, {name}, mpa_fortran);")

    if "newcomm" in r:
        o(f"  if (rc == MPI_SUCCESS) mpa_newcomm(&ev, *{r['newcomm']}, {comm_expr}, {call_id(call.name)});")
    return out


# ---------------------------------------------------------------- per-call pieces before and after PMPI
def pre_code(call):
    """C statements run before the PMPI call, on C-typed variables."""
    r = call.roles
    out = []
    # a null pointer where MPI wants one is a call MPI refuses (MPI_ERRORS_RETURN lets the program go on):
    # read nothing through it
    if "req_in" in r:
        q = r["req_in"]
        out.append(f"  uint64_t *mpa_h = mpa_scratch_handles(ts, 1); mpa_h[0] = {q} ? MPA_HANDLE(*{q}) : 0;")
    if "msg_in" in r:
        q = r["msg_in"]
        out.append(f"  uint64_t *mpa_h = mpa_scratch_handles(ts, 1); mpa_h[0] = {q} ? MPA_HANDLE(*{q}) : 0;")
    if "reqs_in" in r:
        n, arr = r["reqs_in"]
        out.append(f"  uint64_t *mpa_h = mpa_scratch_handles(ts, {n} > 0 ? {n} : 0);")
        out.append(f"  for (int i = 0; i < {n}; i++) mpa_h[i] = {arr} ? MPA_HANDLE({arr}[i]) : 0;")
    if "freecomm" in r:
        q = r["freecomm"]
        out.append(f"  uint32_t mpa_freed = {q} ? mpa_comm_id(*{q}) : 0;")
    return out


def entry_code(call, return_address):
    """C statements run before t0: the call site and the communicator id, which the in-flight slot and
    the event both use (computed before the call rather than after it: the same cost)."""
    out = [f"  uint32_t mpa_cs = mpa_callsite_id(ts, {return_address});"]
    if "comm" in call.roles:
        out.append(f"  uint32_t mpa_cid = mpa_comm_id({call.roles['comm']});")
    return out


def inflight_code(call):
    """C statements between t0 and the PMPI call: what is known of the call at entry goes into the
    thread's in-flight slot (tracer.h), for a signal handler to record if the call never returns. A few
    stores; `what` last (mpa_inflight_enter). Arrays of requests are the scratch handles pre_code filled:
    a pointer and a count, read only at signal time."""
    r = call.roles
    out = ["  ts->inflight.t0 = t0; ts->inflight.callsite = mpa_cs;"]
    fields = []

    def put(field, expr, bit):
        out.append(f"  ts->inflight.{field} = {expr};")
        if bit not in fields:
            fields.append(bit)

    if "comm" in r:
        put("comm", "mpa_cid", "MPA_F_COMM")
    elif "freecomm" in r:
        put("comm", "mpa_freed", "MPA_F_COMM")
    if "peer" in r:
        put("peer", f"mpa_rank_code({r['peer']})", "MPA_F_PEER")
    if "tag" in r:
        put("tag", f"mpa_tag_code({r['tag']})", "MPA_F_TAG")
    if "peer2" in r:
        put("peer2", f"mpa_rank_code({r['peer2']})", "MPA_F_PEER2")
    if "tag2" in r:
        put("tag2", f"mpa_tag_code({r['tag2']})", "MPA_F_TAG2")
    if "req_in" in r or "msg_in" in r:
        put("reqs", "mpa_h", "MPA_F_REQS")
        put("nreq", "1", "MPA_F_REQS")
    if "reqs_in" in r:
        n = r["reqs_in"][0]
        put("reqs", "mpa_h", "MPA_F_REQS")
        put("nreq", f"{n} > 0 ? (uint32_t){n} : 0", "MPA_F_REQS")
    out.append(f"  mpa_inflight_enter(ts, {call_id(call.name)}, {' | '.join(fields) if fields else '0'});")
    return out


def post_code(call):
    """C statements run after the PMPI call: request links and statuses."""
    r = call.roles
    out = []
    o = out.append
    if "req_in" in r or "msg_in" in r:
        o("  mpa_reqs(&ev, mpa_h, 1);")
    if r.get("cancels"):
        o("  if (rc == MPI_SUCCESS) mpa_cancel_noted(mpa_h[0]);")
    if "reqs_in" in r:
        o(f"  mpa_reqs(&ev, mpa_h, {r['reqs_in'][0]} > 0 ? {r['reqs_in'][0]} : 0);")
    if "freecomm" in r:
        o("  ev.mask |= MPA_F_COMM; ev.comm = mpa_freed; if (rc == MPI_SUCCESS && mpa_freed) mpa_comm_freed(mpa_freed);")
    # handles created by the call go after those it consumed (Imrecv: message, then request); a refused
    # call made none
    if "req_out" in r:
        o(f"  if (rc == MPI_SUCCESS) mpa_req_out(&ev, ts, {r['req_out']});")
    if "msg_out" in r:
        o(f"  if (rc == MPI_SUCCESS && (!mpa_flag_param || *mpa_flag_param)) "
          f"mpa_msg_out(&ev, ts, {r['msg_out']});")
    comp = r.get("completion")
    st = r.get("status")
    if comp is None and st:
        o(f"  if (rc == MPI_SUCCESS) mpa_status1(&ev, ts, 0, {st});")
    elif comp == "wait":
        o(f"  if (rc == MPI_SUCCESS) mpa_status1(&ev, ts, 0, {st});")
    elif comp == "test" or comp == "iprobe" or comp == "improbe":
        o(f"  if (rc == MPI_SUCCESS && *flag) mpa_status1(&ev, ts, 0, {st}); else mpa_fold_me = 1;")
    elif comp == "waitany":
        o(f"  if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED) mpa_status1(&ev, ts, *index, {st});")
    elif comp == "testany":
        o(f"  if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED) mpa_status1(&ev, ts, *index, {st});")
        o("  else if (rc == MPI_SUCCESS && !*flag) mpa_fold_me = 1;")
    elif comp == "waitall":
        o("  if (rc == MPI_SUCCESS) mpa_status_all(&ev, ts, count, array_of_statuses);")
    elif comp == "testall":
        o("  if (rc == MPI_SUCCESS && *flag) mpa_status_all(&ev, ts, count, array_of_statuses);")
        o("  else if (rc == MPI_SUCCESS) mpa_fold_me = 1;")
    elif comp in ("waitsome", "testsome"):
        o("  if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED && *outcount > 0)")
        o("    mpa_status_some(&ev, ts, *outcount, array_of_indices, array_of_statuses);")
        if comp == "testsome":
            o("  else if (rc == MPI_SUCCESS && *outcount == 0) mpa_fold_me = 1;")
    # requests completed after MPI_Cancel: was the cancel successful (only once a cancel was made)
    if comp in ("wait", "test", "waitany", "testany"):
        o(f"  if (mpa_cancels_to_check(&ev)) mpa_cancel_check(&ev, ts, {st});")
    elif comp in ("waitall", "testall", "waitsome", "testsome"):
        o("  if (mpa_cancels_to_check(&ev)) mpa_cancel_check(&ev, ts, array_of_statuses);")
    # a call MPI refused (the program runs under MPI_ERRORS_RETURN) did nothing: the log says so with its
    # error code (VALUE; mpiadvise-log(5)), and the reader takes it for no communication
    o("  if (rc != MPI_SUCCESS) { ev.mask |= MPA_F_VALUE; ev.value = rc; }")
    return out


def status_substitutions_c(call, params):
    """MPI_STATUS(ES)_IGNORE from the user is replaced by our own storage so sources can be recorded."""
    out = []
    for p in params:
        if p.base == "MPI_Status *" and not p.array:
            out.append(f"  MPI_Status mpa_st; if ({p.name} == MPI_STATUS_IGNORE) {p.name} = mpa_statuses_empty(&mpa_st, 1);")
        elif p.base == "MPI_Status" and p.array:
            n = call.roles["reqs_in"][0]
            out.append(f"  if ({p.name} == MPI_STATUSES_IGNORE) {p.name} = mpa_statuses_empty(mpa_scratch_statuses(ts, {n}), {n});")
    return out


def is_poll(call):
    return call.roles.get("completion") in ("test", "iprobe", "improbe", "testany", "testall", "testsome")


def clock_entry_code(call, return_address):
    """C statements from the call site to t0. A poll that would continue its thread's run of polls that
    found nothing (wrap.h: mpa_poll_quiet) reads no clock and takes the run's call site; t0 is then the
    run's last timed entry, for the in-flight slot, until poll_again_code estimates it."""
    if not is_poll(call):
        return entry_code(call, return_address) + ["  uint64_t t0 = mpa_now();"]
    out = [f"  const int mpa_quiet = mpa_poll_quiet(ts, {call_id(call.name)}, {return_address});",
           f"  uint32_t mpa_cs = mpa_quiet ? ts->fold.callsite : mpa_callsite_id(ts, {return_address});"]
    out += entry_code(call, return_address)[1:]
    out.append("  uint64_t t0 = mpa_quiet ? ts->fold.last_exit : mpa_now();")
    return out


def poll_again_code(call, fortran, return_address):
    """After the PMPI call of a poll: a quiet one that found nothing is counted in its run and returns at
    once (wrap.h: mpa_poll_again), with no clock read at all; the condition is the one record_code folds
    on. A clocked one leaves its return address for the run it may start (mpa_finish)."""
    if not is_poll(call):
        return []
    ok = "(!ierr || *ierr == MPI_SUCCESS)" if fortran else "rc == MPI_SUCCESS"
    if call.roles["completion"] == "testsome":
        miss = "*outcount_f == 0" if fortran else "*outcount == 0"
    else:
        miss = "!*flag_f" if fortran else "!*flag"
    back = "return;" if fortran else "return rc;"
    return [f"  ts->poll_ra = (uintptr_t){return_address};",
            f"  if (mpa_quiet && {ok} && {miss} && mpa_poll_again(ts)) {back}"]


def t1_code(call, return_address):
    """t1, and for a quiet poll that goes on (it found something, or its run was written meanwhile) its
    entry, not clocked, estimated from t1 (wrap.h: mpa_poll_entry), and with MPIADVISE_STACK_DEPTH above 1
    its own call site (a quiet poll took its run's, which shares only the return address)."""
    out = ["  uint64_t t1 = mpa_now();"]
    if is_poll(call):
        out.append("  if (mpa_quiet) {")
        out.append("    t0 = mpa_poll_entry(ts, t1);")
        out.append(f"    if (mpa_cfg.stack_depth > 1) mpa_cs = mpa_callsite_id(ts, {return_address});")
        out.append("  }")
    return out


def flag_alias(call, params):
    names = [p.name for p in params]
    return "flag" if "flag" in names else None


def untraced_c(call, args):
    """The call when it is not traced; communicator calls still keep the table of communicators."""
    r = call.roles
    if "newcomm" not in r and "freecomm" not in r:
        return [f"  if (!ts) return PMPI_{call.name}({args});"]
    L = ["  if (!ts) {"]
    if "freecomm" in r:
        L.append(f"    uint32_t mpa_freed = mpa_comms_tracked ? mpa_comm_id(*{r['freecomm']}) : 0;")
    L.append(f"    int rc = PMPI_{call.name}({args});")
    if "newcomm" in r:
        L.append(f"    if (rc == MPI_SUCCESS && mpa_comms_tracked) "
                 f"mpa_comm_created(*{r['newcomm']}, {r['comm']}, {call_id(call.name)});")
    if "freecomm" in r:
        L.append("    if (rc == MPI_SUCCESS && mpa_freed) mpa_comm_freed(mpa_freed);")
    L.append("    return rc;")
    L.append("  }")
    return L


def c_wrapper(call):
    params = parse(call.params)
    args = ", ".join(p.name for p in params)
    proto = ", ".join(p.text for p in params)
    flag = flag_alias(call, params)
    L = []
    L.append(f"MPA_ENTRY({call.name})")
    L.append(f"int MPA_C_NAME({call.name})({proto})")
    L.append("{")
    L.append("  mpa_thread *ts = mpa_begin();")
    L += untraced_c(call, args)
    L.append("  const int mpa_fortran = 0; (void)mpa_fortran;")
    L.append(f"  int *mpa_flag_param = {flag if flag else 'NULL'}; (void)mpa_flag_param;")
    L.append("  int mpa_fold_me = 0; (void)mpa_fold_me;")
    L += status_substitutions_c(call, params)
    L += pre_code(call)
    L += clock_entry_code(call, "__builtin_return_address(0)")
    L += inflight_code(call)
    L.append(f"  int rc = PMPI_{call.name}({args});")
    L.append("  mpa_inflight_exit(ts);")
    L += poll_again_code(call, False, "__builtin_return_address(0)")
    L += t1_code(call, "__builtin_return_address(0)")
    L.append(f"  mpa_event ev; mpa_event_start(&ev, {call_id(call.name)}, t0, t1);")
    L += record_code(call, params)
    L += post_code(call)
    L.append("  mpa_finish(ts, &ev, mpa_fold_me, mpa_cs);")
    L.append("  return rc;")
    L.append("}")
    return "\n".join(L)


# ---------------------------------------------------------------- Fortran
def fortran_param(p):
    """The Fortran binding's parameter: buffers stay void *, everything else is MPI_Fint *."""
    if p.base == "void *":
        return f"void *{p.name}"
    return f"MPI_Fint *{p.name}_f"


def fortran_inputs(call, params):
    """C-typed locals converted from Fortran before the call."""
    out = []
    for p in params:
        b, n = p.base, p.name
        if b == "void *":
            continue
        if p.array:
            if b == "int" and n == "array_of_indices":
                continue  # an output: declared writable below
            if b == "int":
                out.append(f"  const int *{n} = (const int *){n}_f;")
            elif b == "MPI_Datatype":
                out.append(f"  const MPI_Fint *{n} = {n}_f; /* converted element-wise */")
            elif b == "MPI_Request":
                out.append(f"  MPI_Fint *{n}_unused = {n}_f; (void){n}_unused;")
            elif b == "MPI_Status":
                pass
            continue
        if b == "int":
            out.append(f"  int {n} = (int)*{n}_f;")
        elif b == "MPI_Datatype":
            out.append(f"  MPI_Datatype {n} = PMPI_Type_f2c(*{n}_f);")
        elif b == "MPI_Comm":
            out.append(f"  MPI_Comm {n} = PMPI_Comm_f2c(*{n}_f);")
        elif b in ("MPI_Op", "MPI_Info", "MPI_Group"):
            out.append(f"  (void){n}_f;")
        elif b == "MPI_Request *" or b == "MPI_Message *":
            ct = b[:-2]
            conv = "PMPI_Request_f2c" if ct == "MPI_Request" else "PMPI_Message_f2c"
            out.append(f"  {ct} {n}_c = {conv}(*{n}_f); {ct} *{n} = &{n}_c;")
        elif b == "MPI_Comm *":
            out.append(f"  MPI_Comm {n}_c = PMPI_Comm_f2c(*{n}_f); MPI_Comm *{n} = &{n}_c;")
        elif b == "int *":
            out.append(f"  int {n}_c = 0; int *{n} = &{n}_c;")
        elif b == "MPI_Status *":
            out.append(f"  MPI_Status {n}_c; MPI_Status *{n} = mpa_statuses_empty(&{n}_c, 1);")
            out.append(f"  MPI_Fint mpa_fst[MPA_F_STATUS_SIZE];")
            out.append(f"  if (mpa_fortran_status_ignored({n}_f)) {n}_f = mpa_fst;")
        else:
            raise SystemExit(f"gen_wrappers: no Fortran conversion for {b} {n} in {call.name}")
    # request arrays and status arrays
    r = call.roles
    if "reqs_in" in r:
        ncount, arr = r["reqs_in"]
        # mpa_h is filled from the Fortran handles in pre (fortran variant)
    for p in params:
        if p.base == "MPI_Status" and p.array:
            ncount = r["reqs_in"][0]
            out.append(f"  MPI_Status *{p.name} = mpa_statuses_empty(mpa_scratch_statuses(ts, {ncount}), {ncount});")
            out.append(f"  if (mpa_fortran_statuses_ignored({p.name}_f)) "
                       f"{p.name}_f = mpa_scratch_fstatuses(ts, {ncount});")
        if p.base == "int" and p.array and p.name == "array_of_indices":
            pass
    return out


def fortran_pre(call):
    r = call.roles
    out = []
    if "req_in" in r:
        out.append(f"  uint64_t *mpa_h = mpa_scratch_handles(ts, 1); mpa_h[0] = MPA_HANDLE(*{r['req_in']});")
    if "msg_in" in r:
        out.append(f"  uint64_t *mpa_h = mpa_scratch_handles(ts, 1); mpa_h[0] = MPA_HANDLE(*{r['msg_in']});")
    if "reqs_in" in r:
        n, arr = r["reqs_in"]
        out.append(f"  uint64_t *mpa_h = mpa_scratch_handles(ts, {n} > 0 ? {n} : 0);")
        out.append(f"  for (int i = 0; i < {n}; i++) mpa_h[i] = MPA_HANDLE_OF(MPI_Request, PMPI_Request_f2c({arr}_f[i]));")
    if "freecomm" in r:
        out.append(f"  uint32_t mpa_freed = mpa_comm_id(*{r['freecomm']});")
    return out


def fortran_outputs(call, params):
    """After the call: Fortran outputs into the C-typed locals the record code reads."""
    out = []
    for p in params:
        b, n = p.base, p.name
        if p.array:
            if b == "MPI_Status":
                count = call.roles["reqs_in"][0]
                if call.roles.get("completion") in ("waitsome", "testsome"):
                    count = "mpa_done"
                out.append(f"  for (int i = 0; i < {count}; i++) "
                           f"PMPI_Status_f2c({n}_f + (size_t)i * MPA_F_STATUS_SIZE, &{n}[i]);")
            elif b == "int" and n == "array_of_indices":
                out.append(f"  int *{n}_c = mpa_scratch_indices(ts, mpa_done);")
                out.append(f"  const int mpa_base = mpa_fortran == 3 ? mpa_f08_index_base() : 1;")
                out.append(f"  for (int i = 0; i < mpa_done; i++) {n}_c[i] = {n}[i] - mpa_base;")
                out.append(f"  {n} = {n}_c;")
            continue
        if b == "MPI_Request *":
            out.append(f"  {n}_c = PMPI_Request_f2c(*{n}_f);")
        elif b == "MPI_Message *":
            out.append(f"  {n}_c = PMPI_Message_f2c(*{n}_f);")
        elif b == "MPI_Comm *" and n != call.roles.get("freecomm"):
            out.append(f"  {n}_c = PMPI_Comm_f2c(*{n}_f);")
        elif b == "int *":
            if n == "index":
                out.append(f"  {n}_c = (*{n}_f == MPI_UNDEFINED) ? MPI_UNDEFINED : "
                           f"(int)*{n}_f - (mpa_fortran == 3 ? mpa_f08_index_base() : 1);")
            else:
                out.append(f"  {n}_c = (int)*{n}_f;")
                if n == "outcount":  # trusted only from a call that succeeded, and never past incount
                    out.append(f"  int mpa_done = rc == MPI_SUCCESS && {n}_c > 0 && {n}_c <= incount ? {n}_c : 0;")
        elif b == "MPI_Status *":
            out.append(f"  PMPI_Status_f2c({n}_f, {n});")
    return out


def untraced_fortran(call, fargs):
    """As untraced_c: communicator calls keep the table of communicators while tracing is paused."""
    r = call.roles
    call_real = f"real({', '.join(fargs)});"
    if "newcomm" not in r and "freecomm" not in r:
        return [f"  if (!ts) {{ {call_real} return; }}"]
    L = ["  if (!ts) {"]
    if "freecomm" in r:
        L.append(f"    uint32_t mpa_freed = mpa_comms_tracked ? mpa_comm_id(PMPI_Comm_f2c(*{r['freecomm']}_f)) : 0;")
    L.append(f"    {call_real}")
    L.append("    int rc = ierr ? (int)*ierr : MPI_SUCCESS;")
    if "newcomm" in r:
        L.append(f"    if (rc == MPI_SUCCESS && mpa_comms_tracked) mpa_comm_created(PMPI_Comm_f2c(*{r['newcomm']}_f), "
                 f"PMPI_Comm_f2c(*{r['comm']}_f), {call_id(call.name)});")
    if "freecomm" in r:
        L.append("    if (rc == MPI_SUCCESS && mpa_freed) mpa_comm_freed(mpa_freed);")
    L.append("    return;")
    L.append("  }")
    return L


def fortran_body(call):
    params = parse(call.params)
    fparams = [fortran_param(p) for p in params] + ["MPI_Fint *ierr"]
    fargs = [(p.name if p.base == "void *" else p.name + "_f") for p in params] + ["ierr"]
    flag = flag_alias(call, params)
    # array_of_indices is an int[] out param: handled as a plain pointer in Fortran
    L = []
    L.append(f"typedef void (*mpa_fn_{call.name})({', '.join(fparams)});")
    L.append(f"static void mpa_f_{call.name}(mpa_fn_{call.name} real, void *ra, int mpa_fortran, {', '.join(fparams)})")
    L.append("{")
    L.append("  mpa_thread *ts = mpa_begin();")
    L += untraced_fortran(call, fargs)
    L.append("  int mpa_fold_me = 0; (void)mpa_fold_me;")
    L += fortran_inputs(call, params)
    for p in params:
        if p.base == "int" and p.array and p.name == "array_of_indices":
            L.append(f"  int *{p.name} = (int *){p.name}_f;")
    L.append(f"  int *mpa_flag_param = {flag if flag else 'NULL'}; (void)mpa_flag_param;")
    L += fortran_pre(call)
    L += clock_entry_code(call, "ra")
    L += inflight_code(call)
    L.append(f"  real({', '.join(fargs)});")
    L.append("  mpa_inflight_exit(ts);")
    L += poll_again_code(call, True, "ra")
    L += t1_code(call, "ra")
    L.append("  int rc = ierr ? (int)*ierr : MPI_SUCCESS;")
    L += fortran_outputs(call, params)
    L.append(f"  mpa_event ev; mpa_event_start(&ev, {call_id(call.name)}, t0, t1);")
    L += record_code(call, params)
    L += post_code(call)
    L.append("  mpa_finish(ts, &ev, mpa_fold_me, mpa_cs);")
    L.append("}")
    has_buffer = any(p.base == "void *" for p in params)
    for m in FORTRAN_MANGLINGS + ([F08TS_MANGLING] if has_buffer else []):
        sym = m.format(l="mpi_" + call.name.lower(), u="MPI_" + call.name.upper())
        # mpa_fortran: 1 mpif.h / use mpi, 2 mpi_f08 with buffers as descriptors, 3 mpi_f08
        kind = 2 if m == F08TS_MANGLING else 3 if m == "{l}_f08_" else 1
        real = "p" + sym if sym[0] == "m" else "P" + sym
        L.append(f"MPA_EXPORT void {sym}({', '.join(fparams)});")
        L.append(f"MPA_EXPORT void {sym}({', '.join(fparams)})")
        L.append("{")
        L.append(f"  static mpa_fn_{call.name} real;")
        L.append(f"  if (!real) real = (mpa_fn_{call.name})mpa_fortran_real(\"{real}\");")
        L.append(f"  mpa_f_{call.name}(real, __builtin_return_address(0), {kind}, {', '.join(fargs)});")
        L.append("}")
    return "\n".join(L)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    names = CORE + [c.name for c in CALLS]
    with open(os.path.join(outdir, "call_ids.h"), "w") as f:
        f.write("/* generated by libtrace/gen_wrappers.py from libtrace/calls.py: do not edit */\n")
        f.write("#ifndef MPIADVISE_CALL_IDS_H\n#define MPIADVISE_CALL_IDS_H\n")
        f.write("enum mpa_call_id {\n")
        for i, n in enumerate(names):
            f.write(f"  {call_id(n)} = {i},\n")
        f.write(f"  MPA_CALL_COUNT = {len(names)}\n}};\n")
        f.write("static const char *const mpa_call_names[] = {\n")
        for n in names:
            f.write(f'  "MPI_{n}",\n')
        f.write("};\n#endif\n")
    with open(os.path.join(outdir, "wrappers.c"), "w") as f:
        f.write("/* generated by libtrace/gen_wrappers.py from libtrace/calls.py: do not edit */\n")
        f.write('#include "wrap.h"\n\n')
        for c in CALLS:
            f.write(c_wrapper(c) + "\n\n")
            f.write(fortran_body(c) + "\n\n")


if __name__ == "__main__":
    main()
