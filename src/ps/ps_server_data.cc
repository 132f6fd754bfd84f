// PsServer's part in `data.assignment: dynamic` (src/ps/chunk_dispenser.h): server 0 hands
// out chunks of the data on `claim`, follows each worker's progress through the data cursor
// of its applied pushes, and takes back what a departed worker left unread.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "ps/chunk_dispenser.h"
#include "ps/ps_wire.h"
#include "ps/replica_wire.h"
#include "trib/data/data_position.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {

net::Message PsServer::claim(const net::Message& m, const proto::Body& body, const std::string& origin) {
  const int worker = body.header.worker;
  TRIB_CHECK(dispenser_ != nullptr, InvalidArgument,
             "ps {}: worker {} claims data, but this server hands out none (data.assignment: dynamic; server 0)",
             o_.index, worker);
  nlohmann::json j = nlohmann::json::parse(body.text, nullptr, false);
  TRIB_CHECK(j.is_object() && j.value("batches_per_epoch", nlohmann::json()).is_number_integer() &&
                 j.value("chunk_batches", nlohmann::json()).is_number_integer() &&
                 j.value("total_batches", nlohmann::json()).is_number_integer() &&
                 j.value("want", nlohmann::json()).is_number_integer(),
             InvalidArgument,
             "ps {}: a data claim from worker {} needs batches_per_epoch, chunk_batches, total_batches and want", o_.index,
             worker);
  const ChunkPlan plan{j["batches_per_epoch"].get<std::int64_t>(), j["chunk_batches"].get<std::int64_t>(),
                       j["total_batches"].get<std::int64_t>()};
  const int want = std::clamp(j["want"].get<int>(), 1, 16);
  std::vector<Chunk> chunks;
  ChunkDispenser::Answer answer;
  const proto::Header& h = body.header;
  {
    std::lock_guard lock(mu_);
    // The same numbered claim again (retried at a backup that took over): the same answer.
    if (h.seq != 0 && h.generation == claim_generation_[worker] && h.seq == last_claim_[worker]) {
      stats_.duplicate_pushes++;
      proto::Body again = proto::make_body(proto::Type::claim);
      again.header.flags |= proto::kFlagReply;
      again.text = last_claim_answer_[worker];
      return net::Message{proto::kPsMethod, proto::encode(again), Tensor()};
    }
    // A resumed run's data starts where its checkpoint's step puts it: exact when every
    // worker steps together (sync), close under async (workers' steps differ).
    const int present = o_.present_workers < 0 ? o_.workers : o_.present_workers;
    answer = dispenser_->grant(worker, plan, want, chunks, o_.mode == Mode::async, start_step_ * present);
    nlohmann::json list = nlohmann::json::array();
    for (const Chunk& c : chunks) list.push_back({c.epoch, c.index, c.begin, c.end});
    const std::string text = nlohmann::json{{"chunks", list},
                                            {"answer", answer == ChunkDispenser::Answer::granted ? "granted"
                                                       : answer == ChunkDispenser::Answer::wait  ? "wait"
                                                                                                 : "exhausted"}}
                                 .dump();
    if (h.seq != 0) {
      claim_generation_[worker] = h.generation;
      last_claim_[worker] = h.seq;
      last_claim_answer_[worker] = text;
    }
    forward_locked(static_cast<std::uint8_t>(replica::Kind::request), worker, 0, origin, &m);
    proto::Body r = proto::make_body(proto::Type::claim);
    r.header.flags |= proto::kFlagReply;
    r.text = text;
    return net::Message{proto::kPsMethod, proto::encode(r), Tensor()};
  }
}

void PsServer::note_data_progress_locked(int worker, const std::string& cursor) {
  if (!dispenser_ || cursor.empty()) return;
  data::DataPosition position;
  try {
    position = data::DataPosition::parse(cursor);
  } catch (const Error&) {
    return;  // not a cursor this server reads: the worker holds no chunk
  }
  if (!position.has("chunk")) return;
  Chunk c;
  std::int64_t next = 0;
  if (parse_chunk_field(position.get("chunk"), c, next)) dispenser_->progress(worker, c.epoch, c.index, next);
}

void PsServer::release_data_locked(int worker) {
  if (!dispenser_) return;
  const std::int64_t batches = dispenser_->release(worker);
  if (batches > 0 && log_)
    log_(fmt::format("ps {}: worker {} left {} batch(es) of its data unread; the others read them", o_.index, worker,
                     batches));
}

}  // namespace trib::ps
