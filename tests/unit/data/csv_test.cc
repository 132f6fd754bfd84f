#include "trib/data/csv.h"

#include <gtest/gtest.h>

#include "unit/data/data_test_util.h"
#include "trib/core/error.h"

namespace trib::data {
namespace {

using testing::TempDir;

template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

TEST(CsvTest, ReadsHeaderAndLabelByName) {
  TempDir dir;
  testing::write_file(dir.file("iris.csv"),
                      "sepal,class,petal\n5.1, 0 ,1.4\r\n\n4.9,2,+1.5e0\n");
  InMemoryDataset d = load_csv(dir.file("iris.csv"), {.label_name = "class", .num_classes = 3});
  EXPECT_EQ(d.size(), 2);
  EXPECT_EQ(d.example_shape(), (Shape{2}));
  EXPECT_EQ(d.get(1).features().to_vector<float>(), (std::vector<float>{4.9f, 1.5f}));
  EXPECT_EQ(d.get(0).labels().to_vector<std::int32_t>(), (std::vector<std::int32_t>{0}));
}

TEST(CsvTest, WithoutHeaderLabelByIndex) {
  TempDir dir;
  testing::write_file(dir.file("t.csv"), "1;2;3\n4;5;6");  // no final newline
  CsvOptions options{.delimiter = ';', .label_index = 0};
  InMemoryDataset d = load_csv(dir.file("t.csv"), options);  // detected: all numeric
  EXPECT_EQ(d.size(), 2);
  EXPECT_EQ(d.get(1).features().to_vector<float>(), (std::vector<float>{5, 6}));
  EXPECT_EQ(d.get(1).labels().to_vector<std::int32_t>(), (std::vector<std::int32_t>{4}));

  options.header = CsvOptions::Header::present;  // told so: the first line is skipped
  EXPECT_EQ(load_csv(dir.file("t.csv"), options).size(), 1);
}

TEST(CsvTest, ReadsGzippedFiles) {
  TempDir dir;
  testing::write_gzip(dir.file("t.csv.gz"), "a,b\n1,0\n2,1\n3,0\n");
  EXPECT_EQ(load_csv(dir.file("t.csv.gz")).size(), 3);
}

TEST(CsvTest, WrongColumnCountNamesLine) {
  TempDir dir;
  const std::string path = dir.file("bad.csv");
  testing::write_file(path, "x,y,label\n1,2,0\n\n3,4\n");
  EXPECT_EQ(error_of<Corruption>([&] { load_csv(path); }), "'" + path + "':4: expected 3 columns, found 2");
}

TEST(CsvTest, NonNumericFieldNamesLineAndColumn) {
  TempDir dir;
  const std::string path = dir.file("bad.csv");
  testing::write_file(path, "x,y,label\n1,2,0\n3,abc,1\n");
  EXPECT_EQ(error_of<Corruption>([&] { load_csv(path); }),
            "'" + path + "':3: column 2 ('y') is not a number: 'abc'");
  testing::write_file(path, "1,2,0\n1,2,0.5\n");
  EXPECT_EQ(error_of<Corruption>([&] { load_csv(path); }),
            "'" + path + "':2: label column 3 is not an integer: '0.5'");
}

TEST(CsvTest, LabelProblemsAreNamed) {
  TempDir dir;
  const std::string path = dir.file("t.csv");
  testing::write_file(path, "x,label\n1,5\n");
  EXPECT_EQ(error_of<InvalidArgument>([&] { load_csv(path, {.num_classes = 5}); }),
            "'" + path + "':2: label 5 is outside [0, 5)");
  EXPECT_EQ(error_of<InvalidArgument>([&] { load_csv(path, {.label_name = "y"}); }),
            "'" + path + "': no column named 'y' (columns: x, label)");
  EXPECT_THROW(load_csv(dir.file("missing.csv")), NotFound);
}

}  // namespace
}  // namespace trib::data
