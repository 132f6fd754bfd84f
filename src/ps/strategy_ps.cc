#include "trib/ps/strategy_ps.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <limits>
#include <thread>

#include "ps/fan_out.h"
#include "ps/ps_wire.h"
#include "ps/push_packing.h"
#include "ps/rolled_back.h"
#include "ps/shard_failover.h"
#include "ps/slice_io.h"
#include "ps/stats_json.h"
#include "trib/optim/clip.h"
#include "update/all_finite.h"

namespace trib::ps {

using Clock = std::chrono::steady_clock;

namespace {

// A pull waits on the server at most this long before the worker asks again (the server
// answers at once when the step is allowed); the request's deadline leaves room beyond it.
constexpr std::chrono::milliseconds kPullWaitSlice{5000};
constexpr std::chrono::milliseconds kReplyMargin{30000};

std::size_t index_of(const std::vector<VariableInfo>& vars, const std::string& name) {
  for (std::size_t i = 0; i < vars.size(); ++i)
    if (vars[i].name == name) return i;
  throw NotFound(fmt::format("no trainable variable '{}'", name));
}

net::Message message(const proto::Body& body, Tensor tensor = {}) {
  return net::Message{proto::kPsMethod, proto::encode(body), std::move(tensor)};
}

bool lives_on_a_server(const std::vector<VariableInfo>& vars, const std::string& name) {
  return std::any_of(vars.begin(), vars.end(), [&](const VariableInfo& v) { return v.name == name; });
}

}  // namespace

PsUpdate::PsUpdate(PsUpdateOptions options) : o_(std::move(options)) {
  TRIB_CHECK(static_cast<int>(o_.servers.size()) == o_.placement.num_ps, InvalidArgument,
             "{} server connections for a placement over {} servers", o_.servers.size(), o_.placement.num_ps);
  TRIB_CHECK(o_.clip_norm >= 0, InvalidArgument, "clip_norm = {} must be positive, or 0 for none", o_.clip_norm);
  for (int p = 0; p < o_.placement.num_ps; ++p) slices_.push_back(o_.placement.slices_of(p));
  versions_.assign(o_.servers.size(), 0);
  for (const auto& slices : slices_) {
    std::int64_t n = 0;
    std::vector<std::size_t> gradient;
    for (const Slice& s : slices) {
      n += s.elements;
      gradient.push_back(index_of(o_.variables, s.variable));
    }
    pull_buffers_.push_back(Tensor::empty(DType::f32, Shape{n}));
    gradient_of_.push_back(std::move(gradient));
  }
  if (o_.mode == Mode::averaging) {
    std::vector<std::string> names;
    for (const auto& v : o_.variables) names.push_back(v.name);
    local_ = std::make_unique<update::LocalUpdate>(
        update::LocalUpdateOptions{names, o_.optimizer, o_.schedule, o_.clip_norm});
  }
  fan_out_ = std::make_unique<FanOut>(o_.servers.size());
  failover_ = std::make_unique<ShardFailover>(&o_.servers, o_.recovery.backup, o_.worker_index, o_.log);
}

PsUpdate::~PsUpdate() = default;

Tensor PsUpdate::pack_values(int ps, const VariableStore& vars) const {
  std::int64_t total = 0;
  for (const Slice& s : slices_[ps]) total += s.elements;
  Tensor flat = Tensor::empty(DType::f32, Shape{total}, pool_.get());
  std::int64_t off = 0;
  for (const Slice& s : slices_[ps]) {
    const VariableInfo& v = variable_info(o_.variables, s.variable);
    const Tensor& t = vars.get(s.variable);
    std::memcpy(flat.data<float>() + off, t.data<float>() + s.row_begin * v.row_elements(), s.elements * 4);
    off += s.elements;
  }
  return flat;
}

net::Message PsUpdate::push_message(int ps, std::int64_t step, const std::vector<update::GradTensor>& grads) const {
  proto::Body body = request(proto::Type::push);
  body.header.step = step;
  body.header.version_seen = versions_[ps];
  body.text = cursor_;
  if (step == replay_step_) body.header.flags |= proto::kFlagReplay;
  body.header.seq = failover_->next_seq(ps);
  proto::set_lr(body.header, o_.schedule->lr(step));
  const PushPacking packing{&slices_[ps], &o_.variables, &gradient_of_[ps], o_.mode == Mode::sync, pool_.get()};
  Tensor values = pack_gradients(packing, grads, body);
  return message(body, std::move(values));
}

proto::Body PsUpdate::exchange(int ps, const proto::Body& request, Tensor tensor) const {
  return exchange(ps, request, std::move(tensor), nullptr);
}

proto::Body PsUpdate::exchange(int ps, const proto::Body& request, Tensor tensor, Tensor* reply_tensor) const {
  net::Message r = failover_->call(ps, message(request, std::move(tensor)));
  if (reply_tensor != nullptr) *reply_tensor = std::move(r.tensor);
  return check_reply(ps, request.type(), r);
}

proto::Body PsUpdate::check_reply(int ps, proto::Type type, const net::Message& r) const {
  TRIB_CHECK(r.method == proto::kPsMethod, InvalidArgument, "ps {}: a {} reply with method 0x{:x}", ps,
             proto::type_name(type), r.method);
  proto::Body body = proto::decode(r.body);
  TRIB_CHECK(body.type() == type && (body.header.flags & proto::kFlagReply) != 0, InvalidArgument,
             "ps {}: a {} request answered by a {} message", ps, proto::type_name(type), proto::type_name(body.type()));
  if (body.header.flags & proto::kFlagRolledBack)
    throw RolledBack(fmt::format("ps {} rolled back to generation {} (this worker is at {})", ps,
                                 body.header.generation, generation()));
  return body;
}

std::pair<net::Message, net::RequestOptions> PsUpdate::pull_request(int ps, std::int64_t step,
                                                                    Clock::time_point deadline) const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  proto::Body ask = request(proto::Type::pull);
  ask.header.step = step;
  ask.header.wait_ms = static_cast<std::uint32_t>(std::clamp(left, std::chrono::milliseconds(0), kPullWaitSlice).count());
  net::RequestOptions ro;
  ro.reply_into = pull_buffers_[ps];  // received in place, no allocation per step
  ro.timeout = std::chrono::milliseconds(ask.header.wait_ms) + kReplyMargin;
  return {message(ask), ro};
}

std::optional<PsUpdate::Pulled> PsUpdate::take_pull(int ps, std::int64_t step, const net::Message& r,
                                                    VariableStore& vars) {
  const proto::Body body = check_reply(ps, proto::Type::pull, r);
  trace("pull answered", ps, step);
  if ((body.header.flags & proto::kFlagReady) == 0) return std::nullopt;
  TRIB_CHECK(r.tensor.defined() && r.tensor.dtype() == DType::f32 && r.tensor.numel() == pull_buffers_[ps].numel(),
             InvalidArgument, "ps {}: pulled values are {}, expected f32 of {} elements", ps,
             r.tensor.defined() ? r.tensor.spec_string() : "missing", pull_buffers_[ps].numel());
  versions_[ps] = body.header.version_seen;
  std::int64_t off = 0;
  for (const Slice& s : slices_[ps]) {
    const VariableInfo& v = variable_info(o_.variables, s.variable);
    Tensor& t = vars.get(s.variable);
    std::memcpy(t.data<float>() + s.row_begin * v.row_elements(), r.tensor.data<float>() + off, s.elements * 4);
    off += s.elements;
  }
  return Pulled{.step = body.header.step,
                .skipped = (body.header.flags & proto::kFlagSkipped) != 0,
                .cursor = body.text,
                .rejoined = (body.header.flags & proto::kFlagRejoined) != 0};
}

PsUpdate::Pulled PsUpdate::pull(int ps, std::int64_t step, VariableStore& vars) {
  return pull(ps, step, vars, Clock::now() + o_.wait_timeout);
}

PsUpdate::Pulled PsUpdate::pull(int ps, std::int64_t step, VariableStore& vars, Clock::time_point deadline) {
  for (;;) {
    auto [ask, options] = pull_request(ps, step, deadline);
    trace("pull sent", ps, step);
    if (std::optional<Pulled> got = take_pull(ps, step, failover_->call(ps, ask, options), vars)) return *got;
    TRIB_CHECK(Clock::now() < deadline, Timeout,
               "worker {}: parameter server {} did not release step {} within {} s (a stalled worker?)",
               o_.worker_index, ps, step, o_.wait_timeout.count() / 1000);
  }
}

PsUpdate::Pulled PsUpdate::push_pull(int ps, std::int64_t step, const std::vector<update::GradTensor>& grads,
                                     VariableStore& vars) {
  const net::Message pushed = push_message(ps, step, grads);
  const auto deadline = Clock::now() + o_.wait_timeout;
  if (o_.overlap || o_.pull_ahead) {
    auto [ask, options] = pull_request(ps, step + 1, deadline);
    std::optional<Pulled> got;
    std::future<net::Message> pull_reply;
    try {
      // Both on the connection before either reply: the server takes them in this order. Pulled
      // ahead, the server's handler sends the values while the push is still arriving (its
      // receive thread reads frames as they come; docs/parameter_server.md).
      const std::shared_ptr<net::Connection> c = o_.servers[static_cast<std::size_t>(ps)];
      std::future<net::Message> push_reply;
      if (o_.pull_ahead) {
        pull_reply = c->request(std::move(ask), options);
        trace("pull sent", ps, step + 1);
      }
      trace("push leaving", ps, step);
      push_reply = c->request(pushed);  // a copy: retried as is below
      trace("push sent", ps, step);
      if (!o_.pull_ahead) {
        pull_reply = c->request(std::move(ask), options);
        trace("pull sent", ps, step + 1);
      }
      check_reply(ps, proto::Type::push, push_reply.get());
      trace("push answered", ps, step);
      got = take_pull(ps, step + 1, pull_reply.get(), vars);
    } catch (const Unavailable&) {
      // The connection was lost with both in flight: again, one after the other, where the
      // failover sends them (a push the lost server applied and forwarded carries a sequence
      // number its backup has seen, and applies once).
      check_reply(ps, proto::Type::push, failover_->call(ps, pushed));
      trace("push answered", ps, step);
    } catch (...) {
      // A refused or rolled-back push: its pull's reply lands in pull_buffers_[ps], which the
      // next pull reuses; it is answered (or times out) before this worker goes on.
      if (pull_reply.valid()) pull_reply.wait();
      throw;
    }
    if (got) return *got;
    return pull(ps, step + 1, vars, deadline);  // not allowed yet within the wait: ask again
  }
  trace("push leaving", ps, step);
  trace("push sent", ps, step);
  check_reply(ps, proto::Type::push, failover_->call(ps, pushed));
  trace("push answered", ps, step);
  return pull(ps, step + 1, vars, deadline);
}

PsUpdate::Pulled PsUpdate::pull_all(std::int64_t step, VariableStore& vars) {
  std::vector<Pulled> got(o_.servers.size());
  fan_out_->run(o_.servers.size(), [&](std::size_t p) { got[p] = pull(static_cast<int>(p), step, vars); });
  return resume_point(got);
}

PsUpdate::Pulled PsUpdate::resume_point(const std::vector<Pulled>& got) const {
  Pulled out;
  if (!got.empty()) out = got[0];
  for (const Pulled& g : got) {
    // Async servers each know this worker's clock; a relaunched worker resumes where the
    // slowest of them saw it (and at its data cursor), so no step is pushed to a server twice.
    if (g.step < out.step) {
      out.step = g.step;
      out.cursor = g.cursor;
    }
    out.skipped = out.skipped || g.skipped;
    out.rejoined = out.rejoined || g.rejoined;
  }
  if (!o_.cursors) return out;
  // A push of this worker's lost process that reached some servers and not the others: its
  // batch is read again from the oldest cursor (sync rounds have one step everywhere, so the
  // step does not tell), and the servers that applied it acknowledge the replay only.
  // No cursor is the oldest of all: no push applied since the run's start or a restore.
  bool split = false;
  for (const Pulled& g : got) {
    if (g.cursor == out.cursor) continue;
    split = true;
    if (g.cursor.empty() || (!out.cursor.empty() && o_.cursors.covers(out.cursor, g.cursor))) out.cursor = g.cursor;
  }
  out.split = split;
  if (split && o_.log)
    o_.log(fmt::format("worker {}: its last push reached some servers and not every other: its data resumes at the "
                       "oldest server's cursor, and the servers that applied that push acknowledge it again without "
                       "applying it",
                       o_.worker_index));
  return out;
}

void PsUpdate::count_skip(std::int64_t step, const std::string& why) {
  TRIB_CHECK(++consecutive_skips_ < o_.max_consecutive_skips, Error,
             "worker {}: {} steps in a row were skipped for NaN or Inf gradients (last at step {}, {}); stopping. "
             "Lower the learning rate or enable training.clip_norm",
             o_.worker_index, consecutive_skips_, step, why);
}

bool PsUpdate::push_nonfinite(std::int64_t step, VariableStore& vars) {
  bool skipped = false;
  fan_out_->run(o_.servers.size(), [&](std::size_t p) {
    proto::Body b = request(proto::Type::push);
    b.header.step = step;
    b.header.flags = proto::kFlagNonFinite;
    b.header.seq = failover_->next_seq(static_cast<int>(p));
    proto::set_lr(b.header, o_.schedule->lr(step));
    exchange(static_cast<int>(p), b);
  });
  // Sync: the round closes (skipped) once every worker pushed; take the same step again
  // with the values it left, which are the ones before it.
  if (o_.mode == Mode::sync) skipped = pull_all(step + 1, vars).skipped;
  return skipped;
}

std::int64_t PsUpdate::start(VariableStore& vars, const Checkpoint* checkpoint) {
  std::optional<Pulled> rejoined;  // a relaunched chief's read of the running job
  if (o_.worker_index == 0 && o_.recovery.chief_relaunched) {
    rejoined = rejoin_running_job(vars, checkpoint);  // strategy_ps_rejoin.cc
    TRIB_CHECK(rejoined || o_.recovery.chief_takes_back, Unavailable,
               "worker 0: relaunched in place of a stream job's lost chief, but it cannot rejoin the running job (a "
               "server lost its state with it): the job restarts whole from its newest checkpoint");
    if (!rejoined) take_back(vars);  // strategy_ps_restore.cc
  } else if (o_.worker_index == 0) {
    fan_out_->run(o_.servers.size(), [&](std::size_t p) {
      if (checkpoint != nullptr) {
        restore_server(static_cast<int>(p), *checkpoint);
      } else {
        exchange(static_cast<int>(p), proto::make_body(proto::Type::init), pack_values(static_cast<int>(p), vars));
      }
    });
    if (checkpoint == nullptr && o_.recovery.enabled()) keep_initial_values(vars);
    if (checkpoint != nullptr) take_local_variables(*checkpoint, vars);
  }
  vars_ = &vars;
  Pulled read;
  if (rejoined) {
    read = std::move(*rejoined);
  } else {
    for (;;) {
      try {
        read = pull_all(-1, vars);
        break;
      } catch (const Error& e) {
        // A worker (re)joining while a server is lost: it starts from the restored job.
        if (!server_lost(e) || !o_.recovery.enabled() || o_.worker_index == 0) throw;
        restart_generation_ = std::max(restart_generation_, await_restore()["generation"].get<std::int64_t>());
      }
    }
  }
  const std::int64_t resume = read.step;
  if (read.split) replay_step_ = resume;  // its first push replays the batch some servers lack
  if (!read.cursor.empty()) resume_cursor_ = std::move(read.cursor);
  // A relaunched worker (resuming past step 0, or taken back by a server at any step) or a
  // joiner (an index beyond the job's starting workers) says what it starts from; the servers
  // log the same checksum.
  if (o_.log && (resume > 0 || read.rejoined || o_.worker_index >= o_.workers || rejoined_)) {
    std::string sums;
    for (int p = 0; p < o_.placement.num_ps; ++p)
      sums += fmt::format("{}ps {} crc32c {:08x}", p == 0 ? "" : ", ", p, values_crc32c(pack_values(p, vars)));
    o_.log(fmt::format("worker {}: starts at step {} with the servers' values ({})", o_.worker_index, resume, sums));
  }
  return resume;
}

void PsUpdate::keep_initial_values(const VariableStore& vars) {
  for (int p = 0; p < o_.placement.num_ps; ++p) initial_values_.push_back(pack_values(p, vars).clone());
  for (const std::string& name : vars.names())
    if (!lives_on_a_server(o_.variables, name)) initial_local_[name] = vars.get(name).clone();
}

void PsUpdate::take_local_variables(const Checkpoint& checkpoint, VariableStore& vars) const {
  for (const std::string& name : vars.names())
    if (checkpoint.contains(name) && !lives_on_a_server(o_.variables, name))
      vars.set(name, checkpoint.tensor(name).clone());
}

bool PsUpdate::apply(std::int64_t step, std::vector<update::GradTensor>& grads, VariableStore& vars) {
  if (!o_.recovery.enabled()) return apply_step(step, grads, vars);
  std::string why = pending_why_;
  try {
    if (!pending_recovery_) return apply_step(step, grads, vars);
  } catch (const RolledBack& e) {
    why = e.what();
  } catch (const Unavailable& e) {
    why = e.what();  // a server's connection closed: it was lost
  }
  pending_recovery_ = false;
  recover(step, why);
  return false;
}

bool PsUpdate::apply_step(std::int64_t step, std::vector<update::GradTensor>& grads, VariableStore& vars) {
  if (o_.mode != Mode::averaging && !update::all_finite(grads)) {
    // Never send NaN to the servers: say so instead, so that a sync round is skipped
    // everywhere and an async server counts the dropped push.
    push_nonfinite(step, vars);
    count_skip(step, "this worker's");
    return false;
  }
  if (o_.mode == Mode::averaging) {
    if (!local_->apply(step, grads, vars)) return false;  // clips, as configured; skips NaN (and aborts after M)
    if ((step + 1) % o_.period != 0) return true;
    fan_out_->run(o_.servers.size(), [&](std::size_t p) {
      proto::Body b = request(proto::Type::push);
      b.header.step = step + 1;
      b.header.seq = failover_->next_seq(static_cast<int>(p));
      b.text = cursor_;
      exchange(static_cast<int>(p), b, pack_values(static_cast<int>(p), vars));
      pull(static_cast<int>(p), step + 1, vars);
    });
    return true;
  }
  if (o_.clip_norm > 0) {
    // The global norm over the whole gradient, before it is split between the servers.
    std::vector<Tensor> values;
    for (const update::GradTensor& g : grads) values.push_back(g.values);
    clip_by_global_norm(values, o_.clip_norm);
  }
  // Each server's push and its pull for the next step, on its own thread.
  std::vector<char> skipped(o_.servers.size(), 0);
  fan_out_->run(o_.servers.size(), [&](std::size_t p) {
    skipped[p] = push_pull(static_cast<int>(p), step, grads, vars).skipped;
  });
  if (std::any_of(skipped.begin(), skipped.end(), [](char s) { return s != 0; })) {
    count_skip(step, "another worker's");  // sync: the round was skipped everywhere
    return false;
  }
  consecutive_skips_ = 0;
  return true;
}

// The chief reads the checkpoint and sends each server its slices and slots: servers need
// no access to the checkpoint directory (no shared filesystem), and a checkpoint written by N
// servers restores onto M (read_slices assembles any rows from the pieces there are).
void PsUpdate::restore_server(int ps, const Checkpoint& checkpoint, std::int64_t generation) const {
  std::int64_t elements = 0;
  for (const Slice& s : slices_[ps]) elements += s.elements;
  Tensor values = Tensor::zeros(DType::f32, Shape{elements});
  SlotStore slots;
  read_slices(checkpoint, o_.variables, slices_[ps], values, slots);
  for (const auto& [key, slot] : slots.keys()) {
    proto::Body b = proto::make_body(proto::Type::restore);
    b.header.generation = generation;
    b.text = nlohmann::json{{"slot", key}, {"name", slot}}.dump();
    exchange(ps, b, slots.get(key, slot));
  }
  proto::Body b = proto::make_body(proto::Type::restore);
  b.header.generation = generation;
  b.text = nlohmann::json{{"step", checkpoint.step()}}.dump();
  exchange(ps, b, std::move(values));
}

TensorMap PsUpdate::fetch_server_state(int ps) const {
  TensorMap out;
  const std::string source = fmt::format("ps {}: save reply", ps);
  for (std::int64_t part = 0, parts = 1; part < parts; ++part) {
    proto::Body b = proto::make_body(proto::Type::save);
    b.text = nlohmann::json{{"part", part}}.dump();
    Tensor t;
    const bool on_backup = failover_->failed_over(ps);
    proto::Body r;
    try {
      r = exchange(ps, b, {}, &t);
    } catch (const InvalidArgument&) {
      if (part == 0 || on_backup || !failover_->failed_over(ps)) throw;
      // The primary was lost mid-save (strategy.ps_replicas): its snapshot went with it, and
      // the backup that took over refused part `part`: it snapshots afresh from part 0.
      out.clear();
      part = -1;
      parts = 1;
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(r.text, nullptr, false);
    // A server holding no variable (more servers than variables) has nothing to send.
    if (part == 0 && j.is_object() && j.value("parts", nlohmann::json()) == 0 && !t.defined()) break;
    TRIB_CHECK(j.is_object() && j.value("parts", nlohmann::json()).is_number_integer() &&
                   j.value("name", nlohmann::json()).is_string() && t.defined(),
               InvalidArgument, "{}: expected {{\"parts\": n, \"name\": ...}} and a tensor, got '{}'", source, r.text);
    const std::int64_t n = j["parts"].get<std::int64_t>();
    TRIB_CHECK(n >= 1 && (part == 0 || n == parts), InvalidArgument, "{}: {} parts, after {}", source, n, parts);
    parts = n;
    const std::string name = j["name"];
    TRIB_CHECK(out.find(name) == out.end(), InvalidArgument, "{}: tensor '{}' twice", source, name);
    out[name] = t.clone();  // the reply's buffer is the connection's, not ours to keep
  }
  return out;
}

void PsUpdate::save(CheckpointWriter& writer, const VariableStore& vars) {
  // Every server's state comes to the chief, which writes it: the checkpoint is whole in the
  // chief's directory, wherever the servers run (docs/checkpoint_format.md).
  std::vector<TensorMap> states(o_.servers.size());
  std::vector<char> lost(o_.servers.size(), 0);
  try {
    fan_out_->run(o_.servers.size(), [&](std::size_t p) {
      try {
        states[p] = fetch_server_state(static_cast<int>(p));
      } catch (const Unavailable&) {
        lost[p] = 1;
        throw;
      }
    });
  } catch (const Unavailable& e) {
    // The final checkpoint (finish() done): no step follows to restore the job at, and the
    // lost server's state since the newest checkpoint went with it. One line says what stays.
    if (finished_) throw Error(final_checkpoint_lost(lost, e.what()));
    if (!o_.recovery.enabled()) throw;
    // A server lost while checkpointing: this checkpoint is not written (the loop keeps the
    // previous one), and the next step restores the job from that one.
    pending_recovery_ = true;
    pending_why_ = e.what();
    throw IoError(fmt::format("a parameter server was lost while checkpointing ({})", e.what()));
  }
  for (std::size_t p = 0; p < states.size(); ++p) writer.add_shard(fmt::format("ps-{}", p), states[p]);
  TensorMap local;
  for (const std::string& name : vars.names())
    if (!lives_on_a_server(o_.variables, name)) local[name] = vars.get(name);
  if (!local.empty()) writer.add_shard("chief", local);
}

void PsUpdate::wait_for_other_workers() {
  // The chief's final evaluation and checkpoint must hold every worker's updates: a worker
  // relaunched late (or one whose stream runs longer) is still pushing when the chief is done.
  // A lost worker is waited for a grace period (its relaunch), not forever.
  constexpr std::chrono::seconds kLostGrace{30};
  const auto start = Clock::now(), deadline = start + o_.wait_timeout;
  std::uint64_t given_up = 0;  // workers the launcher gave up on, as last read
  auto next_given_up_read = start;
  for (bool waited = false;; waited = true) {
    // A worker says done only once its last push reached every server, so one server that
    // knows it is done is enough: the fewest training wins. (A relaunched server never heard
    // from a worker that finished before it came, and counts it as training.)
    std::uint64_t training = std::numeric_limits<std::uint64_t>::max(), away = 0;
    for (std::size_t p = 0; p < o_.servers.size(); ++p) {
      PsStats s = stats_from_json(exchange(static_cast<int>(p), proto::make_body(proto::Type::stats)).text,
                                  fmt::format("ps {}", p));
      training = std::min(training, s.workers_training);
      away = std::max(away, s.workers_away);
    }
    // No relaunch is coming for a worker the launcher gave up on: no grace for it. Its count
    // is a store lookup per worker index, so it is read at most once a second.
    if (away > given_up && o_.recovery.given_up_workers && Clock::now() >= next_given_up_read) {
      given_up = static_cast<std::uint64_t>(o_.recovery.given_up_workers());
      next_given_up_read = Clock::now() + std::chrono::seconds(1);
    }
    const bool wait_lost = away > given_up && Clock::now() - start < kLostGrace;
    if ((training == 0 && !wait_lost) || Clock::now() >= deadline) {
      if (waited && o_.log) o_.log(fmt::format("worker 0: every other worker is done ({} lost)", away));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void PsUpdate::finish() {
  for (;;) {
    try {
      finish_once();
      finished_ = true;
      return;
    } catch (const Error& e) {
      if (!server_lost(e) || !o_.recovery.enabled()) throw;
      // Done already: a worker other than the chief has nothing left to redo (the servers
      // that know it is done say so to the chief).
      if (o_.worker_index != 0) return;
      // The chief is past its last step: it restores the job for the others, which go on
      // from the checkpoint, and waits for them again.
      nlohmann::json notice = restore_job(e.what());
      const std::int64_t g = notice["generation"].get<std::int64_t>();
      restart_generation_ = std::max(restart_generation_, g);
      restores_.push_back(notice);
      if (o_.recovery.publish) o_.recovery.publish(redone_key(g, 0), "0");
      if (o_.log) o_.log("worker 0: done already; the other workers go on from the restored job");
    }
  }
}

void PsUpdate::finish_once() {
  // The servers stop waiting for this worker: the others may take more steps (a stream's
  // partitions run dry at different times), and sync, bounded and averaging rounds go on
  // without it.
  fan_out_->run(o_.servers.size(), [&](std::size_t p) {
    proto::Body b = request(proto::Type::done);
    exchange(static_cast<int>(p), b);
  });
  if (o_.worker_index != 0) return;
  wait_for_other_workers();
  // The final evaluation then sees the servers' values, the ones the checkpoint holds.
  if (vars_ != nullptr) pull_all(-1, *vars_);
  std::string out = "parameter servers:";
  for (std::size_t p = 0; p < o_.servers.size(); ++p) {
    const std::string source = fmt::format("ps {}", p);
    PsStats s = stats_from_json(exchange(static_cast<int>(p), proto::make_body(proto::Type::stats)).text, source);
    out += fmt::format("\n  ps {}: {:.1f} MB in, {:.1f} MB out, {} requests, {} updates, {} late dropped", p,
                       s.bytes_in / 1e6, s.bytes_out / 1e6, s.requests, s.applied, s.dropped_late);
    if (s.refused > 0) out += fmt::format(", {} refused", s.refused);
    if (s.stale_generation > 0) out += fmt::format(" ({} from evicted workers)", s.stale_generation);
    if (s.dropped_nonfinite > 0) out += fmt::format(", {} non-finite dropped", s.dropped_nonfinite);
    if (s.skipped_rounds > 0) out += fmt::format(", {} rounds skipped (non-finite)", s.skipped_rounds);
    if (s.rollbacks > 0 || s.rolled_back_requests > 0)
      out += fmt::format(", {} rollback(s), {} request(s) from before one not applied", s.rollbacks,
                         s.rolled_back_requests);
    if (s.workers_lost > 0)
      out += fmt::format(", {} worker(s) lost, {} re-admitted", s.workers_lost, s.workers_readmitted);
    if (s.workers_joined > 0) out += fmt::format(", {} joined", s.workers_joined);
    if (s.forwarded > 0 || s.takeovers > 0)  // strategy.ps_replicas
      out += fmt::format(", {} change(s) forwarded to its backup, {} takeover(s), {} retried push(es) not reapplied",
                         s.forwarded, s.takeovers, s.duplicate_pushes);
    if (s.replayed_pushes > 0)  // a worker lost between its pushes to the servers (ps_server_replay.cc)
      out += fmt::format(", {} replayed push(es) acknowledged without applying them", s.replayed_pushes);
    if (s.late_replays > 0)  // sync: such a replay, late where its batch was lacking (ps_server_replay.cc)
      out += fmt::format(", {} late replayed push(es) added to a later round", s.late_replays);
    if (s.data_total > 0)
      out += fmt::format("; data: {} of {} batches applied, {} handed back by departed workers", s.data_applied,
                         s.data_total, s.data_returned);
    if (o_.mode == Mode::async || o_.mode == Mode::bounded)
      out += fmt::format("; staleness histogram (0, 1, ..., 14, 15+ updates) {}", nlohmann::json(s.staleness).dump());
    if (o_.mode == Mode::bounded) out += fmt::format("; max clock gap {}", s.max_clock_gap);
  }
  if (!restores_.empty()) out += "\n" + restores_report();
  report_ = out;
}

}  // namespace trib::ps
