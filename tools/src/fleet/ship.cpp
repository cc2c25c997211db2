// `ringprof ship`: sealed files into ClickHouse (ringprof/tools/ship.h).
#include "ringprof/tools/ship.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "fleet/clickhouse_http.h"
#include "fleet/file_names.h"
#include "fleet/row_binary.h"
#include "ringprof/event.h"
#include "ringprof/gpu.h"
#include "ringprof/tools/progress.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/zone_tracker.h"

namespace ringprof {
namespace {

using internal::ClickHouseError;
using internal::ClickHouseHttp;
using internal::RowBinary;
using internal::sql_quote;

// The tables a file's rows go to, each with its columns in RowBinary order.
enum Table { kSpans, kSamples, kStacks, kGpu, kCounters, kMarks, kSteps, kProcesses, kThreads, kTableCount };
constexpr const char* kTableNames[kTableCount] = {"spans", "samples", "stacks",    "gpu",    "counters",
                                                  "marks", "steps",   "processes", "threads"};
constexpr const char* kTableColumns[kTableCount] = {
    "date, host, job, rank, pid, process_start_ns, thread_index, tid, thread, name, begin_ns, end_ns, dur_ns, "
    "self_ns, depth, parent, async, async_id, unterminated, arg_keys, arg_values, file_key",
    "date, host, job, rank, pid, process_start_ns, thread_index, tid, thread, time_ns, stack_key, leaf, file_key",
    "stack_key, frames",
    "date, host, job, rank, pid, process_start_ns, kind, name, device, stream, correlation, start_ns, dur_ns, bytes, "
    "file_key",
    "date, host, job, rank, pid, process_start_ns, thread_index, name, time_ns, value, file_key",
    "date, host, job, rank, pid, process_start_ns, thread_index, kind, name, value, time_ns, file_key",
    "date, host, job, rank, pid, process_start_ns, step, begin_ns, dur_ns, file_key",
    "host, job, rank, world_size, pid, process_start_ns, command_line, ringprof_version, shipped",
    "host, pid, process_start_ns, thread_index, tid, name, shipped"};
// The tables whose rows carry file_key (deleted by key before a reship);
// the others are keyed by what they describe, so a second copy merges away.
constexpr Table kKeyedTables[] = {kSpans, kSamples, kGpu, kCounters, kMarks, kSteps};

// FNV-1a, 64 bits: a stack's key from its frames' text, the same in every
// process and on every host.
uint64_t fnv1a(const std::vector<std::string>& frames) {
  uint64_t h = 1469598103934665603ull;
  for (const std::string& f : frames) {
    for (const unsigned char c : f) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // between frames: no byte of UTF-8 text
  }
  return h;
}

// A file's key: its host and its own name (pid, start stamp, number), the
// same however the reader grouped it; a `.part` shipped because its writer
// died keys as the sealed name it never got.
std::string file_key(const ProcessState& p, const FileSummary& f) {
  std::string name = std::filesystem::path(f.path).filename().string();
  const std::string part = ".part";
  if (name.size() > part.size() && name.compare(name.size() - part.size(), part.size(), part) == 0)
    name.resize(name.size() - part.size());
  return p.hostname + "/" + name;
}

// Whether a file of `series` numbered above `number` is on disk now: the
// writer went on to a next file.
bool newer_file_exists(const std::string& series, uint64_t number) {
  const std::filesystem::path sp(series);
  std::error_code ec;
  for (std::filesystem::directory_iterator it(sp.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const auto n = internal::numbered_file(it->path().string());
    if (n && n->series == series && n->number > number) return true;
  }
  return false;
}

enum class Writer { Alive, Dead, Unknown };

// A process of this host (by name) still running, or gone; Unknown for
// another host's (or one whose files name its host otherwise).
Writer writer_state(const ProcessState& p) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || p.hostname != host || p.pid == 0) return Writer::Unknown;
  if (kill(static_cast<pid_t>(p.pid), 0) == 0 || errno == EPERM) return Writer::Alive;
  return errno == ESRCH ? Writer::Dead : Writer::Unknown;
}

// flock() on DIR/.ringprof-ship.lock for each directory shipped from, so
// that two ships (a cron job overlapping itself, a follow and a hand-run
// ship) never ship one file twice. A directory where the lock cannot be
// made (read-only) is shipped without it.
class DirLocks {
 public:
  explicit DirLocks(const std::vector<std::string>& paths) {
    std::set<std::string> dirs;
    for (const std::string& p : paths) {
      std::error_code ec;
      const std::filesystem::path fp(p);
      dirs.insert(std::filesystem::is_directory(fp, ec) ? fp.string() : fp.parent_path().string());
    }
    for (const std::string& d : dirs) {
      const std::string lock = (d.empty() ? std::string(".") : d) + "/.ringprof-ship.lock";
      const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
      if (fd < 0) continue;
      if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        busy_ = lock;
        return;
      }
      fds_.push_back(fd);
    }
  }
  ~DirLocks() {
    for (int fd : fds_) ::close(fd);
  }
  DirLocks(const DirLocks&) = delete;
  DirLocks& operator=(const DirLocks&) = delete;
  const std::string& busy() const { return busy_; }  // a lock another ship holds

 private:
  std::vector<int> fds_;
  std::string busy_;
};

uint32_t now_seconds() { return static_cast<uint32_t>(std::time(nullptr)); }

// Reads the processes that have files to ship and turns their events into rows.
class RowMaker final : public SegmentVisitor {
 public:
  using IsLive = std::function<bool(const ProcessState&)>;
  using Flush = std::function<void(RowBinary (&)[kTableCount])>;
  RowMaker(const TraceReader& reader, const std::vector<uint8_t>& ship_file, const std::vector<std::string>& keys,
           IsLive is_live, Flush flush, StackResolver& stacks, ShipResult& result)
      : reader_(reader),
        ship_file_(ship_file),
        keys_(keys),
        is_live_(std::move(is_live)),
        flush_(std::move(flush)),
        resolver_(stacks),
        result_(result),
        zones_([this](const ClosedZone& z) { on_zone(z); }) {
    zones_.set_on_async([this](const ClosedZone& z) { on_zone(z); });
  }

  // Inserts what is held: at the end, and whenever it passes kFlushBytes,
  // so that memory stays bounded however much a ship has to send.
  void flush() { flush_(rows_); }
  static constexpr size_t kFlushBytes = 64u << 20;

  void begin_process(const ProcessState& p) override {
    p_ = &p;
    zones_.clear();
    finishing_ = false;
    last_step_.reset();
    wall_offset_ = static_cast<int64_t>(p.start_realtime_ns) - static_cast<int64_t>(p.start_monotonic_ns);
    job_ = p.rank ? p.rank->job_id : "";
    rank_ = p.rank ? p.rank->rank : -1;
    last_shipped_file_ = SIZE_MAX;
    for (size_t f : p.files)
      if (!reader_.files()[f].is_part || ship_file_[f]) last_shipped_file_ = f;
    stack_cache_.clear();
    bool any = false;
    for (size_t f : p.files) any = any || ship_file_[f];
    if (any) {
      RowBinary& r = rows_[kProcesses];
      r.str(p.hostname);
      r.str(job_);
      r.i32(rank_);
      r.i32(p.rank ? p.rank->world_size : -1);
      r.u32(p.pid);
      r.u64(p.start_realtime_ns);
      r.strings(p.command_line);
      r.str(p.ringprof_version);
      r.u32(now_seconds());
      r.end_row();
    }
  }

  void segment(const SegmentView& view) override {
    file_ = static_cast<size_t>(&view.file - reader_.files().data());
    const bool out = ship_file_[file_];
    if (out) {
      result_.events += view.segment.events.size();
      for (const DecodedThread& t : view.segment.threads) {
        if (!t.has_name) continue;
        RowBinary& r = rows_[kThreads];
        r.str(p_->hostname);
        r.u32(p_->pid);
        r.u64(p_->start_realtime_ns);
        r.u32(t.index);
        r.u32(t.tid);
        r.str(t.name);
        r.u32(now_seconds());
        r.end_row();
      }
    }
    for (const DecodedEvent& e : view.segment.events) {
      zones_.add(e);
      if (!out) {
        if (e.kind == EventKind::Step) step(e, false);
        continue;
      }
      switch (e.kind) {
        case EventKind::Step:
          mark(e, "step", "step");
          step(e, true);
          break;
        case EventKind::Mark: mark(e, "mark", p_->location_name(e.loc)); break;
        case EventKind::Instant: mark(e, "instant", p_->location_name(e.loc)); break;
        case EventKind::Counter: counter(e); break;
        case EventKind::Sample: sample(e); break;
        default: break;
      }
    }
    if (out)
      for (const GpuActivity& a : view.segment.gpu) gpu(a, view.segment);
    size_t held = 0;
    for (const RowBinary& r : rows_) held += r.bytes().size();
    if (held > kFlushBytes) flush();
  }

  void end_process(const ProcessState& p) override {
    // A process still writing keeps its open zones for the file that will
    // hold their ends; a finished one gives them, unterminated, to its last
    // sealed file.
    if (is_live_(p)) return;
    finishing_ = true;
    zones_.finish();
  }

 private:
  uint64_t wall(uint64_t ns) const { return static_cast<uint64_t>(static_cast<int64_t>(ns) + wall_offset_); }

  void head(RowBinary& r, uint64_t time_ns) {
    r.date_of(wall(time_ns));
    r.str(p_->hostname);
    r.str(job_);
    r.i32(rank_);
    r.u32(p_->pid);
    r.u64(p_->start_realtime_ns);
  }

  const std::string& thread_name(uint32_t index) {
    static const std::string none;
    const ThreadState* t = p_->thread(index);
    return t ? t->name : none;
  }

  void on_zone(const ClosedZone& z) {
    size_t file = file_;
    if (finishing_) {
      if (last_shipped_file_ == SIZE_MAX || !ship_file_[last_shipped_file_]) {
        ++result_.unterminated_left;
        return;
      }
      file = last_shipped_file_;
    }
    if (!ship_file_[file]) return;
    RowBinary& r = rows_[kSpans];
    head(r, z.begin_ns);
    r.u32(z.thread_index);
    r.u32(p_->tid_of(z.thread_index));
    r.str(thread_name(z.thread_index));
    r.str(p_->location_name(z.loc));
    r.u64(wall(z.begin_ns));
    r.u64(wall(z.end_ns));
    r.u64(z.duration_ns());
    r.u64(z.async ? 0 : z.self_ns());
    r.u32(z.depth);
    // The enclosing zone: still open on the thread when this one closes.
    const uint32_t parent = z.async || z.unterminated ? 0 : zones_.innermost(z.thread_index);
    r.str(parent ? p_->location_name(parent) : std::string());
    r.u8(z.async ? 1 : 0);
    r.u64(z.async_id);
    r.u8(z.unterminated ? 1 : 0);
    r.length(z.args.size());
    for (const ZoneArgIds& a : z.args) r.str(p_->location_name(a.key));
    r.length(z.args.size());
    for (const ZoneArgIds& a : z.args) r.str(zone_arg_value(*p_, a.value));
    r.str(keys_[file]);
    r.end_row();
  }

  void mark(const DecodedEvent& e, const char* kind, const std::string& name) {
    RowBinary& r = rows_[kMarks];
    head(r, e.ts_ns);
    r.u32(e.thread_index);
    r.str(kind);
    r.str(name);
    r.u64(e.value);
    r.u64(wall(e.ts_ns));
    r.str(keys_[file_]);
    r.end_row();
  }

  // A step lasts from its mark to the process's next step mark.
  void step(const DecodedEvent& e, bool out) {
    if (last_step_ && e.ts_ns >= last_step_->ts_ns && out) {
      RowBinary& r = rows_[kSteps];
      head(r, last_step_->ts_ns);
      r.u64(last_step_->value);
      r.u64(wall(last_step_->ts_ns));
      r.u64(e.ts_ns - last_step_->ts_ns);
      r.str(keys_[file_]);
      r.end_row();
    }
    last_step_ = e;
  }

  void counter(const DecodedEvent& e) {
    RowBinary& r = rows_[kCounters];
    head(r, e.ts_ns);
    r.u32(e.thread_index);
    r.str(p_->location_name(e.loc));
    r.u64(wall(e.ts_ns));
    r.f64(bits_double(e.value));
    r.str(keys_[file_]);
    r.end_row();
  }

  void sample(const DecodedEvent& e) {
    auto it = stack_cache_.find(e.loc);
    if (it == stack_cache_.end()) {
      std::vector<std::string> frames;
      for (const ResolvedFrame& f : resolver_.stack(*p_, e.loc))
        frames.push_back(f.interpreted ? source_frame_text(f) : f.function);
      const uint64_t key = fnv1a(frames);
      if (stacks_sent_.insert(key).second) {
        RowBinary& s = rows_[kStacks];
        s.u64(key);
        s.strings(frames);
        s.end_row();
      }
      it = stack_cache_.emplace(e.loc, std::make_pair(key, frames.empty() ? std::string() : frames.front())).first;
    }
    RowBinary& r = rows_[kSamples];
    head(r, e.ts_ns);
    r.u32(e.thread_index);
    r.u32(p_->tid_of(e.thread_index));
    r.str(thread_name(e.thread_index));
    r.u64(wall(e.ts_ns));
    r.u64(it->second.first);
    r.str(it->second.second);
    r.str(keys_[file_]);
    r.end_row();
  }

  void gpu(const GpuActivity& a, const DecodedSegment& s) {
    if (a.kind == GpuKind::ExternalCorrelation) return;  // a link between ids, not activity
    RowBinary& r = rows_[kGpu];
    head(r, a.start_ns);
    r.str(gpu_kind_name(a.kind));
    r.str(a.name && a.name <= s.gpu_names.size() ? s.gpu_names[a.name - 1] : std::string());
    r.u32(a.device);
    r.u32(a.stream);
    r.u32(a.correlation);
    r.u64(wall(a.start_ns));
    r.u64(a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0);
    r.u64(a.bytes);
    r.str(keys_[file_]);
    r.end_row();
  }

  const TraceReader& reader_;
  const std::vector<uint8_t>& ship_file_;
  const std::vector<std::string>& keys_;
  IsLive is_live_;
  Flush flush_;
  StackResolver& resolver_;
  ShipResult& result_;
  ZoneTracker zones_;
  RowBinary rows_[kTableCount];
  const ProcessState* p_ = nullptr;
  size_t file_ = 0;
  size_t last_shipped_file_ = SIZE_MAX;
  bool finishing_ = false;
  int64_t wall_offset_ = 0;
  std::string job_;
  int32_t rank_ = -1;
  std::optional<DecodedEvent> last_step_;
  std::unordered_map<uint32_t, std::pair<uint64_t, std::string>> stack_cache_;
  std::unordered_set<uint64_t> stacks_sent_;
};

class Shipper {
 public:
  explicit Shipper(const ShipOptions& o) : o_(o), http_(o.url) {}

  std::string table(const char* name) const { return o_.database + "." + o_.prefix + name; }

  // Creates what is missing; refuses a database of another schema version.
  void prepare_schema() {
    http_.query("CREATE DATABASE IF NOT EXISTS " + o_.database);
    const std::string versions = table("schema_version");
    const std::string exists =
        http_.query("SELECT count() FROM system.tables WHERE database = " + sql_quote(o_.database) +
                    " AND name = " + sql_quote(o_.prefix + "schema_version"));
    if (std::stoul(exists) != 0) {
      const std::string v = http_.query("SELECT max(version), count() FROM " + versions + " FORMAT TSV");
      const unsigned long version = std::stoul(v);
      if (v.substr(v.find('\t') + 1) != "0\n" && version != kClickHouseSchemaVersion)
        throw ClickHouseError(versions + " says schema version " + std::to_string(version) + "; this ringprof writes " +
                              std::to_string(kClickHouseSchemaVersion) +
                              ": ship into another database (--database) or table prefix (--prefix)");
    }
    for (const std::string& statement : clickhouse_schema(o_.database, o_.prefix, o_.cluster)) http_.query(statement);
    const std::string n = http_.query("SELECT count() FROM " + versions);
    if (std::stoul(n) == 0)
      http_.query("INSERT INTO " + versions + " VALUES (" + std::to_string(kClickHouseSchemaVersion) + ", now())");
  }

  // Each key's state in the ledger: 2 done, 1 begun and never done, 0 none.
  std::unordered_map<std::string, int> ledger(const std::vector<std::string>& keys) {
    std::unordered_map<std::string, int> out;
    for (size_t at = 0; at < keys.size(); at += 1000) {
      std::string list;
      for (size_t i = at; i < keys.size() && i < at + 1000; ++i)
        list += (list.empty() ? "" : ", ") + sql_quote(keys[i]);
      const std::string text = http_.query("SELECT file_key, max(state = 'done') FROM " + table("files") +
                                           " WHERE file_key IN (" + list + ") GROUP BY file_key FORMAT TSV");
      internal::for_each_tsv_row(text, [&](const std::vector<std::string>& f) {
        if (f.size() == 2) out[f[0]] = f[1] == "1" ? 2 : 1;
      });
    }
    return out;
  }

  // Deletes what an interrupted ship inserted for these files and waits for
  // ClickHouse to have done it (deletes are mutations, carried out after
  // the statement returns).
  void delete_rows(const std::vector<std::string>& keys) {
    std::vector<std::string> tables;
    for (Table t : kKeyedTables) tables.push_back(kTableNames[t]);
    tables.push_back("zone_hourly");
    std::string names;
    for (const std::string& t : tables) names += (names.empty() ? "" : ", ") + sql_quote(o_.prefix + t);
    for (size_t at = 0; at < keys.size(); at += 500) {  // statements well under max_query_size
      std::string list;
      for (size_t i = at; i < keys.size() && i < at + 500; ++i) list += (list.empty() ? "" : ", ") + sql_quote(keys[i]);
      for (const std::string& t : tables)
        http_.query("ALTER TABLE " + table(t.c_str()) + " DELETE WHERE file_key IN (" + list + ")");
    }
    // Only deletions by file key on these tables are waited for, not other
    // mutations the database may have.
    const std::string pending = "SELECT count() FROM system.mutations WHERE database = " + sql_quote(o_.database) +
                                " AND table IN (" + names +
                                ") AND is_done = 0 AND command LIKE 'DELETE WHERE file_key IN%'";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (!keys.empty() && std::stoul(http_.query(pending)) != 0) {
      if (std::chrono::steady_clock::now() > deadline)
        throw ClickHouseError("the deletion of an interrupted ship's rows has not finished after 5 minutes");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a mutation's progress has no notification
    }
  }

  void ledger_rows(const TraceReader& reader, const std::vector<size_t>& files, const std::vector<std::string>& keys,
                   const std::vector<uint64_t>& events, const char* state) {
    RowBinary r;
    for (size_t f : files) {
      const FileSummary& s = reader.files()[f];
      const ProcessState& p = reader.processes()[s.process];
      r.str(keys[f]);
      r.str(p.hostname);
      r.str(p.rank ? p.rank->job_id : "");
      r.i32(p.rank ? p.rank->rank : -1);
      r.u32(p.pid);
      r.u64(p.start_realtime_ns);
      r.str(s.path);
      r.u64(s.size_bytes);
      r.u64(events[f]);
      r.str(state);
      r.u32(now_seconds());
      r.end_row();
    }
    insert("files", "file_key, host, job, rank, pid, process_start_ns, path, size, events, state, at", r);
  }

  void insert(const char* name, const char* columns, const RowBinary& rows) {
    if (rows.rows() == 0) return;
    http_.query("INSERT INTO " + table(name) + " (" + columns + ") FORMAT RowBinary", rows.bytes());
  }

 private:
  const ShipOptions& o_;
  ClickHouseHttp http_;
};

}  // namespace

ShipResult ship_files(const std::vector<std::string>& paths, const ShipOptions& options) {
  ShipResult result;
  std::vector<std::string> begun_keys;  // inserted as begun, not yet as done
  if (!internal::valid_identifier(options.database, false) || !internal::valid_identifier(options.prefix, true) ||
      !internal::valid_identifier(options.cluster, true)) {
    result.ok = false;
    result.error = "database, prefix and cluster names are letters, digits and '_', not starting with a digit";
    return result;
  }
  const DirLocks locks(paths);
  if (!locks.busy().empty()) {
    result.ok = false;
    result.error = "another ringprof ship holds " + locks.busy() + ": nothing shipped";
    return result;
  }
  try {
    Shipper shipper(options);
    if (options.create_schema) shipper.prepare_schema();

    // Which files are new: the ledger knows the others. A `.part` waits for
    // its writer to seal it, unless the writer is gone (killed, crashed).
    const TraceReader probe(paths);
    for (const Problem& p : probe.problems()) result.problems.push_back(p);
    std::vector<Writer> writers;
    for (const ProcessState& p : probe.processes()) writers.push_back(writer_state(p));
    std::vector<std::string> keys(probe.files().size());
    std::vector<std::string> all;
    for (size_t f = 0; f < probe.files().size(); ++f) {
      const FileSummary& s = probe.files()[f];
      if (s.process == SIZE_MAX) continue;  // no valid frame: a problem said so
      if (s.is_part && writers[s.process] != Writer::Dead) {
        ++result.files_live;
        continue;
      }
      keys[f] = file_key(probe.processes()[s.process], s);
      all.push_back(keys[f]);
    }
    const std::unordered_map<std::string, int> known = shipper.ledger(all);
    std::vector<std::string> interrupted;
    std::set<size_t> wanted_processes;
    for (size_t f = 0; f < probe.files().size(); ++f) {
      if (keys[f].empty()) continue;
      const auto it = known.find(keys[f]);
      const int state = it == known.end() ? 0 : it->second;
      if (state == 2) {
        ++result.files_already;
        result.settled_paths.push_back(probe.files()[f].path);
        continue;
      }
      if (state == 1) interrupted.push_back(keys[f]);
      wanted_processes.insert(probe.files()[f].process);
    }
    if (wanted_processes.empty()) return result;
    shipper.delete_rows(interrupted);
    result.files_reshipped = interrupted.size();

    // Read every file of the processes that have some to ship, in order.
    std::vector<std::string> inputs;
    for (size_t p : wanted_processes)
      for (size_t f : probe.processes()[p].files) inputs.push_back(probe.files()[f].path);
    TraceReader reader(inputs);
    reader.set_progress(options.progress);
    std::vector<uint8_t> ship_file(reader.files().size(), 0);
    std::vector<std::string> read_keys(reader.files().size());
    std::vector<Writer> read_writers;
    for (const ProcessState& p : reader.processes()) read_writers.push_back(writer_state(p));
    for (size_t f = 0; f < reader.files().size(); ++f) {
      const FileSummary& s = reader.files()[f];
      if (s.process == SIZE_MAX || (s.is_part && read_writers[s.process] != Writer::Dead)) continue;
      read_keys[f] = file_key(reader.processes()[s.process], s);
      const auto it = known.find(read_keys[f]);
      ship_file[f] = it == known.end() || it->second != 2;
    }
    // A process still writes while its writer runs (on this host), while a
    // `.part` of it exists, or when a file numbered after its last one came
    // meanwhile (it rolled over between the listing and the read): its open
    // zones and last step wait for the file that ends them.
    auto is_live = [&](const ProcessState& p) {
      if (read_writers[p.index] == Writer::Alive) return true;
      if (read_writers[p.index] == Writer::Dead) return false;
      std::string series;
      uint64_t last = 0;
      bool numbered = false;
      for (size_t f : p.files) {
        if (reader.files()[f].is_part) return true;
        const auto n = internal::numbered_file(reader.files()[f].path);
        if (n && (!numbered || n->number > last)) {
          series = n->series;
          last = n->number;
          numbered = true;
        }
      }
      return numbered && newer_file_exists(series, last);
    };
    std::vector<size_t> files;
    for (size_t f = 0; f < reader.files().size(); ++f)
      if (ship_file[f]) files.push_back(f);
    // Begun, the rows, done: a ship cut off between leaves its files begun,
    // which the next ship sees and repairs.
    const std::vector<uint64_t> no_events(reader.files().size(), 0);
    shipper.ledger_rows(reader, files, read_keys, no_events, "begun");
    for (size_t f : files) begun_keys.push_back(read_keys[f]);
    uint64_t* counts[kTableCount] = {&result.spans, &result.samples, &result.stacks, &result.gpu, &result.counters,
                                     &result.marks, &result.steps,   nullptr,        nullptr};
    auto flush = [&](RowBinary(&rows)[kTableCount]) {
      for (int t = 0; t < kTableCount; ++t) {
        shipper.insert(kTableNames[t], kTableColumns[t], rows[t]);
        if (counts[t]) *counts[t] += rows[t].rows();
        rows[t].clear();
      }
    };
    StackResolver stacks(options.symbol_paths);
    RowMaker maker(reader, ship_file, read_keys, is_live, flush, stacks, result);
    reader.read(maker);
    maker.flush();
    for (const Problem& p : reader.problems()) {
      if (p.kind == ProblemKind::Vanished) {
        ++result.files_vanished;  // deleted by its writer's byte budget between the listing and the read
      } else if (p.kind != ProblemKind::TornTail) {
        result.problems.push_back(p);
      }
    }
    std::vector<uint64_t> events(reader.files().size(), 0);
    for (size_t f : files) {
      events[f] = reader.files()[f].events;
      result.file_bytes += reader.files()[f].size_bytes;
      result.shipped_paths.push_back(reader.files()[f].path);
      result.settled_paths.push_back(reader.files()[f].path);
    }
    shipper.ledger_rows(reader, files, read_keys, events, "done");
    begun_keys.clear();
    result.files_shipped = files.size();
  } catch (const ClickHouseError& e) {
    result.ok = false;
    result.error = e.what();
    if (!begun_keys.empty())
      result.error += "; " + std::to_string(begun_keys.size()) +
                      " file(s) were begun and not done: the next ship deletes their rows and ships them again";
  } catch (const std::exception& e) {  // an answer ClickHouse should not have given (std::stoul)
    result.ok = false;
    result.error = "unexpected answer from " + internal::redacted_url(options.url) + ": " + e.what();
  }
  return result;
}

}  // namespace ringprof
