// The findings as `ringprof findings` prints them and the report page embeds
// them (ringprof/tools/findings.h).
#include <cctype>

#include "common/json_text.h"
#include "ringprof/tools/findings.h"

namespace ringprof {

namespace {

std::string upper(const char* text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string format_findings(const std::vector<Finding>& findings, FindingsFormat format) {
  if (format == FindingsFormat::Json) {
    internal::JsonWriter j;
    j.open('[');
    for (const Finding& f : findings) {
      j.open('{');
      j.field("rule", f.rule);
      j.field("severity", std::string(finding_severity_name(f.severity)));
      j.field("title", f.title);
      j.field("evidence", f.evidence);
      j.field("advice", f.advice);
      j.key("figures");
      j.open('{');
      for (const auto& [name, value] : f.figures) j.field(name.c_str(), value);
      j.close('}');
      j.close('}');
    }
    j.close(']');
    return j.out + "\n";
  }
  if (findings.empty()) return "No known problem found (the rules: docs/report.md#findings).\n";
  std::string out;
  for (const Finding& f : findings) {
    out += upper(finding_severity_name(f.severity)) + " " + f.rule + ": " + f.title + "\n";
    out += "  " + f.evidence + "\n";
    out += "  what to do: " + f.advice + "\n";
  }
  return out;
}

}  // namespace ringprof
