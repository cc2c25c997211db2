// ringprof/tools/clock_alignment.h — puts the hosts of a job on one time axis
// from the job's own meeting points.
//
// The reader first aligns hosts by wall clock (each file states CLOCK_REALTIME
// minus CLOCK_MONOTONIC at its start), which is only as good as NTP. The ends
// of a collective operation coincide on every rank that takes part, so the
// difference between two ranks' ends of the same call is their clocks'
// remaining offset. For each host not yet aligned, each of its ranks is
// matched against ranks already aligned (two of each aligned host: rank 0's
// host first, then hosts as they get aligned, so a rank that never meets
// rank 0 can still be reached):
//
//   1. vote: for up to kProbes calls spread over the rank, every call of the
//      same key on the other rank within kSearchNs proposes an offset; the
//      offset proposed by the most probes (within kVoteNs of each other) wins,
//      the one nearest the wall clock's on a tie. This finds the right call
//      among many alike, wherever each rank's files start.
//   2. refine: each call is paired with the other rank's nearest call of its
//      key; the offset is the median of the pairs' differences and the
//      residual their median absolute deviation from it, pairs further than
//      kOutlierMads deviations (and kOutlierFloorNs) dropped once.
//
// A host's correction is the median over its ranks; processes of one host
// share CLOCK_MONOTONIC and move together. A host with no call in common with
// an aligned one keeps its wall-clock alignment, and the note says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/rank_scan.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct HostClock {
  std::string host;
  std::vector<size_t> processes;   // indices into TraceReader::processes()
  int64_t wall_offset_ns = 0;      // the wall clock's alignment, already in the reader
  int64_t correction_ns = 0;       // added from the collectives (0 when not aligned by them)
  uint64_t residual_ns = 0;        // median absolute deviation of the matched calls' differences
  uint64_t matched = 0;            // calls paired (over the host's ranks)
  bool reference = false;          // the host the others are aligned to (rank 0's)
  bool aligned = false;            // by collectives (the reference: trivially)
};

struct ClockAlignment {
  // "one host" (CLOCK_MONOTONIC is shared: nothing to do), "collectives",
  // "wall clock" (no usable collective), "collectives and wall clock" (some
  // hosts only).
  std::string method = "one host";
  std::vector<HostClock> hosts;    // by first process
  std::vector<int64_t> delta;      // per process: the correction to add
  std::string note;                // the line for stderr ("" when nothing to say)

  static constexpr size_t kProbes = 64;
  static constexpr uint64_t kSearchNs = 1'000'000'000;  // how far the wall clock may be off
  static constexpr uint64_t kVoteNs = 100'000;           // probes agreeing within this vote together
  static constexpr double kOutlierMads = 5;
  static constexpr int64_t kOutlierFloorNs = 10'000;     // pairs this close are never outliers
  static constexpr size_t kMinMatched = 3;
};

// The alignment the scans' collectives give (scans: one per process, in
// process order; their times on the reader's current axis). Processes marked
// in `left_out` (another job's) take no part and are not moved.
ClockAlignment estimate_clock_alignment(const TraceReader& reader, const std::vector<RankScan>& scans,
                                        const std::vector<bool>& left_out);

// Moves a scan's times (steps, calls, range) by `delta`.
void shift_scan(RankScan& scan, int64_t delta);

// Scans every process for collectives (up to `threads` at once, 0: one per
// hardware thread) and applies what estimate_clock_alignment() finds to the
// reader. Nothing is read when all processes ran on one host.
ClockAlignment align_clocks_by_collectives(TraceReader& reader, unsigned threads);

}  // namespace ringprof
