// py_settings.h — start(**settings): keywords named like the RINGPROF_*
// variables, lower-case and without the prefix (dir="runs/ringprof",
// max_bytes="1G", mode="detailed", sample_hz=0). A keyword overrides the
// variable; variables not given as keywords still apply.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ringprof/config.h"

namespace ringprof::python {

// The Config for `settings` (variable name -> text), over the environment.
// Adds a warning line for each malformed value and each name that is not a
// setting; the rest still applies.
Config config_from_settings(const std::map<std::string, std::string>& settings, std::vector<std::string>* warnings);

}  // namespace ringprof::python
