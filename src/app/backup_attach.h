// strategy.ps_replicas: a primary whose backup was lost takes a new one when a relaunched
// server publishes it (docs/fault_tolerance/parameter_servers.md, "Hot backups"). A thread
// of the ps role looks, a few times a second, at the backup address of every shard this
// process serves without a backup; a new address (not the one given up, not its own) is
// dialled, and the whole state goes to it under the server's lock (PsServer::send_state,
// BackupLink::attach): the backup then follows every later change.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trib/cluster/member.h"
#include "trib/net/transport.h"
#include "trib/ps/backup_link.h"
#include "trib/ps/ps_server.h"

namespace trib::app {

class BackupAttach {
 public:
  struct Shard {
    int shard = 0;
    ps::PsServer* server = nullptr;
    std::shared_ptr<ps::BackupLink> link;
    std::function<bool()> serving;  // whether this process serves the shard now
    std::string own_address;        // never its own backup
  };
  // `key`: where the backup of a shard publishes its address.
  BackupAttach(cluster::Member& member, std::shared_ptr<net::Transport> transport,
               std::function<std::string(int shard)> key);
  ~BackupAttach();  // stops the thread
  void add(Shard shard);  // before start()
  void start();
  void stop();

 private:
  void run();
  void look(const Shard& s);

  cluster::Member* member_;
  std::shared_ptr<net::Transport> transport_;
  std::function<std::string(int)> key_;
  std::vector<Shard> shards_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace trib::app
