// py_settings.cpp — start()'s keywords as RINGPROF_* settings (py_settings.h).
#include "py_settings.h"

#include <cstdlib>
#include <set>

namespace ringprof::python {

Config config_from_settings(const std::map<std::string, std::string>& settings, std::vector<std::string>* warnings) {
  std::set<std::string> asked;
  Config c = config_from(
      [&](const char* name) -> const char* {
        asked.insert(name);
        if (auto it = settings.find(name); it != settings.end()) return it->second.c_str();
        return std::getenv(name);
      },
      warnings);
  for (const auto& [name, value] : settings) {
    if (asked.count(name)) continue;
    std::string key = name.substr(std::string("RINGPROF_").size());
    for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    warnings->push_back("ringprof: warning: ignoring start(" + key + "=" + value +
                        "): not a setting (docs/configuration.md lists them)");
  }
  return c;
}

}  // namespace ringprof::python
