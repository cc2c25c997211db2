// common/number_text.h — numbers as every ringprof table and report prints them, each
// way written once: fixed decimals, percentages (of a value already in
// percent, of a fraction, and signed changes) and durations with a unit.
#pragma once

#include <cstdint>
#include <string>

namespace ringprof::internal {

// `v` with `digits` decimals: fixed(2.345, 1) is "2.3".
std::string fixed(double v, int digits);
// A value already in percent, one decimal: percent(12.34) is "12.3%".
std::string percent(double v);
// A fraction as a percentage, one decimal: percent_of(0.1234) is "12.3%".
std::string percent_of(double fraction);
// A change in percent, always signed, one decimal: signed_percent(7.56) is "+7.6%".
std::string signed_percent(double v);
// A signed duration with a unit a reader takes in at once: "850 ns",
// "12.5 µs", "2.51 ms", "1.20 s".
std::string duration_text(int64_t ns);

}  // namespace ringprof::internal
