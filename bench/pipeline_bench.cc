// Pipeline parallelism's overhead: an MLP of L equal dense layers and a classifier, cut into
// K stages by the planner (planner.h: each layer calibrated, the slowest stage minimised),
// each stage with its own one-thread engine, variables and optimizer, as threads of this process over the
// in-process transport (which copies every tensor, as a socket would) or, with --processes 1,
// as forked processes over TCP on loopback (as `trib train` runs them); under GPipe and 1F1B;
// beside one process training the same model at the same batch on one thread:
//   bench=pipeline model=mlp_WxL stages=K micro_batches=M schedule=S images_per_s=N
//         single_images_per_s=N bubble=B ideal_bubble=I peak_activation_mb=P bound_bubble=Q
//         cores_bound_bubble=C cores=P plan_bound_bubble=E cut=0-1,2-4 update_ms=U core_wait=W
//         stages_as=threads|processes async_send=0|1 stage_cpu_ms=c0,c1 plan_ms=e0,e1 sum_ms=s0,s1
//         refined=0|1 [pinned=1 pin_offset=N]
// bubble: the stages' mean idle share of the pipelined window, 1 - (passes + gradient sums) /
// (step - update): the ideal's own window, which ends at the flush (the update after it is
// update_ms, apart). ideal_bubble: (K - 1) / (M + K - 1), for equal stages. bound_bubble: the
// idle share these stages cannot avoid even with a core each and free transfers, from their
// measured CPU time per micro-batch (bound_bubble() below); it exceeds the ideal by the
// stages' imbalance (the last stage runs no recomputation, the others do). core_wait: the
// stages' mean share of the step spent runnable but without a core (the kernel's run-queue
// delay): what a loaded machine adds. cores_bound_bubble: the same bound when the stages and
// their transfers share this machine's `cores` (more stages than cores: K = 3 on 2), from the
// CPU time of every thread (bound_bubble() below). plan_bound_bubble: bound_bubble from the
// planner's per-stage estimates, what the cut was chosen for. cut: the planner's stages
// (layers, inclusive). stage_cpu_ms: c_s, each stage's measured CPU time per micro-batch (the
// bound's input); plan_ms: the planner's estimate per stage, whole stages timed (refined=1) or
// summed; sum_ms: the one-layer calibrations summed for the same cut (the two estimates'
// errors against c_s). --pin-offset 1 puts stage s on core s + 1: on this 2-vCPU machine, whose
// vCPUs differ in speed on memory-bound passes, it swaps them. Per stage, stderr breaks the step down: compute,
// accumulate, wait (for a neighbour), send, update, time on a core and waiting for one.
//
//   pipeline_bench [--stages 2] [--layers K] [--micro-batches 8] [--micro-batch 32] [--width 1024]
//                  [--steps 8] [--processes 0|1] [--pin 0|1] [--pin-offset 0] [--async-send 1|0] [--refine 1|0]
//                  [--cut 0-4,5-11]
// Only bench= lines go to stdout; progress and notes go to stderr.
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_process.h"
#include "trib/engine/context.h"
#include "trib/net/inproc_transport.h"
#include "trib/net/tcp_transport.h"
#include "trib/nn/dense.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/pipeline/pipeline_stage.h"
#include "trib/pipeline/planner.h"
#include "trib/train/model_graph.h"
#include "trib/update/local_update.h"

namespace trib::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int stages = 2, micro_batches = 8, steps = 8;
  int layers = 0;          // dense hidden layers (0: as many as stages), then the classifier
  bool processes = false;  // stages as forked processes over TCP (else threads, in-process transport)
  bool pin = false;        // stage s on core (s + pin_offset) mod cores
  int pin_offset = 0;      // which core stage 0 takes: swaps the stages' vCPUs (--pin-offset 1)
  bool refine = true;      // the planner's cut refined on whole stages (planner.h), else summed
  std::string cut;         // a fixed cut ("0-4,5-11"): no planning, the same stages in every run
  bool async_send = true;  // StageLinksOptions::async_send
  std::int64_t micro_batch = 32, width = 1024;
};

constexpr std::int64_t kClasses = 10;

std::shared_ptr<nn::Sequential> model(const Args& a) {
  auto seq = std::make_shared<nn::Sequential>();
  for (int i = 0; i < (a.layers > 0 ? a.layers : a.stages); ++i) seq->add(std::make_shared<nn::Dense>(nn::DenseOptions{.units = a.width, .activation = nn::Activation::relu}));
  seq->add(std::make_shared<nn::Dense>(nn::DenseOptions{.units = kClasses}));
  return seq;
}

double cpu_s(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
double thread_cpu_s() { return cpu_s(CLOCK_THREAD_CPUTIME_ID); }
double process_cpu_s() { return cpu_s(CLOCK_PROCESS_CPUTIME_ID); }

// How long the calling thread has waited, runnable, for a core (the kernel's run-queue delay,
// /proc/thread-self/schedstat's second field): the idle a loaded machine adds, apart from the
// waits for a neighbour. 0 where the kernel does not say.
double thread_core_wait_s() {
  std::ifstream in("/proc/thread-self/schedstat");
  double on_cpu_ns = 0, waiting_ns = 0;
  if (!(in >> on_cpu_ns >> waiting_ns)) return 0;
  return waiting_ns * 1e-9;
}

// The calling thread on one core, so that K stages on K cores do not migrate between them.
void pin_to_core(int s) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(s) % std::max(1u, std::thread::hardware_concurrency()), &set);
  sched_setaffinity(0, sizeof set, &set);
}

double cores() { return std::max(1u, std::thread::hardware_concurrency()); }

std::shared_ptr<const Optimizer> sgd() { return make_optimizer(OptimizerConfig{}); }
std::shared_ptr<const Schedule> lr() { return make_schedule(ScheduleConfig{}); }

struct Data {
  Tensor features, labels;
};

Data data(const Args& a) {
  const std::int64_t n = a.micro_batch * a.micro_batches;
  Data d{Tensor::empty(DType::f32, Shape{n, a.width}), Tensor::empty(DType::i32, Shape{n})};
  Rng rng(1);
  for (std::int64_t i = 0; i < n * a.width; ++i) d.features.data<float>()[i] = rng.uniform(-1, 1);
  for (std::int64_t i = 0; i < n; ++i) d.labels.data<std::int32_t>()[i] = static_cast<std::int32_t>(rng.below(kClasses));
  return d;
}

double single_images_per_s(const Args& a, const Data& d) {
  EngineContext engine(EngineOptions{1, 1});
  train::ModelSpec spec{model(a), Shape{a.width}, kClasses, 1};
  train::ModelGraph g(spec, a.micro_batch * a.micro_batches, true, engine);
  VariableStore vars;
  train::initialize_parameters(g.parameters(), 1, vars);
  std::vector<std::string> names;
  for (const auto& p : g.trainable_parameters()) names.push_back(p.name);
  update::LocalUpdate up({names, sgd(), lr()});
  auto step = [&](std::int64_t s) {
    auto r = g.run(d.features, d.labels, vars, static_cast<std::uint64_t>(s));
    up.apply(s, r.grads, vars);
  };
  step(1);
  const auto t0 = Clock::now();
  for (int s = 0; s < a.steps; ++s) step(s + 2);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(a.steps * a.micro_batch * a.micro_batches) / secs;
}

// One stage's totals over the measured steps.
struct StageTotals {
  double compute = 0, accumulate = 0, wait = 0, send = 0, update = 0, wall = 0;
  double update_cpu = 0;  // the update's CPU time (its wall time counts a loaded machine's waits)
  double cpu = 0;        // the stage thread's CPU time
  // Every thread's CPU time in the stage's process (its transfers too). Stages as threads
  // share one process: stage 0 counts it for all of them, the others 0.
  double process_cpu = 0;
  double core_wait = 0;  // the stage thread's time runnable but waiting for a core (a loaded machine)
  std::size_t peak = 0;
  void add(const StepStats& r) {
    compute += r.compute_s, accumulate += r.accumulate_s, wait += r.wait_s, send += r.send_s, update += r.update_s;
    update_cpu += r.update_cpu_s;
    wall += r.wall_s;
    peak = std::max(peak, r.peak_activation_bytes);
  }
  // The pipelined part of the step: the ideal's window, which ends at the flush (the update
  // after it is no pipeline idle time; it is reported apart).
  double window() const { return wall - update; }
  double work() const { return compute + accumulate; }
  double cpu_work() const { return std::max(0.0, cpu - update_cpu); }
};

struct Result {
  double images_per_s = 0, bubble = 0, bound = 0, update_ms = 0, peak_mb = 0;
  double cores_bound = 0;  // bound_bubble on this machine's cores
  double core_wait = 0;  // the stages' mean share of the step spent runnable without a core
  std::vector<double> stage_cpu_ms;  // c_s: each stage's CPU time per micro-batch, outside the update
};

// The idle share a flushed pipeline of stages with per-micro-batch work c_s cannot avoid,
// on a machine where each stage has a core of its own and transfers cost nothing: a step
// lasts at least sum(c_s) + (M - 1) max(c_s) (the first micro-batch crosses every stage, the
// slowest stage then runs the other M - 1), so stage s idles 1 - M c_s / that. Equal stages
// give (K - 1) / (M + K - 1); unequal ones more. With `cores` for everything, the step also
// lasts at least `all_work` (every thread's CPU time per step, transfers included) / cores.
double bound_bubble(const std::vector<double>& c, int m, double all_work = 0, double cores = 1) {
  double sum = 0, most = 0;
  for (double cs : c) sum += cs, most = std::max(most, cs);
  const double step = std::max(sum + (m - 1) * most, all_work / cores);
  double idle = 0;
  for (double cs : c) idle += (1 - m * cs / step) / static_cast<double>(c.size());
  return idle;
}

// The stages' measured bound: c_s is the stage thread's CPU time outside the update, which a
// loaded machine does not inflate (wall time would count the time its work waited for a core).
double bound_bubble(const std::vector<StageTotals>& t, int m, double cores) {
  std::vector<double> c;
  double all = 0;
  for (const auto& s : t) {
    c.push_back(s.cpu_work() / m);
    all += cores > 0 ? std::max(0.0, s.process_cpu - s.update_cpu) : 0;
  }
  return bound_bubble(c, m, all, cores > 0 ? cores : 1);
}

// The planner's cut of the bench's model (its calibration in a child process, so that this
// one forks its stages before it has run any engine), and the estimated ms per stage.
struct BenchPlan {
  Partition partition;
  std::vector<double> ms;      // the plan's estimate per stage (whole stages timed, if refined)
  std::vector<double> sum_ms;  // its layers' one-layer calibrations summed, for the same cut
};

BenchPlan plan(const Args& a) {
  int up[2];
  if (::pipe(up) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(up[0]);
    try {
      EngineContext engine(EngineOptions{1, 1});
      const std::vector<LayerCost> costs =
          calibrate(LayerCalibration{model(a), Shape{a.width}, kClasses, 1, a.micro_batch, sgd(), lr()}, engine);
      PlanOptions o;
      o.stages = a.stages;
      o.micro_batches = a.micro_batches;
      const LayerCalibration what{model(a), Shape{a.width}, kClasses, 1, a.micro_batch, sgd(), lr()};
      Plan p;
      if (!a.cut.empty()) {
        const Partition fixed = Partition::parse(a.cut);
        if (fixed.stage_count() != a.stages || fixed.layer_count() != static_cast<int>(costs.size()))
          throw std::runtime_error(fmt::format("--cut {}: expected {} stages over {} layers", a.cut, a.stages, costs.size()));
        p = estimate(costs, fixed, o);
        p.planned = false;
        if (a.refine)
          for (StageEstimate& s : p.stages) s.ms = calibrate_stage(what, engine, s.layers);
      } else {
        p = a.refine ? plan_partition(costs, o, [&](StageRange r, bool) { return calibrate_stage(what, engine, r); })
                     : plan_partition(costs, o);
      }
      fmt::print(stderr, "{}", p.table(costs));
      std::string line = p.partition.to_string();
      for (const StageEstimate& s : p.stages) line += fmt::format(" {} {}", s.ms, stage_ms(costs, s.layers, s.layers.end == static_cast<int>(costs.size())));
      bench::write_all(up[1], line + "\n");
    } catch (const std::exception& e) {
      fmt::print(stderr, "pipeline_bench: planning: {}\n", e.what());
      std::_Exit(1);
    }
    std::_Exit(0);
  }
  ::close(up[1]);
  std::istringstream in(bench::read_line(up[0]));
  ::close(up[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  BenchPlan p;
  std::string cut;
  if (!(in >> cut)) throw std::runtime_error("the planner's process sent no plan");
  p.partition = Partition::parse(cut);
  for (double ms = 0, sum = 0; in >> ms >> sum;) p.ms.push_back(ms), p.sum_ms.push_back(sum);
  return p;
}

// Stage `s`'s measured run: `connect` dials its neighbour; one warm-up step, then the timed
// ones. Stage 0 also times the whole window (the images/s figure).
StageTotals run_stage(const Args& a, const Data& d, const Partition& part, config::PipelineSchedule schedule, int s,
                      StageLinks& links, double* total_s) {
  const int k = a.stages;
  if (a.pin) pin_to_core(s + a.pin_offset);
  EngineContext engine(EngineOptions{1, 1});
  StageModel sm({model(a), Shape{a.width}, kClasses, 1, part.stages[static_cast<std::size_t>(s)], s + 1 == k, a.micro_batch},
                engine);
  PipelineStage stage({&sm, &links,
                       std::make_unique<update::LocalUpdate>(update::LocalUpdateOptions{sm.trainable_names(), sgd(), lr()}),
                       schedule, s, k, a.micro_batches});
  VariableStore vars;
  stage.start(vars, nullptr);
  const Tensor f = s == 0 ? d.features : Tensor(), y = s == 0 ? d.labels : Tensor();
  stage.step(1, a.steps + 1, f, y, vars);  // warm-up: allocation, kernel choice
  StageTotals t;
  const auto t0 = Clock::now();
  const double cpu0 = thread_cpu_s(), core0 = thread_core_wait_s(), process0 = process_cpu_s();
  for (int st = 0; st < a.steps; ++st) t.add(stage.step(st + 2, a.steps + 1, f, y, vars));
  t.cpu = thread_cpu_s() - cpu0;
  if (a.processes || s == 0) t.process_cpu = process_cpu_s() - process0;
  t.core_wait = thread_core_wait_s() - core0;
  if (total_s != nullptr) *total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return t;
}

net::ClusterSecret bench_secret() { return net::ClusterSecret::from_hex("00112233445566778899aabbccddeeff"); }

std::shared_ptr<net::NetContext> stage_context(int s) {
  return net::NetContext::create(bench_secret(), net::PeerIdentity{"worker", s, ""}, {}, [](std::string_view) {});
}

// Stages as threads of this process over the in-process transport (which copies every tensor).
std::vector<StageTotals> as_threads(const Args& a, const Data& d, const Partition& part, config::PipelineSchedule schedule,
                                    double& total_s) {
  auto hub = std::make_shared<net::InProcHub>();
  const int k = a.stages;
  std::vector<std::unique_ptr<StageLinks>> links;
  std::vector<std::string> addresses;
  for (int s = 0; s < k; ++s) {
    StageLinksOptions lo{std::make_shared<net::InProcTransport>(stage_context(s), hub), s, k};
    lo.async_send = a.async_send;
    links.push_back(std::make_unique<StageLinks>(std::move(lo)));
    addresses.push_back(links.back()->listen("stage:0"));
  }
  std::vector<StageTotals> totals(static_cast<std::size_t>(k));
  std::vector<std::thread> threads;
  for (int s = 0; s < k; ++s)
    threads.emplace_back([&, s] {
      const auto i = static_cast<std::size_t>(s);
      links[i]->connect(s + 1 < k ? addresses[i + 1] : "");
      totals[i] = run_stage(a, d, part, schedule, s, *links[i], s == 0 ? &total_s : nullptr);
    });
  for (auto& t : threads) t.join();
  return totals;
}

// Stages as processes (forked before this process starts any thread) over TCP on loopback,
// as `trib train` runs them. Each child hands its listening address and then its totals to
// the parent through a pipe; the parent passes each stage its successor's address.
std::vector<StageTotals> as_processes(const Args& a, const Data& d, const Partition& part,
                                      config::PipelineSchedule schedule, double& total_s) {
  const int k = a.stages;
  struct Child {
    pid_t pid = -1;
    int up = -1, down = -1;  // child -> parent, parent -> child
  };
  std::vector<Child> children(static_cast<std::size_t>(k));
  for (int s = 0; s < k; ++s) {
    int up[2], down[2];
    if (::pipe(up) != 0 || ::pipe(down) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(up[0]);
      ::close(down[1]);
      try {
        auto transport = std::make_shared<net::TcpTransport>(stage_context(s));
        StageLinksOptions lo{transport, s, k};
        lo.async_send = a.async_send;
        StageLinks links(std::move(lo));
        bench::write_all(up[1], links.listen("127.0.0.1:0") + "\n");
        links.connect(bench::read_line(down[0]));
        double whole = 0;
        StageTotals t = run_stage(a, d, part, schedule, s, links, &whole);
        bench::write_all(up[1], fmt::format("{} {} {} {} {} {} {} {} {} {} {} {}\n", t.compute, t.accumulate, t.wait, t.send,
                                            t.update, t.update_cpu, t.wall, t.cpu, t.process_cpu, t.core_wait, t.peak, whole));
        links.close();
      } catch (const std::exception& e) {
        fmt::print(stderr, "pipeline_bench: stage {}: {}\n", s, e.what());
        std::_Exit(1);
      }
      std::_Exit(0);
    }
    ::close(up[1]);
    ::close(down[0]);
    children[static_cast<std::size_t>(s)] = {pid, up[0], down[1]};
  }
  std::vector<std::string> addresses;
  for (const Child& c : children) addresses.push_back(bench::read_line(c.up));
  for (int s = 0; s < k; ++s)
    bench::write_all(children[static_cast<std::size_t>(s)].down,
                     (s + 1 < k ? addresses[static_cast<std::size_t>(s + 1)] : std::string()) + "\n");
  std::vector<StageTotals> totals(static_cast<std::size_t>(k));
  for (int s = 0; s < k; ++s) {
    const Child& c = children[static_cast<std::size_t>(s)];
    std::istringstream in(bench::read_line(c.up));
    StageTotals& t = totals[static_cast<std::size_t>(s)];
    double whole = 0;
    if (!(in >> t.compute >> t.accumulate >> t.wait >> t.send >> t.update >> t.update_cpu >> t.wall >> t.cpu >> t.process_cpu >> t.core_wait >>
          t.peak >> whole))
      throw std::runtime_error(fmt::format("stage {} (pid {}) sent no result", s, c.pid));
    if (s == 0) total_s = whole;
  }
  for (const Child& c : children) {
    int status = 0;
    ::waitpid(c.pid, &status, 0);
    ::close(c.up);
    ::close(c.down);
  }
  return totals;
}

Result pipelined(const Args& a, const Data& d, const Partition& part, config::PipelineSchedule schedule) {
  double total_s = 0;
  const std::vector<StageTotals> totals =
      a.processes ? as_processes(a, d, part, schedule, total_s) : as_threads(a, d, part, schedule, total_s);
  const int k = a.stages;
  Result r;
  r.images_per_s = static_cast<double>(a.steps * a.micro_batch * a.micro_batches) / total_s;
  for (int s = 0; s < k; ++s) {
    const StageTotals& t = totals[static_cast<std::size_t>(s)];
    r.bubble += (1 - t.work() / t.window()) / k;
    r.update_ms = std::max(r.update_ms, 1000 * t.update / a.steps);
    r.peak_mb = std::max(r.peak_mb, static_cast<double>(t.peak) / (1024.0 * 1024.0));
    const double ms = 1000.0 / a.steps;
    fmt::print(stderr,
               "pipeline_bench:   stage {}: per step {:.2f} ms: compute {:.2f} ({:.2f} per micro-batch), accumulate {:.2f}, "
               "wait {:.2f}, send {:.2f}, update {:.2f}, other {:.2f}; on a core {:.2f}, waiting for a core {:.2f}\n",
               s, t.wall * ms, t.compute * ms, t.compute * ms / a.micro_batches, t.accumulate * ms, t.wait * ms,
               t.send * ms, t.update * ms, (t.wall - t.compute - t.accumulate - t.wait - t.send - t.update) * ms,
               t.cpu * ms, t.core_wait * ms);
    r.core_wait += t.core_wait / t.wall / k;
  }
  r.bound = bound_bubble(totals, a.micro_batches, 0);
  for (const StageTotals& t : totals) r.stage_cpu_ms.push_back(1000.0 * t.cpu_work() / a.steps / a.micro_batches);
  r.cores_bound = bound_bubble(totals, a.micro_batches, cores());
  return r;
}

int run(const Args& a) {
  const BenchPlan cut = plan(a);
  const Data d = data(a);
  // The pipelined runs first: forked stages must not inherit the single run's engine threads.
  std::vector<std::pair<config::PipelineSchedule, Result>> results;
  for (auto schedule : {config::PipelineSchedule::gpipe, config::PipelineSchedule::one_f_one_b}) {
    fmt::print(stderr, "pipeline_bench: {} stages as {}, {} micro-batches of {}, {}\n", a.stages,
               a.processes ? "processes" : "threads", a.micro_batches, a.micro_batch, config::to_string(schedule));
    results.emplace_back(schedule, pipelined(a, d, cut.partition, schedule));
  }
  const double single = single_images_per_s(a, d);
  for (const auto& [schedule, r] : results)
    fmt::print("bench=pipeline model=mlp_{}x{} stages={} micro_batches={} schedule={} images_per_s={:.0f} "
               "single_images_per_s={:.0f} bubble={:.3f} ideal_bubble={:.3f} peak_activation_mb={:.2f} bound_bubble={:.3f} "
               "cores_bound_bubble={:.3f} cores={:.0f} plan_bound_bubble={:.3f} cut={} update_ms={:.2f} core_wait={:.3f} "
               "stages_as={} async_send={} stage_cpu_ms={:.3f} plan_ms={:.3f} sum_ms={:.3f} refined={}{}\n",
               a.width, a.layers > 0 ? a.layers : a.stages, a.stages, a.micro_batches, config::to_string(schedule),
               r.images_per_s, single, r.bubble, ideal_bubble(a.stages, a.micro_batches), r.peak_mb, r.bound, r.cores_bound,
               cores(), bound_bubble(cut.ms, a.micro_batches), cut.partition.to_string(), r.update_ms, r.core_wait,
               a.processes ? "processes" : "threads", a.async_send ? 1 : 0, fmt::join(r.stage_cpu_ms, ","),
               fmt::join(cut.ms, ","), fmt::join(cut.sum_ms, ","), a.refine ? 1 : 0,
               a.pin ? fmt::format(" pinned=1 pin_offset={}", a.pin_offset) : std::string());
  return 0;
}

}  // namespace
}  // namespace trib::pipeline

int main(int argc, char** argv) {
  trib::pipeline::Args a;
  constexpr const char* kUsage =
      "usage: pipeline_bench [--stages K] [--layers L] [--micro-batches M] [--micro-batch B] [--width W] "
      "[--steps N] [--processes 0|1] [--pin 0|1] [--pin-offset N] [--refine 0|1] [--async-send 0|1] "
      "[--cut 0-4,5-11]";
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      fmt::print("{}\n", kUsage);
      return 0;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "pipeline_bench: {} needs a value\n{}\n", k, kUsage);
      return 2;
    }
    const std::string_view text = argv[i + 1];
    if (k == "--cut") {
      a.cut = text;
      continue;
    }
    long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) {
      fmt::print(stderr, "pipeline_bench: {} expects an integer, got '{}'\n", k, text);
      return 2;
    }
    if (k == "--stages") a.stages = static_cast<int>(v);
    else if (k == "--layers") a.layers = static_cast<int>(v);
    else if (k == "--micro-batches") a.micro_batches = static_cast<int>(v);
    else if (k == "--micro-batch") a.micro_batch = v;
    else if (k == "--width") a.width = v;
    else if (k == "--steps") a.steps = static_cast<int>(v);
    else if (k == "--processes") a.processes = v != 0;
    else if (k == "--pin") a.pin = v != 0;
    else if (k == "--pin-offset") a.pin_offset = static_cast<int>(v);
    else if (k == "--refine") a.refine = v != 0;
    else if (k == "--async-send") a.async_send = v != 0;
    else {
      fmt::print(stderr, "pipeline_bench: unknown option {}\n{}\n", k, kUsage);
      return 2;
    }
  }
  try {
    return trib::pipeline::run(a);
  } catch (const std::exception& e) {
    fmt::print(stderr, "pipeline_bench: {}\n", e.what());
    return 1;
  }
}
