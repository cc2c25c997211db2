#include "ringprof/tools/heap_profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "common/text_table.h"
#include "ringprof/tools/thread_filter.h"
#include "ringprof/tools/trace_range.h"

namespace ringprof {

double HeapSample::weight() const {
  if (interval == 0 || size == 0) return 1.0;
  const double p = -std::expm1(-static_cast<double>(size) / static_cast<double>(interval));
  return p > 0 ? 1.0 / p : 1.0;
}

namespace {

// A process's heap events, replayed in time order once every file is read:
// a block may be freed on another thread, in a later segment.
struct Pending {
  uint64_t ts = 0;
  bool alloc = false;
  uint32_t thread_index = 0;
  uint32_t pool = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint32_t stack_id = 0;
  uint64_t interval = 0;
};

class HeapCollector final : public SegmentVisitor {
 public:
  HeapCollector(TimeRange range, const std::string& thread, std::string pool)
      : range_(range), threads_(thread), pool_(std::move(pool)) {}

  void segment(const SegmentView& view) override {
    const auto& ev = view.segment.events;
    std::vector<Pending>& out = pending_[view.process.index];
    for (size_t i = 0; i < ev.size(); ++i) {
      const DecodedEvent& e = ev[i];
      if (e.kind != EventKind::HeapAlloc && e.kind != EventKind::HeapFree) continue;
      if (!pool_.empty() && view.process.location_name(e.loc) != pool_) continue;
      Pending p;
      p.ts = e.ts_ns;
      p.alloc = e.kind == EventKind::HeapAlloc;
      p.thread_index = e.thread_index;
      p.pool = e.loc;
      p.address = e.address;
      p.size = e.value;
      // Its stack is the HeapStack directly after it on its thread (event.h).
      if (p.alloc && i + 1 < ev.size() && ev[i + 1].kind == EventKind::HeapStack &&
          ev[i + 1].thread_index == e.thread_index) {
        p.stack_id = ev[i + 1].loc;
        p.interval = ev[i + 1].value;
      }
      // A free counts wherever it happened; a thread filter picks allocations.
      if (p.alloc && !threads_.matches(view.process, e.thread_index)) continue;
      out.push_back(p);
    }
  }

  HeapProfile finish() {
    HeapProfile profile;
    for (auto& [process, events] : pending_) {
      std::stable_sort(events.begin(), events.end(), [](const Pending& a, const Pending& b) { return a.ts < b.ts; });
      std::map<std::pair<uint32_t, uint64_t>, size_t> live;  // (pool, address) -> index in profile.samples
      for (const Pending& p : events) {
        if (p.ts > range_.end_ns) break;
        const auto key = std::make_pair(p.pool, p.address);
        if (!p.alloc) {
          auto it = live.find(key);
          if (it == live.end()) continue;  // not sampled here (or allocated before the files)
          profile.samples[it->second].in_use = false;
          ++profile.frees_matched;
          live.erase(it);
          continue;
        }
        HeapSample s;
        s.process = process;
        s.thread_index = p.thread_index;
        s.stack_id = p.stack_id;
        s.pool = p.pool;
        s.size = p.size;
        s.interval = p.interval;
        s.alloc_ns = p.ts;
        s.in_range = range_.contains(p.ts);
        s.in_use = true;
        // An address picked again without a free between: the free was lost.
        if (auto it = live.find(key); it != live.end()) profile.samples[it->second].in_use = false;
        live[key] = profile.samples.size();
        profile.samples.push_back(s);
      }
    }
    // Keep what the range counts: its allocations, and older blocks still in use.
    std::erase_if(profile.samples, [](const HeapSample& s) { return !s.in_range && !s.in_use; });
    for (const HeapSample& s : profile.samples) {
      profile.interval = std::max(profile.interval, s.interval);
      if (!s.in_range) continue;
      profile.first_ns = profile.first_ns == 0 ? s.alloc_ns : std::min(profile.first_ns, s.alloc_ns);
      profile.last_ns = std::max(profile.last_ns, s.alloc_ns);
    }
    return profile;
  }

 private:
  TimeRange range_;
  ThreadFilter threads_;
  std::string pool_;
  std::map<size_t, std::vector<Pending>> pending_;
};

}  // namespace

HeapProfile collect_heap(TraceReader& reader, const HeapOptions& options) {
  TimeRange range;
  if (!options.range.empty()) {
    if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;  // the CLI checked it
  }
  HeapCollector collector(range, options.thread, options.pool);
  reader.read(collector);
  return collector.finish();
}

std::vector<HeapStackTotal> heap_by_stack(const HeapProfile& profile) {
  std::map<std::tuple<size_t, uint32_t, uint32_t>, HeapStackTotal> totals;
  for (const HeapSample& s : profile.samples) {
    HeapStackTotal& t = totals[std::make_tuple(s.process, s.stack_id, s.pool)];
    t.process = s.process;
    t.stack_id = s.stack_id;
    t.pool = s.pool;
    const double w = s.weight();
    if (s.in_range) {
      t.alloc_objects += w;
      t.alloc_bytes += w * static_cast<double>(s.size);
      ++t.samples;
    }
    if (s.in_use) {
      t.inuse_objects += w;
      t.inuse_bytes += w * static_cast<double>(s.size);
    }
  }
  std::vector<HeapStackTotal> out;
  out.reserve(totals.size());
  for (auto& [key, t] : totals) out.push_back(t);
  std::stable_sort(out.begin(), out.end(),
                   [](const HeapStackTotal& a, const HeapStackTotal& b) { return a.alloc_bytes > b.alloc_bytes; });
  return out;
}

size_t heap_own_leaf_frames(const ProcessState& process, const StackTrace& stack) {
  size_t n = 0;
  for (; n + 1 < stack.frames.size(); ++n) {  // the last frame stays: never an empty stack
    if (stack.frames[n] & kInterpreterFrameTag) break;
    const ModuleInfo* m = process.module_for(stack.frames[n]);
    if (m == nullptr) break;
    const std::string_view path = m->path;
    const std::string_view base = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
    if (base.rfind("libringprof", 0) != 0 && base.rfind("_ringprof", 0) != 0) break;
  }
  return n;
}

std::vector<HeapTopRow> heap_top_stacks(const TraceReader& reader, const HeapProfile& profile, StackResolver& resolver,
                                        size_t top, bool python) {
  // By the named stack and pool: call sites in one function, or stacks that
  // differ past the frames shown, read as one row.
  std::vector<HeapTopRow> rows;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const HeapStackTotal& t : heap_by_stack(profile)) {
    const ProcessState& process = reader.processes()[t.process];
    HeapTopRow r;
    const std::vector<ResolvedFrame>& stack = resolver.stack(process, t.stack_id);
    const bool only_python =
        python && std::any_of(stack.begin(), stack.end(), [](const ResolvedFrame& f) { return f.interpreted; });
    // ringprof's own leaf frames, by the recorded frames they resolve from
    // (an inlined frame shares its caller's address).
    std::set<uint64_t> own;
    if (const StackTrace* st = process.stack(t.stack_id))
      own.insert(st->frames.begin(), st->frames.begin() + static_cast<ptrdiff_t>(heap_own_leaf_frames(process, *st)));
    size_t frames = 0;
    for (const ResolvedFrame& f : stack) {
      if (own.count(f.address) != 0) continue;
      if (only_python && !f.interpreted) continue;
      if (frames++ == kHeapStackFrames) {
        r.stack += " <- ...";
        break;
      }
      r.stack += (r.stack.empty() ? "" : " <- ") + f.function;
    }
    if (r.stack.empty()) r.stack = "[unknown stack]";  // the recorder's stack table was full
    r.pool = process.location_name(t.pool);
    auto [it, added] = index.try_emplace({r.stack, r.pool}, rows.size());
    if (added) rows.push_back(std::move(r));
    HeapTopRow& row = rows[it->second];
    row.alloc_bytes += t.alloc_bytes;
    row.alloc_objects += t.alloc_objects;
    row.inuse_bytes += t.inuse_bytes;
    row.inuse_objects += t.inuse_objects;
    row.samples += t.samples;
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const HeapTopRow& a, const HeapTopRow& b) { return a.alloc_bytes > b.alloc_bytes; });
  if (rows.size() > top) rows.resize(top);
  return rows;
}

std::string format_heap_top(const std::vector<HeapTopRow>& rows, const HeapProfile& profile, TableFormat format) {
  std::vector<internal::TextRow> table;
  auto whole = [](double v) { return std::to_string(std::llround(v)); };
  for (const HeapTopRow& r : rows)
    table.push_back({r.stack, r.pool, whole(r.alloc_bytes), whole(r.alloc_objects), whole(r.inuse_bytes),
                     whole(r.inuse_objects), std::to_string(r.samples)});
  if (format == TableFormat::Csv)
    return internal::format_csv_table(
        {"stack", "pool", "alloc_bytes", "alloc_objects", "inuse_bytes", "inuse_objects", "samples"}, table);
  if (profile.samples.empty())
    return "No heap samples in the input (libringprof_malloc.so and ringprof.torch sample allocations while "
           "recording, one per RINGPROF_HEAP_INTERVAL bytes on average).\n";
  std::string out = "Sampled heap: " + std::to_string(profile.samples.size()) + " samples, one per " +
                    std::to_string(profile.interval) +
                    " bytes allocated on average; estimates of the whole (ringprof pprof --heap for go tool pprof)\n";
  out += internal::format_text_table(
      {"Stack (leaf first)", "Pool", "Allocated (B)", "Allocs", "In use (B)", "Live blocks", "Samples"}, table);
  return out;
}

}  // namespace ringprof
