/* An LD_PRELOAD helper for the GPU machine, which has no gdb: on SIGSEGV,
 * SIGBUS or SIGABRT it prints the faulting address and each frame of the
 * crashing thread as library+offset (symbolized afterwards with addr2line on
 * the unstripped build), then dies of the signal as before.
 *
 *   cc -shared -fPIC -O1 -o segv_report.so bench/gpu/segv_report.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static void report(int sig, siginfo_t* info, void* ctx) {
  ucontext_t* uc = (ucontext_t*)ctx;
  void* pc = (void*)uc->uc_mcontext.gregs[REG_RIP];
  fprintf(stderr, "segv_report: signal %d at address %p, pc %p, thread %ld\n", sig, info->si_addr, pc,
          (long)syscall(SYS_gettid));
  void* frames[64];
  int n = backtrace(frames, 64);
  frames[0] = pc;
  for (int i = 0; i < n; ++i) {
    Dl_info d;
    if (dladdr(frames[i], &d) && d.dli_fname)
      fprintf(stderr, "segv_report:   #%d %s+0x%lx (%s)\n", i, d.dli_fname,
              (unsigned long)((char*)frames[i] - (char*)d.dli_fbase), d.dli_sname ? d.dli_sname : "?");
    else
      fprintf(stderr, "segv_report:   #%d %p\n", i, frames[i]);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  static char stack[1 << 16];
  stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack, .ss_flags = 0};
  sigaltstack(&ss, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = report;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  sigaction(SIGABRT, &sa, NULL);
}
