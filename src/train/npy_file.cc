#include "train/npy_file.h"

#include <bit>
#include <fstream>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::train {

static_assert(std::endian::native == std::endian::little, "the header says '<f4'");

void write_npy_f32(const std::filesystem::path& path, const std::vector<float>& values,
                   const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  TRIB_CHECK(n == static_cast<std::int64_t>(values.size()), InvalidArgument,
             "{}: {} values do not fill shape [{}]", path.string(), values.size(), fmt::join(dims, ", "));
  std::string shape = fmt::format("{}", fmt::join(dims, ", "));
  if (dims.size() == 1) shape += ",";
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", shape);
  // Magic (6) + version (2) + length (2) + header + '\n', padded with spaces to 64 bytes.
  const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  TRIB_CHECK(out.good(), IoError, "cannot write {}", path.string());
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  TRIB_CHECK(out.good(), IoError, "cannot write {} (disk full?)", path.string());
}

}  // namespace trib::train
