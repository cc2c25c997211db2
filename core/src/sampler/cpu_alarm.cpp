#include "sampler/cpu_alarm.h"

#include <pthread.h>
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
  std::unique_ptr<CpuAlarm> alarm(new (std::nothrow) CpuAlarm(id, signo));
  if (!alarm) timer_delete(id);
  return alarm;
}

CpuAlarm::~CpuAlarm() {
  // On another thread than the armed one the mask is not ours to restore;
  // the drainer disarms before its alarm is deleted. A signal still queued
  // finds the handler (installed for the life of the process), which only
  // wakes the drainer.
  timer_delete(id_);
}

bool CpuAlarm::arm(uint64_t cpu_ns) noexcept {
  itimerspec when{};
  when.it_value.tv_sec = static_cast<time_t>(cpu_ns / 1000000000ull);
  when.it_value.tv_nsec = static_cast<long>(cpu_ns % 1000000000ull);
  if (cpu_ns == 0) when.it_value.tv_nsec = 1;  // zero would disarm it
  if (timer_settime(id_, 0, &when, nullptr) != 0) return false;
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signo_);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  armed_ = true;
  return true;
}

void CpuAlarm::disarm() noexcept {
  if (!armed_) return;
  armed_ = false;
  const itimerspec stop{};
  timer_settime(id_, 0, &stop, nullptr);
  // Blocked only now: one sent before the timer stopped has been handled.
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signo_);
  pthread_sigmask(SIG_BLOCK, &one, nullptr);
}

}  // namespace ringprof::sampler
