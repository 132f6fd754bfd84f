// The RFC 4180 field reader shared by the CSV file reader and the stream's CSV decoder.
#include "data/csv_fields.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trib/core/error.h"

namespace trib::data {
namespace {

// Every record of `text`, each as its fields.
std::vector<std::vector<std::string>> records(std::string_view text, char delimiter = ',') {
  CsvRecordReader reader(text, delimiter);
  std::vector<std::vector<std::string>> out;
  std::vector<std::string_view> fields;
  while (reader.next(fields, "t.csv")) out.emplace_back(fields.begin(), fields.end());
  return out;
}

using Records = std::vector<std::vector<std::string>>;

TEST(CsvFields, PlainFieldsAreTrimmedAndBlankLinesSkipped) {
  EXPECT_EQ(records("a, b ,c\r\n\n  \n1,,3"), (Records{{"a", "b", "c"}, {"1", "", "3"}}));
  EXPECT_EQ(records("a\tb\t\tc\n", '\t'), (Records{{"a", "b", "", "c"}})) << "a tab delimiter is not a blank";
  EXPECT_EQ(records("a,b,\n"), (Records{{"a", "b", ""}})) << "a trailing delimiter ends an empty field";
}

TEST(CsvFields, QuotedFieldsHoldDelimitersQuotesAndLineBreaks) {
  EXPECT_EQ(records("\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\"\n"),
            (Records{{"a,b", "say \"hi\"", "two\nlines"}}));
  EXPECT_EQ(records("\"\",\"\"\"\"\n"), (Records{{"", "\""}})) << "empty, and a lone quote";
  EXPECT_EQ(records(" \"x\" ,\"y\"\r\nz,w"), (Records{{"x", "y"}, {"z", "w"}})) << "blanks outside the quotes";
  EXPECT_EQ(records("\"a\"\"\",\"b\"\"\""), (Records{{"a\"", "b\""}})) << "two undoubled values in one record";
  EXPECT_EQ(records("ab\"c,d"), (Records{{"ab\"c", "d"}})) << "a quote inside an unquoted field is kept";
}

TEST(CsvFields, LinesCountLineBreaksInsideQuotes) {
  CsvRecordReader reader("\"a\nb\nc\",1\nx,2\n", ',');
  std::vector<std::string_view> fields;
  ASSERT_TRUE(reader.next(fields, "t.csv"));
  EXPECT_EQ(reader.line(), 1u);
  ASSERT_TRUE(reader.next(fields, "t.csv"));
  EXPECT_EQ(reader.line(), 4u);
  EXPECT_EQ(fields[0], "x");
  EXPECT_FALSE(reader.next(fields, "t.csv"));
}

TEST(CsvFields, BadQuotingIsAnErrorNamingSourceAndLine) {
  try {
    records("a,b\n\"open,1\n2,3\n");
    FAIL() << "expected an error";
  } catch (const Corruption& e) {
    EXPECT_STREQ(e.what(), "'t.csv':4: the quoted field opened on line 2 is not closed");
  }
  CsvFieldReader reader("\"a\"b,c", ',');
  CsvField f;
  EXPECT_FALSE(reader.next(f));
  EXPECT_EQ(reader.error(), "'b' follows a closing quote; expected ',' or the end of the line");
}

TEST(CsvFields, FieldReaderSaysWhatEndedEachField) {
  CsvFieldReader reader("1,\"2\"\n3", ',');
  CsvField f;
  ASSERT_TRUE(reader.next(f));
  EXPECT_EQ(f.value, "1");
  EXPECT_EQ(f.end, CsvField::End::delimiter);
  ASSERT_TRUE(reader.next(f));
  EXPECT_EQ(f.value, "2");
  EXPECT_TRUE(f.quoted);
  EXPECT_EQ(f.end, CsvField::End::record);
  ASSERT_TRUE(reader.next(f));
  EXPECT_EQ(f.value, "3");
  EXPECT_EQ(f.end, CsvField::End::text);
  EXPECT_TRUE(reader.at_end());
}

}  // namespace
}  // namespace trib::data
