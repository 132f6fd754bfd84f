#include "cluster/scale_request.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::cluster {

namespace fs = std::filesystem;

fs::path scale_request_path(const fs::path& run_dir) { return run_dir / "scale-request"; }

void request_scale(const fs::path& run_dir, int workers) {
  const fs::path target = scale_request_path(run_dir);
  const fs::path tmp = run_dir / fmt::format(".scale-request.{}", ::getpid());
  {
    std::ofstream out(tmp);
    out << "workers " << workers << "\n";
    TRIB_CHECK(out.good(), IoError, "cannot write {}", tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  TRIB_CHECK(!ec, IoError, "cannot write {}: {}", target.string(), ec.message());
}

bool scale_request_pending(const fs::path& run_dir) { return fs::exists(scale_request_path(run_dir)); }

std::optional<int> take_scale_request(const fs::path& run_dir) {
  const fs::path p = scale_request_path(run_dir);
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  in.close();
  std::error_code ignored;
  fs::remove(p, ignored);
  std::string word;
  int workers = 0;
  std::string rest;
  std::stringstream s(text.str());
  const bool ok = static_cast<bool>(s >> word >> workers) && word == "workers" && !(s >> rest);
  TRIB_CHECK(ok, InvalidArgument, "{} holds '{}', expected 'workers N'", p.string(), text.str());
  return workers;
}

}  // namespace trib::cluster
