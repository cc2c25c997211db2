// common/json_text.h (internal) — the JSON every tool writes (traces, reports,
// ranks, diff), written by hand so that events stream out without building a
// document in memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringprof::internal {

// Appends `s` as a JSON string literal (quotes included). Control characters
// are escaped and bytes that are not valid UTF-8 become U+FFFD, so any name a
// program recorded still yields a document every JSON parser accepts.
void append_json_string(std::string& out, std::string_view s);
// `s` as valid UTF-8: each byte that starts no valid sequence becomes U+FFFD,
// as append_json_string does. Protocol buffers' string fields (the Perfetto
// trace) must hold valid UTF-8, and names come from the recorded program.
std::string valid_utf8(std::string_view s);
bool is_valid_utf8(std::string_view s);

// Appends a double as a JSON number: shortest round-trip form; NaN becomes 0
// and infinities the largest finite double, since JSON has neither.
void append_json_double(std::string& out, double v);

// A document built in order into `out`: open('{'), key, value, …, close('}');
// commas come by themselves. For the small documents of reports (the trace
// writers stream theirs by hand).
class JsonWriter {
 public:
  std::string out;
  void key(const char* k) {
    comma();
    append_json_string(out, k);
    out += ':';
    fresh_ = true;
  }
  void str(const std::string& v) {
    value([&] { append_json_string(out, v); });
  }
  void num(int64_t v) {
    value([&] { out += std::to_string(v); });
  }
  void unum(uint64_t v) {
    value([&] { out += std::to_string(v); });
  }
  void dbl(double v) {
    value([&] { append_json_double(out, v); });
  }
  void null() {
    value([&] { out += "null"; });
  }
  // A value that is already a JSON document (trailing newline dropped).
  void raw(const std::string& json) {
    value([&] { out.append(json, 0, json.empty() || json.back() != '\n' ? json.size() : json.size() - 1); });
  }
  void field(const char* k, uint64_t v) { key(k), unum(v); }
  void field(const char* k, int64_t v) { key(k), num(v); }
  void field(const char* k, const std::string& v) { key(k), str(v); }
  void field(const char* k, bool v) { key(k), boolean(v); }
  // The value, or null when `known` is false.
  void field_if(const char* k, bool known, uint64_t v) { known ? field(k, v) : (key(k), null()); }
  void boolean(bool v) {
    value([&] { out += v ? "true" : "false"; });
  }
  void open(char c) {
    comma();
    out += c;
    fresh_ = true;
  }
  void close(char c) {
    out += c;
    fresh_ = false;
  }

 private:
  template <class F>
  void value(F&& f) {
    comma();
    f();
    fresh_ = false;
  }
  void comma() {
    if (!fresh_ && !out.empty() && out.back() != ':') out += ',';
    fresh_ = false;
  }
  bool fresh_ = true;
};

}  // namespace ringprof::internal
