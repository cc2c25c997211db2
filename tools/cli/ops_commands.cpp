#include "ops_commands.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ringprof/tools/extract.h"
#include "ringprof/tools/trigger.h"

using namespace ringprof;

int run_extract(const std::vector<std::string>& paths, const WindowSpec& window, const std::string& out) {
  ExtractOptions options;
  options.window = window;
  options.output_dir = out;
  const ExtractResult r = extract_window(paths, options);
  for (const Problem& p : r.problems) std::fprintf(stderr, "%s\n", format_problem(p).c_str());
  if (!r.ok) {
    std::fprintf(stderr, "ringprof: extract: %s\n", r.error.c_str());
    return 2;
  }
  std::printf("window %s .. %s us (CLOCK_MONOTONIC)\n", format_us(r.window.begin_ns).c_str(),
              r.window.end_ns == UINT64_MAX ? "end" : format_us(r.window.end_ns).c_str());
  std::printf("%llu events in %llu segments, %zu files in %s\n", static_cast<unsigned long long>(r.events),
              static_cast<unsigned long long>(r.segments), r.files.size(), out.c_str());
  if (r.clipped_zones)
    std::printf("%llu zone edges clipped to the window\n", static_cast<unsigned long long>(r.clipped_zones));
  if (r.vanished_files)
    std::fprintf(stderr, "ringprof: note: %llu files were deleted by their writer before they could be read\n",
                 static_cast<unsigned long long>(r.vanished_files));
  return r.problems.empty() ? 0 : 2;
}

int run_trigger(int argc, char** argv) {
  TriggerOptions o;
  auto usage = [](const std::string& why) {
    std::fprintf(stderr,
                 "ringprof: %s\nusage: ringprof trigger PID [--steps N | --seconds S] [--mode detailed] [--dir DIR] "
                 "[--timeout S]\n",
                 why.c_str());
    return 1;
  };
  auto number = [](const char* text, double* out) {
    char* end = nullptr;
    *out = std::strtod(text, &end);
    return end && *end == '\0' && *out >= 0 && *out < 1e9;
  };
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    double d = 0;
    if (arg == "--steps" || arg == "--seconds" || arg == "--timeout" || arg == "--dir" || arg == "--mode") {
      if (!v) return usage(arg + " needs a value");
      ++i;
      if (arg == "--dir") {
        o.dir = v;
      } else if (arg == "--mode") {
        if (std::strcmp(v, "detailed") != 0) return usage("--mode: only 'detailed' windows exist");
      } else if (!number(v, &d)) {
        return usage("bad value for " + arg + ": " + v);
      } else if (arg == "--steps") {
        o.steps = static_cast<uint64_t>(d);
      } else if (arg == "--seconds") {
        o.duration_ns = static_cast<uint64_t>(d * 1e9);
      } else {
        o.timeout_ns = static_cast<uint64_t>(d * 1e9);
      }
    } else if (o.pid == 0 && !arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos &&
               arg.size() < 10) {
      o.pid = static_cast<uint32_t>(std::stoul(arg));
    } else {
      return usage("unexpected argument '" + arg + "'");
    }
  }
  if (o.pid == 0) return usage("trigger needs a PID");
  const TriggerResult r = trigger_process(o);
  if (!r.ok) {
    std::fprintf(stderr, "ringprof: trigger: %s\n", r.error.c_str());
    return 2;
  }
  std::printf("pid %u: window %llu (extract it with: ringprof extract %s --window-id %llu -o DIR)\n", o.pid,
              static_cast<unsigned long long>(r.window_id), r.dir.c_str(), static_cast<unsigned long long>(r.window_id));
  return 0;
}
