#include "idx_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "checkpoint/crc32c.h"
#include "trib/core/error.h"
#include "trib/data/idx.h"

namespace trib::train {
namespace {

namespace fs = std::filesystem;

constexpr std::array<char, 8> kMagic{'T', 'R', 'I', 'B', 'I', 'D', 'X', 'C'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint64_t kAlign = 64;  // the data starts on a cache line

// What a source file was when it was decoded.
struct SourceStamp {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const SourceStamp&) const = default;
};

// The fixed header; the two source paths follow it, then padding to kAlign, then the image
// bytes, then the labels as little-endian i32. Written and read on the same host (a cache is
// per machine), so the native layout is the format; the magic and version guard the rest.
struct Header {
  std::array<char, 8> magic = kMagic;
  std::uint32_t version = kVersion;
  std::uint32_t images_path_bytes = 0, labels_path_bytes = 0;
  std::uint32_t reserved = 0;
  SourceStamp images, labels;
  std::int64_t count = 0, rows = 0, cols = 0;
  std::uint64_t data_offset = 0, data_bytes = 0;  // images then labels
  std::uint32_t data_crc = 0;
  std::uint32_t header_crc = 0;  // of everything before data_offset, this field as 0
};
static_assert(sizeof(Header) == 104 && std::is_trivially_copyable_v<Header>);

std::optional<SourceStamp> stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return SourceStamp{static_cast<std::uint64_t>(st.st_size),
                     static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  fs::path a = fs::absolute(path, ec);
  return ec ? path : a.lexically_normal().string();
}

std::uint32_t header_crc(const Header& h, std::string_view paths) {
  Header zeroed = h;
  zeroed.header_crc = 0;
  return crc32c(paths.data(), paths.size(), crc32c(&zeroed, sizeof zeroed));
}

// A read-only mapping of a whole file, unmapped when the last owner lets go.
struct Mapping {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  ~Mapping() {
    if (data != nullptr) ::munmap(const_cast<std::uint8_t*>(data), size);
  }
};

// The mapped cache file, or why it cannot be used.
std::shared_ptr<const Mapping> map_file(const fs::path& path, std::string& why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = errno == ENOENT ? "no cache file" : fmt::format("cannot open it: {}", std::strerror(errno));
    return nullptr;
  }
  struct stat st {};
  auto m = std::make_shared<Mapping>();
  if (::fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(sizeof(Header))) {
    // Populated up front: every page is read by the checksum anyway, and one call faults them
    // in far faster than one fault per page.
    void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p != MAP_FAILED) {
      m->data = static_cast<const std::uint8_t*>(p);
      m->size = static_cast<std::size_t>(st.st_size);
    }
  }
  ::close(fd);
  if (m->data == nullptr) {
    why = "it is shorter than its header or cannot be mapped";
    return nullptr;
  }
  return m;
}

// The dataset the cache file at `path` holds if it is still the decoded form of the sources.
std::optional<data::InMemoryDataset> try_cache(const fs::path& path, const std::string& images,
                                               const std::string& labels, const SourceStamp& images_now,
                                               const SourceStamp& labels_now, const IdxCacheOptions& o,
                                               std::string& why) {
  std::shared_ptr<const Mapping> m = map_file(path, why);
  if (!m) return std::nullopt;
  Header h;
  std::memcpy(&h, m->data, sizeof h);
  if (h.magic != kMagic || h.version != kVersion) {
    why = "another format or version";
    return std::nullopt;
  }
  const std::uint64_t paths_end = sizeof h + std::uint64_t{h.images_path_bytes} + h.labels_path_bytes;
  if (paths_end > m->size || h.data_offset < paths_end || h.data_offset > m->size ||
      h.data_bytes != m->size - h.data_offset) {
    why = "its length disagrees with its header (torn or damaged)";
    return std::nullopt;
  }
  const std::string_view paths(reinterpret_cast<const char*>(m->data) + sizeof h, paths_end - sizeof h);
  if (header_crc(h, {reinterpret_cast<const char*>(m->data) + sizeof h, h.data_offset - sizeof h}) != h.header_crc) {
    why = "its header's checksum does not match (damaged)";
    return std::nullopt;
  }
  if (paths.substr(0, h.images_path_bytes) != images || paths.substr(h.images_path_bytes) != labels) {
    why = "it was decoded from other files";
    return std::nullopt;
  }
  if (!(h.images == images_now) || !(h.labels == labels_now)) {
    why = "a source file changed since it was decoded (size or modification time)";
    return std::nullopt;
  }
  const std::uint64_t image_bytes = static_cast<std::uint64_t>(h.count * h.rows * h.cols);
  if (h.count < 0 || h.rows <= 0 || h.cols <= 0 || image_bytes + 4 * std::uint64_t(h.count) != h.data_bytes) {
    why = "its shape disagrees with its length";
    return std::nullopt;
  }
  const std::uint8_t* bytes = m->data + h.data_offset;
  if (crc32c(bytes, h.data_bytes) != h.data_crc) {
    why = "its data's checksum does not match (damaged)";
    return std::nullopt;
  }
  std::vector<std::int32_t> label_values(static_cast<std::size_t>(h.count));
  std::memcpy(label_values.data(), bytes + image_bytes, label_values.size() * sizeof(std::int32_t));
  return data::InMemoryDataset::from_byte_view(Shape{h.rows, h.cols}, m, {bytes, image_bytes},
                                               std::move(label_values), o.byte_scale);
}

bool write_fully(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Writes the cache file beside its final name and renames it there; "" or why it failed.
// Several processes starting at once each write their own temporary file: the last rename wins,
// and each is whole.
std::string write_cache(const fs::path& path, const std::string& images, const std::string& labels,
                        const SourceStamp& images_then, const SourceStamp& labels_then,
                        const data::InMemoryDataset& ds) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message());
  Header h;
  h.images_path_bytes = static_cast<std::uint32_t>(images.size());
  h.labels_path_bytes = static_cast<std::uint32_t>(labels.size());
  h.images = images_then;
  h.labels = labels_then;
  h.count = ds.size();
  h.rows = ds.example_shape()[0];
  h.cols = ds.example_shape()[1];
  const std::string paths = images + labels;
  const std::uint64_t unpadded = sizeof h + paths.size();
  h.data_offset = (unpadded + kAlign - 1) / kAlign * kAlign;
  const std::span<const std::uint8_t> bytes = ds.byte_features();
  const std::span<const std::int32_t> label_values = ds.labels();
  h.data_bytes = bytes.size() + label_values.size_bytes();
  h.data_crc = crc32c(label_values.data(), label_values.size_bytes(), crc32c(bytes.data(), bytes.size()));
  std::string head(h.data_offset, '\0');
  std::memcpy(head.data() + sizeof h, paths.data(), paths.size());
  h.header_crc = header_crc(h, std::string_view(head).substr(sizeof h));
  std::memcpy(head.data(), &h, sizeof h);

  const fs::path tmp = path.string() + fmt::format(".{}.tmp", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("cannot create {}: {}", tmp.string(), std::strerror(errno));
  bool ok = write_fully(fd, head.data(), head.size()) && write_fully(fd, bytes.data(), bytes.size()) &&
            write_fully(fd, label_values.data(), label_values.size_bytes());
  const std::string write_error = ok ? "" : std::strerror(errno);
  ok = ::close(fd) == 0 && ok;
  if (ok) fs::rename(tmp, path, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    return fmt::format("cannot write {}: {}", tmp.string(), ok ? ec.message() : write_error);
  }
  return "";
}

}  // namespace

data::InMemoryDataset load_idx_cached(const std::string& images_path, const std::string& labels_path,
                                      const IdxCacheOptions& o, IdxCacheOutcome* outcome) {
  IdxCacheOutcome local;
  IdxCacheOutcome& out = outcome != nullptr ? *outcome : local;
  out = {};
  const std::string images = absolute(images_path), labels = absolute(labels_path);
  // Stamped before decoding: a source rewritten meanwhile leaves a stamp that no longer matches.
  const std::optional<SourceStamp> images_then = stamp(images), labels_then = stamp(labels);
  fs::path path;
  if (o.dir.empty()) {
    out.detail = "off";
  } else if (!images_then || !labels_then) {
    out.detail = "a source file cannot be read";  // decoding below names it
  } else {
    const std::string both = images + '\n' + labels;
    path = fs::path(o.dir) / fmt::format("{}-{:08x}.tribidx", fs::path(images).filename().string(),
                                         crc32c(both.data(), both.size()));
    if (auto hit = try_cache(path, images, labels, *images_then, *labels_then, o, out.detail)) {
      out.hit = true;
      out.detail = "hit";
      // The class count is the job's, not the files': checked at every load, as decoding does.
      const std::span<const std::int32_t> l = hit->labels();
      for (std::size_t i = 0; i < l.size() && o.num_classes > 0; ++i)
        TRIB_CHECK(l[i] >= 0 && l[i] < o.num_classes, InvalidArgument, "'{}': label {} at index {} is outside [0, {})",
                   labels_path, l[i], i, o.num_classes);
      return std::move(*hit);
    }
  }
  data::IdxOptions io;
  io.num_classes = o.num_classes;
  io.scale_to_unit = false;
  auto decoded = std::make_shared<const data::InMemoryDataset>(data::load_idx_pair(images_path, labels_path, io));
  if (!path.empty()) {
    std::string failed = write_cache(path, images, labels, *images_then, *labels_then, *decoded);
    if (!failed.empty()) out.detail += "; not written: " + failed;
  }
  // The decoded bytes as they are, with the job's scale (no copy of the images).
  return data::InMemoryDataset::from_byte_view(decoded->example_shape(), decoded, decoded->byte_features(),
                                               {decoded->labels().begin(), decoded->labels().end()}, o.byte_scale);
}

std::string default_idx_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return (fs::path(xdg) / "tributary" / "idx").string();
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home == '/') return (fs::path(home) / ".cache" / "tributary" / "idx").string();
  return "";
}

}  // namespace trib::train
