// The schema's statements from schemas/clickhouse.sql (compiled in), with the
// database, the table prefix and the cluster put in.
#include "clickhouse_schema.h"
#include "ringprof/tools/ship.h"

namespace ringprof {
namespace {

void replace_all(std::string& s, std::string_view from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

std::vector<std::string> clickhouse_schema(const std::string& database, const std::string& prefix,
                                           const std::string& cluster) {
  std::vector<std::string> out;
  std::string sql(internal::kClickHouseSchemaSql);
  replace_all(sql, "{db}", database);
  replace_all(sql, "{prefix}", prefix);
  // The Distributed tables only over a named cluster.
  const bool clustered = !cluster.empty();
  if (clustered) replace_all(sql, "{cluster}", cluster);
  auto keep = [&](const std::string& statement) {
    if (statement.find_first_not_of(" \n") == std::string::npos) return;
    if (!clustered && statement.find("{cluster}") != std::string::npos) return;
    out.push_back(statement);
  };
  // Statements end at a line holding only ";"; comment lines are dropped.
  std::string statement;
  size_t at = 0;
  while (at < sql.size()) {
    size_t end = sql.find('\n', at);
    if (end == std::string::npos) end = sql.size();
    const std::string_view line(sql.data() + at, end - at);
    at = end + 1;
    if (line.rfind("--", 0) == 0) continue;
    if (line == ";") {
      keep(statement);
      statement.clear();
      continue;
    }
    if (!line.empty()) statement.append(line).append("\n");
  }
  keep(statement);
  return out;
}

}  // namespace ringprof
