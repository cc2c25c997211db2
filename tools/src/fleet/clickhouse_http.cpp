#include "fleet/clickhouse_http.h"

#include <curl/curl.h>

#include <cctype>
#include <mutex>

namespace ringprof::internal {
namespace {

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// The URL as messages may show it: without a user, a password or a query.
std::string redacted(const std::string& url) {
  std::string out = url.substr(0, url.find('?'));
  const size_t scheme = out.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t at = out.find('@', start);
  if (at != std::string::npos) out.erase(start, at + 1 - start);
  return out;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace

ClickHouseHttp::ClickHouseHttp(std::string url) : url_(std::move(url)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
  if (!curl_) throw ClickHouseError("cannot start an HTTP client (curl_easy_init failed)");
}

ClickHouseHttp::~ClickHouseHttp() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

std::string ClickHouseHttp::query(std::string_view sql, std::string_view body) {
  CURL* c = static_cast<CURL*>(curl_);
  // The statement goes in the URL when rows follow it in the body, else in
  // the body (long SELECTs and DDL need no escaping there). The server is to
  // answer once the query is over: an error midway is then an HTTP error,
  // not a 200 whose text stops short.
  std::string target = url_ + (url_.find('?') == std::string::npos ? "?" : "&") + "wait_end_of_query=1";
  std::string_view payload = sql;
  if (!body.empty()) {
    char* escaped = curl_easy_escape(c, sql.data(), static_cast<int>(sql.size()));
    target += "&query=";
    target += escaped;
    curl_free(escaped);
    payload = body;
  }
  std::string answer;
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, target.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  // No limit on a whole request (a large insert may take long); a server
  // that moves no byte for 5 minutes has gone.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 300L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  struct curl_slist* headers = curl_slist_append(nullptr, "Expect:");  // no 100-continue round trip
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK)
    throw ClickHouseError(std::string("cannot reach ") + redacted(url_) + ": " + curl_easy_strerror(rc));
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200)
    throw ClickHouseError(redacted(url_) + " answered HTTP " + std::to_string(status) + ": " + first_line(answer));
  return answer;
}

std::string sql_quote(std::string_view text) {
  std::string out = "'";
  for (const char ch : text) {
    if (ch == '\'' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "'";
}

std::vector<std::string> tsv_fields(std::string_view line) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\t') {
      out.emplace_back();
    } else if (c == '\\' && i + 1 < line.size()) {
      const char e = line[++i];
      out.back() += e == 't'   ? '\t'
                    : e == 'n' ? '\n'
                    : e == 'r' ? '\r'
                    : e == '0' ? '\0'
                    : e == 'b' ? '\b'
                    : e == 'f' ? '\f'
                               : e;
    } else {
      out.back() += c;
    }
  }
  return out;
}

void for_each_tsv_row(std::string_view text, const std::function<void(const std::vector<std::string>&)>& row) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    row(tsv_fields(text.substr(pos, eol - pos)));
    pos = eol + 1;
  }
}

bool valid_identifier(std::string_view name, bool empty_ok) {
  if (name.empty()) return empty_ok;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (const char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string redacted_url(const std::string& url) { return redacted(url); }

}  // namespace ringprof::internal
