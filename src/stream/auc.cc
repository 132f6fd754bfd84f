#include "trib/stream/auc.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "trib/core/error.h"

namespace trib::stream {

std::optional<double> auc(std::span<const float> scores, std::span<const std::int32_t> labels) {
  TRIB_CHECK(scores.size() == labels.size(), InvalidArgument, "auc: {} scores but {} labels", scores.size(),
             labels.size());
  const std::size_t n = scores.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });

  // Sum of the positives' ranks (1-based), each group of tied scores sharing its mean rank.
  double positive_rank_sum = 0;
  std::int64_t positives = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && scores[order[j]] == scores[order[i]]) ++j;
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k) {
      const std::int32_t label = labels[order[k]];
      TRIB_CHECK(label == 0 || label == 1, InvalidArgument, "auc: label {} at index {} is not 0 or 1", label,
                 order[k]);
      if (label == 1) {
        positive_rank_sum += mean_rank;
        ++positives;
      }
    }
    i = j;
  }
  const std::int64_t negatives = static_cast<std::int64_t>(n) - positives;
  if (positives == 0 || negatives == 0) return std::nullopt;
  const double p = static_cast<double>(positives);
  return (positive_rank_sum - p * (p + 1) / 2.0) / (p * static_cast<double>(negatives));
}

}  // namespace trib::stream
