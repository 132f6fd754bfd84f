#include "checkpoint/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "trib/core/error.h"

namespace trib::checkpoint_detail {
namespace {

[[noreturn]] void throw_errno(const char* what, const std::filesystem::path& path, int err) {
  std::string message = fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(err));
  if (err == ENOENT) throw NotFound(message);
  throw IoError(message);
}

}  // namespace

File File::open_for_reading(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open", path, errno);
  return File(fd, path);
}

File File::open_directory(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("open directory", path, errno);
  return File(fd, path);
}

File File::create(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("create", path, errno);
  return File(fd, path);
}

File::File(File&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t File::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw_errno("stat", path_, errno);
  return static_cast<std::uint64_t>(st.st_size);
}

void File::write_all(const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write", path_, errno);
    }
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void File::read_at(void* data, std::size_t bytes, std::uint64_t offset) const {
  char* p = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(fd_, p + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read", path_, errno);
    }
    TRIB_CHECK(n > 0, Corruption, "{}: file is truncated (reading {} bytes at offset {} hit its end)",
               path_.string(), bytes, offset);
    done += static_cast<std::size_t>(n);
  }
}

void File::sync() {
  if (::fsync(fd_) != 0) throw_errno("fsync", path_, errno);
}

void File::close() {
  if (fd_ < 0) return;
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw_errno("close", path_, errno);
}

void sync_directory(const std::filesystem::path& dir) { File::open_directory(dir).sync(); }

void write_atomically(const std::filesystem::path& path, const std::function<void(File&)>& fill) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  try {
    File f = File::create(tmp);
    fill(f);
    f.sync();
    f.close();
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw IoError(fmt::format("cannot rename {} to {}: {}", tmp.string(), path.string(), ec.message()));
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
  sync_directory(path.has_parent_path() ? path.parent_path() : std::filesystem::path("."));
}

std::string read_whole_file(const std::filesystem::path& path) {
  File f = File::open_for_reading(path);
  std::string content(f.size(), '\0');
  if (!content.empty()) f.read_at(content.data(), content.size(), 0);
  return content;
}

}  // namespace trib::checkpoint_detail
