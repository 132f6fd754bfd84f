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

// RFC 4180: a quoted header name may hold the delimiter, a doubled quote and a line break;
// quoted numbers are numbers; records still count their lines for messages.
TEST(CsvTest, QuotedFieldsFollowRfc4180) {
  TempDir dir;
  const std::string path = dir.file("quoted.csv");
  testing::write_file(path,
                      "\"width, cm\",\"the \"\"odd\"\"\nlabel\",\"height\"\r\n"
                      "\"1.5\",1,2\r\n"
                      " \"2.5\" ,\"0\",3\n");
  InMemoryDataset d = load_csv(path, {.label_name = "the \"odd\"\nlabel"});
  ASSERT_EQ(d.size(), 2);
  EXPECT_EQ(d.get(0).features().to_vector<float>(), (std::vector<float>{1.5f, 2.0f}));
  EXPECT_EQ(d.get(1).features().to_vector<float>(), (std::vector<float>{2.5f, 3.0f}));
  EXPECT_EQ(d.get(0).labels().to_vector<std::int32_t>(), (std::vector<std::int32_t>{1}));

  // Names with the delimiter in them are whole names, not two columns.
  EXPECT_EQ(error_of<InvalidArgument>([&] { load_csv(path, {.label_name = "width"}); }),
            "'" + path + "': no column named 'width' (columns: width, cm, the \"odd\"\nlabel, height)");
  // The record after a quoted line break is on line 3 of the file.
  testing::write_file(path, "\"a\nb\",label\n1,x\n");
  EXPECT_EQ(error_of<Corruption>([&] { load_csv(path); }),
            "'" + path + "':3: label column 2 ('label') is not an integer: 'x'");
}

TEST(CsvTest, BadQuotingNamesTheLine) {
  TempDir dir;
  const std::string path = dir.file("bad.csv");
  testing::write_file(path, "x,label\n1,0\n\"2,1\n3,0\n");
  EXPECT_EQ(error_of<Corruption>([&] { load_csv(path); }),
            "'" + path + "':5: the quoted field opened on line 3 is not closed");
  testing::write_file(path, "x,label\n\"1\"2,0\n");
  EXPECT_EQ(error_of<Corruption>([&] { load_csv(path); }),
            "'" + path + "':2: '2' follows a closing quote; expected ',' or the end of the line");
}

}  // namespace
}  // namespace trib::data
