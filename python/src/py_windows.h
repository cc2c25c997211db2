// py_windows.h — on_window_complete() for Python.
//
// The drainer announces a completed window on its own thread, where Python
// must not run (it may be at interpreter exit, or hold locks Python code could
// wait on). So the drainer only appends the window's id to a queue here; a
// Python thread the package owns takes ids with next_window() (the GIL
// released while it waits) and calls the user's functions with the GIL held.
#pragma once

#include <cstdint>

namespace ringprof::python {

// Registers the drainer-side callback once; ids queue from then on.
void windows_listen();
// Waits up to `timeout_s` for a completed window. True with its id, false on
// timeout or after windows_close(). Call without the GIL.
bool next_window(double timeout_s, uint64_t* id);
// Wakes every waiter and makes next_window() return false until reopened.
void windows_close();
void windows_reopen();
// In a forked child (a pthread_atfork handler windows_listen() installs): the
// queue's lock may have been held by a thread that does not exist there;
// start over with an empty queue.
void windows_after_fork_child();

}  // namespace ringprof::python
