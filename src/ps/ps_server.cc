#include "trib/ps/ps_server.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "ps/chunk_dispenser.h"
#include "ps/push_layout.h"
#include "ps/replica_wire.h"
#include "ps/ps_wire.h"
#include "ps/slice_io.h"
#include "ps/stats_json.h"
#include "ps/worker_roster.h"
#include "trib/checkpoint/checkpoint.h"
#include "checkpoint/crc32c.h"

namespace trib::ps {

namespace {

// Longest a pull may hold its connection's handler waiting for the mode to allow its step;
// the worker asks again after that (each wait ends at once when the step is allowed).
constexpr std::uint32_t kMaxPullWaitMs = 10000;
// Steps beyond this are refused: clocks add one to a pushed step.
constexpr std::int64_t kMaxStep = std::int64_t{1} << 62;

net::Message reply(proto::Body body, Tensor tensor = {}) {
  body.header.flags |= proto::kFlagReply;
  return net::Message{proto::kPsMethod, proto::encode(body), std::move(tensor)};
}

}  // namespace

std::uint32_t values_crc32c(const Tensor& flat) { return crc32c(flat.data<float>(), flat.nbytes()); }

Mode parse_mode(const std::string& name) {
  if (name == "sync") return Mode::sync;
  if (name == "async") return Mode::async;
  if (name == "bounded") return Mode::bounded;
  if (name == "averaging") return Mode::averaging;
  throw InvalidArgument(fmt::format("unknown mode '{}': expected sync, async, bounded or averaging", name));
}

PsServer::PsServer(PsServerOptions options) : o_(std::move(options)) {
  slices_ = o_.placement.slices_of(o_.index);
  for (const Slice& s : slices_) flat_elements_ += s.elements;
  values_ = Tensor::zeros(DType::f32, Shape{flat_elements_});
  accumulator_ = Tensor::zeros(DType::f32, Shape{flat_elements_});
  clocks_.assign(o_.workers, 0);
  floor_.assign(o_.workers, 0);
  const int present = o_.present_workers < 0 ? o_.workers : std::min(o_.present_workers, o_.workers);
  roster_ = std::make_unique<WorkerRoster>(present, o_.workers);
  skip_notice_.assign(o_.workers, false);
  contributed_.assign(o_.workers, false);
  rejoined_.assign(o_.workers, false);
  joiner_.assign(o_.workers, false);
  seq_generation_.assign(o_.workers, 0);
  last_seq_.assign(o_.workers, 0);
  claim_generation_.assign(o_.workers, 0);
  last_claim_.assign(o_.workers, 0);
  last_claim_answer_.assign(o_.workers, std::string());
  cursors_.assign(o_.workers, std::string());
  pool_ = std::make_shared<PoolAllocator>();
  if (o_.dispense_data) dispenser_ = std::make_unique<ChunkDispenser>();
}

PsServer::~PsServer() = default;

void PsServer::connection_closed(const net::PeerIdentity& peer) {
  std::lock_guard lock(mu_);
  const int worker = roster_->worker_at(peer.address);
  if (worker < 0) return;
  lose_locked(worker);
  forward_locked(static_cast<std::uint8_t>(replica::Kind::closed), worker, 0, peer.address);
}

void PsServer::lose_locked(int worker) {
  if (!roster_->lose(worker)) return;  // done already (a clean exit closes its connection too)
  stats_.workers_lost++;
  release_data_locked(worker);
  contributed_[worker] = false;
  // The round in progress may have waited only for this worker.
  complete_round(round_step_, last_lr_);
  changed_.notify_all();
}

void PsServer::note_worker(int worker, proto::Type type, const net::PeerIdentity& from) {
  check_worker(worker, type);
  std::lock_guard lock(mu_);
  const bool round_open = contributions_ > 0;
  const WorkerRoster::Seen seen = roster_->note(worker, from.address, round_open);
  if (seen == WorkerRoster::Seen::readmitted || seen == WorkerRoster::Seen::joined)
    readmitted_locked(worker, seen == WorkerRoster::Seen::joined);
  // The backup knows the same connections (a later close names one), and re-admits a worker
  // at the same point of the order, not at its next push.
  if (seen != WorkerRoster::Seen::known)
    forward_locked(static_cast<std::uint8_t>(replica::Kind::noted), worker, 0, from.address);
}

std::int64_t PsServer::resume_step(int worker) const {
  switch (o_.mode) {
    case Mode::sync: return start_step_ + version_;  // skipped rounds take the same step again
    case Mode::averaging: return round_;
    case Mode::async:
    case Mode::bounded: return clocks_[worker];
  }
  return start_step_;
}

std::uint64_t PsServer::max_request_bytes() const {
  // A push's values never exceed the slices (sparse rows are at most a slice's rows), and
  // each sparse row adds one 8-byte id; then the fixed parts and a checkpoint path.
  std::uint64_t rows = 0;
  for (const Slice& s : slices_) rows += static_cast<std::uint64_t>(s.row_end - s.row_begin);
  const std::uint64_t descriptor = 8 + 8;  // a flat tensor: prefix and one dimension
  return descriptor + proto::kHeaderBytes + proto::kSparseEntryBytes * slices_.size() + 8 * rows +
         4 * static_cast<std::uint64_t>(flat_elements_) + proto::kMaxTextBytes;
}

net::Message PsServer::handle(net::Message m, const net::PeerIdentity& from) {
  {
    std::lock_guard lock(mu_);
    stats_.requests++;
    stats_.bytes_in += m.body.size() + (m.tensor.defined() ? m.tensor.nbytes() : 0);
  }
  try {
    TRIB_CHECK(m.method == proto::kPsMethod, InvalidArgument, "request method 0x{:x} is not a PS request (0x{:x})",
               m.method, proto::kPsMethod);
    // The sender is judged on the fixed header before the rest of the body is decoded.
    check_generation(proto::decode_header(m.body));
    proto::Body body = proto::decode(m.body);
    TRIB_CHECK((body.header.flags & proto::kFlagReply) == 0, InvalidArgument, "a {} reply sent as a request",
               proto::type_name(body.type()));
    check_not_fenced();
    net::Message answer = dispatch(m, body, from);
    check_not_fenced();  // this request found out: the worker retries it at the new primary
    return answer;
  } catch (const InvalidArgument& e) {
    // The transport sends this back as the reply; the server goes on serving.
    {
      std::lock_guard lock(mu_);
      stats_.refused++;
    }
    throw InvalidArgument(fmt::format("ps {} refused a request from {}: {}", o_.index, from.to_string(), e.what()));
  }
}

void PsServer::check_not_fenced() const {
  TRIB_CHECK(!fenced_.load(), Unavailable,
             "ps {} was replaced: its backup took the shard over while it was cut off, so it serves no more", o_.index);
}

net::Message PsServer::dispatch(const net::Message& m, const proto::Body& body, const net::PeerIdentity& from) {
  const proto::Type type = body.type();
  if (type == proto::Type::pull || type == proto::Type::push || type == proto::Type::done ||
      type == proto::Type::claim)
    note_worker(body.header.worker, type, from);
  switch (type) {
    case proto::Type::init: return init(m, body, from.address);
    case proto::Type::restore: return restore(m, body, from.address);
    case proto::Type::pull: return pull(body);
    case proto::Type::push: return push(m, body, from.address);
    case proto::Type::save: return save(body.text);
    case proto::Type::done: return done(m, body.header.worker, from.address);
    case proto::Type::claim: return claim(m, body, from.address);
    case proto::Type::stats: {
      proto::Body r = proto::make_body(proto::Type::stats);
      r.text = stats_to_json(stats());
      return reply(std::move(r));
    }
  }
  throw InvalidArgument(fmt::format("unknown PS message type {}", body.header.type));
}

void PsServer::check_generation(const proto::Header& h) {
  const auto type = static_cast<proto::Type>(h.type);
  if (type != proto::Type::push && type != proto::Type::pull && type != proto::Type::done &&
      type != proto::Type::claim)
    return;
  if (h.worker < 0 || h.worker >= o_.workers) return;  // check_worker names it after decoding
  std::int64_t floor;
  {
    std::lock_guard lock(mu_);
    floor = floor_[h.worker];
    if (h.generation >= floor) return;
    stats_.stale_generation++;
  }
  throw InvalidArgument(fmt::format(
      "ps {}: a {} from worker {} of generation {}, but that worker was replaced (generations before {} are "
      "refused): it comes from an evicted process",
      o_.index, proto::type_name(type), h.worker, h.generation, floor));
}

void PsServer::worker_lost(int worker, std::int64_t generation) {
  check_worker(worker, proto::Type::done);
  std::lock_guard lock(mu_);
  floor_[worker] = std::max(floor_[worker], generation);
  lose_locked(worker);
  forward_locked(static_cast<std::uint8_t>(replica::Kind::lost), worker, generation, "");
}

void PsServer::worker_joined(int worker, std::int64_t incarnation) {
  check_worker(worker, proto::Type::done);
  std::lock_guard lock(mu_);
  // Only a newer holder re-admits the index: the same incarnation listed again (its
  // connection closed before the coordinator noticed) is still the lost process.
  if (incarnation <= floor_[worker]) return;
  floor_[worker] = incarnation;
  forward_locked(static_cast<std::uint8_t>(replica::Kind::joined), worker, incarnation, "");
  if (!roster_->lost(worker)) return;
  const bool joined = roster_->readmit(worker, contributions_ > 0);
  readmitted_locked(worker, joined);
}

void PsServer::readmitted_locked(int worker, bool joined) {
  if (joined) stats_.workers_joined++;
  else stats_.workers_readmitted++;
  release_data_locked(worker);  // an earlier holder's unread chunks
  skip_notice_[worker] = false;
  rejoined_[worker] = true;
  joiner_[worker] = joined;
  // Bounded staleness: a returning worker starts no further back than the slowest of the
  // others, so it holds nobody back while it catches up.
  if (o_.mode == Mode::bounded) {
    const std::int64_t slowest = min_clock(worker);
    if (slowest != std::numeric_limits<std::int64_t>::max()) clocks_[worker] = std::max(clocks_[worker], slowest);
  }
  changed_.notify_all();
}

void PsServer::check_worker(int worker, proto::Type type) const {
  TRIB_CHECK(worker >= 0 && worker < o_.workers, InvalidArgument, "ps {}: {} from unknown worker {} (the job has {})",
             o_.index, proto::type_name(type), worker, o_.workers);
}

net::Message PsServer::init(const net::Message& m, const proto::Body& body, const std::string& origin) {
  TRIB_CHECK(m.tensor.defined() && m.tensor.dtype() == DType::f32 && m.tensor.numel() == flat_elements_,
             InvalidArgument, "ps {}: initial values are {}, expected f32 of {} elements", o_.index,
             m.tensor.defined() ? m.tensor.spec_string() : "missing", flat_elements_);
  TRIB_CHECK(body.header.step >= 0 && body.header.step < kMaxStep, InvalidArgument, "ps {}: init at step {}",
             o_.index, body.header.step);
  check_restart_generation(body.header);
  std::lock_guard lock(mu_);
  values_.copy_from(m.tensor.reshape(values_.shape()));
  slots_.clear();
  start_at_locked(body.header.step, body.header.generation);
  forward_locked(static_cast<std::uint8_t>(replica::Kind::request), 0, 0, origin, &m);
  return reply(proto::make_body(proto::Type::init));
}

void PsServer::check_restart_generation(const proto::Header& h) const {
  std::lock_guard lock(mu_);
  TRIB_CHECK(h.generation >= restart_generation_, InvalidArgument,
             "ps {}: a {} of generation {}, but the job already continues in generation {} (a stale chief?)", o_.index,
             proto::type_name(static_cast<proto::Type>(h.type)), h.generation, restart_generation_);
}

void PsServer::start_at_locked(std::int64_t step, std::int64_t generation) {
  if (initialized_ && generation > restart_generation_) stats_.rollbacks++;
  restart_generation_ = std::max(restart_generation_, generation);
  start_step_ = step;
  std::fill(clocks_.begin(), clocks_.end(), start_step_);
  // Nothing from before: positions, rounds and notices start again with the step.
  std::fill(cursors_.begin(), cursors_.end(), std::string());
  std::fill(skip_notice_.begin(), skip_notice_.end(), false);
  std::fill(contributed_.begin(), contributed_.end(), false);
  accumulator_.fill(0.0f);
  contributions_ = 0;
  round_nonfinite_ = false;
  version_ = 0;
  round_ = start_step_;
  initialized_ = true;
  changed_.notify_all();
}

bool PsServer::behind_locked(const proto::Header& h) const {
  if (h.generation < restart_generation_) return true;
  return !initialized_ && !(static_cast<proto::Type>(h.type) == proto::Type::pull && h.step < 0);
}

net::Message PsServer::rolled_back_locked(proto::Type type) {
  stats_.rolled_back_requests++;
  proto::Body r = proto::make_body(type);
  r.header.flags = proto::kFlagRolledBack;
  r.header.generation = restart_generation_;
  return reply(std::move(r));
}

// A restore is a series of requests from the chief, which read the checkpoint: one per slot
// ({"slot": key, "name": slot} with the slot's tensor), then {"step": N} with the values of
// every slice, flat, which applies them all.
net::Message PsServer::restore(const net::Message& m, const proto::Body& body, const std::string& origin) {
  const std::string& text = body.text;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {  // malformed, or a number out of range
    throw InvalidArgument(fmt::format("ps {}: a restore request whose text is not JSON", o_.index));
  }
  TRIB_CHECK(j.is_object() && (j.contains("slot") != j.contains("step")), InvalidArgument,
             "ps {}: a restore request names neither a slot nor the step", o_.index);
  check_restart_generation(body.header);
  std::lock_guard lock(mu_);
  if (j.contains("slot")) {
    TRIB_CHECK(j["slot"].is_string() && j.value("name", nlohmann::json()).is_string() && m.tensor.defined(),
               InvalidArgument, "ps {}: a restore slot needs a slot key, a name and a tensor", o_.index);
    const std::string key = j["slot"], name = j["name"];
    const Slice* slice = nullptr;
    for (const Slice& s : slices_)
      if (s.key() == key) slice = &s;
    TRIB_CHECK(slice != nullptr, InvalidArgument, "ps {}: restore of slot '{}' of '{}', which this server does not hold",
               o_.index, name, key);
    const Shape shape = slice_shape_of(variable_info(o_.variables, slice->variable), *slice);
    TRIB_CHECK(m.tensor.shape().rank() == 0 || (m.tensor.dtype() == DType::f32 && m.tensor.shape() == shape),
               InvalidArgument, "ps {}: slot '{}' of '{}' is {}, expected a scalar or f32 {}", o_.index, name, key,
               m.tensor.spec_string(), shape.to_string());
    restore_slots_.set(key, name, m.tensor.clone());
    forward_locked(static_cast<std::uint8_t>(replica::Kind::request), 0, 0, origin, &m);
    return reply(proto::make_body(proto::Type::restore));
  }
  TRIB_CHECK(j["step"].is_number_integer() && j["step"].get<std::int64_t>() >= 0 &&
                 j["step"].get<std::int64_t>() < kMaxStep,
             InvalidArgument, "ps {}: restore at step {}", o_.index, j["step"].dump());
  TRIB_CHECK(m.tensor.defined() && m.tensor.dtype() == DType::f32 && m.tensor.numel() == flat_elements_,
             InvalidArgument, "ps {}: restored values are {}, expected f32 of {} elements", o_.index,
             m.tensor.defined() ? m.tensor.spec_string() : "missing", flat_elements_);
  values_.copy_from(m.tensor.reshape(values_.shape()));
  slots_.clear();
  for (const auto& [key, slot] : restore_slots_.keys()) slots_.set(key, slot, restore_slots_.get(key, slot).clone());
  restore_slots_.clear();
  start_at_locked(j["step"].get<std::int64_t>(), body.header.generation);
  forward_locked(static_cast<std::uint8_t>(replica::Kind::request), 0, 0, origin, &m);
  proto::Body r = proto::make_body(proto::Type::restore);
  r.header.step = start_step_;
  return reply(std::move(r));
}

// The slowest worker still training; a worker that took its last step holds no one back.
std::int64_t PsServer::min_clock(int except) const {
  std::int64_t slowest = std::numeric_limits<std::int64_t>::max();
  for (std::size_t w = 0; w < clocks_.size(); ++w)
    if (static_cast<int>(w) != except && roster_->active(static_cast<int>(w))) slowest = std::min(slowest, clocks_[w]);
  return slowest;
}

int PsServer::needed_contributions() const {
  return std::max(1, roster_->counted() - o_.backup_workers);
}

net::Message PsServer::done(const net::Message& m, int worker, const std::string& origin) {
  check_worker(worker, proto::Type::done);
  std::lock_guard lock(mu_);
  roster_->finish(worker);
  contributed_[worker] = false;
  release_data_locked(worker);  // a worker that stops early (SIGTERM) leaves its chunk to others
  // The round in progress may have waited only for this worker.
  complete_round(round_step_, last_lr_);
  forward_locked(static_cast<std::uint8_t>(replica::Kind::request), worker, 0, origin, &m);
  changed_.notify_all();
  return reply(proto::make_body(proto::Type::done));
}

void PsServer::complete_round(std::int64_t step, float lr) {
  if (!round_complete_locked()) return;
  roster_->close_round();
  if (round_nonfinite_) {
    // Nothing is applied and the step does not advance: every worker of this round is told
    // (its pull answers "skipped") and takes the same step again.
    for (int w = 0; w < o_.workers; ++w)
      if (contributed_[w]) skip_notice_[w] = true;
    stats_.skipped_rounds++;
  } else {
    close_round_values(step, lr);
  }
  std::fill(contributed_.begin(), contributed_.end(), false);
  round_nonfinite_ = false;
  accumulator_.fill(0.0f);
  contributions_ = 0;
}

void PsServer::close_round_values(std::int64_t step, float lr) {
  if (contributions_ == 0) {
    // Only replayed pushes (ps_server_replay.cc): their batches were applied in earlier rounds.
    if (o_.mode == Mode::sync) ++version_;
    return;
  }
  const float inv = 1.0f / static_cast<float>(contributions_);
  float* acc = accumulator_.data<float>();
  if (o_.mode == Mode::sync) {
    for (std::int64_t i = 0; i < flat_elements_; ++i) acc[i] *= inv;
    apply_gradients(accumulator_, dense_layout(slices_), Tensor(), lr, version_);
  } else {
    float* v = values_.data<float>();
    for (std::int64_t i = 0; i < flat_elements_; ++i) v[i] = acc[i] * inv;
    round_ = step + 1;
    ++version_;
    stats_.applied++;
  }
}

net::Message PsServer::pull(const proto::Body& body) {
  const std::int64_t step = body.header.step;
  TRIB_CHECK(step >= -1 && step < kMaxStep, InvalidArgument, "ps {}: pull for step {}", o_.index, step);
  const int worker = body.header.worker;
  std::unique_lock lock(mu_);
  if (body.header.flags & proto::kFlagCursorOf) {
    const int of = std::atoi(body.text.c_str());
    TRIB_CHECK(step == -1 && of >= 0 && of < static_cast<int>(cursors_.size()), InvalidArgument,
               "ps {}: the cursor of worker '{}' asked at step {}", o_.index, body.text, step);
    proto::Body r = proto::make_body(proto::Type::pull);
    r.header.step = resume_step(of);
    r.text = cursors_[of];
    return reply(std::move(r));
  }
  auto ready = [&] {
    if (behind_locked(body.header)) return true;  // answered at once: the worker rewinds
    if (!initialized_) return false;
    if (step < 0) return true;  // a plain read (start-up, or a relaunched worker)
    if (skip_notice_[worker]) return true;
    switch (o_.mode) {
      case Mode::async: return true;
      case Mode::bounded: return step - min_clock() <= o_.staleness;
      case Mode::sync: return version_ >= step - start_step_;
      case Mode::averaging: return round_ >= step;
    }
    return true;
  };
  // Woken by the push, done or init that allows the step. The wait is bounded because it
  // holds this connection's handler: the worker asks again if the step is still not allowed.
  const auto wait = std::chrono::milliseconds(std::min(body.header.wait_ms, kMaxPullWaitMs));
  proto::Body r = proto::make_body(proto::Type::pull);
  if (!changed_.wait_for(lock, wait, ready)) return reply(std::move(r));
  if (behind_locked(body.header)) return rolled_back_locked(proto::Type::pull);
  if (o_.mode == Mode::bounded && step >= 0) stats_.max_clock_gap = std::max(stats_.max_clock_gap, step - min_clock());
  r.header.flags = proto::kFlagReady;
  if (step >= 0 && skip_notice_[worker]) {
    r.header.flags |= proto::kFlagSkipped;
    skip_notice_[worker] = false;
  }
  r.header.version_seen = version_;
  r.header.step = step < 0 ? resume_step(worker) : start_step_;
  if (step < 0) r.text = cursors_[worker];
  Tensor snapshot = values_.clone(pool_.get());  // a snapshot; pooled, so no page faults per pull
  stats_.bytes_out += snapshot.nbytes();
  if (step < 0 && rejoined_[worker]) {
    rejoined_[worker] = false;
    r.header.flags |= proto::kFlagRejoined;
    // The relaunched worker logs the checksum of what it got; the two lines must agree.
    if (log_)
      log_(fmt::format("ps {}: worker {} {} at step {}; values crc32c {:08x} (version {})", o_.index, worker,
                       joiner_[worker] ? "joined" : "rejoined", r.header.step, values_crc32c(snapshot), version_));
  }
  return reply(std::move(r), std::move(snapshot));
}

net::Message PsServer::push(const net::Message& m, const proto::Body& body, const std::string& origin) {
  const proto::Header& h = body.header;
  check_worker(h.worker, proto::Type::push);
  TRIB_CHECK(h.step >= 0 && h.step < kMaxStep, InvalidArgument, "ps {}: push from worker {} for step {}", o_.index,
             h.worker, h.step);
  const float lr = body.lr();
  TRIB_CHECK(std::isfinite(lr), InvalidArgument, "ps {}: push from worker {} with learning rate {}", o_.index,
             h.worker, lr);
  if (h.flags & proto::kFlagNonFinite) return push_nonfinite(m, body, origin);
  // Every size is checked against the slices before the lock is taken or a value read.
  const PushCheck check{o_.index, h.worker, &slices_, &o_.variables, o_.mode == Mode::sync || o_.mode == Mode::averaging};
  const PushLayout layout = check_push(check, body, m.tensor);
  std::lock_guard lock(mu_);
  // Checked under the lock that applies it: no push from before a rollback lands after it.
  if (behind_locked(h)) return rolled_back_locked(proto::Type::push);
  if (duplicate_locked(h)) return reply(proto::make_body(proto::Type::push));
  if (replayed_locked(body)) {
    // The backup holds the same cursors and takes the same decision.
    forward_locked(static_cast<std::uint8_t>(replica::Kind::request), h.worker, 0, origin, &m);
    changed_.notify_all();
    return reply(proto::make_body(proto::Type::push));
  }
  clocks_[h.worker] = std::max(clocks_[h.worker], h.step + 1);
  switch (o_.mode) {
    case Mode::async:
    case Mode::bounded:
      apply_gradients(m.tensor, layout, body.ids, lr, h.version_seen);
      keep_cursor_locked(h.worker, body.text);
      note_data_progress_locked(h.worker, body.text);
      break;
    case Mode::sync:
    case Mode::averaging: {
      const bool late = o_.mode == Mode::sync ? h.step - start_step_ < version_  // applied without it
                                              : h.step < round_;
      if (late && !late_replay_locked(body)) {
        stats_.dropped_late++;
        break;
      }
      // check_push made it exactly flat_elements_ values.
      const float* g = m.tensor.data<float>();
      float* acc = accumulator_.data<float>();
      for (std::int64_t i = 0; i < flat_elements_; ++i) acc[i] += g[i];
      ++contributions_;
      // A late replay is a batch more in the round open now, not the worker's part of it.
      if (!late) contributed_[h.worker] = true;
      keep_cursor_locked(h.worker, body.text);
      note_data_progress_locked(h.worker, body.text);
      if (late) {  // the open round's step and rate stay its workers'
        complete_round(round_step_, last_lr_);
        break;
      }
      last_lr_ = lr;
      round_step_ = h.step;
      complete_round(h.step, lr);
      break;
    }
  }
  forward_locked(static_cast<std::uint8_t>(replica::Kind::request), h.worker, 0, origin, &m);
  changed_.notify_all();
  return reply(proto::make_body(proto::Type::push));
}

net::Message PsServer::push_nonfinite(const net::Message& m, const proto::Body& body, const std::string& origin) {
  const proto::Header& h = body.header;
  TRIB_CHECK(!m.tensor.defined() && body.sparse.empty(), InvalidArgument,
             "ps {}: a non-finite push from worker {} carries values", o_.index, h.worker);
  TRIB_CHECK(o_.mode != Mode::averaging, InvalidArgument,
             "ps {}: a non-finite push from worker {} in averaging mode (workers skip such steps locally)", o_.index,
             h.worker);
  std::lock_guard lock(mu_);
  if (behind_locked(h)) return rolled_back_locked(proto::Type::push);
  if (duplicate_locked(h)) return reply(proto::make_body(proto::Type::push));
  if (o_.mode == Mode::async || o_.mode == Mode::bounded) {
    // Dropped; the worker's clock does not move, as it takes the step again.
    stats_.dropped_nonfinite++;
  } else if (h.step - start_step_ < version_) {
    stats_.dropped_late++;  // the round closed without it
  } else {
    // A contribution of nothing that poisons the round: it closes as usual, and applies nothing.
    ++contributions_;
    contributed_[h.worker] = true;
    round_nonfinite_ = true;
    round_step_ = h.step;
    complete_round(h.step, last_lr_);
  }
  forward_locked(static_cast<std::uint8_t>(replica::Kind::request), h.worker, 0, origin, &m);
  changed_.notify_all();
  return reply(proto::make_body(proto::Type::push));
}

void PsServer::apply_gradients(const Tensor& flat, const PushLayout& layout, const Tensor& ids, float lr,
                               std::int64_t pulled_version) {
  std::int64_t value_offset = 0;
  for (std::size_t i = 0; i < slices_.size(); ++i) {
    const Slice& s = slices_[i];
    const PushLayout::Part& part = layout.parts[i];
    const Shape slice_shape = slice_shape_of(variable_info(o_.variables, s.variable), s);
    Tensor param = values_.view(value_offset, slice_shape);
    value_offset += s.elements;
    if (!part.sparse) {
      o_.optimizer->apply(s.key(), param, flat.view(part.offset, slice_shape), slots_, lr);
      continue;
    }
    if (part.rows == 0) continue;
    std::vector<std::int64_t> row_dims = slice_shape.dims();
    row_dims[0] = part.rows;
    o_.optimizer->apply_sparse(s.key(), param, flat.view(part.offset, Shape(row_dims)),
                               ids.view(part.id_offset, Shape{part.rows}), slots_, lr);
  }
  record_staleness(version_ - pulled_version);
  ++version_;
  stats_.applied++;
}

void PsServer::record_staleness(std::int64_t updates) {
  std::size_t bin = static_cast<std::size_t>(std::clamp<std::int64_t>(updates, 0, 15));
  stats_.staleness[bin]++;
}

// A save is a series of requests {"part": i} from the chief: part 0 snapshots this server's
// slices and slots, and each reply carries tensor i of the snapshot, its name and how many
// there are ({"parts": n, "name": ...}). The chief writes them into its checkpoint directory.
net::Message PsServer::save(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {  // malformed, or a number out of range
    throw InvalidArgument(fmt::format("ps {}: a save request whose text is not JSON", o_.index));
  }
  TRIB_CHECK(j.is_object() && j.value("part", nlohmann::json()).is_number_integer(), InvalidArgument,
             "ps {}: a save request names no part", o_.index);
  const std::int64_t part = j["part"].get<std::int64_t>();
  std::lock_guard lock(mu_);
  if (part == 0) {
    save_snapshot_.clear();
    write_slices(o_.variables, slices_, values_, slots_, save_snapshot_);
    save_names_.clear();
    for (const auto& [name, t] : save_snapshot_) save_names_.push_back(name);
  }
  if (part == 0 && save_names_.empty()) {
    // A server the placement left without variables (more servers than variables): nothing
    // to save, said with no tensor.
    proto::Body none = proto::make_body(proto::Type::save);
    none.text = nlohmann::json{{"parts", 0}}.dump();
    return reply(std::move(none));
  }
  TRIB_CHECK(part >= 0 && part < static_cast<std::int64_t>(save_names_.size()), InvalidArgument,
             "ps {}: save part {} of {}", o_.index, part, save_names_.size());
  const std::string& name = save_names_[static_cast<std::size_t>(part)];
  proto::Body r = proto::make_body(proto::Type::save);
  r.text = nlohmann::json{{"parts", save_names_.size()}, {"name", name}}.dump();
  Tensor t = save_snapshot_.at(name);
  if (part + 1 == static_cast<std::int64_t>(save_names_.size())) save_snapshot_.clear();
  return reply(std::move(r), std::move(t));
}

PsStats PsServer::stats() const {
  std::lock_guard lock(mu_);
  PsStats s = stats_;
  for (int w = 0; w < o_.workers; ++w) {
    s.workers_training += roster_->active(w);
    s.workers_away += roster_->away(w);
  }
  if (dispenser_) {
    s.data_applied = dispenser_->applied_batches();
    s.data_total = dispenser_->total_batches();
    s.data_returned = dispenser_->returned_batches();
  }
  return s;
}

}  // namespace trib::ps
