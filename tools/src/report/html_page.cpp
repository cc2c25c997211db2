// The report page: the stylesheet, the data and the script, all inline.
#include <string>

#include "report_assets.h"
#include "ringprof/tools/html_report.h"

namespace ringprof {

namespace {

// JSON inside <script> ends at the first "</": "<\/" means the same to JSON.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    out += json[i];
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') out += '\\';
  }
  return out;
}

}  // namespace

void write_html_report(TraceReader& reader, const ReportOptions& options, std::ostream& out) {
  const std::string data = report_data_json(reader, options);
  out << "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"generator\" content=\"ringprof report\">\n<title>ringprof report</title>\n<style>\n"
      << internal::kReportCss << "</style>\n</head>\n<body>\n"
      << "<header><h1>ringprof report</h1><div class=\"sub\">a recording's summary: what ran, where the time went"
      << "</div></header>\n<div id=\"app\"></div>\n"
      << "<script id=\"ringprof-data\" type=\"application/json\">" << script_safe(data) << "</script>\n<script>\n"
      << internal::kReportJs << "</script>\n</body>\n</html>\n";
}

}  // namespace ringprof
