// Reads a file that may be gzip-compressed, telling the two apart by the gzip magic (1f 8b)
// rather than by the name, so that "train.idx" may be either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <zlib.h>

namespace trib::data {

class FileReader {
 public:
  // Throws NotFound for a missing file, IoError for one that cannot be opened.
  explicit FileReader(std::string path);

  const std::string& path() const { return path_; }
  bool compressed() const { return gz_ != nullptr; }
  // Size on disk, which for a gzip file is the compressed size.
  std::uint64_t size_on_disk() const { return size_on_disk_; }

  // Reads up to n bytes, fewer only at the end of the data. Throws Corruption naming the file
  // for a damaged gzip stream, IoError for a failed read. A gzip stream that is merely cut
  // short reads as short data, so that callers can say how much they expected.
  std::size_t read(void* out, std::size_t n);
  // After a short read: whether the gzip stream itself ended before its end marker.
  bool cut_short() const { return cut_short_; }
  // Everything not yet read; a gzip stream cut short is a Corruption error.
  std::string read_all();

 private:
  struct CloseFile {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  struct CloseGz {
    void operator()(gzFile f) const { gzclose(f); }
  };

  std::string path_;
  std::uint64_t size_on_disk_ = 0;
  bool cut_short_ = false;
  std::unique_ptr<std::FILE, CloseFile> raw_;
  std::unique_ptr<gzFile_s, CloseGz> gz_;
};

}  // namespace trib::data
