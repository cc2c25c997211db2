// ringprof/sinks.h — the sinks ringprof ships: rolling files (the default), a
// null sink (benchmarks: pays for encoding, stores nothing) and an in-memory
// sink (tests: keeps every encoded frame).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ringprof/config.h"
#include "ringprof/sink.h"

namespace ringprof {

// Writes frames into `config.dir`, files of at most `config.file_bytes`, all
// files together at most `config.max_bytes` (oldest sealed file deleted
// first). Files are `ringprof-<pid>-<start>-<seq>.rpf`, named `.rpf.part`
// until sealed, created 0644 with O_NOFOLLOW|O_EXCL. Disk trouble: one warning
// on stderr, batches refused (the drainer counts them), retry later.
std::shared_ptr<Sink> make_rolling_file_sink(const Config& config);

// Encodes every batch (so its cost is measured) and throws the bytes away.
std::shared_ptr<Sink> make_null_sink(int zstd_level = 3);

// Keeps every frame in memory, in one stream that reads like a single file.
class MemorySink : public Sink {
 public:
  explicit MemorySink(int zstd_level = 3);
  ~MemorySink() override;
  void begin_session(const SessionInfo& session) override;
  bool write(const Batch& batch) override;
  void end_session() override;
  SinkStats stats() const override;

  // Bytes of all frames written so far (a valid ringprof file). Thread-safe.
  std::vector<uint8_t> bytes() const;
  // Makes the next `n` writes fail, as a full disk would (fault tests).
  void fail_next_writes(uint32_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringprof
