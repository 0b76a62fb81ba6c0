/* mpiadvise per-rank log format, shared by the tracer (C) and the reader (C++).
 * The format is documented for users in man/mpiadvise-log.5; this header is its definition.
 *
 * File   := FileHeader HeaderJSON Chunk*
 * Chunk  := ChunkHeader payload[stored_len]      payload is one zstd frame with content checksum
 * Every chunk decodes on its own, so a file cut off at any byte reads up to its last whole chunk.
 */
#ifndef MPIADVISE_FORMAT_H
#define MPIADVISE_FORMAT_H

#include <stdint.h>

#define MPA_FILE_MAGIC "MPADVLOG" /* 8 bytes, no terminator in the file */
#define MPA_FORMAT_VERSION 6u /* 6: EVENTS chunks of codec MPA_CODEC_ZSTD_TIMES; 5: an event that repeats its call site's last arguments (codec.h); 4: UNFINISHED, the calls a fatal signal found in progress; 3: VCOUNTS, a
                                 v-collective's bytes for each member; 2: handles slotted by a hash of every
                                 bit (1: by their bits above the fourth) */
#define MPA_CHUNK_MAGIC 0x4b43504du /* "MPCK" little-endian */

/* All integers in headers are little-endian. */
typedef struct mpa_file_header {
  char magic[8];
  uint32_t version;
  uint32_t json_bytes; /* length of the header JSON that follows */
} mpa_file_header;

enum mpa_chunk_type {
  MPA_CHUNK_EVENTS = 1,  /* events of one thread */
  MPA_CHUNK_DEFS = 2,    /* definition records (call sites, communicators, modules) */
  MPA_CHUNK_META = 3,    /* JSON object with facts learned during the run (e.g. finalize) */
  MPA_CHUNK_TRAILER = 4, /* JSON object: complete tables and counters, written by MPI_Finalize */
};

/* A chunk's payload is one zstd frame. MPA_CODEC_ZSTD_TIMES (format 6 on, EVENTS chunks only): its events'
 * gaps and durations are not among the events but after them, a stream of their own, and its last four
 * bytes (little-endian) give that stream's length:
 *   payload := varint base_tick, Event* (each without its gap and duration), Times, u32 times_bytes
 *   Times   := (zigzag gap, varint duration) for each event, in the events' order
 * zstd finds the repeated bytes of a loop's calls where the times, which vary, no longer cut them apart:
 * the bench's loops took 27-28% fewer bytes after zstd, and zstd compressed them in half the time. */
enum mpa_codec { MPA_CODEC_ZSTD = 1, MPA_CODEC_ZSTD_TIMES = 2 };

typedef struct mpa_chunk_header {
  uint32_t magic;
  uint8_t type;
  uint8_t codec;
  uint16_t thread;     /* thread index within the rank (EVENTS chunks) */
  uint32_t raw_bytes;  /* decompressed payload size */
  uint32_t stored_bytes;
  uint64_t sync_tick;  /* the event clock and CLOCK_MONOTONIC read together when the chunk was sealed: */
  uint64_t sync_ns;    /* the reader converts ticks to ns from these pairs */
} mpa_chunk_header;

/* EVENTS payload (codec MPA_CODEC_ZSTD; of MPA_CODEC_ZSTD_TIMES, each event's gap and duration are after
 * every event instead, as above) := varint base_tick, Event*
 * Event := u8 call, varint mask, zigzag gap, varint duration, varint callsite, fields in bit order
 *        | u8 (call | 0x80), zigzag gap, varint duration, varint callsite, [REQS]   (format 5: a repeat,
 *          its mask and every other field those of its slot's template: the last event in the chunk,
 *          not a repeat, whose call site has the same remainder modulo 64 and that could be one; codec.h)
 *   gap      = enter tick - previous event's exit tick (base_tick for the first event of a chunk)
 *   duration = exit tick - enter tick
 * Ranks (peer, status source) are relative to the event's communicator; the reader translates them to
 * world ranks with the communicator's definition. Negative values are MPI's special ranks (below). */
enum mpa_field {
  MPA_F_PEER = 1u << 0,     /* zigzag: dest / source / root */
  MPA_F_TAG = 1u << 1,      /* zigzag */
  MPA_F_COMM = 1u << 2,     /* varint: communicator id (DEFS) */
  MPA_F_BYTES = 1u << 3,    /* varint: bytes sent (count x type size) */
  MPA_F_PEER2 = 1u << 4,    /* second peer: source of Sendrecv */
  MPA_F_TAG2 = 1u << 5,     /* second tag: receive tag of Sendrecv */
  MPA_F_BYTES2 = 1u << 6,   /* bytes received (posted receive size) */
  MPA_F_REQS = 1u << 7,     /* varint n, n x handle code (below) */
  MPA_F_STATUS = 1u << 8,   /* varint n, n x (varint index, zigzag source, zigzag tag, varint bytes) */
  MPA_F_COUNT = 1u << 9,    /* varint: calls folded into this event (a run of unsuccessful tests) */
  MPA_F_NEWCOMM = 1u << 10, /* varint: communicator id created by this call */
  MPA_F_PAPI = 1u << 11,    /* varint n, n x varint counter deltas over the preceding computation */
  MPA_F_INCALL = 1u << 12,  /* varint: ticks spent inside the folded calls (with COUNT) */
  MPA_F_VALUE = 1u << 13,   /* zigzag: call-specific value (Pcontrol level, thread level, Abort's error code);
                               on any other call the error code of a call MPI refused */
  MPA_F_CANCELLED = 1u << 14, /* varint n, n x varint: statuses (positions in STATUS) of cancelled requests */
  MPA_F_VCOUNTS = 1u << 15,   /* varint n, n x varint bytes: a v-collective's bytes for each member (below) */
  MPA_F_UNFINISHED = 1u << 16, /* no payload: the call had not returned when a signal ended the process (below) */
  MPA_F_RESENT = 1u << 17,     /* no payload (format 5): a send whose buffer address and bytes are those of the
                                  thread's previous send (below) */
};
#define MPA_F_DEFINED ((1u << 18) - 1) /* every field bit above; a reader refuses others */

/* RESENT (format 5): set by the tracer on MPI_Send, Ssend, Bsend, Rsend, their I- forms and the send side
 * of MPI_Sendrecv when the send buffer's address (not NULL), the bytes and the datatype equal the same
 * thread's previous such send's, and no intercepted call has been given that address as a buffer it may
 * write since (a receive, a collective, Sendrecv_replace). The same data went again unless the program
 * itself rewrote it in between: a halo sent to both neighbours from where the stencil left it is
 * RESENT, and so is a pack buffer refilled before each send (the computation between the two sends
 * tells them apart: mpiadvise report). Over shared memory, where the receiver copies out of the sender's
 * memory, data just read by a receiver costs less to send again than data just written. Not marked:
 * persistent sends (Start), Sendrecv_replace (its buffer is received into); not seen as writes: the
 * Starts of persistent receives.
 *
 * UNFINISHED (format 4): written by the tracer's handler of a fatal or terminating signal (SIGTERM,
 * SIGINT, SIGQUIT, SIGSEGV, ...) for each traced thread of the rank that was inside an MPI call at that
 * moment, as the last event of that thread: enter tick when the call began, exit tick when the signal
 * came, and what was known when the call began: PEER, TAG, PEER2, TAG2, COMM, and REQS (the request or
 * message handles the call was given: MPI_Wait and its family, MPI_Start, MPI_Mrecv); never BYTES,
 * BYTES2, STATUS, NEWCOMM or the handles the call makes. Should the process survive the signal (its own
 * handler returns) and the call return later, the call is written again when it returns, complete,
 * with the same enter tick: a reader keeps that one. */

/* VCOUNTS (format 3) holds, by rank of the group the counts address (the remote group of an
 * intercommunicator), what BYTES and BYTES2 hold only as sums:
 *   Alltoallv, Alltoallw   the bytes this rank sends to each (its receive counts when MPI_IN_PLACE)
 *   Gatherv                at the root: the bytes it receives from each
 *   Scatterv               at the root: the bytes it sends to each
 *   Allgatherv             each rank's block (recvcounts)
 *   Reduce_scatter         each rank's part of the result (recvcounts)
 * and the same for their non-blocking forms. Not written for groups above MPA_MAX_VCOUNTS ranks. */
#define MPA_MAX_VCOUNTS 65536

/* A request or message handle is coded against a per-chunk table of the 16 handles seen last, one slot
 * per handle, slot = mpa_handle_slot(handle, the file's format version):
 *   varint (slot << 1 | 1)                   the handle in that slot
 *   varint (zigzag(handle - previous) << 1)  any other handle, when handle - previous is within
 *                                            +-2^62; it then takes its slot
 *   varint 33 (slot 16), varint handle       any other handle (a delta beyond +-2^62)
 * "previous" is the last handle coded in the chunk (0 at its start); every slot starts at 0. MPI
 * libraries reuse request objects, so loops code most handles in one byte. */
static inline unsigned mpa_handle_slot(uint64_t h, uint32_t version)
{
  /* Format 1 took the bits above the fourth, as Open MPI's request pointers differ there. MPICH's
   * handles are ints whose kind is in the top bits and whose number is in the low ones: an Irecv's
   * request 0xac000000 and an Isend's 0x6c000001 both took slot 0, evicted each other, and each was
   * coded as a 5-byte delta (MPICH traced at 22.3 bytes per call before compression against Open MPI's
   * 14.0, make bench). Format 2 hashes every bit (Fibonacci hashing: the top 4 bits of h times 2^64/phi). */
  if (version == 1) return (unsigned)((h >> 4) ^ (h >> 9) ^ (h >> 17)) & 15u;
  return (unsigned)((h * 0x9E3779B97F4A7C15ull) >> 60);
}

/* Special ranks as recorded (MPI's own constants differ between libraries). */
enum mpa_special_rank {
  MPA_RANK_ANY = -1,
  MPA_RANK_NULL = -2, /* MPI_PROC_NULL */
  MPA_RANK_ROOT = -3, /* MPI_ROOT (intercommunicator collectives) */
  MPA_RANK_UNDEF = -4,
};
enum mpa_special_tag { MPA_TAG_ANY = -1 };

/* Communicator ids 1 and 2 are MPI_COMM_WORLD and MPI_COMM_SELF; 0 is MPI_COMM_NULL. */

/* DEFS payload := Def*
 * Def := u8 kind, fields:
 *   CALLSITE: varint id, varint depth, depth x varint address
 *   COMM:     varint id, varint gid, varint flags (1 = intercommunicator), varint size,
 *             size x zigzag world rank, [if inter: varint remote size, remote size x zigzag world rank],
 *             varint parent id (0 = none), varint creating call
 *             gid is the same on every rank for the same communicator: a hash of its members (world
 *             ranks) and of how many communicators with those members this rank made before it
 *   MODULE:   varint start, varint end, varint load base, varint path length, path bytes
 *             (an address a in [start, end) is a - base in the file at path)
 *   COMMFREE: varint id
 */
enum mpa_def_kind { MPA_DEF_CALLSITE = 1, MPA_DEF_COMM = 2, MPA_DEF_MODULE = 3, MPA_DEF_COMMFREE = 4 };

#endif
