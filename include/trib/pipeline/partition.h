// Which of the model's layers each pipeline stage runs: contiguous runs of its top-level
// layers, in order, none empty. Made by the planner (planner.h) or by hand (`stage:` on
// layers), and handed from the process that plans to the others as text.
#pragma once

#include <string>
#include <vector>

namespace trib::pipeline {

// Layers [begin, end) of the model's layer list.
struct StageRange {
  int begin = 0;
  int end = 0;
  int size() const { return end - begin; }
  bool operator==(const StageRange&) const = default;
};

struct Partition {
  std::vector<StageRange> stages;

  int stage_count() const { return static_cast<int>(stages.size()); }
  int layer_count() const { return stages.empty() ? 0 : stages.back().end; }
  // "0-2,3-4": layers of stage 0 then stage 1, inclusive; parse() reads it back.
  std::string to_string() const;
  static Partition parse(const std::string& text);
  bool operator==(const Partition&) const = default;
};

// Equal layer counts, the first stages taking one more where the count does not divide.
// InvalidArgument when there are more stages than layers.
Partition even_partition(int layers, int stages);

// From `stage:` written on layers (-1: not written): a layer without one runs in the stage
// of the layer before it (the first ones in stage 0). InvalidArgument naming the layer when
// the stages go backwards or exceed `stages`, and naming the stage when one has no layer.
Partition manual_partition(const std::vector<int>& stage_of_layer, int stages);

// Whether any layer has a `stage:`.
bool has_manual_stages(const std::vector<int>& stage_of_layer);

}  // namespace trib::pipeline
