// See drainer_priority.h. glibc has no sched_getattr/sched_setattr wrappers
// (before 2.41): the system calls, with the kernel's own struct.
#include "draining/drainer_priority.h"

#include <linux/sched.h>
#include <linux/sched/types.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ringprof::drainer_priority {

bool request_short_slice(uint64_t slice_ns) noexcept {
  sched_attr attr{};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return false;
  if (attr.sched_policy != SCHED_NORMAL) return false;  // batch, idle or real time: left as chosen
  attr.size = sizeof attr;
  attr.sched_flags = 0;
  attr.sched_runtime = slice_ns;  // nice and policy as they were
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
}

}  // namespace ringprof::drainer_priority
