// fleet/clickhouse_http.h (internal) — ClickHouse's HTTP interface, through
// libcurl: a statement with an optional body (the rows of an INSERT), its
// answer as text. One connection is kept open across calls.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ringprof::internal {

// The server could not be reached, or answered with an error (its text,
// first line only: ClickHouse's messages carry a stack trace after it).
struct ClickHouseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ClickHouseHttp {
 public:
  // `url`: http://host:port (a path and a query are allowed: user=…&password=…).
  explicit ClickHouseHttp(std::string url);
  ~ClickHouseHttp();
  ClickHouseHttp(const ClickHouseHttp&) = delete;
  ClickHouseHttp& operator=(const ClickHouseHttp&) = delete;

  // Runs `sql`; `body` (rows, for an INSERT … FORMAT …) follows it in the
  // request. Returns the answer; throws ClickHouseError.
  std::string query(std::string_view sql, std::string_view body = {});
  const std::string& url() const { return url_; }

 private:
  std::string url_;
  void* curl_ = nullptr;
};

// A database, table prefix or cluster name ship accepts: letters, digits and
// '_', not starting with a digit (so it goes into SQL unquoted, as is).
bool valid_identifier(std::string_view name, bool empty_ok);
// A URL without its user, password and query, for messages.
std::string redacted_url(const std::string& url);

// `text` as a ClickHouse string literal, quoted.
std::string sql_quote(std::string_view text);

// The fields of one line of ClickHouse's TabSeparated output, unescaped.
std::vector<std::string> tsv_fields(std::string_view line);
// Calls `row` with each line's fields.
void for_each_tsv_row(std::string_view text, const std::function<void(const std::vector<std::string>&)>& row);

}  // namespace ringprof::internal
