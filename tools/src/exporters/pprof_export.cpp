#include "ringprof/tools/pprof_export.h"

#include <map>
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

}  // namespace

std::string build_pprof(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver) {
  pprof::Profile p;
  StringTable strings(p);

  auto* count_type = p.add_sample_type();
  count_type->set_type(strings.id("samples"));
  count_type->set_unit(strings.id("count"));
  auto* cpu_type = p.add_sample_type();
  cpu_type->set_type(strings.id("cpu"));
  cpu_type->set_unit(strings.id("nanoseconds"));
  p.mutable_period_type()->set_type(strings.id("cpu"));
  p.mutable_period_type()->set_unit(strings.id("nanoseconds"));
  p.set_period(static_cast<int64_t>(profile.period_ns));
  p.set_default_sample_type(strings.id("samples"));
  if (!profile.mechanism.empty()) p.add_comment(strings.id("ringprof sampler: " + profile.mechanism));

  // Mappings: (process, module id) -> mapping id.
  std::map<std::pair<size_t, uint32_t>, uint64_t> mappings;
  auto mapping_for = [&](const ProcessState& process, uint32_t module_id) -> uint64_t {
    if (module_id == 0) return 0;
    auto [it, inserted] = mappings.try_emplace({process.index, module_id}, mappings.size() + 1);
    if (!inserted) return it->second;
    auto m = process.modules.find(module_id);
    auto* pm = p.add_mapping();
    pm->set_id(it->second);
    if (m != process.modules.end()) {
      pm->set_memory_start(m->second.start);
      pm->set_memory_limit(m->second.end);
      pm->set_file_offset(m->second.file_offset);
      pm->set_filename(strings.id(m->second.path));
      pm->set_build_id(strings.id(m->second.build_id));
    }
    pm->set_has_functions(true);
    pm->set_has_filenames(true);
    pm->set_has_line_numbers(true);
    pm->set_has_inline_frames(true);
    return it->second;
  };

  std::map<std::pair<std::string, std::string>, uint64_t> functions;  // (name, file) -> id
  auto function_for = [&](const ResolvedFrame& f) -> uint64_t {
    auto [it, inserted] = functions.try_emplace({f.function, f.file}, functions.size() + 1);
    if (inserted) {
      auto* pf = p.add_function();
      pf->set_id(it->second);
      pf->set_name(strings.id(f.function));
      pf->set_system_name(strings.id(f.function));
      pf->set_filename(strings.id(f.file));
    }
    return it->second;
  };

  // Locations: (process, address, leaf) -> location id.
  std::map<std::tuple<size_t, uint64_t, bool>, uint64_t> locations;
  auto location_for = [&](const ProcessState& process, uint64_t address, bool leaf) -> uint64_t {
    auto [it, inserted] = locations.try_emplace({process.index, address, leaf}, locations.size() + 1);
    if (!inserted) return it->second;
    const std::vector<ResolvedFrame>& frames = resolver.address(process, address, leaf);
    auto* pl = p.add_location();
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
  };

  const int64_t thread_key = strings.id("thread");
  const int64_t tid_key = strings.id("tid");
  const int64_t pid_key = strings.id("pid");
  for (const SampleCount& c : profile.counts) {
    const ProcessState& process = reader.processes()[c.process];
    auto* s = p.add_sample();
    if (const StackTrace* st = process.stack(c.stack_id); st != nullptr && !st->frames.empty()) {
      for (size_t i = 0; i < st->frames.size(); ++i) s->add_location_id(location_for(process, st->frames[i], i == 0));
    } else {
      // A stack the files lost: keep the sample, under one "[unknown stack]" frame.
      auto [it, inserted] = locations.try_emplace({process.index, 0, true}, locations.size() + 1);
      if (inserted) {
        auto* pl = p.add_location();
        pl->set_id(it->second);
        ResolvedFrame unknown;
        unknown.function = "[unknown stack]";
        pl->add_line()->set_function_id(function_for(unknown));
      }
      s->add_location_id(it->second);
    }
    s->add_value(static_cast<int64_t>(c.count));
    s->add_value(static_cast<int64_t>(c.count * profile.period_ns));
    const ThreadState* t = process.thread(c.thread_index);
    auto* l = s->add_label();
    l->set_key(thread_key);
    l->set_str(strings.id(t && !t->name.empty() ? t->name : "thread"));
    l = s->add_label();
    l->set_key(tid_key);
    l->set_num(process.tid_of(c.thread_index));
    l = s->add_label();
    l->set_key(pid_key);
    l->set_num(process.pid);
  }

  if (profile.samples > 0 && !profile.counts.empty()) {
    const ProcessState& first = reader.processes()[profile.counts.front().process];
    if (first.start_known) {
      p.set_time_nanos(static_cast<int64_t>(first.start_realtime_ns + (profile.first_ns - first.start_monotonic_ns)));
    }
    p.set_duration_nanos(static_cast<int64_t>(profile.last_ns - profile.first_ns));
  }
  return p.SerializeAsString();
}

bool write_pprof_file(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver,
                      const std::string& path, std::string* error) {
  const std::string bytes = build_pprof(reader, profile, resolver);
  OutputFile out;
  if (!out.open(path, error)) return false;
  out.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out.close(error);
}

}  // namespace ringprof
