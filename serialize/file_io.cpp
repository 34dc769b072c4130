// POSIX implementation of file_io.h.

#include "amber/serialize/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "amber/core/error.h"
#include "amber/core/mapped_pages.h"

namespace amber {
namespace {

std::string sys_error() { return std::strerror(errno); }

std::string dirname_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The name a save by process `pid` gives its temporary file next to `base`.
std::string temp_prefix(const std::string& base, long pid) { return "." + base + ".tmp-" + std::to_string(pid) + "-"; }

// A process killed in the microseconds between naming its finished temporary file and
// renaming it over the target leaves `.<base>.tmp-<pid>-*` behind. Each save removes such
// files of `base` whose process no longer exists, so leftovers never accumulate.
void remove_stale_temporaries(const std::string& dir, const std::string& base) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const std::string prefix = "." + base + ".tmp-";
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || *end != '-' || pid == long(::getpid())) continue;
    if (::kill(pid_t(pid), 0) != 0 && errno == ESRCH) ::unlinkat(::dirfd(d), name.c_str(), 0);
  }
  ::closedir(d);
}

}  // namespace

MappedFile map_file(const std::string& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  AMBER_CHECK(f.fd >= 0, "cannot open '", path, "': ", sys_error());
  struct stat st {};
  AMBER_CHECK(::fstat(f.fd, &st) == 0, "cannot stat '", path, "': ", sys_error());
  AMBER_CHECK(S_ISREG(st.st_mode), "'", path, "' is not a regular file");
  MappedFile m;
  if (st.st_size == 0) return m;
  const size_t size = size_t(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, f.fd, 0);
  AMBER_CHECK(p != MAP_FAILED, "cannot map '", path, "' (", size, " bytes): ", sys_error());
  register_file_mapping(p, size);
  m.keep_alive = std::shared_ptr<const void>(p, [size](const void* q) {
    unregister_file_mapping(q);
    ::munmap(const_cast<void*>(q), size);
  });
  m.bytes = {static_cast<const uint8_t*>(p), size};
  return m;
}

const FileOps& FileOps::system() {
  static const FileOps ops{
      [](const char* dir) { return ::open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644); },
      [](int fd, const void* data, size_t n) { return long(::write(fd, data, n)); },
      [](int fd) { return ::fsync(fd); },
      [](int fd, const char* target) {
        const std::string proc = "/proc/self/fd/" + std::to_string(fd);
        return ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, target, AT_SYMLINK_FOLLOW);
      },
      [](const char* from, const char* to) { return ::rename(from, to); },
      [](int fd) { return ::close(fd); },
  };
  return ops;
}

void write_file_atomically(const std::string& path, const std::function<void(const WriteChunk&)>& produce,
                           const FileOps* ops_or_null) {
  const FileOps& ops = ops_or_null ? *ops_or_null : FileOps::system();
  AMBER_CHECK(!path.empty(), "cannot save: empty path");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    AMBER_CHECK(!S_ISDIR(st.st_mode), "cannot save to '", path, "': it is a directory");
    AMBER_CHECK(!S_ISLNK(st.st_mode), "cannot save to '", path,
                "': it is a symbolic link (refusing to replace it; save to the link's target instead)");
    AMBER_CHECK(S_ISREG(st.st_mode), "cannot save to '", path, "': it exists and is not a regular file");
  }
  const std::string dir = dirname_of(path);
  const std::string base = basename_of(path);
  remove_stale_temporaries(dir, base);
  std::string tmp = dir + "/" + temp_prefix(base, ::getpid()) + "XXXXXX";
  // An unnamed file (O_TMPFILE) gets a name only once complete, so even a killed process
  // leaves nothing behind; filesystems without it get a named temporary file.
  int fd = ops.open_unnamed(dir.c_str());
  const bool unnamed = fd >= 0;
  if (!unnamed) fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  bool has_name = !unnamed;  // whether tmp names the file (and must be removed on failure)
  AMBER_CHECK(fd >= 0, "cannot save to '", path, "': cannot create a temporary file in '", dir, "': ", sys_error());
  std::string failure;
  auto cleanup_and_throw = [&](const std::string& why) {
    if (fd >= 0) ::close(fd);  // the real close: the file is being discarded either way
    fd = -1;
    if (has_name) ::unlink(tmp.c_str());
    throw Error(str("cannot save to '", path, "': ", why, " (the previous file, if any, is unchanged)"));
  };
  WriteChunk write = [&](const void* data, size_t n) {
    if (!failure.empty()) return false;
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const long w = ops.write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        failure = "write failed: " + sys_error();
        return false;
      }
      if (w == 0) {  // no progress and no error: refuse to spin
        failure = "write failed: no bytes written";
        return false;
      }
      p += w;
      n -= size_t(w);
    }
    return true;
  };
  try {
    produce(write);
  } catch (const std::exception& e) {
    cleanup_and_throw(failure.empty() ? std::string(e.what()) : failure);  // the system's reason first
  }
  if (!failure.empty()) cleanup_and_throw(failure);
  if (::fchmod(fd, 0644) != 0) cleanup_and_throw("fchmod failed: " + sys_error());
  if (ops.fsync(fd) != 0) cleanup_and_throw("fsync failed: " + sys_error());
  if (unnamed) {  // give the complete file a temporary name next to the target
    int tries = 0;
    while (true) {
      tmp = dir + "/" + temp_prefix(base, ::getpid()) + std::to_string(tries);
      if (ops.link_fd(fd, tmp.c_str()) == 0) {
        has_name = true;
        break;
      }
      if (errno != EEXIST || ++tries > 100) cleanup_and_throw("linking the temporary file failed: " + sys_error());
    }
  }
  // Close before renaming: a failed close (NFS reports write errors there) must not leave a
  // replaced target behind. POSIX leaves the descriptor unusable after any close result.
  const int closing = fd;
  fd = -1;
  if (ops.close(closing) != 0) cleanup_and_throw("close failed: " + sys_error());
  // Rename straight after naming (the data is already synced), so the window in which a
  // kill leaves the temporary name behind is as short as it can be.
  if (ops.rename(tmp.c_str(), path.c_str()) != 0) cleanup_and_throw("rename failed: " + sys_error());
  has_name = false;
  Fd d;
  d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  AMBER_CHECK(
      d.fd >= 0 && ops.fsync(d.fd) == 0, "saved '", path,
      "' but could not fsync its folder (the new file is in place; a power loss may undo the rename): ", sys_error());
}

}  // namespace amber
