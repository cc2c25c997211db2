// json_text.h (internal) — the little JSON the trace writer needs, written by
// hand so that events stream out without building a document in memory.
#pragma once

#include <string>
#include <string_view>

namespace ringprof::internal {

// Appends `s` as a JSON string literal (quotes included). Control characters
// are escaped and bytes that are not valid UTF-8 become U+FFFD, so any name a
// program recorded still yields a document every JSON parser accepts.
void append_json_string(std::string& out, std::string_view s);

// Appends a double as a JSON number: shortest round-trip form; NaN becomes 0
// and infinities the largest finite double, since JSON has neither.
void append_json_double(std::string& out, double v);

}  // namespace ringprof::internal
