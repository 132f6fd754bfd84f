// Hosts on one machine for the multi-host tests: each host a network namespace with its own
// address, joined by veth pairs to a bridge in a hub namespace, so that roles reach each other
// only across the bridge, as on separate hosts (loopback hides binding bugs). A host's link
// can be made bad where the bridge forwards its packets: delayed and lossy (trib-netem on an
// NFQUEUE, for kernels without tc's netem), or cut altogether (iptables DROP). Every address (10.99.0.0/24) exists only inside
// the namespaces a lab creates, and everything is removed when the lab is destroyed.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/trib_process.h"

namespace trib::testing {

// Runs a command to completion; its exit code, with its output in `out`.
inline int run_command(const std::vector<std::string>& argv, std::string& out) {
  cluster::ChildProcess p(argv[0], argv, {});
  auto until = Clock::now() + 10s;
  while (!(p.poll_exit() && p.output_closed()) && Clock::now() < until) {
    for (const std::string& line : p.read_lines()) out += line + "\n";
    std::this_thread::sleep_for(5ms);
  }
  if (!p.poll_exit()) return -1;
  for (const std::string& line : p.read_lines()) out += line + "\n";
  int st = *p.poll_exit();
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

class NamespaceLab {
 public:
  struct Host {
    std::string ns;
    std::string address;
  };

  explicit NamespaceLab(int hosts = 3) : ip_(find_program("ip")) {
    std::string tag = "trib" + std::to_string(::getpid());
    hub_ = tag + "-hub";
    for (int i = 0; i < hosts; ++i) hosts_.push_back({tag + "-" + std::to_string(i), "10.99.0." + std::to_string(i + 1)});
  }
  ~NamespaceLab() {
    impairments_.clear();  // stop the delayers before their namespaces go
    std::string ignored;
    for (const std::string& ns : created_) run_command({ip_, "netns", "del", ns}, ignored);
  }
  NamespaceLab(const NamespaceLab&) = delete;
  NamespaceLab& operator=(const NamespaceLab&) = delete;

  // Why namespaces cannot be made here, or "" once they are made.
  std::string create() {
    if (::geteuid() != 0) return "needs root (ip netns add)";
    if (ip_.empty()) return "needs the ip command (Debian: apt-get install iproute2)";
    if (std::string e = add_namespace(hub_); !e.empty()) return e;
    for (const Host& h : hosts_)
      if (std::string e = add_namespace(h.ns); !e.empty()) return e;
    std::vector<std::vector<std::string>> steps{{"-n", hub_, "link", "add", "br0", "type", "bridge"},
                                                {"-n", hub_, "link", "set", "br0", "up"}};
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      const Host& h = hosts_[i];
      std::string end = "v" + std::to_string(i);
      steps.push_back({"-n", hub_, "link", "add", end, "type", "veth", "peer", "name", "eth0", "netns", h.ns});
      steps.push_back({"-n", hub_, "link", "set", end, "master", "br0", "up"});
      steps.push_back({"-n", h.ns, "addr", "add", h.address + "/24", "dev", "eth0"});
      steps.push_back({"-n", h.ns, "link", "set", "eth0", "up"});
      steps.push_back({"-n", h.ns, "link", "set", "lo", "up"});
    }
    for (std::vector<std::string>& s : steps) {
      s.insert(s.begin(), ip_);
      std::string out;
      if (run_command(s, out) != 0) return "cannot set up the namespaces' network: " + out;
    }
    return "";
  }

  const Host& host(int i) const { return hosts_[static_cast<std::size_t>(i)]; }
  std::vector<std::string> exec_in(int i) const { return {ip_, "netns", "exec", host(i).ns}; }

  // Why links cannot be made bad here, or "": needs iptables and trib-netem (`netem`: its path).
  static std::string impairment_missing(const std::string& netem) {
    if (find_program("iptables").empty()) return "needs iptables (Debian: apt-get install iptables)";
    if (netem.empty() || ::access(netem.c_str(), X_OK) != 0)
      return "needs trib-netem (built where libnetfilter-queue-dev is installed)";
    return "";
  }

  // Every packet host `i` sends is held `delay_ms` and dropped with `loss_percent`, as `tc
  // netem delay .. loss ..` on its link's egress does. The packets are queued where the bridge
  // forwards them (trib-netem's header says why not on the host). "" once it is in place.
  std::string impair(int i, const std::string& netem, double delay_ms, double loss_percent) {
    if (std::string e = heal(i); !e.empty()) return e;
    if (std::string e = bridge_through_iptables(); !e.empty()) return e;
    std::vector<std::string> argv{ip_, "netns", "exec", hub_};
    argv.insert(argv.end(), {netem, "--queue", std::to_string(i), "--delay-ms", std::to_string(delay_ms), "--loss",
                             std::to_string(loss_percent), "--seed", std::to_string(i + 1)});
    auto delayer = std::make_unique<cluster::ChildProcess>("netem" + std::to_string(i), argv,
                                                           std::map<std::string, std::string>{});
    std::string said;
    for (auto until = Clock::now() + 10s; said.find("trib-netem: queue") == std::string::npos;) {
      for (const std::string& line : delayer->read_lines()) said += line + "\n";
      if (delayer->poll_exit() || Clock::now() > until) return "trib-netem did not start: " + said;
      std::this_thread::sleep_for(5ms);
    }
    impairments_.push_back(std::move(delayer));
    return add_rule(i, {"--physdev-in", link(i), "-j", "NFQUEUE", "--queue-num", std::to_string(i)});
  }

  // Host `i`'s link carries nothing either way (100% loss), until heal(i).
  std::string partition(int i) {
    if (std::string e = heal(i); !e.empty()) return e;
    if (std::string e = bridge_through_iptables(); !e.empty()) return e;
    if (std::string e = add_rule(i, {"--physdev-in", link(i), "-j", "DROP"}); !e.empty()) return e;
    return add_rule(i, {"--physdev-out", link(i), "--physdev-is-bridged", "-j", "DROP"});
  }

  // Makes a TCP listener on host `owner`'s loopback only (librdkafka's mock broker: it binds
  // 127.0.0.1 and advertises 127.0.0.1:PORT) reachable from every other host at that very
  // address, across the links, with NAT: `owner` takes what reaches its own address's `port` to
  // its loopback, and every other host sends what it addresses to 127.0.0.1:`port` to `owner`'s
  // address, from its own (a packet with a loopback source is dropped as martian once it leaves
  // a host). route_localnet lets both route loopback addresses past those rules. "" once in place;
  // the rules go with the namespaces.
  std::string share_loopback_port(int owner, int port) {
    const std::string p = std::to_string(port), to = host(owner).address;
    for (int i = 0; i < static_cast<int>(hosts_.size()); ++i) {
      std::vector<std::vector<std::string>> steps{{"sysctl", "-q", "-w", "net.ipv4.conf.all.route_localnet=1"}};
      if (i == owner)
        steps.push_back({"iptables", "-t", "nat", "-A", "PREROUTING", "-p", "tcp", "-d", to, "--dport", p, "-j",
                         "DNAT", "--to-destination", "127.0.0.1:" + p});
      else
        steps.insert(steps.end(), {{"iptables", "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport",
                                    p, "-j", "DNAT", "--to-destination", to + ":" + p},
                                   {"iptables", "-t", "nat", "-A", "POSTROUTING", "-p", "tcp", "-s", "127.0.0.1", "-d",
                                    to, "--dport", p, "-j", "SNAT", "--to-source", host(i).address}});
      for (std::vector<std::string>& s : steps) {
        s[0] = find_program(s[0]);
        if (s[0].empty()) return "needs sysctl and iptables (Debian: apt-get install procps iptables)";
        s.insert(s.begin(), {ip_, "netns", "exec", host(i).ns});
        std::string out;
        if (run_command(s, out) != 0) return "cannot forward port " + p + " in " + host(i).ns + ": " + out;
      }
    }
    return "";
  }

  // How many TCP connections share_loopback_port(owner, `port`) forwarded at host `i`: those
  // host `i` opened to 127.0.0.1:`port` (another host), or those it took in from the others
  // (the owner). NAT rules see the first packet of each connection only. -1: not readable.
  long forwarded_connections(int i, int port) const {
    std::string out;
    if (run_command({ip_, "netns", "exec", host(i).ns, find_program("iptables"), "-t", "nat", "-L", "-v", "-n", "-x"},
                    out) != 0)
      return -1;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
      if (line.find(" DNAT ") != std::string::npos && line.find("dpt:" + std::to_string(port) + " ") != std::string::npos)
        return std::stol(line);
    return -1;
  }

  // Host `i`'s link is good again (a delayer already started stays, idle).
  std::string heal(int i) {
    for (const std::vector<std::string>& rule : rules_[i]) {
      std::vector<std::string> del{"-D", "FORWARD", "-m", "physdev"};
      del.insert(del.end(), rule.begin(), rule.end());
      if (std::string e = hub_iptables(del); !e.empty()) return e;
    }
    rules_[i].clear();
    return "";
  }

 private:
  std::string add_namespace(const std::string& ns) {
    std::string out;
    if (run_command({ip_, "netns", "add", ns}, out) != 0) return "cannot create a network namespace: " + out;
    created_.push_back(ns);
    return "";
  }

  static std::string link(int i) { return "v" + std::to_string(i); }  // host i's end in the hub

  // Bridged packets pass the hub's iptables FORWARD chain (br_netfilter, per namespace).
  std::string bridge_through_iptables() {
    std::string out;
    if (run_command({ip_, "netns", "exec", hub_, "sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1"}, out) != 0)
      return "cannot pass bridged packets through iptables (br_netfilter): " + out;
    return "";
  }

  std::string add_rule(int i, const std::vector<std::string>& rule) {
    std::vector<std::string> add{"-A", "FORWARD", "-m", "physdev"};
    add.insert(add.end(), rule.begin(), rule.end());
    if (std::string e = hub_iptables(add); !e.empty()) return e;
    rules_[i].push_back(rule);
    return "";
  }

  std::string hub_iptables(const std::vector<std::string>& args) {
    std::vector<std::string> argv{ip_, "netns", "exec", hub_, find_program("iptables")};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    if (run_command(argv, out) != 0) return "iptables failed in " + hub_ + ": " + out;
    return "";
  }

  std::string ip_;
  std::string hub_;
  std::vector<Host> hosts_;
  std::vector<std::string> created_;
  std::vector<std::unique_ptr<cluster::ChildProcess>> impairments_;
  std::map<int, std::vector<std::vector<std::string>>> rules_;  // per host: the hub's rules for its link
};

}  // namespace trib::testing
