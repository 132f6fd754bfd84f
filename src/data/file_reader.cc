#include "file_reader.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::data {
namespace {

// zlib's internal buffer; the default 8 KiB makes decompression call read() far too often.
constexpr unsigned kGzBufferBytes = 1u << 18;

}  // namespace

FileReader::FileReader(std::string path) : path_(std::move(path)) {
  std::FILE* f = std::fopen(path_.c_str(), "rb");
  if (f == nullptr) {
    int err = errno;
    TRIB_CHECK(err != ENOENT, NotFound, "cannot open '{}': no such file", path_);
    throw IoError(fmt::format("cannot open '{}': {}", path_, std::strerror(err)));
  }
  raw_.reset(f);
  std::error_code ec;
  size_on_disk_ = std::filesystem::file_size(path_, ec);

  unsigned char magic[2] = {0, 0};
  std::size_t got = std::fread(magic, 1, 2, f);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    raw_.reset();
    gz_.reset(gzopen(path_.c_str(), "rb"));
    TRIB_CHECK(gz_ != nullptr, IoError, "cannot open '{}' as gzip: {}", path_, std::strerror(errno));
    gzbuffer(gz_.get(), kGzBufferBytes);
  } else {
    std::rewind(f);
  }
}

std::size_t FileReader::read(void* out, std::size_t n) {
  auto* dst = static_cast<char*>(out);
  std::size_t done = 0;
  while (done < n) {
    std::size_t got;
    if (gz_) {
      // gzread takes an unsigned and returns an int: read in chunks that fit both.
      auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, INT_MAX / 2));
      int r = gzread(gz_.get(), dst + done, chunk);
      int code = Z_OK;
      const char* message = gzerror(gz_.get(), &code);
      // zlib reports a stream that stops early as Z_BUF_ERROR, anything else as damage.
      if (code == Z_BUF_ERROR) cut_short_ = true;
      else if (r < 0 || code != Z_OK)
        throw Corruption(fmt::format("'{}' is not a valid gzip file: {}", path_, message));
      got = r < 0 ? 0 : static_cast<std::size_t>(r);
    } else {
      got = std::fread(dst + done, 1, n - done, raw_.get());
      TRIB_CHECK(got > 0 || !std::ferror(raw_.get()), IoError, "reading '{}' failed: {}", path_,
                 std::strerror(errno));
    }
    if (got == 0) break;
    done += got;
  }
  return done;
}

std::string FileReader::read_all() {
  std::string out;
  // Plain files are read in one go; gzip data is typically several times its compressed size.
  out.reserve(static_cast<std::size_t>(size_on_disk_) * (gz_ ? 4 : 1) + 1);
  char chunk[1 << 16];
  for (std::size_t got; (got = read(chunk, sizeof chunk)) > 0;) out.append(chunk, got);
  TRIB_CHECK(!cut_short_, Corruption, "'{}' is cut short: its gzip stream ends after {} bytes",
             path_, out.size());
  return out;
}

}  // namespace trib::data
