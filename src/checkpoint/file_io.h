// POSIX file access for checkpoints: an owning descriptor whose errors name the file, and the
// atomic-replace protocol (temporary file beside the target, fsync, rename, fsync the
// directory) that makes a file appear whole or not at all, even across a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace trib::checkpoint_detail {

class File {
 public:
  // Throws NotFound if the file does not exist, IoError for any other failure.
  static File open_for_reading(const std::filesystem::path& path);
  // A directory, opened only to fsync it.
  static File open_directory(const std::filesystem::path& path);
  // Creates or truncates. Throws IoError.
  static File create(const std::filesystem::path& path);

  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  const std::filesystem::path& path() const { return path_; }
  std::uint64_t size() const;
  void write_all(const void* data, std::size_t bytes);
  // Reads exactly `bytes` at `offset`; a short read throws Corruption ("file is truncated").
  void read_at(void* data, std::size_t bytes, std::uint64_t offset) const;
  void sync();
  // Closes now, reporting errors a destructor would have to swallow.
  void close();

 private:
  File(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

// fsyncs a directory, so that renames and creations inside it survive a crash.
void sync_directory(const std::filesystem::path& dir);

// Writes `path` atomically: `fill` writes a temporary file in the same directory, which is
// then fsynced, renamed over `path`, and the directory fsynced. If anything throws, the
// temporary is removed and `path` is untouched.
void write_atomically(const std::filesystem::path& path, const std::function<void(File&)>& fill);

// The whole content of a (small) file.
std::string read_whole_file(const std::filesystem::path& path);

}  // namespace trib::checkpoint_detail
