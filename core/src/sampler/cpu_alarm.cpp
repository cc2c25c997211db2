#include "sampler/cpu_alarm.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>

namespace ringprof::sampler {

std::unique_ptr<CpuAlarm> CpuAlarm::create(int signo) noexcept {
  if (signo <= 0) return nullptr;
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = signo;
  sev.sigev_value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(kCpuAlarmKey));
  sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  timer_t id;
  if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &id) != 0) return nullptr;
  std::unique_ptr<CpuAlarm> alarm(new (std::nothrow) CpuAlarm(id));
  if (!alarm) {
    timer_delete(id);
    return nullptr;
  }
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signo);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  return alarm;
}

CpuAlarm::~CpuAlarm() {
  // A signal already queued still finds the handler (installed for the life
  // of the process), which only wakes the drainer.
  timer_delete(id_);
}

bool CpuAlarm::arm(uint64_t cpu_ns) noexcept {
  itimerspec when{};
  when.it_value.tv_sec = static_cast<time_t>(cpu_ns / 1000000000ull);
  when.it_value.tv_nsec = static_cast<long>(cpu_ns % 1000000000ull);
  if (cpu_ns == 0) when.it_value.tv_nsec = 1;  // zero would disarm it
  return timer_settime(id_, 0, &when, nullptr) == 0;
}

}  // namespace ringprof::sampler
