// A crash reporter preloaded into GPU test runs (scripts/gpu_check.sh) where no debugger is
// installed: on SIGSEGV, SIGBUS or SIGABRT it prints every frame as "FRAME <file> <offset>
// <symbol>" for addr2line, then exits 139. Catch2's own handlers are kept from replacing it.
// Build: gcc -shared -fPIC scripts/crash_backtrace.c -o crash_backtrace.so -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int installed = 0;

static void report(int sig, siginfo_t* info, void* context) {
  (void)context;
  void* frames[64];
  const int n = backtrace(frames, 64);
  fprintf(stderr, "CRASH signal %d at address %p in thread %d (%d frames)\n", sig, info->si_addr, (int)gettid(), n);
  for (int i = 0; i < n; ++i) {
    Dl_info where;
    if (dladdr(frames[i], &where) && where.dli_fname)  // offset of the call instruction, not the return
      fprintf(stderr, "FRAME %s 0x%lx %s\n", where.dli_fname,
              (unsigned long)((char*)frames[i] - (char*)where.dli_fbase - (i > 0)),
              where.dli_sname ? where.dli_sname : "?");
    else
      fprintf(stderr, "FRAME ? %p ?\n", frames[i]);
  }
  fflush(stderr);
  _exit(139);
}

int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  static int (*real)(int, const struct sigaction*, struct sigaction*) = 0;
  if (!real) real = (int (*)(int, const struct sigaction*, struct sigaction*))dlsym(RTLD_NEXT, "sigaction");
  if (installed && act && (sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT)) return 0;
  return real(sig, act, old);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = report;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
  sigaction(SIGABRT, &sa, 0);
  installed = 1;
}
