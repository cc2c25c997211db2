#include "ringprof/tools/zone_tracker.h"

#include <algorithm>
#include <map>

#include "ringprof/tools/trace_reader.h"

namespace ringprof {

void ZoneTracker::add(const DecodedEvent& e) {
  Thread& t = threads_[e.thread_index];
  t.last_ns = std::max(t.last_ns, e.ts_ns);
  if (t.args_to_async != 0) {
    if (e.kind == EventKind::ZoneArg) {
      auto it = async_open_.find(t.args_to_async);
      if (it != async_open_.end() && !add_zone_arg(it->second.args, e.loc, static_cast<uint32_t>(e.value)))
        ++dropped_args_;
      return;
    }
    settle_async_args(t);
  }
  if (e.kind == EventKind::AsyncBegin || e.kind == EventKind::AsyncEnd) {
    add_async(e, t);
    return;
  }
  if (async_only_) return;
  if (e.kind == EventKind::ZoneBegin) {
    if (t.stack.size() >= kMaxDepth) {
      ++t.overflow;
      ++too_deep_;
      return;
    }
    t.stack.push_back(Open{e.ts_ns, 0, e.loc});
  } else if (e.kind == EventKind::ZoneEnd) {
    if (t.overflow > 0) {
      --t.overflow;
      return;
    }
    if (t.stack.empty()) {
      ++unmatched_ends_;
      return;
    }
    close_top(e.thread_index, t, e.ts_ns, false);
  } else if (e.kind == EventKind::ZoneArg) {
    // With zones beyond kMaxDepth open, the innermost one is not tracked.
    if (t.overflow > 0 || t.stack.empty()) return;
    if (!add_zone_arg(t.stack.back().args, e.loc, static_cast<uint32_t>(e.value))) ++dropped_args_;
  } else if (e.kind == EventKind::ZoneStack) {
    if (t.overflow > 0 || t.stack.empty()) return;
    t.stack.back().stack = e.loc;
  }
}

void ZoneTracker::add_async(const DecodedEvent& e, Thread& t) {
  const uint64_t id = e.value;
  if (e.kind == EventKind::AsyncBegin) {
    if (async_open_.size() >= kMaxOpenAsync) {
      ++async_dropped_;
      t.args_to_async = id;  // its arguments go with it
      return;
    }
    OpenAsync a;
    a.begin_ns = e.ts_ns;
    a.loc = e.loc;
    a.thread_index = e.thread_index;
    // Its end may have come first, from a thread read before this one.
    if (auto early = async_early_ends_.find(id); early != async_early_ends_.end()) {
      a.ended = true;
      a.end_ns = early->second.end_ns;
      a.end_thread_index = early->second.thread_index;
      async_early_ends_.erase(early);
    }
    auto [it, fresh] = async_open_.insert_or_assign(id, std::move(a));
    (void)it;
    (void)fresh;
    t.args_to_async = id;
    return;
  }
  auto it = async_open_.find(id);
  if (it == async_open_.end()) {
    if (async_early_ends_.size() >= kMaxOpenAsync) {
      ++unmatched_async_ends_;
      return;
    }
    async_early_ends_.insert_or_assign(id, EarlyEnd{e.ts_ns, e.thread_index});
    return;
  }
  OpenAsync& a = it->second;
  a.ended = true;
  a.end_ns = e.ts_ns;
  a.end_thread_index = e.thread_index;
  // Its arguments may still be on their way from the begin's thread.
  const auto bt = threads_.find(a.thread_index);
  if (bt != threads_.end() && bt->second.args_to_async == id) return;
  close_async(id, a, false);
  async_open_.erase(it);
}

void ZoneTracker::settle_async_args(Thread& t) {
  const uint64_t id = t.args_to_async;
  t.args_to_async = 0;
  auto it = async_open_.find(id);
  if (it == async_open_.end() || !it->second.ended) return;
  close_async(id, it->second, false);
  async_open_.erase(it);
}

void ZoneTracker::close_async(uint64_t id, OpenAsync& a, bool unterminated) {
  if (!on_async_) return;
  ClosedZone z;
  z.thread_index = a.thread_index;
  z.loc = a.loc;
  z.begin_ns = a.begin_ns;
  z.end_ns = std::max(a.end_ns, a.begin_ns);
  z.unterminated = unterminated;
  z.args = std::move(a.args);
  z.async = true;
  z.async_id = id;
  z.end_thread_index = unterminated ? a.thread_index : a.end_thread_index;
  on_async_(z);
}

bool add_zone_arg(std::vector<ZoneArgIds>& args, uint32_t key, uint32_t value) {
  for (ZoneArgIds& a : args) {
    if (a.key == key) {
      a.value = value;
      return true;
    }
  }
  if (args.size() >= ZoneTracker::kMaxArgs) return false;
  args.push_back(ZoneArgIds{key, value});
  return true;
}

std::string zone_arg_value(const ProcessState& process, uint32_t value_id) {
  const Location* l = process.location(value_id);
  return l ? l->name : process.location_name(value_id);
}

std::string zone_key_with_args(const ProcessState& process, uint32_t loc, const std::vector<ZoneArgIds>& args) {
  std::string key = process.location_name(loc);
  if (!args.empty()) key += '\x1f' + zone_args_text(process, args);
  return key;
}

std::string zone_args_text(const ProcessState& process, const std::vector<ZoneArgIds>& args) {
  std::string text;
  for (const ZoneArgIds& a : args) {
    if (!text.empty()) text += "; ";
    text += process.location_name(a.key);
    text += '=';
    text += zone_arg_value(process, a.value);
  }
  return text;
}

void ZoneTracker::close_top(uint32_t thread_index, Thread& t, uint64_t end_ns, bool unterminated) {
  Open open = std::move(t.stack.back());
  t.stack.pop_back();
  ClosedZone z;
  z.thread_index = thread_index;
  z.loc = open.loc;
  z.begin_ns = open.begin_ns;
  z.end_ns = std::max(end_ns, open.begin_ns);  // a clock step backwards gives 0, not 2^64
  z.children_ns = open.children_ns;
  z.depth = static_cast<uint32_t>(t.stack.size());
  z.unterminated = unterminated;
  z.self_mem = open.self_mem;
  z.mem = open.self_mem + open.children_mem;
  z.self_device_mem = open.self_device_mem;
  z.device_mem = open.self_device_mem + open.children_device_mem;
  z.args = std::move(open.args);
  z.stack = open.stack;
  if (!t.stack.empty()) {
    t.stack.back().children_ns += z.duration_ns();
    t.stack.back().children_mem += z.mem;
    t.stack.back().children_device_mem += z.device_mem;
  }
  on_close_(z);
}

bool ZoneTracker::add_memory(uint32_t thread_index, int64_t bytes, bool device) {
  auto it = threads_.find(thread_index);
  if (it == threads_.end() || it->second.stack.empty()) return false;
  it->second.stack.back().self_mem += bytes;
  if (device) it->second.stack.back().self_device_mem += bytes;
  return true;
}

uint32_t ZoneTracker::innermost(uint32_t thread_index) const {
  auto it = threads_.find(thread_index);
  return it == threads_.end() || it->second.stack.empty() ? 0 : it->second.stack.back().loc;
}

void ZoneTracker::finish() {
  // Thread order is made deterministic (by index) so output is reproducible.
  std::map<uint32_t, Thread*> ordered;
  for (auto& [index, t] : threads_) ordered.emplace(index, &t);
  uint64_t last_ns = 0;
  for (auto& [index, t] : ordered) {
    last_ns = std::max(last_ns, t->last_ns);
    while (!t->stack.empty()) {
      ++unterminated_;
      close_top(index, *t, t->last_ns, true);
    }
  }
  // Async spans by id (the order they began in, for ids from new_async_id()).
  std::map<uint64_t, OpenAsync*> spans;
  for (auto& [id, a] : async_open_) spans.emplace(id, &a);
  for (auto& [id, a] : spans) {
    if (!a->ended) {
      if (on_async_) ++unterminated_;  // counted only where spans are shown
      a->end_ns = last_ns;
    }
    close_async(id, *a, !a->ended);
  }
  unmatched_async_ends_ += async_early_ends_.size();
  async_open_.clear();
  async_early_ends_.clear();
  threads_.clear();
}

}  // namespace ringprof
