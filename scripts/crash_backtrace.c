// A crash reporter preloaded into GPU test runs (scripts/gpu_check.sh) where no debugger is
// installed: on SIGSEGV, SIGBUS or SIGABRT it prints the crashing thread's frames, then every
// other thread's (each stopped by a signal of its own), as "THREAD <tid>" lines each followed by
// "FRAME <file> <offset> <symbol>" lines for addr2line, then exits 139. What the other threads
// were doing (recording a graph, inside cuDNN) is what a race needs. Catch2's own handlers are
// kept from replacing it. Build: gcc -shared -fPIC scripts/crash_backtrace.c -o crash_backtrace.so -ldl
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SNAPSHOT_SIGNAL SIGURG  // asks another thread for its frames (ignored by default, unused by the tests)

static int installed = 0;
static volatile int crashed = 0;  // the first crashing thread reports; any other waits to be ended
static volatile int print_lock = 0;
static volatile int reported = 0;  // other threads that have printed their frames

static void print_frames(const char* what, int skip) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  while (__sync_lock_test_and_set(&print_lock, 1)) {
  }
  fprintf(stderr, "THREAD %d %s (%d frames)\n", (int)gettid(), what, n - skip);
  for (int i = skip; i < n; ++i) {
    Dl_info where;
    if (dladdr(frames[i], &where) && where.dli_fname)  // offset of the call instruction, not the return
      fprintf(stderr, "FRAME %s 0x%lx %s\n", where.dli_fname,
              (unsigned long)((char*)frames[i] - (char*)where.dli_fbase - (i > 0)),
              where.dli_sname ? where.dli_sname : "?");
    else
      fprintf(stderr, "FRAME ? %p ?\n", frames[i]);
  }
  fflush(stderr);
  __sync_lock_release(&print_lock);
}

static void snapshot(int sig) {
  (void)sig;
  print_frames("(another thread, at the crash)", 1);
  __sync_fetch_and_add(&reported, 1);
}

static void report(int sig, siginfo_t* info, void* context) {
  (void)context;
  if (__sync_lock_test_and_set(&crashed, 1)) {  // a second crash while the first reports
    for (;;) pause();
  }
  fprintf(stderr, "CRASH signal %d at address %p in thread %d\n", sig, info->si_addr, (int)gettid());
  print_frames("(crashed)", 0);
  // Every other thread of the process prints its own frames from SNAPSHOT_SIGNAL's handler.
  int asked = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks) {
    struct dirent* e;
    while ((e = readdir(tasks)) != NULL) {
      const int tid = atoi(e->d_name);
      if (tid > 0 && tid != (int)gettid() && syscall(SYS_tgkill, getpid(), tid, SNAPSHOT_SIGNAL) == 0) ++asked;
    }
    closedir(tasks);
  }
  // Up to two seconds for them (a thread inside a system call answers when it returns).
  for (int i = 0; i < 200 && reported < asked; ++i) {
    const struct timespec ten_ms = {0, 10 * 1000 * 1000};
    nanosleep(&ten_ms, NULL);
  }
  fprintf(stderr, "CRASH report: %d of %d other threads printed their frames\n", reported, asked);
  fflush(stderr);
  _exit(139);
}

int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  static int (*real)(int, const struct sigaction*, struct sigaction*) = 0;
  if (!real) real = (int (*)(int, const struct sigaction*, struct sigaction*))dlsym(RTLD_NEXT, "sigaction");
  if (installed && act && (sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SNAPSHOT_SIGNAL)) return 0;
  return real(sig, act, old);
}

__attribute__((constructor)) static void install(void) {
  void* warm[4];
  (void)backtrace(warm, 4);  // loads the unwinder now, not inside a signal handler
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = report;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
  sigaction(SIGABRT, &sa, 0);
  struct sigaction snap;
  memset(&snap, 0, sizeof snap);
  snap.sa_handler = snapshot;
  snap.sa_flags = SA_RESTART;
  sigaction(SNAPSHOT_SIGNAL, &snap, 0);
  installed = 1;
}
