#include "trib/pipeline/partition.h"

#include <fmt/format.h>

#include <sstream>

#include "trib/core/error.h"

namespace trib::pipeline {

std::string Partition::to_string() const {
  std::string out;
  for (const StageRange& s : stages) out += fmt::format("{}{}-{}", out.empty() ? "" : ",", s.begin, s.end - 1);
  return out;
}

Partition Partition::parse(const std::string& text) {
  Partition p;
  std::stringstream in(text);
  std::string item;
  int next = 0;
  while (std::getline(in, item, ',')) {
    int first = -1, last = -1;
    char dash = 0;
    std::stringstream one(item);
    one >> first >> dash >> last;
    TRIB_CHECK(!one.fail() && dash == '-' && first == next && last >= first, InvalidArgument,
               "pipeline partition '{}': '{}' is not the next run of layers (expected {}-N)", text, item, next);
    p.stages.push_back({first, last + 1});
    next = last + 1;
  }
  TRIB_CHECK(!p.stages.empty(), InvalidArgument, "pipeline partition '{}' names no stage", text);
  return p;
}

Partition even_partition(int layers, int stages) {
  TRIB_CHECK(stages >= 1 && stages <= layers, InvalidArgument,
             "pipeline: {} stage(s) for a model of {} layer(s): each stage needs at least one layer", stages, layers);
  Partition p;
  int begin = 0;
  for (int s = 0; s < stages; ++s) {
    const int size = layers / stages + (s < layers % stages ? 1 : 0);
    p.stages.push_back({begin, begin + size});
    begin += size;
  }
  return p;
}

bool has_manual_stages(const std::vector<int>& stage_of_layer) {
  for (int s : stage_of_layer)
    if (s >= 0) return true;
  return false;
}

Partition manual_partition(const std::vector<int>& stage_of_layer, int stages) {
  const int layers = static_cast<int>(stage_of_layer.size());
  TRIB_CHECK(stages >= 1 && stages <= layers, InvalidArgument,
             "pipeline: {} stage(s) for a model of {} layer(s): each stage needs at least one layer", stages, layers);
  Partition p;
  p.stages.assign(static_cast<std::size_t>(stages), StageRange{-1, -1});
  int current = 0;
  for (int i = 0; i < layers; ++i) {
    const int given = stage_of_layer[static_cast<std::size_t>(i)];
    if (given >= 0) {
      TRIB_CHECK(given < stages, InvalidArgument, "pipeline: layer {} has stage {} but there are only {} stages", i,
                 given, stages);
      TRIB_CHECK(given >= current, InvalidArgument,
                 "pipeline: layer {} has stage {} after a layer of stage {}: stages must follow the layers' order", i,
                 given, current);
      current = given;
    }
    StageRange& r = p.stages[static_cast<std::size_t>(current)];
    if (r.begin < 0) r.begin = i;
    r.end = i + 1;
  }
  for (int s = 0; s < stages; ++s)
    TRIB_CHECK(p.stages[static_cast<std::size_t>(s)].begin >= 0, InvalidArgument,
               "pipeline: stage {} has no layer (the layers' stage: values skip it)", s);
  return p;
}

}  // namespace trib::pipeline
