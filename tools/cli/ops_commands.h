// The CLI's `extract` and `trigger` commands (thin: the work is in
// ringprof/extract.h and ringprof/trigger.h).
#pragma once

#include <string>
#include <vector>

#include "ringprof/tools/time_window.h"

int run_extract(const std::vector<std::string>& paths, const ringprof::WindowSpec& window, const std::string& out);
int run_trigger(int argc, char** argv);
