// ringprof/tools/extract.h — post-incident extraction: the events of a time range
// copied out of a rolling directory into files that decode alone.
//
// Every segment is decoded and the events inside the range (both ends
// inclusive) are re-encoded through the SegmentEncoder into one new file per
// process, which starts with a fresh file-start segment carrying the
// process, its clock and every string, location, thread, stack and module
// the copied events use. Location and stack ids are renumbered densely; a
// crash segment's events come out as ordinary ones (its ringprof.crash mark
// keeps the signal and thread).
//
// Zones that cross an edge of the range are clipped to it: a zone open when
// the range begins gets a ZoneBegin at the range's first nanosecond, one
// still open when it ends gets a ZoneEnd at its last, so the extract has only
// events of the range yet every zone in it is whole. Zones still open where
// the data ends (the writer is still inside them) stay open, as in the input.
//
// The input may be a directory a process is still writing: files listed but
// deleted before they are read (the writer's byte budget) are skipped and
// counted, a `.part` file sealed meanwhile is followed to its new name, one
// still growing is read up to its size at the moment it is opened, and its
// torn last frame is not an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct ExtractOptions {
  RangeSpec range;
  std::string output_dir;  // created if missing; existing files are never replaced
  int zstd_level = 3;
  ProgressReporter* progress = nullptr;  // told how far the read has got (progress.h); not owned
};

struct ExtractResult {
  bool ok = false;
  std::string error;                // why nothing (or not everything) was written
  TimeRange range;                  // as resolved, CLOCK_MONOTONIC ns
  std::vector<std::string> files;   // written
  uint64_t events = 0;              // written, clipping events included
  uint64_t segments = 0;
  uint64_t clipped_zones = 0;       // zone edges added at the range's ends
  uint64_t vanished_files = 0;      // deleted under us
  uint64_t torn_tails = 0;          // growing `.part` files cut mid-frame
  std::vector<Problem> problems;    // real damage (not the two above)
};

ExtractResult extract_range(const std::vector<std::string>& inputs, const ExtractOptions& options);

}  // namespace ringprof
