#include "trib/data/idx.h"

#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "file_reader.h"
#include "trib/core/error.h"

namespace trib::data {
namespace {

constexpr std::uint32_t kUnsignedByteType = 0x08;
// Deflate never compresses better than about 1032:1, which bounds what a gzip file can hold.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

std::uint32_t big_endian_u32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// Reads exactly n bytes or throws Corruption saying what `what` needed and how much was there.
void read_exactly(FileReader& file, void* out, std::size_t n, std::string_view what) {
  std::size_t got = file.read(out, n);
  TRIB_CHECK(got == n, Corruption, "'{}' is truncated: expected {} bytes of {}, found {}{}",
             file.path(), n, what, got, file.cut_short() ? " (its gzip stream ends early)" : "");
}

// Bytes left in the file, read and discarded: for error messages only.
std::uint64_t count_remaining(FileReader& file) {
  std::array<char, 1 << 16> sink;
  std::uint64_t total = 0;
  for (std::size_t got; (got = file.read(sink.data(), sink.size())) > 0;) total += got;
  return total;
}

}  // namespace

IdxArray read_idx(const std::string& path, int rank) {
  TRIB_CHECK(rank >= 1 && rank <= Shape::kMaxRank, InvalidArgument,
             "read_idx('{}'): rank {} is outside [1, {}]", path, rank, Shape::kMaxRank);
  FileReader file(path);
  std::array<unsigned char, 4> magic_bytes{};
  read_exactly(file, magic_bytes.data(), 4, "IDX magic");
  const std::uint32_t magic = big_endian_u32(magic_bytes.data());
  const std::uint32_t expected = (kUnsignedByteType << 8) | static_cast<std::uint32_t>(rank);
  TRIB_CHECK(magic == expected, Corruption,
             "'{}' has IDX magic 0x{:08x}, expected 0x{:08x} (unsigned bytes, {} dimensions)", path,
             magic, expected, rank);

  std::vector<unsigned char> header(4 * static_cast<std::size_t>(rank));
  read_exactly(file, header.data(), header.size(), "IDX dimensions");
  IdxArray array;
  for (int d = 0; d < rank; ++d) array.dims.push_back(big_endian_u32(&header[4 * d]));
  const auto bytes = static_cast<std::uint64_t>(Shape(array.dims).numel());
  const std::string shape = fmt::format("{}", fmt::join(array.dims, "x"));

  // Refuse sizes the file cannot possibly hold before allocating for them (when its size is
  // known: not for a pipe).
  const std::uint64_t header_bytes = 4 + header.size();
  const std::uint64_t capacity = file.compressed() ? file.size_on_disk() * kMaxDeflateRatio
                                                   : file.size_on_disk() - header_bytes;
  if (file.size_on_disk() > 0 && bytes > capacity) {
    throw Corruption(fmt::format("'{}' is truncated: its header promises {} bytes of data ({}), found {}",
                                 path, bytes, shape, count_remaining(file)));
  }

  array.values.resize(bytes);
  std::size_t got = file.read(array.values.data(), bytes);
  TRIB_CHECK(got == bytes, Corruption,
             "'{}' is truncated: its header promises {} bytes of data ({}), found {}{}", path, bytes,
             shape, got, file.cut_short() ? " (its gzip stream ends early)" : "");
  std::uint64_t extra = count_remaining(file);
  TRIB_CHECK(extra == 0, Corruption,
             "'{}' has {} bytes after the {} bytes of data its header promises ({})", path, extra,
             bytes, shape);
  // All the data arrived but the gzip trailer (its checksum) did not: still a damaged file.
  TRIB_CHECK(!file.cut_short(), Corruption,
             "'{}' is truncated: its gzip stream ends before its checksum, after all {} bytes of data",
             path, bytes);
  return array;
}

InMemoryDataset load_idx_pair(const std::string& images_path, const std::string& labels_path,
                              IdxOptions options) {
  IdxArray images = read_idx(images_path, 3);
  IdxArray labels = read_idx(labels_path, 1);
  TRIB_CHECK(images.dims[0] == labels.dims[0], InvalidArgument,
             "'{}' holds {} images but '{}' holds {} labels", images_path, images.dims[0],
             labels_path, labels.dims[0]);

  std::vector<std::int32_t> label_values(labels.values.begin(), labels.values.end());
  if (options.num_classes > 0) {
    for (std::size_t i = 0; i < label_values.size(); ++i) {
      TRIB_CHECK(label_values[i] < options.num_classes, InvalidArgument,
                 "'{}': label {} at index {} is outside [0, {})", labels_path, label_values[i], i,
                 options.num_classes);
    }
  }
  const std::int64_t rows = images.dims[1], cols = images.dims[2];
  Shape example = options.flatten ? Shape{rows * cols} : Shape{rows, cols};
  return InMemoryDataset::from_bytes(std::move(example), std::move(images.values),
                                     std::move(label_values),
                                     options.scale_to_unit ? 1.0f / 255.0f : 1.0f);
}

}  // namespace trib::data
