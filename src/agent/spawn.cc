// Spawn (see spawn.h).
#include "agent/spawn.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace allot::agent {
namespace {

std::string Errno(int err) { return std::strerror(err); }

[[noreturn]] void ChildFail(int status_fd, int stage) {
  const int msg[2] = {stage, errno};
  ssize_t n = write(status_fd, msg, sizeof(msg));
  (void)n;
  _exit(127);
}

[[noreturn]] void RunChild(const ChildPlan& p, int status_fd) {
  if (setsid() < 0) ChildFail(status_fd, kSpawnSetup);
  for (int fd : *p.join_fds) {
    if (write(fd, "0", 1) != 1) ChildFail(status_fd, kSpawnCgroup);
  }
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, 0) < 0) ChildFail(status_fd, kSpawnSetup);
  if (devnull != 0) close(devnull);
  if (dup2(p.out_fd, 1) < 0 || dup2(p.out_fd, 2) < 0) {
    ChildFail(status_fd, kSpawnSetup);
  }
  if (chdir(p.dir) != 0) ChildFail(status_fd, kSpawnChdir);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  // Everything but 0-2 and the status pipe (close-on-exec: its EOF tells
  // the parent that the exec worked).
  if (status_fd > 3) close_range(3, static_cast<unsigned>(status_fd) - 1, 0);
  close_range(static_cast<unsigned>(status_fd) + 1, ~0U, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(p.exe, p.argv, p.envp);
  ChildFail(status_fd, kSpawnExec);
}

}  // namespace

Result<pid_t> Spawn(const ChildPlan& p, int* stage, int* err) {
  *stage = kSpawnSetup;
  *err = 0;
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    *err = errno;
    return Status::FailedPrecondition("pipe: " + Errno(*err));
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid == 0) {
    close(status_pipe[0]);
    RunChild(p, status_pipe[1]);
  }
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(status_pipe[1]);
  if (pid < 0) {
    close(status_pipe[0]);
    *err = fork_errno;
    return Status::FailedPrecondition("fork: " + Errno(*err));
  }
  int msg[2] = {0, 0};
  ssize_t n;
  do {
    n = read(status_pipe[0], msg, sizeof(msg));
  } while (n < 0 && errno == EINTR);
  close(status_pipe[0]);
  if (n == 0) return pid;  // Closed by the exec.
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof(msg))) {
    return Status::FailedPrecondition("the child ended before its exec");
  }
  *stage = msg[0];
  *err = msg[1];
  return Status::FailedPrecondition(Errno(*err));
}

}  // namespace allot::agent
