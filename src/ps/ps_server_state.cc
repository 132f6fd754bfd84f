// A parameter server's whole state, as a primary copies it to a backup that joins late (a
// relaunched server, strategy.ps_replicas: docs/fault_tolerance/parameter_servers.md, "Hot
// backups"): values, optimizer slots, the open round, every worker's clock, roster entry,
// data cursor and last push and claim number, the chunk dispenser and the counters. Whatever
// a takeover needs, since the backup continues from it with the frames that follow.
#include <cstring>
#include <type_traits>

#include "ps/chunk_dispenser.h"
#include "ps/state_io.h"
#include "ps/worker_roster.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {

namespace {

constexpr std::uint32_t kStateMagic = 0x53545350;  // "PSTS"

void put_tensor(state_io::Writer& out, const Tensor& t) {
  out.put<std::uint8_t>(static_cast<std::uint8_t>(t.dtype()));
  out.put_vector<std::int64_t>(t.shape().dims());
  out.put_bytes(t.raw_data(), t.nbytes());
}

Tensor get_tensor(state_io::Reader& in, const char* field) {
  const auto dtype = in.get<std::uint8_t>(field);
  TRIB_CHECK(dtype <= static_cast<std::uint8_t>(DType::i64), InvalidArgument, "server state: {} of dtype {}", field,
             dtype);
  const std::uint64_t rank = in.get_count(field, sizeof(std::int64_t));
  std::vector<std::int64_t> dims(rank);
  for (std::int64_t& d : dims) {
    d = in.get<std::int64_t>(field);
    TRIB_CHECK(d >= 0, InvalidArgument, "server state: {} has a negative dimension", field);
  }
  const std::string_view bytes = in.get_bytes(field);
  Shape shape(dims);
  TRIB_CHECK(static_cast<std::uint64_t>(shape.numel()) * dtype_size(static_cast<DType>(dtype)) == bytes.size(),
             InvalidArgument, "server state: {} of shape {} carries {} bytes", field, shape.to_string(), bytes.size());
  Tensor t = Tensor::empty(static_cast<DType>(dtype), shape);
  if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

// Into `into` (no allocation: a shard's values are large): a tensor of its dtype and size.
void read_into(state_io::Reader& in, Tensor& into, const char* field) {
  const auto dtype = in.get<std::uint8_t>(field);
  std::int64_t numel = 1;
  for (std::uint64_t i = 0, rank = in.get_count(field, sizeof(std::int64_t)); i < rank; ++i)
    numel *= in.get<std::int64_t>(field);
  const std::string_view bytes = in.get_bytes(field);
  TRIB_CHECK(dtype == static_cast<std::uint8_t>(into.dtype()) && numel == into.numel() && bytes.size() == into.nbytes(),
             InvalidArgument, "server state: {} of {} elements ({} bytes), expected {}", field, numel, bytes.size(),
             into.spec_string());
  std::memcpy(into.raw_data(), bytes.data(), bytes.size());
}

}  // namespace

void WorkerRoster::save(state_io::Writer& out) const {
  out.put_bools(done_);
  out.put_bools(lost_);
  out.put_bools(pending_);
  out.put_bools(vacant_);
  out.put_strings(address_);
}

void WorkerRoster::load(state_io::Reader& in) {
  const std::size_t n = done_.size();
  done_ = in.get_bools("roster.done", n);
  lost_ = in.get_bools("roster.lost", n);
  pending_ = in.get_bools("roster.pending", n);
  vacant_ = in.get_bools("roster.vacant", n);
  address_ = in.get_strings("roster.address", n);
}

void ChunkDispenser::save(state_io::Writer& out) const {
  out.put<std::uint8_t>(planned_ ? 1 : 0);
  out.put(plan_.batches_per_epoch);
  out.put(plan_.chunk_batches);
  out.put(plan_.total_batches);
  for (std::int64_t v : {next_epoch_, next_index_, granted_fresh_, applied_, returned_total_}) out.put(v);
  auto put_chunk = [&](const Chunk& c) {
    for (std::int64_t v : {c.epoch, c.index, c.begin, c.end}) out.put(v);
  };
  out.put<std::uint64_t>(returned_.size());
  for (const Chunk& c : returned_) put_chunk(c);
  out.put<std::uint64_t>(held_.size());
  for (const auto& [worker, chunks] : held_) {
    out.put<std::int32_t>(worker);
    out.put<std::uint64_t>(chunks.size());
    for (const auto& [key, c] : chunks) put_chunk(c);
  }
}

void ChunkDispenser::load(state_io::Reader& in) {
  const char* f = "dispenser";
  planned_ = in.get<std::uint8_t>(f) != 0;
  plan_.batches_per_epoch = in.get<std::int64_t>(f);
  plan_.chunk_batches = in.get<std::int64_t>(f);
  plan_.total_batches = in.get<std::int64_t>(f);
  for (std::int64_t* v : {&next_epoch_, &next_index_, &granted_fresh_, &applied_, &returned_total_})
    *v = in.get<std::int64_t>(f);
  auto get_chunk = [&] {
    Chunk c;
    for (std::int64_t* v : {&c.epoch, &c.index, &c.begin, &c.end}) *v = in.get<std::int64_t>(f);
    return c;
  };
  returned_.clear();
  for (std::uint64_t i = 0, n = in.get_count(f, 32); i < n; ++i) returned_.push_back(get_chunk());
  held_.clear();
  for (std::uint64_t i = 0, n = in.get_count(f, 12); i < n; ++i) {
    std::map<Key, Chunk>& chunks = held_[in.get<std::int32_t>(f)];
    for (std::uint64_t k = 0, m = in.get_count(f, 32); k < m; ++k) {
      const Chunk c = get_chunk();
      chunks[{c.epoch, c.index}] = c;
    }
  }
}

std::string PsServer::encode_state_locked(std::string prefix) const {
  std::size_t tensors = values_.nbytes() + accumulator_.nbytes();
  for (const auto& [var, slot] : slots_.keys()) tensors += slots_.get(var, slot).nbytes();
  // The tensors, and room for the per-worker fields and the slots' names.
  state_io::Writer out(std::move(prefix), tensors + (64u << 10) + 256 * static_cast<std::size_t>(o_.workers));
  out.put(kStateMagic);
  out.put(epoch_);
  out.put<std::uint8_t>(initialized_ ? 1 : 0);
  for (std::int64_t v : {start_step_, version_, restart_generation_, round_step_, round_}) out.put(v);
  out.put<std::int32_t>(contributions_);
  out.put(last_lr_);
  out.put<std::uint8_t>(round_nonfinite_ ? 1 : 0);
  out.put_vector(clocks_);
  out.put_vector(floor_);
  out.put_bools(skip_notice_);
  out.put_bools(contributed_);
  out.put_strings(cursors_);
  out.put_bools(rejoined_);
  out.put_bools(joiner_);
  out.put_vector(seq_generation_);
  out.put_vector(last_seq_);
  out.put_vector(claim_generation_);
  out.put_vector(last_claim_);
  out.put_strings(last_claim_answer_);
  roster_->save(out);
  out.put<std::uint8_t>(dispenser_ ? 1 : 0);
  if (dispenser_) dispenser_->save(out);
  static_assert(std::is_trivially_copyable_v<PsStats>);
  out.put(stats_);
  put_tensor(out, values_);
  put_tensor(out, accumulator_);
  const auto keys = slots_.keys();
  out.put<std::uint64_t>(keys.size());
  for (const auto& [var, slot] : keys) {
    out.put_string(var);
    out.put_string(slot);
    put_tensor(out, slots_.get(var, slot));
  }
  return out.take();
}

void PsServer::load_state(std::string_view bytes) {
  state_io::Reader in(bytes);
  TRIB_CHECK(in.get<std::uint32_t>("magic") == kStateMagic, InvalidArgument,
             "ps {}: a server state that does not start with its magic number", o_.index);
  const auto n = static_cast<std::size_t>(o_.workers);
  std::lock_guard lock(mu_);
  epoch_ = in.get<std::int64_t>("epoch");
  initialized_ = in.get<std::uint8_t>("initialized") != 0;
  for (std::int64_t* v : {&start_step_, &version_, &restart_generation_, &round_step_, &round_})
    *v = in.get<std::int64_t>("step counters");
  contributions_ = in.get<std::int32_t>("contributions");
  last_lr_ = in.get<float>("learning rate");
  round_nonfinite_ = in.get<std::uint8_t>("round_nonfinite") != 0;
  clocks_ = in.get_vector<std::int64_t>("clocks", n);
  floor_ = in.get_vector<std::int64_t>("floor", n);
  skip_notice_ = in.get_bools("skip_notice", n);
  contributed_ = in.get_bools("contributed", n);
  cursors_ = in.get_strings("cursors", n);
  rejoined_ = in.get_bools("rejoined", n);
  joiner_ = in.get_bools("joiner", n);
  seq_generation_ = in.get_vector<std::int64_t>("seq_generation", n);
  last_seq_ = in.get_vector<std::uint32_t>("last_seq", n);
  claim_generation_ = in.get_vector<std::int64_t>("claim_generation", n);
  last_claim_ = in.get_vector<std::uint32_t>("last_claim", n);
  last_claim_answer_ = in.get_strings("last_claim_answer", n);
  roster_->load(in);
  const bool dispenses = in.get<std::uint8_t>("dispenser") != 0;
  TRIB_CHECK(dispenses == static_cast<bool>(dispenser_), InvalidArgument,
             "ps {}: a server state {} the data dispenser, this server {}", o_.index, dispenses ? "with" : "without",
             dispenser_ ? "hands out data" : "does not");
  if (dispenser_) dispenser_->load(in);
  stats_ = in.get<PsStats>("stats");
  read_into(in, values_, "values");
  read_into(in, accumulator_, "accumulator");
  slots_.clear();
  for (std::uint64_t i = 0, count = in.get_count("slots", 24); i < count; ++i) {
    const std::string var = in.get_string("slot variable");
    const std::string slot = in.get_string("slot name");
    slots_.set(var, slot, get_tensor(in, "slot"));
  }
  TRIB_CHECK(in.at_end(), InvalidArgument, "ps {}: a server state with bytes after its slots", o_.index);
  // A save or restore under way on the primary starts over here (the chief's next request).
  save_snapshot_.clear();
  save_names_.clear();
  restore_slots_.clear();
  changed_.notify_all();
}

}  // namespace trib::ps
