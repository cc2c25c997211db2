// common/text_table.h — the aligned text and CSV layouts every ringprof table prints:
// the first column left-aligned (names), the rest right-aligned (numbers),
// two spaces apart, a rule under the header and after the last row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringprof::internal {

using TextRow = std::vector<std::string>;

// Aligned columns; every row has header.size() cells. `left` marks the
// columns to left-align (text); empty means the first column only.
std::string format_text_table(const TextRow& header, const std::vector<TextRow>& rows,
                              const std::vector<bool>& left = {});
// A header line, then one line per row; the first column quoted when needed.
std::string format_csv_table(const TextRow& header, const std::vector<TextRow>& rows);
// A field for CSV: quoted (with doubled quotes) when it holds , " or a line break.
std::string csv_field(const std::string& s);

}  // namespace ringprof::internal
