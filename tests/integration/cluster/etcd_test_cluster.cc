#include "integration/cluster/etcd_test_cluster.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trib/core/error.h"

namespace trib::cluster::testing {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// Ports the kernel picks, all held at once so that they differ, then released for etcd.
std::vector<int> free_ports(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw IoError("etcd test cluster: cannot find a free loopback port");
    fds.push_back(fd);
    ports.push_back(ntohs(a.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

std::size_t append(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// GET (or POST `post`) http://127.0.0.1:port/path; "" if it fails.
std::string fetch(int port, const std::string& path, const char* post = nullptr) {
  CURL* c = curl_easy_init();
  if (!c) return "";
  std::string url = fmt::format("http://127.0.0.1:{}{}", port, path), body;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  if (post) curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  bool ok = curl_easy_perform(c) == CURLE_OK;
  curl_easy_cleanup(c);
  return ok ? body : "";
}

// {"health":"true"} once the member has a leader.
bool healthy(int port) { return fetch(port, "/health").find("\"health\":\"true\"") != std::string::npos; }

// A quoted decimal field of a JSON reply ("member_id":"123"), found without a parser.
std::string field(const std::string& body, const std::string& name) {
  auto at = body.find("\"" + name + "\":\"");
  if (at == std::string::npos) return "";
  at += name.size() + 4;
  return body.substr(at, body.find('"', at) - at);
}

}  // namespace

std::optional<std::string> EtcdTestCluster::binary() {
  if (const char* env = std::getenv("TRIB_ETCD"); env && *env) return std::string(env);
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    fs::path p = fs::path(d) / "etcd";
    if (!d.empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return std::nullopt;
}

EtcdTestCluster::EtcdTestCluster(int members) {
  auto etcd = binary();
  TRIB_CHECK(etcd.has_value(), NotFound, "etcd test cluster: no etcd binary on PATH (Debian: etcd-server)");
  char tmpl[] = "/tmp/trib-etcd-XXXXXX";
  TRIB_CHECK(::mkdtemp(tmpl) != nullptr, IoError, "etcd test cluster: cannot create a directory in /tmp");
  dir_ = tmpl;
  // A port found free may be taken by another test before etcd binds it: start again on
  // fresh ports, a few times.
  for (int attempt = 1;; ++attempt) {
    try {
      start(*etcd, members, attempt);
      return;
    } catch (const Error&) {
      members_.clear();
      std::error_code ec;
      if (attempt == 3) {
        fs::remove_all(dir_, ec);
        throw;
      }
      for (const auto& entry : fs::directory_iterator(dir_, ec)) fs::remove_all(entry.path(), ec);
    }
  }
}

void EtcdTestCluster::start(const std::string& etcd, int members, int attempt) {
  std::vector<int> ports = free_ports(2 * members);
  std::vector<std::string> initial;
  for (int i = 0; i < members; ++i) {
    Member m;
    m.name = fmt::format("m{}", i);
    m.client_port = ports[2 * i];
    m.peer_port = ports[2 * i + 1];
    initial.push_back(fmt::format("{}=http://127.0.0.1:{}", m.name, m.peer_port));
    members_.push_back(std::move(m));
  }
  for (Member& m : members_) {
    std::string client = fmt::format("http://127.0.0.1:{}", m.client_port);
    std::string peer = fmt::format("http://127.0.0.1:{}", m.peer_port);
    // Short raft timers so a lost leader is replaced in well under a second.
    std::vector<std::string> argv = {etcd,
                                     "--name", m.name,
                                     "--data-dir", (dir_ / m.name).string(),
                                     "--listen-client-urls", client,
                                     "--advertise-client-urls", client,
                                     "--listen-peer-urls", peer,
                                     "--initial-advertise-peer-urls", peer,
                                     "--initial-cluster", fmt::format("{}", fmt::join(initial, ",")),
                                     "--initial-cluster-state", "new",
                                     "--initial-cluster-token", fmt::format("{}-{}", dir_.filename().string(), attempt),
                                     "--heartbeat-interval", "50",
                                     "--election-timeout", "500",
                                     "--logger", "zap",
                                     "--log-outputs", (dir_ / (m.name + ".log")).string()};
    m.process = std::make_unique<ChildProcess>(m.name, argv, std::map<std::string, std::string>{});
  }
  for (int i = 0; i < size(); ++i)
    if (!wait_healthy(i, 30s))
      throw Unavailable(fmt::format("etcd test cluster: member {} is not healthy after 30 s ({}); log:\n{}",
                                    members_[i].name,
                                    running(i) ? "still running" : members_[i].process->describe_exit(), log_tail(i)));
}

EtcdTestCluster::~EtcdTestCluster() {
  members_.clear();  // ChildProcess kills and reaps each member
  std::error_code ec;
  if (std::getenv("TRIB_KEEP_ETCD_DIR") == nullptr) fs::remove_all(dir_, ec);
}

std::string EtcdTestCluster::url() const {
  std::vector<std::string> eps;
  for (const Member& m : members_) eps.push_back(fmt::format("127.0.0.1:{}", m.client_port));
  return fmt::format("etcd://{}", fmt::join(eps, ","));
}

EtcdOptions EtcdTestCluster::options(const std::string& job) const {
  EtcdOptions o = etcd_options(url(), job);
  o.operation_timeout = 15s;
  o.attempt_timeout = 1s;
  o.connect_timeout = 300ms;
  return o;
}

void EtcdTestCluster::kill(int member) {
  Member& m = members_.at(static_cast<std::size_t>(member));
  m.process->signal(SIGKILL);
  auto until = Clock::now() + 10s;
  while (!m.process->poll_exit() && Clock::now() < until) {
    m.process->read_lines();
    std::this_thread::sleep_for(10ms);
  }
  TRIB_CHECK(m.process->exited(), Timeout, "etcd test cluster: member {} did not die from SIGKILL", m.name);
}

void EtcdTestCluster::signal(int member, int sig) { members_.at(static_cast<std::size_t>(member)).process->signal(sig); }

int EtcdTestCluster::leader() {
  for (int i = 0; i < size(); ++i) {
    if (!running(i)) continue;
    std::string status = fetch(members_[i].client_port, "/v3/maintenance/status", "{}");
    std::string id = field(status, "member_id");
    if (!id.empty() && id == field(status, "leader")) return i;
  }
  return -1;
}

bool EtcdTestCluster::running(int member) {
  Member& m = members_.at(static_cast<std::size_t>(member));
  m.process->read_lines();  // keep its pipe drained
  return !m.process->poll_exit();
}

bool EtcdTestCluster::wait_healthy(int member, std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    if (!running(member)) return false;
    if (healthy(members_.at(static_cast<std::size_t>(member)).client_port)) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::string EtcdTestCluster::log_tail(int member) const {
  std::ifstream in(dir_ / (members_.at(static_cast<std::size_t>(member)).name + ".log"));
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

}  // namespace trib::cluster::testing
