#include "ringprof/tools/pprof_export.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "profile.pb.h"
#include "ringprof/tools/output_file.h"

namespace ringprof {

namespace {

class StringTable {
 public:
  explicit StringTable(pprof::Profile& p) : profile_(p) { id(""); }
  int64_t id(const std::string& s) {
    auto [it, inserted] = ids_.try_emplace(s, static_cast<int64_t>(ids_.size()));
    if (inserted) profile_.add_string_table(s);
    return it->second;
  }

 private:
  pprof::Profile& profile_;
  std::unordered_map<std::string, int64_t> ids_;
};

// The tables every pprof profile shares: strings, mappings, functions and
// locations, filled as samples name their stacks.
class ProfileTables {
 public:
  ProfileTables(pprof::Profile& p, const TraceReader& reader, StackResolver& resolver)
      : p_(p), strings_(p), reader_(reader), resolver_(resolver) {}

  int64_t str(const std::string& s) { return strings_.id(s); }

  // The stack's locations into `s`, leaf first; a stack the files lost is
  // one "[unknown stack]" frame.
  // `heap`: a heap sample's, whose leaf frames in ringprof's own code are
  // left out (heap_own_leaf_frames).
  void add_stack(pprof::Sample* s, size_t process_index, uint32_t stack_id, bool heap = false) {
    const ProcessState& process = reader_.processes()[process_index];
    if (const StackTrace* st = process.stack(stack_id); st != nullptr && !st->frames.empty()) {
      const size_t first = heap ? heap_own_leaf_frames(process, *st) : 0;
      for (size_t i = first; i < st->frames.size(); ++i)
        s->add_location_id(location_for(process, st->frames[i], i == 0));
      return;
    }
    auto [it, inserted] = locations_.try_emplace({process.index, 0, true}, locations_.size() + 1);
    if (inserted) {
      auto* pl = p_.add_location();
      pl->set_id(it->second);
      ResolvedFrame unknown;
      unknown.function = "[unknown stack]";
      pl->add_line()->set_function_id(function_for(unknown));
    }
    s->add_location_id(it->second);
  }

  void add_thread_labels(pprof::Sample* s, size_t process_index, uint32_t thread_index) {
    const ProcessState& process = reader_.processes()[process_index];
    const ThreadState* t = process.thread(thread_index);
    auto* l = s->add_label();
    l->set_key(str("thread"));
    l->set_str(str(t && !t->name.empty() ? t->name : "thread"));
    l = s->add_label();
    l->set_key(str("tid"));
    l->set_num(process.tid_of(thread_index));
    l = s->add_label();
    l->set_key(str("pid"));
    l->set_num(process.pid);
  }

  // The wall-clock time of a moment of the first process's monotonic clock.
  void set_time(size_t process_index, uint64_t first_ns, uint64_t last_ns) {
    const ProcessState& first = reader_.processes()[process_index];
    if (first.start_known)
      p_.set_time_nanos(static_cast<int64_t>(first.start_realtime_ns + (first_ns - first.start_monotonic_ns)));
    p_.set_duration_nanos(static_cast<int64_t>(last_ns - first_ns));
  }

 private:
  uint64_t mapping_for(const ProcessState& process, uint32_t module_id) {
    if (module_id == 0) return 0;
    auto [it, inserted] = mappings_.try_emplace({process.index, module_id}, mappings_.size() + 1);
    if (!inserted) return it->second;
    auto m = process.modules.find(module_id);
    auto* pm = p_.add_mapping();
    pm->set_id(it->second);
    if (m != process.modules.end()) {
      pm->set_memory_start(m->second.start);
      pm->set_memory_limit(m->second.end);
      pm->set_file_offset(m->second.file_offset);
      pm->set_filename(str(m->second.path));
      pm->set_build_id(str(m->second.build_id));
    }
    pm->set_has_functions(true);
    pm->set_has_filenames(true);
    pm->set_has_line_numbers(true);
    pm->set_has_inline_frames(true);
    return it->second;
  }

  uint64_t function_for(const ResolvedFrame& f) {
    auto [it, inserted] = functions_.try_emplace({f.function, f.file}, functions_.size() + 1);
    if (inserted) {
      auto* pf = p_.add_function();
      pf->set_id(it->second);
      pf->set_name(str(f.function));
      pf->set_system_name(str(f.function));
      pf->set_filename(str(f.file));
    }
    return it->second;
  }

  uint64_t location_for(const ProcessState& process, uint64_t address, bool leaf) {
    auto [it, inserted] = locations_.try_emplace({process.index, address, leaf}, locations_.size() + 1);
    if (!inserted) return it->second;
    const std::vector<ResolvedFrame>& frames = resolver_.address(process, address, leaf);
    auto* pl = p_.add_location();
    pl->set_id(it->second);
    // An interpreter frame has no address, only its function and line.
    const bool interpreted = !frames.empty() && frames.front().interpreted;
    pl->set_address(interpreted ? 0 : address);
    pl->set_mapping_id(frames.empty() ? 0 : mapping_for(process, frames.front().module_id));
    for (const ResolvedFrame& f : frames) {  // innermost first, as pprof wants
      auto* line = pl->add_line();
      line->set_function_id(function_for(f));
      line->set_line(f.line);
    }
    return it->second;
  }

  pprof::Profile& p_;
  StringTable strings_;
  const TraceReader& reader_;
  StackResolver& resolver_;
  std::map<std::pair<size_t, uint32_t>, uint64_t> mappings_;           // (process, module id) -> id
  std::map<std::pair<std::string, std::string>, uint64_t> functions_;  // (name, file) -> id
  std::map<std::tuple<size_t, uint64_t, bool>, uint64_t> locations_;   // (process, address, leaf) -> id
};

void add_sample_type(pprof::Profile& p, ProfileTables& t, const char* type, const char* unit) {
  auto* v = p.add_sample_type();
  v->set_type(t.str(type));
  v->set_unit(t.str(unit));
}

std::string serialize(const pprof::Profile& p) { return p.SerializeAsString(); }

bool write_bytes(const std::string& bytes, const std::string& path, std::string* error) {
  OutputFile out;
  if (!out.open(path, error)) return false;
  out.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out.close(error);
}

}  // namespace

std::string build_pprof(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver) {
  pprof::Profile p;
  ProfileTables t(p, reader, resolver);
  add_sample_type(p, t, "samples", "count");
  add_sample_type(p, t, "cpu", "nanoseconds");
  p.mutable_period_type()->set_type(t.str("cpu"));
  p.mutable_period_type()->set_unit(t.str("nanoseconds"));
  p.set_period(static_cast<int64_t>(profile.period_ns));
  p.set_default_sample_type(t.str("samples"));
  if (!profile.mechanism.empty()) p.add_comment(t.str("ringprof sampler: " + profile.mechanism));
  for (const SampleCount& c : profile.counts) {
    auto* s = p.add_sample();
    t.add_stack(s, c.process, c.stack_id);
    s->add_value(static_cast<int64_t>(c.count));
    s->add_value(static_cast<int64_t>(c.count * profile.period_ns));
    t.add_thread_labels(s, c.process, c.thread_index);
  }
  if (profile.samples > 0 && !profile.counts.empty())
    t.set_time(profile.counts.front().process, profile.first_ns, profile.last_ns);
  return serialize(p);
}

std::string build_heap_pprof(const TraceReader& reader, const HeapProfile& profile, StackResolver& resolver) {
  pprof::Profile p;
  ProfileTables t(p, reader, resolver);
  // go's heap profile layout: go tool pprof offers -sample_index between them.
  add_sample_type(p, t, "alloc_objects", "count");
  add_sample_type(p, t, "alloc_space", "bytes");
  add_sample_type(p, t, "inuse_objects", "count");
  add_sample_type(p, t, "inuse_space", "bytes");
  p.mutable_period_type()->set_type(t.str("space"));
  p.mutable_period_type()->set_unit(t.str("bytes"));
  p.set_period(static_cast<int64_t>(profile.interval));
  p.set_default_sample_type(t.str("inuse_space"));
  p.add_comment(t.str("ringprof heap sampler: one allocation per " + std::to_string(profile.interval) +
                      " bytes on average, weighed back to estimates of the whole"));
  // One sample per picked block, with its own weight: pprof adds them up by
  // stack, and the labels (size, pool, thread) stay per block. pprof's values
  // are integers: each stack's running sums are rounded, and a block gets the
  // step its weight makes, so a stack's totals stay exact to one (rounding
  // each block alone would make a block of the interval's size count 2, not
  // its 1.58).
  struct Running {
    double v[4] = {0, 0, 0, 0};
  };
  std::map<std::tuple<size_t, uint32_t, uint32_t>, Running> running;
  for (const HeapSample& h : profile.samples) {
    auto* s = p.add_sample();
    t.add_stack(s, h.process, h.stack_id, true);
    const double w = h.weight();
    const double add[4] = {h.in_range ? w : 0, h.in_range ? w * static_cast<double>(h.size) : 0, h.in_use ? w : 0,
                           h.in_use ? w * static_cast<double>(h.size) : 0};
    Running& r = running[std::make_tuple(h.process, h.stack_id, h.pool)];
    for (int i = 0; i < 4; ++i) {
      const double before = r.v[i];
      r.v[i] += add[i];
      s->add_value(static_cast<int64_t>(std::llround(r.v[i]) - std::llround(before)));
    }
    auto* l = s->add_label();
    l->set_key(t.str("bytes"));
    l->set_num(static_cast<int64_t>(h.size));
    l->set_num_unit(t.str("bytes"));
    l = s->add_label();
    l->set_key(t.str("pool"));
    l->set_str(t.str(reader.processes()[h.process].location_name(h.pool)));
    t.add_thread_labels(s, h.process, h.thread_index);
  }
  if (!profile.samples.empty()) {
    // first_ns is 0 when the range holds only older blocks still in use.
    uint64_t first = profile.first_ns, last = profile.last_ns;
    if (first == 0) {
      first = last = profile.samples.front().alloc_ns;
      for (const HeapSample& h : profile.samples) {
        first = std::min(first, h.alloc_ns);
        last = std::max(last, h.alloc_ns);
      }
    }
    t.set_time(profile.samples.front().process, first, last);
  }
  return serialize(p);
}

bool write_pprof_file(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver,
                      const std::string& path, std::string* error) {
  return write_bytes(build_pprof(reader, profile, resolver), path, error);
}

bool write_heap_pprof_file(const TraceReader& reader, const HeapProfile& profile, StackResolver& resolver,
                           const std::string& path, std::string* error) {
  return write_bytes(build_heap_pprof(reader, profile, resolver), path, error);
}

}  // namespace ringprof
