// The planner's step model on given measured costs, checked against hand arithmetic (no
// timing: every cost is given).
#include <gtest/gtest.h>

#include "plan/calibrate.h"
#include "plan/plan_report.h"
#include "plan/step_model.h"
#include "trib/config/job_config.h"
#include "trib/core/error.h"

namespace trib::plan {
namespace {

constexpr std::int64_t kCnnBytes = 3'274'634 * 4;  // the benchmarks' CNN (docs/scaling_limits.md)

JobCosts cnn_costs(double step_s_one_core) {
  JobCosts c;
  c.parameter_bytes = kCnnBytes;
  c.step_s_one_core[64] = step_s_one_core;
  c.server_imbalance = {{1, 1.0}, {2, 1.2}};
  return c;
}

// The model's arithmetic whatever the defaults: no CPU per byte, allreduce hidden behind
// backprop as far as it goes.
Behaviour no_cpu_cost() {
  Behaviour b;
  b.cpu_s_per_byte = 0;
  b.allreduce_overlap = 1;
  return b;
}

TEST(StepModel, OneAllreduceWorkerIsItsCompute) {
  Prediction p = predict(cnn_costs(0.030), Hosts{0.25}, Link{31.25e6, 0, 1.0}, {Strategy::allreduce, false, 1, 0, 64});
  EXPECT_DOUBLE_EQ(p.compute_s, 0.120);  // 30 ms on one core, a quarter of a core
  EXPECT_DOUBLE_EQ(p.worker_link_s, 0);
  EXPECT_DOUBLE_EQ(p.step_s, 0.120);
  EXPECT_DOUBLE_EQ(p.efficiency, 1.0);
  EXPECT_EQ(p.bottleneck, "compute");
}

// The issue's figure: 2 workers, fp32 gradients of the CNN on 1 Gbit/s bound at about 1220
// images/s, about 2460 with bf16, whatever the compute (here small).
TEST(StepModel, TwoWorkerBoundsOnOneGigabitAreTheIssues) {
  const JobCosts costs = cnn_costs(0.010);
  const Link gbit{parse_link_rate("1gbit"), 0, 1.0};
  Prediction f32 = predict(costs, Hosts{0.9}, gbit, {Strategy::allreduce, false, 2, 0, 64}, no_cpu_cost());
  Prediction bf16 = predict(costs, Hosts{0.9}, gbit, {Strategy::allreduce, true, 2, 0, 64}, no_cpu_cost());
  EXPECT_NEAR(f32.worker_link_s, kCnnBytes / 125e6, 1e-12);  // 2(n-1)/n = 1 tensor each way
  EXPECT_NEAR(f32.bound_images_per_s, 1221.5, 1.0);
  EXPECT_NEAR(bf16.bound_images_per_s, 2443.1, 1.0);
  EXPECT_EQ(f32.bottleneck, "worker_link");
}

// Exposed communication: what backprop (2/3 of the step) cannot hide.
TEST(StepModel, AllreduceHidesBehindBackpropUpToItsLength) {
  const JobCosts costs = cnn_costs(0.030);
  const Link link{31.25e6, 0, 1.0};
  Prediction p = predict(costs, Hosts{0.25}, link, {Strategy::allreduce, false, 4, 0, 64}, no_cpu_cost());
  const double comm = 1.5 * kCnnBytes / 31.25e6;  // 2(n-1)/n = 1.5
  EXPECT_NEAR(p.worker_link_s, comm, 1e-12);
  EXPECT_NEAR(p.step_s, 0.120 + comm - 2.0 / 3 * 0.120, 1e-12);
  EXPECT_NEAR(p.images_per_s, 4 * 64 / p.step_s, 1e-9);
  EXPECT_NEAR(p.bound_images_per_s, 4 * 64 / comm, 1e-9);
  EXPECT_NEAR(p.efficiency, 0.120 / p.step_s, 1e-12);
}

TEST(StepModel, CommunicationCpuAddsToComputeOnTheHostsCores) {
  Behaviour b;
  b.cpu_s_per_byte = 1e-9;
  Prediction p = predict(cnn_costs(0.030), Hosts{0.5}, Link{1e12, 0, 1.0}, {Strategy::allreduce, true, 2, 0, 64}, b);
  // bf16, two workers: half the tensor out and half in, at 1 ns per byte on half a core.
  EXPECT_NEAR(p.compute_s, 0.060 + kCnnBytes * 1e-9 / 0.5, 1e-12);
}

// The exchange's CPU (encryption, copies) is spent while its bytes travel: a step pays the
// longer of the two. One async worker pulling ahead, one server, a quarter core, 1 ns/B:
// 2 x 13.1 MB of CPU is 105 ms there.
TEST(StepModel, TheExchangesCpuOverlapsItsWire) {
  const JobCosts costs = cnn_costs(0.030);
  Behaviour b = no_cpu_cost();
  b.cpu_s_per_byte = 1e-9;
  b.ps_pull_ahead = true;
  const double cpu = 2.0 * kCnnBytes * 1e-9 / 0.25;
  // A slow link: the wire is longer, the CPU hides in it.
  Prediction slow = predict(costs, Hosts{0.25}, Link{31.25e6, 0, 1.0}, {Strategy::ps_async, false, 1, 1, 64}, b);
  EXPECT_NEAR(slow.step_s, 0.120 + kCnnBytes / 31.25e6, 1e-12);
  // A fast link: the CPU is longer, the wire hides in it.
  Prediction fast = predict(costs, Hosts{0.25}, Link{31.25e9, 0, 1.0}, {Strategy::ps_async, false, 1, 1, 64}, b);
  EXPECT_NEAR(fast.step_s, 0.120 + cpu, 1e-12);
  EXPECT_NEAR(fast.compute_s, 0.120 + cpu, 1e-12);
  // The sum, as the model had it before.
  b.exchange_cpu_overlaps_wire = false;
  EXPECT_NEAR(predict(costs, Hosts{0.25}, Link{31.25e6, 0, 1.0}, {Strategy::ps_async, false, 1, 1, 64}, b).step_s,
              0.120 + cpu + kCnnBytes / 31.25e6, 1e-12);
}

// An allreduce step is never shorter than all the CPU its host spends: compute plus the
// exchange's. Two workers, one core, a link so fast that the timeline is the compute.
TEST(StepModel, AnAllreduceStepIsAtLeastItsHostsCpu) {
  JobCosts costs = cnn_costs(0.100);
  costs.gradients[64] = {{kCnnBytes, 0.5}};
  Behaviour b = no_cpu_cost();
  b.cpu_s_per_byte = 2e-9;
  Prediction p = predict(costs, Hosts{1}, Link{31.25e12, 0, 1.0}, {Strategy::allreduce, false, 2, 0, 64}, b);
  EXPECT_NEAR(p.step_s, 0.100 + 2.0 * kCnnBytes * 2e-9, 1e-9);  // one tensor out and one in
  EXPECT_NEAR(p.step_s, p.compute_s, 1e-12);
}

// A server's CPU: n pushes and n pulls of its share a step. Synchronous workers wait for it;
// asynchronous ones compute meanwhile, so it only caps their rate. 4 workers, 1 server, a
// quarter core, 1 ns/B, a link too fast to matter: 8 x 13.1 MB is 419 ms there.
TEST(StepModel, AServersCpuIsInASyncExchangeAndCapsAsyncWorkers) {
  const JobCosts costs = cnn_costs(0.030);
  Behaviour b = no_cpu_cost();
  b.cpu_s_per_byte = 1e-9;
  const Link fast{31.25e12, 0, 1.0};
  const double server = 2 * 4.0 * kCnnBytes * 1e-9 / 0.25;
  Prediction sync = predict(costs, Hosts{0.25}, fast, {Strategy::ps_sync, false, 4, 1, 64}, b);
  EXPECT_NEAR(sync.server_cpu_s, server, 1e-12);
  EXPECT_NEAR(sync.step_s, 0.120 + server, 1e-9);
  EXPECT_EQ(sync.bottleneck, "server_cpu");
  Prediction async = predict(costs, Hosts{0.25}, fast, {Strategy::ps_async, false, 4, 1, 64}, b);
  EXPECT_NEAR(async.step_s, server, 1e-9);  // more than the worker's own 120 + 105 ms
  // Two servers, the busier holding 1.2 x the mean: 251 ms, still above the worker's own
  // step. Three even ones: 140 ms, and the worker's own step (compute and its exchange's
  // CPU) is the longer.
  Prediction two = predict(costs, Hosts{0.25}, fast, {Strategy::ps_async, false, 4, 2, 64}, b);
  EXPECT_NEAR(two.server_cpu_s, 1.2 * server / 2, 1e-9);
  EXPECT_NEAR(two.step_s, two.server_cpu_s, 1e-9);
  Prediction three = predict(costs, Hosts{0.25}, fast, {Strategy::ps_async, false, 4, 3, 64}, b);
  EXPECT_NEAR(three.server_cpu_s, server / 3, 1e-9);
  EXPECT_NEAR(three.step_s, 0.120 + 2.0 * kCnnBytes * 1e-9 / 0.25, 1e-9);
}

TEST(StepModel, ParameterServerWorkersPushThenPullAndServersShareTheLoad) {
  const JobCosts costs = cnn_costs(0.030);
  const Link link{31.25e6, 0, 1.0};
  Prediction one = predict(costs, Hosts{0.25}, link, {Strategy::ps_async, false, 1, 1, 64}, no_cpu_cost());
  EXPECT_NEAR(one.worker_link_s, 2.0 * kCnnBytes / 31.25e6, 1e-12);  // push, then pull: turns
  EXPECT_NEAR(one.step_s, 0.120 + one.worker_link_s, 1e-12);         // nothing overlaps today
  Behaviour parallel = no_cpu_cost();
  parallel.ps_push_pull_serial = false;
  EXPECT_NEAR(predict(costs, Hosts{0.25}, link, {Strategy::ps_async, false, 1, 1, 64}, parallel).worker_link_s,
              kCnnBytes / 31.25e6, 1e-12);
  // 8 workers on 2 servers, the larger holding 1.2 x the mean: its link carries 8 x 0.6 tensors
  // each way; synchronous, the two ways take turns as the workers' pushes and pulls do;
  // asynchronous, all but one transfer overlap.
  Prediction eight = predict(costs, Hosts{0.25}, link, {Strategy::ps_sync, false, 8, 2, 64}, no_cpu_cost());
  EXPECT_NEAR(eight.server_link_s, 2 * 8 * 0.6 * kCnnBytes / 31.25e6, 1e-9);
  EXPECT_EQ(eight.bottleneck, "server_link");
  EXPECT_NEAR(predict(costs, Hosts{0.25}, link, {Strategy::ps_async, false, 8, 2, 64}, no_cpu_cost()).server_link_s,
              9 * 0.6 * kCnnBytes / 31.25e6, 1e-9);
  EXPECT_NEAR(predict(costs, Hosts{0.25}, link, {Strategy::ps_sync, false, 8, 2, 64}, parallel).server_link_s,
              8 * 0.6 * kCnnBytes / 31.25e6, 1e-9);
}

TEST(StepModel, LatencyCountsPerRingStepAndBucket) {
  JobCosts costs = cnn_costs(0.030);
  costs.allreduce_buckets = 4;
  Prediction with = predict(costs, Hosts{1}, Link{1e15, 100e-6, 1.0}, {Strategy::allreduce, false, 3, 0, 64}, no_cpu_cost());
  Behaviour none = no_cpu_cost();
  none.allreduce_overlap = 0;
  Prediction exposed = predict(costs, Hosts{1}, Link{1e15, 100e-6, 1.0}, {Strategy::allreduce, false, 3, 0, 64}, none);
  EXPECT_NEAR(exposed.step_s - 0.030, 2 * 2 * 100e-6 * 4 + 4.0 / 3 * kCnnBytes / 1e15, 1e-12);  // 2(n-1)/n = 4/3
  EXPECT_NEAR(with.step_s, 0.030, 1e-12);  // hidden behind backprop
}

// strategy.ps_overlap: the pull leaves right behind the push, so a step waits one round trip,
// not the push's and then the pull's.
TEST(StepModel, APullBehindItsPushCostsOneRoundTrip) {
  const JobCosts costs = cnn_costs(0.030);
  const Link link{1e15, 100e-6, 1.0};
  Behaviour after = no_cpu_cost();
  after.ps_pull_behind_push = false;
  Prediction behind = predict(costs, Hosts{1}, link, {Strategy::ps_async, false, 1, 1, 64}, no_cpu_cost());
  Prediction turns = predict(costs, Hosts{1}, link, {Strategy::ps_async, false, 1, 1, 64}, after);
  EXPECT_NEAR(behind.step_s - 0.030 - behind.worker_link_s, 2 * 100e-6, 1e-12);
  EXPECT_NEAR(turns.step_s - behind.step_s, 2 * 100e-6, 1e-12);
}

// A connection's bytes get the link's goodput; the bound (issue 14's) keeps the full rate.
TEST(StepModel, ConnectionsGetTheLinksGoodputAndTheBoundItsFullRate) {
  const JobCosts costs = cnn_costs(0.010);
  const Link full{31.25e6, 0, 1.0}, tcp{31.25e6, 0, 0.95};
  Prediction a = predict(costs, Hosts{1}, full, {Strategy::allreduce, false, 2, 0, 64}, no_cpu_cost());
  Prediction b = predict(costs, Hosts{1}, tcp, {Strategy::allreduce, false, 2, 0, 64}, no_cpu_cost());
  EXPECT_NEAR(b.worker_link_s, a.worker_link_s / 0.95, 1e-12);
  EXPECT_DOUBLE_EQ(b.bound_images_per_s, a.bound_images_per_s);
}

// With each gradient's ready time measured, an allreduce step is the timeline the code runs:
// buckets from the last variable back, each ring starting once its gradients are ready and
// the bucket before it is done; the update after the last one. Two workers on 31.25 MB/s
// (2(n-1)/n = 1 tensor each way), one core, a 100 ms step whose gradients are ready at 30 ms
// (a 8 MB kernel of the last layer), then at 90 ms (4 MB and 1 MB of the layers before),
// buckets of 4 MiB: [8 MB] at 30 ms, then [4 MB + 1 MB] at 90 ms, behind the first.
TEST(StepModel, AnAllreduceStepIsTheTimelineItsBucketsRun) {
  JobCosts costs;
  costs.parameter_bytes = 13'000'000;
  costs.step_s_one_core[64] = 0.100;
  costs.bucket_bytes = 4 << 20;
  costs.gradients[64] = {{1'000'000, 0.90}, {4'000'000, 0.90}, {8'000'000, 0.30}};
  const Link link{31.25e6, 0, 1.0};
  Prediction p = predict(costs, Hosts{1}, link, {Strategy::allreduce, false, 2, 0, 64}, no_cpu_cost());
  const double first_done = 0.030 + 8e6 / 31.25e6;  // 0.286 s
  const double second_done = first_done + 5e6 / 31.25e6;
  EXPECT_NEAR(p.step_s, second_done + 0.010, 1e-12);  // then the update's 10%
  EXPECT_NEAR(p.hidden_s, 0.100 + 13e6 / 31.25e6 - p.step_s, 1e-12);
  // A link fast enough to keep up: the step is its compute plus the last bucket after backprop.
  Prediction fast = predict(costs, Hosts{1}, Link{31.25e9, 0, 1.0}, {Strategy::allreduce, false, 2, 0, 64},
                            no_cpu_cost());
  EXPECT_NEAR(fast.step_s, 0.090 + 5e6 / 31.25e9 + 0.010, 1e-12);
  // One worker exchanges nothing: its compute.
  EXPECT_NEAR(predict(costs, Hosts{1}, link, {Strategy::allreduce, false, 1, 0, 64}, no_cpu_cost()).step_s, 0.100,
              1e-12);
}

// strategy.ps_pull_ahead: an async worker's values come back while its gradients go out, so
// its link carries the model once per step each way at once, and the server's n transfers;
// synchronous workers cannot pull ahead and keep their turns.
TEST(StepModel, AsyncWorkersPullingAheadUseBothDirectionsAtOnce) {
  const JobCosts costs = cnn_costs(0.030);
  const Link link{31.25e6, 0, 1.0};
  Behaviour ahead = no_cpu_cost();
  ahead.ps_pull_ahead = true;
  Prediction one = predict(costs, Hosts{0.25}, link, {Strategy::ps_async, false, 1, 1, 64}, ahead);
  EXPECT_NEAR(one.worker_link_s, kCnnBytes / 31.25e6, 1e-12);
  EXPECT_NEAR(one.step_s, 0.120 + one.worker_link_s, 1e-12);
  EXPECT_NEAR(predict(costs, Hosts{0.25}, link, {Strategy::ps_async, false, 8, 2, 64}, ahead).server_link_s,
              8 * 0.6 * kCnnBytes / 31.25e6, 1e-9);
  EXPECT_NEAR(predict(costs, Hosts{0.25}, link, {Strategy::ps_sync, false, 8, 2, 64}, ahead).server_link_s,
              2 * 8 * 0.6 * kCnnBytes / 31.25e6, 1e-9);
}

TEST(StepModel, BadCandidatesFailNamingTheThing) {
  const JobCosts costs = cnn_costs(0.030);
  try {
    predict(costs, Hosts{1}, Link{}, {Strategy::allreduce, false, 2, 0, 128});
    FAIL() << "no calibration for batch 128 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("no measured compute for batch 128"), std::string::npos) << e.what();
  }
  EXPECT_THROW(predict(costs, Hosts{1}, Link{}, {Strategy::ps_sync, false, 2, 0, 64}), InvalidArgument);
  EXPECT_THROW(predict(costs, Hosts{1}, Link{}, {Strategy::allreduce, false, 0, 0, 64}), InvalidArgument);
  EXPECT_THROW(predict(costs, Hosts{0}, Link{}, {Strategy::allreduce, false, 1, 0, 64}), InvalidArgument);
}

TEST(LinkRate, ParsesTcStyleRates) {
  EXPECT_DOUBLE_EQ(parse_link_rate("1gbit"), 125e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("250mbit"), 31.25e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("2.5gbit"), 312.5e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("800kbit"), 1e5);
  for (const char* bad : {"", "fast", "1gb", "gbit", "0gbit", "-1gbit", "1.2.3gbit"}) {
    try {
      parse_link_rate(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("link rate '") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

PlanOptions options(int hosts, const std::string& link) {
  PlanOptions o;
  o.hosts = hosts;
  o.host.cores = 1;
  o.link = {parse_link_rate(link), 0, 1.0};
  o.link_text = link;
  o.batches = {64};
  o.behaviour = no_cpu_cost();
  return o;
}

TEST(Plan, EnumeratesEveryKindWithinTheHosts) {
  std::vector<PlanEntry> entries = enumerate(cnn_costs(0.030), options(6, "1gbit"));
  int allreduce = 0;
  for (const PlanEntry& e : entries) {
    EXPECT_LE(e.candidate.workers + e.candidate.servers, 6);
    if (e.candidate.strategy == Strategy::allreduce) {
      EXPECT_EQ(e.candidate.servers, 0);
      ++allreduce;
    } else {
      EXPECT_GE(e.candidate.servers, 1);
      EXPECT_LE(e.candidate.servers, e.candidate.workers);
    }
  }
  EXPECT_EQ(allreduce, 2 * 4);  // workers 1, 2, 4, 6, with f32 and bf16
}

// One core at 30 ms per step of 64: a worker's link carries 1.5 tensors at 4 workers (0.157 s
// at 1 Gbit/s), beyond the step already at 2 (0.105 s); bf16 at 4 (0.079 s).
TEST(Plan, NamesWhereEachLinkSaturates) {
  const JobCosts costs = cnn_costs(0.030);
  EXPECT_EQ(saturation_workers(costs, options(32, "1gbit"), {Strategy::allreduce, false, 1, 0, 64}), 2);
  EXPECT_EQ(saturation_workers(costs, options(32, "1gbit"), {Strategy::allreduce, true, 1, 0, 64}), 2);
  // 10 Gbit/s: 2(n-1)/n x 13.1 MB / 1.25 GB/s < 21 ms < 30 ms for every n: never.
  EXPECT_EQ(saturation_workers(costs, options(32, "10gbit"), {Strategy::allreduce, false, 1, 0, 64}), 0);
  // ps, 1 server at 10 Gbit/s: its link carries n + 1 transfers of 10.5 ms for async workers
  // (> 30 ms from n = 2), 2n for synchronous ones (from n = 2; a worker's own link, 21 ms, never).
  EXPECT_EQ(saturation_workers(costs, options(32, "10gbit"), {Strategy::ps_async, false, 1, 1, 64}), 2);
  EXPECT_EQ(saturation_workers(costs, options(32, "10gbit"), {Strategy::ps_sync, false, 1, 1, 64}), 2);
}

TEST(Plan, RecommendsTheMostThroughputThatStaysEfficient) {
  const JobCosts costs = cnn_costs(0.030);
  PlanOptions o = options(16, "10gbit");
  Recommendation r = recommend(enumerate(costs, o), o);
  // At 10 Gbit/s allreduce hides behind backprop up to 16 workers: efficiency 1.
  EXPECT_EQ(r.entry.candidate.strategy, Strategy::allreduce);
  EXPECT_EQ(r.entry.candidate.workers, 16);
  EXPECT_NEAR(r.entry.prediction.efficiency, 1.0, 1e-9);
  EXPECT_NE(r.reason.find("allreduce"), std::string::npos) << r.reason;
  // At 100 Mbit/s nothing beyond one worker is efficient: one worker, and the reason says why.
  o = options(16, "100mbit");
  r = recommend(enumerate(costs, o), o);
  EXPECT_EQ(r.entry.candidate.workers, 1) << r.reason;
  EXPECT_NE(r.reason.find("2 workers would give"), std::string::npos) << r.reason;
}

TEST(JobShape, ReadsTheModelsBytesAndPlacement) {
  config::JobConfig job = config::load_job_config(std::string(TRIB_SOURCE_DIR) + "/examples/fashion_cnn.yaml");
  JobCosts c = job_shape(job, {1, 2, 4});
  EXPECT_EQ(c.parameter_bytes, kCnnBytes);
  EXPECT_DOUBLE_EQ(c.server_imbalance.at(1), 1.0);
  EXPECT_GE(c.server_imbalance.at(2), 1.0);
  EXPECT_EQ(c.allreduce_buckets, 4);  // 13.1 MB in 4 MiB buckets
}

}  // namespace
}  // namespace trib::plan
