// Who this process is, for the start of every file.
#pragma once

#include <string>
#include <vector>

namespace ringprof {

std::string host_name();
// argv of this process, from /proc/self/cmdline ("" entries kept).
std::vector<std::string> command_line();

}  // namespace ringprof
