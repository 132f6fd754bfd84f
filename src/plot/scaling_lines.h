// bench/scaling.sh's `bench=scaling ...` lines (docs/scaling.md) read back, and drawn as
// throughput against workers: one panel per model, one curve per (link, batch, strategy), and
// PyTorch DDP's figures from the same lines dashed beside ours.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "plot/curves_svg.h"

namespace trib::plot {

struct ScalingPoint {
  std::string model;     // cnn, mlp
  std::string strategy;  // as bench/scaling.sh --strategies names it: allreduce_bf16, ps1_async, ...
  double link_gbps = 0;  // the emulated machines' link (the hosts' own is cpus_per_host of it)
  int batch = 0;
  int workers = 0;
  double images_per_s = 0;       // ours, as measured on the emulated hosts
  double peer_images_per_s = 0;  // DDP's; 0 where the line says NA (no peer, or it failed)
  double cpus_per_host = 1;      // the hosts' share of a core
};

// Every `bench=scaling` line of `in` (other lines, such as bench=plan, are skipped). `source`
// names the input in errors: a bench=scaling line without a field the plot needs, or with a
// field that is not a number, throws InvalidArgument naming the line and the field.
std::vector<ScalingPoint> read_scaling_lines(std::istream& in, const std::string& source);

// One panel per model (in name order): images/s of one-core machines (the measured figure
// over cpus_per_host, as docs/scaling.md's plots show them) against workers.
std::vector<Panel> scaling_panels(const std::vector<ScalingPoint>& points);

}  // namespace trib::plot
