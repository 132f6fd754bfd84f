#include "trib/ps/ps_server.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "ps/ps_protocol.h"
#include "ps/slice_io.h"
#include "trib/checkpoint/checkpoint.h"

namespace trib::ps {

using json = nlohmann::json;

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
  done_.assign(o_.workers, false);
  pool_ = std::make_shared<PoolAllocator>();
}

net::Message PsServer::handle(net::Message m, const net::PeerIdentity& from) {
  {
    std::lock_guard lock(mu_);
    stats_.requests++;
    if (m.tensor.defined()) stats_.bytes_in += m.tensor.nbytes();
  }
  json body = m.body.empty() ? json::object() : json::parse(m.body);
  switch (m.method) {
    case proto::kInit: return init(m);
    case proto::kRestore: return restore(body.at("dir").get<std::string>());
    case proto::kPull: return pull(m);
    case proto::kPush: return push(m);
    case proto::kSave: return save(body.at("dir").get<std::string>());
    case proto::kDone: return done(body.at("worker").get<int>());
    case proto::kStats: {
      PsStats s = stats();
      net::Message r;
      r.body = json{{"bytes_in", s.bytes_in},   {"bytes_out", s.bytes_out},       {"requests", s.requests},
                    {"applied", s.applied},     {"dropped_late", s.dropped_late}, {"max_clock_gap", s.max_clock_gap},
                    {"staleness", s.staleness}}
                   .dump();
      return r;
    }
    default:
      throw InvalidArgument(fmt::format("ps {}: unknown request 0x{:x} from {}", o_.index, m.method, from.to_string()));
  }
}

net::Message PsServer::init(const net::Message& m) {
  TRIB_CHECK(m.tensor.defined() && m.tensor.numel() == flat_elements_, InvalidArgument,
             "ps {}: initial values hold {} elements, expected {}", o_.index,
             m.tensor.defined() ? m.tensor.numel() : 0, flat_elements_);
  std::lock_guard lock(mu_);
  values_.copy_from(m.tensor);
  start_step_ = json::parse(m.body).value("step", std::int64_t{0});
  std::fill(clocks_.begin(), clocks_.end(), start_step_);
  round_ = start_step_;
  initialized_ = true;
  changed_.notify_all();
  return {};
}

net::Message PsServer::restore(const std::string& dir) {
  Checkpoint ckpt = Checkpoint::load(dir);
  std::lock_guard lock(mu_);
  read_slices(ckpt, o_.variables, slices_, values_, slots_);
  start_step_ = ckpt.step();
  std::fill(clocks_.begin(), clocks_.end(), start_step_);
  round_ = start_step_;
  initialized_ = true;
  changed_.notify_all();
  net::Message r;
  r.body = json{{"step", start_step_}}.dump();
  return r;
}

// The slowest worker still training; a worker that took its last step holds no one back.
std::int64_t PsServer::min_clock() const {
  std::int64_t slowest = std::numeric_limits<std::int64_t>::max();
  for (std::size_t w = 0; w < clocks_.size(); ++w)
    if (!done_[w]) slowest = std::min(slowest, clocks_[w]);
  return slowest;
}

int PsServer::needed_contributions() const {
  const int active = static_cast<int>(std::count(done_.begin(), done_.end(), false));
  return std::max(1, active - o_.backup_workers);
}

net::Message PsServer::done(int worker) {
  TRIB_CHECK(worker >= 0 && worker < o_.workers, InvalidArgument, "ps {}: done from unknown worker {}", o_.index,
             worker);
  std::lock_guard lock(mu_);
  done_[worker] = true;
  // The round in progress may have waited only for this worker.
  if (contributions_ > 0) complete_round(round_step_, last_lr_);
  changed_.notify_all();
  return {};
}

void PsServer::complete_round(std::int64_t step, float lr) {
  if (contributions_ == 0 || contributions_ < needed_contributions()) return;
  const float inv = 1.0f / static_cast<float>(contributions_);
  float* acc = accumulator_.data<float>();
  if (o_.mode == Mode::sync) {
    for (std::int64_t i = 0; i < flat_elements_; ++i) acc[i] *= inv;
    apply_gradients(accumulator_, "{}", lr, version_);
  } else {
    float* v = values_.data<float>();
    for (std::int64_t i = 0; i < flat_elements_; ++i) v[i] = acc[i] * inv;
    round_ = step + 1;
    ++version_;
    stats_.applied++;
  }
  accumulator_.fill(0.0f);
  contributions_ = 0;
}

net::Message PsServer::pull(const net::Message& m) {
  json body = json::parse(m.body);
  const std::int64_t step = body.value("step", std::int64_t{-1});
  std::unique_lock lock(mu_);
  // Waiting here is bounded (the transport serves this connection on one thread); the
  // worker asks again when told it is not ready yet.
  auto ready = [&] {
    if (!initialized_) return false;
    if (step < 0) return true;  // a plain read (start-up)
    switch (o_.mode) {
      case Mode::async: return true;
      case Mode::bounded: return step - min_clock() <= o_.staleness;
      case Mode::sync: return version_ >= step - start_step_;
      case Mode::averaging: return round_ >= step;
    }
    return true;
  };
  if (!changed_.wait_for(lock, std::chrono::milliseconds(50), ready)) {
    net::Message r;
    r.body = json{{"ready", false}}.dump();
    return r;
  }
  if (o_.mode == Mode::bounded && step >= 0) stats_.max_clock_gap = std::max(stats_.max_clock_gap, step - min_clock());
  net::Message r;
  r.body = json{{"ready", true}, {"version", version_}, {"step", start_step_}}.dump();
  r.tensor = values_.clone(pool_.get());  // a snapshot; pooled, so no page faults per pull
  stats_.bytes_out += r.tensor.nbytes();
  return r;
}

net::Message PsServer::push(const net::Message& m) {
  json body = json::parse(m.body);
  const int worker = body.at("worker").get<int>();
  const std::int64_t step = body.at("step").get<std::int64_t>();
  const std::int64_t pulled = body.value("version", std::int64_t{0});
  const float lr = body.value("lr", 0.0f);
  TRIB_CHECK(worker >= 0 && worker < o_.workers, InvalidArgument, "ps {}: push from unknown worker {}", o_.index, worker);
  std::lock_guard lock(mu_);
  clocks_[worker] = std::max(clocks_[worker], step + 1);
  net::Message reply;
  switch (o_.mode) {
    case Mode::async:
    case Mode::bounded:
      TRIB_CHECK(m.tensor.defined() && m.tensor.dtype() == DType::f32, InvalidArgument,
                 "ps {}: a push from worker {} carries no f32 gradients", o_.index, worker);
      apply_gradients(m.tensor, m.body, lr, pulled);
      break;
    case Mode::sync: {
      if (step - start_step_ < version_) {  // this step was already applied without it
        stats_.dropped_late++;
        break;
      }
      TRIB_CHECK(!body.contains("sparse"), InvalidArgument,
                 "ps {}: sync mode takes dense gradients (the worker densifies embedding rows)", o_.index);
      const float* g = m.tensor.data<float>();
      float* acc = accumulator_.data<float>();
      for (std::int64_t i = 0; i < flat_elements_; ++i) acc[i] += g[i];
      ++contributions_;
      last_lr_ = lr;
      round_step_ = step;
      complete_round(step, lr);
      break;
    }
    case Mode::averaging: {
      if (step < round_) {
        stats_.dropped_late++;
        break;
      }
      const float* p = m.tensor.data<float>();
      float* acc = accumulator_.data<float>();
      for (std::int64_t i = 0; i < flat_elements_; ++i) acc[i] += p[i];
      ++contributions_;
      round_step_ = step;
      complete_round(step, lr);
      break;
    }
  }
  changed_.notify_all();
  return reply;
}

void PsServer::apply_gradients(const Tensor& flat, const std::string& body_text, float lr,
                               std::int64_t pulled_version) {
  json body = json::parse(body_text);
  const json* sparse = body.contains("sparse") ? &body["sparse"] : nullptr;
  // Layout: dense slices' gradients in slice order, then the sparse slices' rows.
  std::int64_t dense_total = 0;
  for (std::size_t i = 0; i < slices_.size(); ++i)
    if (!(sparse && sparse->contains(std::to_string(i)))) dense_total += slices_[i].elements;
  std::int64_t dense_offset = 0, sparse_offset = dense_total, value_offset = 0;
  for (std::size_t i = 0; i < slices_.size(); ++i) {
    const Slice& s = slices_[i];
    const VariableInfo& v = variable_info(o_.variables, s.variable);
    Shape slice_shape = slice_shape_of(v, s);
    Tensor param = values_.view(value_offset, slice_shape);
    std::string key = std::to_string(i);
    if (sparse && sparse->contains(key)) {
      const json& ids = (*sparse)[key];
      std::int64_t n = static_cast<std::int64_t>(ids.size());
      Tensor idx = Tensor::empty(DType::i64, Shape{n});
      for (std::int64_t k = 0; k < n; ++k) idx.data<std::int64_t>()[k] = ids[k].get<std::int64_t>();
      std::vector<std::int64_t> row_dims = slice_shape.dims();
      row_dims[0] = n;
      Tensor rows = Tensor::empty(DType::f32, Shape(row_dims));
      std::memcpy(rows.raw_data(), flat.data<float>() + sparse_offset, rows.nbytes());
      sparse_offset += rows.numel();
      if (n > 0) o_.optimizer->apply_sparse(s.key(), param, rows, idx, slots_, lr);
    } else {
      o_.optimizer->apply(s.key(), param, flat.view(dense_offset, slice_shape), slots_, lr);
      dense_offset += s.elements;
    }
    value_offset += s.elements;
  }
  record_staleness(version_ - pulled_version);
  ++version_;
  stats_.applied++;
}

void PsServer::record_staleness(std::int64_t updates) {
  std::size_t bin = static_cast<std::size_t>(std::clamp<std::int64_t>(updates, 0, 15));
  stats_.staleness[bin]++;
}

net::Message PsServer::save(const std::string& dir) {
  TensorMap tensors;
  {
    std::lock_guard lock(mu_);
    write_slices(o_.variables, slices_, values_, slots_, tensors);
  }
  ShardInfo info = write_shard(dir, fmt::format("ps-{}", o_.index), tensors);
  net::Message r;
  r.body = shard_info_to_json(info).dump();
  return r;
}

PsStats PsServer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace trib::ps
