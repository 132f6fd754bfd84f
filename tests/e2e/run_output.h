// What a finished run says about itself, read back by the e2e and fault tests: the chief's
// final accuracy from its output, and the evaluations it recorded in metrics.jsonl.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace trib::testing {

// The chief's final test accuracy, from its "done:" line (a failed expectation if it has none).
inline double final_accuracy(const std::string& output) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(output, m, std::regex("done: test accuracy ([0-9.]+)"))) << output;
  return m.empty() ? 0 : std::stod(m[1]);
}

// Whether a faulted run's accuracy is at most `points` below a fault-free run's. One-sided on
// purpose: two fault-free runs of an asynchronous job differ by about a point, so a faulted run
// may end a little better than the one fault-free run it is compared with (it did, by 0.0115);
// what a fault must not do is cost accuracy. Exactly-once delivery is checked by update counts.
// The jobs compared evaluate on the whole test set (data.test_subset=10000): on 2000 examples
// twelve fault-free runs of the parameter-server replica job spread over 0.8525-0.8630, on all
// 10,000 over 0.8393-0.8444, so a point's margin is no longer within reach of the noise.
inline ::testing::AssertionResult loses_at_most(double faulted, double fault_free, double points) {
  if (faulted >= fault_free - points) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "accuracy " << faulted << " is " << (fault_free - faulted)
                                       << " below the fault-free run's " << fault_free << " (at most " << points
                                       << " allowed)";
}

// The last "test accuracy X" the run printed, -1 if none (a pipeline's stages print no "done:").
inline double last_test_accuracy(const std::string& output) {
  double last = -1;
  std::smatch m;
  for (auto from = output.cbegin(); std::regex_search(from, output.cend(), m, std::regex("test accuracy ([0-9.]+)"));
       from = m.suffix().first)
    last = std::stod(m[1].str());
  return last;
}

// The steps of the test rows in `run_dir`/metrics.jsonl, in order.
inline std::vector<int> test_rows(const std::filesystem::path& run_dir) {
  std::vector<int> steps;
  std::ifstream in(run_dir / "metrics.jsonl");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, std::regex("\"split\":\"test\"")) &&
        std::regex_search(line, m, std::regex("\"step\":([0-9]+)")))
      steps.push_back(std::stoi(m[1]));
  return steps;
}

}  // namespace trib::testing
