#include "fleet/clickhouse_http.h"

#include <curl/curl.h>

#include <mutex>

namespace ringprof::internal {
namespace {

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
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
  // the body (long SELECTs and DDL need no escaping there).
  std::string target = url_;
  std::string payload;
  if (!body.empty()) {
    char* escaped = curl_easy_escape(c, sql.data(), static_cast<int>(sql.size()));
    target += (target.find('?') == std::string::npos ? "?query=" : "&query=");
    target += escaped;
    curl_free(escaped);
    payload = std::string(body);
  } else {
    payload = std::string(sql);
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
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 600L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) throw ClickHouseError(std::string("cannot reach ") + url_ + ": " + curl_easy_strerror(rc));
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200)
    throw ClickHouseError(url_ + " answered HTTP " + std::to_string(status) + ": " + first_line(answer));
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

}  // namespace ringprof::internal
