#include "trib/ps/strategy_ps.h"

#include <cstring>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "ps/ps_protocol.h"
#include "ps/slice_io.h"
#include "trib/update/all_finite.h"

namespace trib::ps {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

PsUpdate::PsUpdate(PsUpdateOptions options) : o_(std::move(options)) {
  TRIB_CHECK(static_cast<int>(o_.servers.size()) == o_.placement.num_ps, InvalidArgument,
             "{} server connections for a placement over {} servers", o_.servers.size(), o_.placement.num_ps);
  for (int p = 0; p < o_.placement.num_ps; ++p) slices_.push_back(o_.placement.slices_of(p));
  versions_.assign(o_.servers.size(), 0);
  for (const auto& slices : slices_) {
    std::int64_t n = 0;
    for (const Slice& s : slices) n += s.elements;
    pull_buffers_.push_back(Tensor::empty(DType::f32, Shape{n}));
  }
  if (o_.mode == Mode::averaging) {
    std::vector<std::string> names;
    for (const auto& v : o_.variables) names.push_back(v.name);
    local_ = std::make_unique<update::LocalUpdate>(update::LocalUpdateOptions{names, o_.optimizer, o_.schedule});
  }
}

namespace {

std::int64_t index_of(const std::vector<VariableInfo>& vars, const std::string& name) {
  for (std::size_t i = 0; i < vars.size(); ++i)
    if (vars[i].name == name) return static_cast<std::int64_t>(i);
  throw NotFound(fmt::format("no trainable variable '{}'", name));
}

std::int64_t as_index(const Tensor& ids, std::int64_t k) {
  return ids.dtype() == DType::i64 ? ids.data<std::int64_t>()[k] : ids.data<std::int32_t>()[k];
}

}  // namespace

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

net::Message PsUpdate::pack_gradients(int ps, std::int64_t step, const std::vector<update::GradTensor>& grads) const {
  // Dense slices first, in slice order; then the rows of sparse (embedding) slices with their
  // ids in the body, so an embedding gradient travels as rows and indices.
  const bool densify = o_.mode == Mode::sync;  // sync averages whole buffers
  json sparse = json::object();
  std::vector<std::pair<const float*, std::int64_t>> dense_parts, sparse_parts;
  std::vector<Tensor> keep;
  for (std::size_t i = 0; i < slices_[ps].size(); ++i) {
    const Slice& s = slices_[ps][i];
    const VariableInfo& v = variable_info(o_.variables, s.variable);
    const update::GradTensor& g = grads[index_of(o_.variables, s.variable)];
    const std::int64_t re = v.row_elements();
    if (!g.sparse()) {
      dense_parts.emplace_back(g.values.data<float>() + s.row_begin * re, s.elements);
      continue;
    }
    std::vector<std::int64_t> ids;
    std::vector<std::int64_t> which;
    for (std::int64_t k = 0; k < g.indices.numel(); ++k) {
      std::int64_t id = as_index(g.indices, k);
      if (id >= s.row_begin && id < s.row_end) ids.push_back(id - s.row_begin), which.push_back(k);
    }
    if (densify) {
      Tensor d = Tensor::zeros(DType::f32, Shape{s.elements});
      for (std::size_t k = 0; k < ids.size(); ++k)
        for (std::int64_t e = 0; e < re; ++e) d.data<float>()[ids[k] * re + e] += g.values.data<float>()[which[k] * re + e];
      dense_parts.emplace_back(d.data<float>(), s.elements);
      keep.push_back(std::move(d));
      continue;
    }
    Tensor rows = Tensor::empty(DType::f32, Shape{static_cast<std::int64_t>(ids.size()) * re});
    for (std::size_t k = 0; k < ids.size(); ++k)
      std::memcpy(rows.data<float>() + k * re, g.values.data<float>() + which[k] * re, re * 4);
    sparse[std::to_string(i)] = ids;
    sparse_parts.emplace_back(rows.data<float>(), rows.numel());
    keep.push_back(std::move(rows));
  }
  std::int64_t total = 0;
  for (auto& [p, n] : dense_parts) total += n;
  for (auto& [p, n] : sparse_parts) total += n;
  net::Message m;
  m.method = proto::kPush;
  m.tensor = Tensor::empty(DType::f32, Shape{total}, pool_.get());
  std::int64_t off = 0;
  for (auto* parts : {&dense_parts, &sparse_parts})
    for (auto& [p, n] : *parts) {
      std::memcpy(m.tensor.data<float>() + off, p, n * 4);
      off += n;
    }
  json body = {{"worker", o_.worker_index}, {"step", step}, {"version", versions_[ps]}, {"lr", o_.schedule->lr(step)}};
  if (!sparse.empty()) body["sparse"] = sparse;
  m.body = body.dump();
  return m;
}

std::int64_t PsUpdate::pull_all(std::int64_t step, VariableStore& vars) {
  std::int64_t start_step = 0;
  auto deadline = Clock::now() + o_.wait_timeout;
  std::vector<bool> done(o_.servers.size(), false);
  std::size_t remaining = o_.servers.size();
  while (remaining > 0) {
    std::vector<std::future<net::Message>> replies(o_.servers.size());
    for (std::size_t p = 0; p < o_.servers.size(); ++p) {
      if (done[p]) continue;
      net::RequestOptions ro;
      ro.reply_into = pull_buffers_[p];  // received in place, no allocation per step
      replies[p] = o_.servers[p]->request({proto::kPull, json{{"step", step}, {"worker", o_.worker_index}}.dump(), Tensor()}, ro);
    }
    for (std::size_t p = 0; p < o_.servers.size(); ++p) {
      if (done[p]) continue;
      net::Message r = replies[p].get();
      json body = json::parse(r.body);
      if (!body.value("ready", false)) continue;
      versions_[p] = body.value("version", std::int64_t{0});
      start_step = body.value("step", std::int64_t{0});
      std::int64_t off = 0;
      for (const Slice& s : slices_[p]) {
        const VariableInfo& v = variable_info(o_.variables, s.variable);
        Tensor& t = vars.get(s.variable);
        std::memcpy(t.data<float>() + s.row_begin * v.row_elements(), r.tensor.data<float>() + off, s.elements * 4);
        off += s.elements;
      }
      done[p] = true;
      --remaining;
    }
    TRIB_CHECK(remaining == 0 || Clock::now() < deadline, Timeout,
               "worker {}: parameter servers did not release step {} within {} s (a stalled worker?)", o_.worker_index,
               step, o_.wait_timeout.count() / 1000);
  }
  return start_step;
}

std::int64_t PsUpdate::start(VariableStore& vars, const Checkpoint* checkpoint) {
  const bool chief = o_.worker_index == 0;
  if (chief) {
    std::vector<std::future<net::Message>> acks;
    for (std::size_t p = 0; p < o_.servers.size(); ++p) {
      if (checkpoint != nullptr)
        acks.push_back(o_.servers[p]->request({proto::kRestore, json{{"dir", checkpoint->dir().string()}}.dump(), Tensor()}));
      else
        acks.push_back(o_.servers[p]->request({proto::kInit, json{{"step", 0}}.dump(), pack_values(static_cast<int>(p), vars)}));
    }
    for (auto& a : acks) a.get();
    // Variables that live on no server (batch-norm statistics) come from the checkpoint.
    if (checkpoint != nullptr)
      for (const std::string& name : vars.names())
        if (checkpoint->contains(name) && !std::any_of(o_.variables.begin(), o_.variables.end(),
                                                       [&](const VariableInfo& v) { return v.name == name; }))
          vars.set(name, checkpoint->tensor(name).clone());
  }
  return pull_all(-1, vars);
}

bool PsUpdate::apply(std::int64_t step, std::vector<update::GradTensor>& grads, VariableStore& vars) {
  if (!update::all_finite(grads)) return false;  // never send NaN to the servers
  if (o_.mode == Mode::averaging) {
    local_->apply(step, grads, vars);
    if ((step + 1) % o_.period != 0) return true;
    std::vector<std::future<net::Message>> acks;
    for (std::size_t p = 0; p < o_.servers.size(); ++p)
      acks.push_back(o_.servers[p]->request({proto::kPush, json{{"worker", o_.worker_index}, {"step", step + 1}}.dump(),
                                             pack_values(static_cast<int>(p), vars)}));
    for (auto& a : acks) a.get();
    pull_all(step + 1, vars);
    return true;
  }
  std::vector<std::future<net::Message>> acks;
  for (std::size_t p = 0; p < o_.servers.size(); ++p)
    acks.push_back(o_.servers[p]->request(pack_gradients(static_cast<int>(p), step, grads)));
  for (auto& a : acks) a.get();
  pull_all(step + 1, vars);
  return true;
}

void PsUpdate::save(CheckpointWriter& writer, const VariableStore& vars) {
  std::vector<std::future<net::Message>> replies;
  for (auto& s : o_.servers)
    replies.push_back(s->request({proto::kSave, json{{"dir", writer.dir().string()}}.dump(), Tensor()}));
  for (std::size_t p = 0; p < replies.size(); ++p)
    writer.add_written_shard(shard_info_from_json(json::parse(replies[p].get().body), fmt::format("ps {}", p)));
  TensorMap local;
  for (const std::string& name : vars.names())
    if (!std::any_of(o_.variables.begin(), o_.variables.end(), [&](const VariableInfo& v) { return v.name == name; }))
      local[name] = vars.get(name);
  if (!local.empty()) writer.add_shard("chief", local);
}

void PsUpdate::finish() {
  // The servers stop waiting for this worker: the others may take more steps (a stream's
  // partitions run dry at different times), and sync, bounded and averaging rounds go on
  // without it.
  std::vector<std::future<net::Message>> acks;
  for (auto& s : o_.servers)
    acks.push_back(s->request({proto::kDone, json{{"worker", o_.worker_index}}.dump(), Tensor()}));
  for (auto& a : acks) a.get();
  if (o_.worker_index != 0) return;
  std::string out = "parameter servers:";
  for (std::size_t p = 0; p < o_.servers.size(); ++p) {
    json s = json::parse(o_.servers[p]->call({proto::kStats, "", Tensor()}).body);
    out += fmt::format("\n  ps {}: {:.1f} MB in, {:.1f} MB out, {} requests, {} updates, {} late dropped",
                       p, s["bytes_in"].get<double>() / 1e6, s["bytes_out"].get<double>() / 1e6,
                       s["requests"].get<std::uint64_t>(), s["applied"].get<std::uint64_t>(),
                       s["dropped_late"].get<std::uint64_t>());
    if (o_.mode == Mode::async || o_.mode == Mode::bounded)
      out += fmt::format("; staleness histogram (0, 1, ..., 14, 15+ updates) {}", s["staleness"].dump());
    if (o_.mode == Mode::bounded) out += fmt::format("; max clock gap {}", s["max_clock_gap"].get<std::int64_t>());
  }
  report_ = out;
}

}  // namespace trib::ps
