#include "trib/cluster/coordinator.h"


#include <nlohmann/json.hpp>

#include "cluster/store_protocol.h"
#include "trib/core/error.h"

namespace trib::cluster {

using json = nlohmann::json;

Coordinator::Coordinator(std::shared_ptr<net::Transport> transport, CoordinatorOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {
  net::Handlers h;
  h.on_request = [this](net::Message m, const net::PeerIdentity& from) { return handle(std::move(m), from); };
  h.on_close = [this](const net::PeerIdentity& peer, std::string_view reason) { on_close(peer, reason); };
  listener_ = transport_->listen(options_.listen, std::move(h));
  store_.set("cluster/ps", std::to_string(options_.ps));
  store_.set("cluster/workers", std::to_string(options_.workers));
}

Coordinator::~Coordinator() {
  shutting_down_ = true;
  listener_.reset();
}

net::Message Coordinator::handle(net::Message request, const net::PeerIdentity& from) {
  json body = request.body.empty() ? json::object() : json::parse(request.body);
  net::Message reply;
  switch (request.method) {
    case proto::kStoreSet:
      store_.set(body.at("key").get<std::string>(), body.at("value").get<std::string>());
      return reply;
    case proto::kStoreGet: {
      auto v = store_.try_get(body.at("key").get<std::string>());
      reply.body = v ? json{{"found", true}, {"value", *v}}.dump() : json{{"found", false}}.dump();
      return reply;
    }
    case proto::kStoreAdd:
      reply.body = json{{"value", store_.add(body.at("key").get<std::string>(), body.at("delta").get<std::int64_t>())}}
                       .dump();
      return reply;
    case proto::kJoin: return join(request.body, from);
    case proto::kLeave: {
      std::string role = body.at("role").get<std::string>();
      int index = body.at("index").get<int>();
      store_.set(fmt::format("left/{}/{}", role, index), "1");
      if (role == "worker") {
        std::lock_guard lock(mu_);
        --workers_left_;
        cv_.notify_all();
      }
      return reply;
    }
    default:
      throw InvalidArgument(fmt::format("coordinator: unknown request 0x{:x} from {}", request.method,
                                        from.to_string()));
  }
}

net::Message Coordinator::join(const std::string& body_text, const net::PeerIdentity& from) {
  json body = json::parse(body_text);
  std::string role = body.at("role").get<std::string>();
  int limit = role == "ps" ? options_.ps : role == "worker" ? options_.workers : 0;
  TRIB_CHECK(limit > 0, InvalidArgument, "coordinator: role '{}' is not part of this job (ps: {}, workers: {})", role,
             options_.ps, options_.workers);
  // A member may ask for its index (the local launcher does, so that process "worker1" is
  // worker 1; `trib node` asks for its launcher rank's); otherwise it gets the lowest free one.
  const int requested = body.value("index", -1);
  int index = -1;
  {
    std::lock_guard lock(mu_);
    std::set<int>& taken = taken_[role];
    if (requested >= 0) {
      TRIB_CHECK(requested < limit, InvalidArgument, "coordinator: {} asked to be {} {}, but the job has {} (0-{})",
                 from.to_string(), role, requested, limit, limit - 1);
      TRIB_CHECK(!taken.contains(requested), InvalidArgument, "coordinator: {} asked to be {} {}, which has already joined",
                 from.to_string(), role, requested);
      index = requested;
    } else {
      for (int i = 0; i < limit && index < 0; ++i)
        if (!taken.contains(i)) index = i;
      TRIB_CHECK(index >= 0, InvalidArgument, "coordinator: the job already has its {} {} role(s); {} was refused",
                 limit, role, from.to_string());
    }
    taken.insert(index);
    if (role == "worker") ++workers_left_;
    members_[from.address] = {role, index};
  }
  store_.add("next/" + role, 1);  // how many have joined
  store_.set(fmt::format("member/{}/{}", role, index), from.address);
  json reply = {{"index", index},          {"job", options_.job_yaml}, {"run_dir", options_.run_dir}, {"resume", options_.resume},
                {"ps", options_.ps},       {"workers", options_.workers}};
  net::Message m;
  m.body = reply.dump();
  return m;
}

void Coordinator::on_close(const net::PeerIdentity& peer, std::string_view reason) {
  if (shutting_down_) return;
  std::pair<std::string, int> who;
  {
    std::lock_guard lock(mu_);
    auto it = members_.find(peer.address);
    if (it == members_.end()) return;  // connected but never joined (a status probe)
    who = it->second;
  }
  if (store_.try_get(fmt::format("left/{}/{}", who.first, who.second))) return;  // a clean exit
  if (options_.tolerate_lost_workers && who.first == "worker" && who.second != 0) {
    // The parameter servers go on without it; a relaunched process may take the index again.
    {
      std::lock_guard lock(mu_);
      taken_[who.first].erase(who.second);
      members_.erase(peer.address);
      --workers_left_;
      cv_.notify_all();
    }
    store_.set(fmt::format("membership/lost/worker/{}", who.second), std::string(reason));
    return;
  }
  fail(fmt::format("{} {} at {} was lost: {}", who.first, who.second, peer.address, reason));
}

void Coordinator::fail(const std::string& why) {
  std::lock_guard lock(mu_);
  if (!failed_) failure_ = why;
  failed_ = true;
  cv_.notify_all();
}

Outcome Coordinator::wait(Millis timeout) {
  std::unique_lock lock(mu_);
  auto all_joined = [&] {
    auto n = store_.try_get("next/worker");
    return n && std::stoi(*n) >= options_.workers;
  };
  bool done = cv_.wait_for(lock, timeout, [&] { return failed_ || (all_joined() && workers_left_ == 0); });
  TRIB_CHECK(done, Timeout, "coordinator: the job did not finish within {} s", timeout.count() / 1000);
  return failed_ ? Outcome{false, failure_} : Outcome{true, ""};
}

void Coordinator::shutdown_members() {
  shutting_down_ = true;
  for (const auto& c : listener_->connections()) {
    try {
      c->notify(net::Message{proto::kShutdown, "", Tensor()});
    } catch (const std::exception&) {
      // Already gone: nothing to tell.
    }
  }
}

}  // namespace trib::cluster
