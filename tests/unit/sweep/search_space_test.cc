// The search space: grid enumeration, seeded draws within their ranges, log-uniform spread.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "trib/core/error.h"
#include "trib/sweep/search_space.h"

namespace trib::sweep {
namespace {

Dimension choice(const std::string& key, std::vector<ParamValue> v) {
  Dimension d;
  d.key = key;
  d.choices = std::move(v);
  return d;
}

Dimension range(const std::string& key, DimensionKind kind, double lo, double hi) {
  Dimension d;
  d.key = key;
  d.kind = kind;
  d.low = lo;
  d.high = hi;
  return d;
}

TEST(SearchSpace, GridEnumeratesEveryPointLastKeyFastest) {
  SearchSpace s({choice("a", {std::int64_t{1}, std::int64_t{2}}), choice("b", {std::string("x"), std::string("y"), std::string("z")})});
  ASSERT_TRUE(s.is_grid());
  ASSERT_EQ(s.grid_size(), 6);
  EXPECT_EQ(describe(s.grid_point(0)), "a=1 b=x");
  EXPECT_EQ(describe(s.grid_point(1)), "a=1 b=y");
  EXPECT_EQ(describe(s.grid_point(3)), "a=2 b=x");
  EXPECT_EQ(describe(s.grid_point(5)), "a=2 b=z");
  std::set<std::string> seen;
  for (int i = 0; i < 6; ++i) seen.insert(describe(s.grid_point(i)));
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_THROW(s.grid_point(6), InvalidArgument);
}

TEST(SearchSpace, RangesAreNoGrid) {
  SearchSpace s({choice("a", {std::int64_t{1}}), range("lr", DimensionKind::uniform, 0, 1)});
  EXPECT_FALSE(s.is_grid());
  EXPECT_THROW(s.grid_size(), InvalidArgument);
}

TEST(SearchSpace, DrawsAreSeededAndRepeatable) {
  SearchSpace s({range("lr", DimensionKind::log_uniform, 1e-4, 1e-1), range("u", DimensionKind::uniform, -1, 1),
                 range("n", DimensionKind::integer, 8, 12), choice("c", {std::int64_t{16}, std::int64_t{32}})});
  for (int i = 0; i < 20; ++i) {
    Params a = s.sample(7, i), b = s.sample(7, i);
    ASSERT_EQ(a, b) << "trial " << i;  // a resumed sweep draws the same
  }
  EXPECT_NE(s.sample(7, 0), s.sample(8, 0));
  EXPECT_NE(s.sample(7, 0), s.sample(7, 1));
}

TEST(SearchSpace, DrawsStayInRangeAndCoverIt) {
  SearchSpace s({range("lr", DimensionKind::log_uniform, 1e-4, 1e-1), range("u", DimensionKind::uniform, -1, 1),
                 range("n", DimensionKind::integer, 8, 12), choice("c", {std::int64_t{16}, std::int64_t{32}})});
  std::set<std::int64_t> ints;
  std::set<std::int64_t> chosen;
  int lr_below_1e3 = 0;  // log-uniform: a third of the draws fall in [1e-4, 1e-3)
  const int n = 3000;
  for (int i = 0; i < n; ++i) {
    Params p = s.sample(1, i);
    const double lr = std::get<double>(p[0].second), u = std::get<double>(p[1].second);
    const std::int64_t k = std::get<std::int64_t>(p[2].second);
    ASSERT_GE(lr, 1e-4);
    ASSERT_LT(lr, 1e-1);
    ASSERT_GE(u, -1);
    ASSERT_LT(u, 1);
    ASSERT_GE(k, 8);
    ASSERT_LE(k, 12);
    ints.insert(k);
    chosen.insert(std::get<std::int64_t>(p[3].second));
    lr_below_1e3 += lr < 1e-3;
  }
  EXPECT_EQ(ints.size(), 5u);  // both ends included
  EXPECT_EQ(chosen.size(), 2u);
  EXPECT_NEAR(double(lr_below_1e3) / n, 1.0 / 3, 0.04);
}

TEST(SearchSpace, ValuesAreWrittenAsYamlNumbers) {
  EXPECT_EQ(to_yaml(ParamValue{1e-05}), "1.0e-05");  // YAML 1.1 reads "1e-05" as text
  EXPECT_EQ(to_yaml(ParamValue{0.001}), "0.001");
  EXPECT_EQ(to_yaml(ParamValue{std::int64_t{64}}), "64");
  EXPECT_EQ(to_yaml(ParamValue{std::string("relu")}), "relu");
  EXPECT_EQ(describe({{"model.layers.1.units", std::int64_t{64}}, {"optimizer.lr", 0.00123456}}),
            "units1=64 lr=0.001235");
}

}  // namespace
}  // namespace trib::sweep
