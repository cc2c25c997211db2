#include "common/text_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ringprof/tools/printable.h"

namespace ringprof::internal {

std::string csv_field(const std::string& raw) {
  const std::string s = printable(raw);
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string format_text_table(const TextRow& header, const std::vector<TextRow>& rows, const std::vector<bool>& left) {
  const size_t cols = header.size();
  std::vector<size_t> width(cols);
  for (size_t c = 0; c < cols; ++c) width[c] = header[c].size();
  for (const TextRow& row : rows)
    for (size_t c = 0; c < cols && c < row.size(); ++c) width[c] = std::max(width[c], printable(row[c]).size());

  std::string out;
  auto append_row = [&](const TextRow& row) {
    std::string line;
    for (size_t c = 0; c < cols; ++c) {
      const std::string cell = c < row.size() ? printable(row[c]) : std::string();
      const std::string pad(width[c] - cell.size(), ' ');
      if (c > 0) line += "  ";
      const bool to_left = left.empty() ? c == 0 : (c < left.size() && left[c]);
      line += to_left ? cell + pad : pad + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  size_t total = cols ? 2 * (cols - 1) : 0;
  for (size_t w : width) total += w;
  append_row(header);
  out += std::string(total, '-') + "\n";
  for (const TextRow& row : rows) append_row(row);
  out += std::string(total, '-') + "\n";
  return out;
}

std::string format_csv_table(const TextRow& header, const std::vector<TextRow>& rows) {
  std::string out;
  // Appended piece by piece: "," + std::string trips a GCC 12 -Wrestrict
  // false positive at -O3, and it copies less.
  for (size_t c = 0; c < header.size(); ++c) out.append(c ? "," : "").append(header[c]);
  out += "\n";
  for (const TextRow& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) out.append(c ? "," : "").append(csv_field(row[c]));
    out += "\n";
  }
  return out;
}

}  // namespace ringprof::internal
