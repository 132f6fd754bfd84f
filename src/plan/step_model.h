// The planner's model of one training step on a cluster of identical hosts: measured
// compute, the bytes a strategy puts on each link, the link's rate and latency, how much of
// the communication hides behind backprop, and how evenly placement spreads the servers'
// bytes. Pure arithmetic on given costs, so that it can be checked by hand (docs/scaling.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trib::plan {

enum class Strategy { ps_sync, ps_async, allreduce };
std::string to_string(Strategy s);

// When backprop hands one trainable variable's gradient over, in the job's variable order.
struct GradientTiming {
  std::int64_t bytes = 0;  // f32
  double ready = 0;        // a fraction of the step's compute, from the step's start
};

// What the job costs, measured or given.
struct JobCosts {
  std::int64_t parameter_bytes = 0;                // trainable variables, f32
  std::map<std::int64_t, double> step_s_one_core;  // batch -> one step's compute on one core
  // Largest server's bytes over the mean, per server count (1.0: perfectly even); from the
  // job's placement of its variables. A count missing here is taken as even.
  std::map<int, double> server_imbalance;
  // Gradient buckets an allreduce exchanges per step (each costs a ring's latencies).
  int allreduce_buckets = 1;
  // Per batch, when each gradient is ready (calibrate.h measures it): with it, an allreduce
  // step is modelled as the timeline it runs (step_model.cc); without, by Behaviour's overlap.
  std::map<std::int64_t, std::vector<GradientTiming>> gradients;
  std::int64_t bucket_bytes = 4 << 20;  // strategy.bucket_mb
};

struct Hosts {
  double cores = 1;  // per host; compute scales linearly with them (the calibration's one core)
};

struct Link {
  double bytes_per_s = 125e6;  // each direction (full duplex), per host
  double latency_s = 50e-6;    // one way, host to host
  // The share of the rate that carries a connection's bytes: TCP/IPv4 over Ethernet with
  // 1500-byte frames carries 1448 of every 1514 (0.956); iperf3 measured 238 of 250 Mbit/s
  // on the emulated links (docs/scaling.md). The bound keeps the full rate (issue 14's).
  double goodput = 0.95;
};

// How Tributary runs each strategy today; the defaults are what the code does, and the
// emulation's figures fit them (docs/scaling.md).
struct Behaviour {
  double backprop_fraction = 2.0 / 3;  // of a step's compute; communication may hide behind it
  // CPU-seconds per byte a host sends or receives: the frames' encryption (AES-256-GCM, the
  // default wire) and the kernel's TCP path. 1.1 ns/B: the CPU that two CNN workers on
  // emulated hosts spent beyond training alone, 30 ms a step for 26.2 MB in and out, the
  // same for the ring and for a ps worker (docs/scaling_exchange_cpu.md); the
  // MAC-only wire on loopback costs 0.61 (docs/scaling_limits.md).
  double cpu_s_per_byte = 1.1e-9;
  // The exchange's CPU is spent while its bytes are on the link (the transport encrypts and
  // copies a frame while the ones before it travel), so a step pays max(CPU, wire) for an
  // exchange, not CPU + wire. False: the sum (the model before, kept for comparison).
  bool exchange_cpu_overlaps_wire = true;
  // Without a measured gradient timeline: how much of the allreduce may hide behind backprop.
  double allreduce_overlap = 0.0;
  double ps_overlap = 0.0;         // a ps worker pushes after its step
  // A ps worker's pulled values follow its pushed gradients on the link: the server answers
  // the pull (asked right behind the push, strategy.ps_overlap) once it applied the push, so
  // the two use the link's directions in turns, not at once.
  bool ps_push_pull_serial = true;
  // strategy.ps_overlap: the pull leaves behind the push, not after its reply: one round trip
  // a step instead of two.
  bool ps_pull_behind_push = true;
  // strategy.ps_pull_ahead (async only): the pull leaves before the push, so values and
  // gradients use the link's two directions at once.
  bool ps_pull_ahead = false;
};

struct Candidate {
  Strategy strategy = Strategy::allreduce;
  bool bf16 = false;  // allreduce: gradients on the wire as bf16
  int workers = 1;
  int servers = 0;    // ps only
  std::int64_t batch = 64;
};

struct Prediction {
  double compute_s = 0;       // the step's compute on one host, its communication's CPU included
  double hidden_s = 0;        // communication hidden behind the step's compute
  double worker_link_s = 0;   // the busiest direction of a worker's link
  double server_link_s = 0;   // the busiest server's link (ps)
  // The busiest server's CPU for the frames it receives and sends (ps): n pushes and n
  // pulls of its share a step, on a host like the workers'.
  double server_cpu_s = 0;
  double step_s = 0;          // predicted
  double images_per_s = 0;    // all workers
  double efficiency = 0;      // over workers x one host alone
  double bound_images_per_s = 0;  // perfect overlap: workers x batch / max(compute, links)
  // compute, or what the exposed time waits on (worker_link, server_link, server_cpu) when
  // it exceeds a quarter of the compute
  std::string bottleneck;
};

// Throws InvalidArgument naming the field when the candidate or costs make no sense
// (no calibration for the batch, a ps candidate without servers, workers < 1).
Prediction predict(const JobCosts& costs, const Hosts& hosts, const Link& link, const Candidate& c,
                   const Behaviour& behaviour = {});

// "1gbit", "250mbit", "10gbit", "100kbit", "800bit" -> bytes per second; throws naming the text.
double parse_link_rate(const std::string& text);

}  // namespace trib::plan
