// Area under the ROC curve of binary scores: the probability that a random positive example
// scores above a random negative one, ties counting one half (the Mann-Whitney statistic).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace trib::stream {

// nullopt when the labels hold one class only (the AUC is undefined). Labels are 0 or 1;
// InvalidArgument when the spans differ in length or a label is neither.
std::optional<double> auc(std::span<const float> scores, std::span<const std::int32_t> labels);

}  // namespace trib::stream
