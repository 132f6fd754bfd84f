#include "stream/record_decoder.h"

#include <vector>

#include <gtest/gtest.h>

#include "trib/core/error.h"

namespace trib::stream {
namespace {

SchemaConfig json_schema() {
  SchemaConfig s;
  s.features = {"amount", "hour"};
  s.label = "label";
  s.id_field = "id";
  return s;
}

SchemaConfig csv_schema() {
  SchemaConfig s = json_schema();
  s.format = RecordFormat::csv;
  s.csv_columns = {"id", "amount", "note", "hour", "label"};
  return s;
}

struct Decoded {
  std::optional<DecodeError> error;
  std::vector<float> features = std::vector<float>(2);
  DecodedRow row;
};

Decoded decode(const RecordDecoder& d, std::string_view bytes) {
  Decoded out;
  out.error = d.decode(bytes, out.features, out.row);
  return out;
}

TEST(RecordDecoderTest, ReadsAFlatJsonObjectInSchemaOrderIgnoringOtherKeys) {
  RecordDecoder d(json_schema());
  Decoded r = decode(d, R"({"hour": 23, "extra": {"nested": [1, 2]}, "amount": 12.5, "label": 1, "id": 77})");
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.features, (std::vector<float>{12.5f, 23.0f}));
  EXPECT_EQ(r.row.label, 1);
  EXPECT_EQ(r.row.id, 77);
}

TEST(RecordDecoderTest, ReadsBooleansAsZeroAndOne) {
  RecordDecoder d(json_schema());
  Decoded r = decode(d, R"({"amount": true, "hour": false, "label": true, "id": 1})");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.features, (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ(r.row.label, 1);
}

TEST(RecordDecoderTest, NamesTheMissingField) {
  RecordDecoder d(json_schema());
  Decoded r = decode(d, R"({"amount": 1, "label": 0, "id": 1})");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind, DecodeError::Kind::missing_field);
  EXPECT_EQ(r.error->field, "hour");
  EXPECT_EQ(r.error->message, "field 'hour' is missing");
}

TEST(RecordDecoderTest, RejectsNonNumericValues) {
  RecordDecoder d(json_schema());
  for (const char* bad : {R"({"amount": "12", "hour": 1, "label": 0, "id": 1})",
                          R"({"amount": null, "hour": 1, "label": 0, "id": 1})",
                          R"({"amount": [1], "hour": 1, "label": 0, "id": 1})"}) {
    Decoded r = decode(d, bad);
    ASSERT_TRUE(r.error) << bad;
    EXPECT_EQ(r.error->kind, DecodeError::Kind::not_numeric) << bad;
    EXPECT_EQ(r.error->field, "amount");
  }
}

TEST(RecordDecoderTest, RejectsLabelsOutsideTheClasses) {
  RecordDecoder d(json_schema());
  for (const char* bad : {R"({"amount": 1, "hour": 1, "label": 2, "id": 1})",
                          R"({"amount": 1, "hour": 1, "label": -1, "id": 1})",
                          R"({"amount": 1, "hour": 1, "label": 0.5, "id": 1})"}) {
    Decoded r = decode(d, bad);
    ASSERT_TRUE(r.error) << bad;
    EXPECT_EQ(r.error->kind, DecodeError::Kind::label_out_of_range) << bad;
  }
}

TEST(RecordDecoderTest, RejectsWhatIsNotAJsonObject) {
  RecordDecoder d(json_schema());
  for (const char* bad : {"", "{", "[1, 2]", "42", "not json", R"({"amount": 1,})"}) {
    Decoded r = decode(d, bad);
    ASSERT_TRUE(r.error) << bad;
    EXPECT_EQ(r.error->kind, DecodeError::Kind::malformed) << bad;
  }
}

TEST(RecordDecoderTest, ReadsCsvColumnsByName) {
  RecordDecoder d(csv_schema());
  Decoded r = decode(d, "5,12.5,anything,7,1\r\n");
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.features, (std::vector<float>{12.5f, 7.0f}));
  EXPECT_EQ(r.row.label, 1);
  EXPECT_EQ(r.row.id, 5);
}

// RFC 4180, as CSV files are read: a quoted cell's commas do not split it.
TEST(RecordDecoderTest, CsvQuotedCellsFollowRfc4180) {
  RecordDecoder d(csv_schema());
  Decoded r = decode(d, "5,\"12.5\",\"a, \"\"quoted\"\"\nnote\",7,1\n");
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.features, (std::vector<float>{12.5f, 7.0f}));
  EXPECT_EQ(r.row.label, 1);
  Decoded open = decode(d, "5,12.5,\"unclosed,7,1");
  ASSERT_TRUE(open.error);
  EXPECT_EQ(open.error->kind, DecodeError::Kind::malformed);
  EXPECT_NE(open.error->message.find("not closed"), std::string::npos) << open.error->message;
}

TEST(RecordDecoderTest, CsvErrorsNameTheField) {
  RecordDecoder d(csv_schema());
  Decoded short_line = decode(d, "5,12.5,x,7");
  ASSERT_TRUE(short_line.error);
  EXPECT_EQ(short_line.error->kind, DecodeError::Kind::missing_field);
  EXPECT_EQ(short_line.error->field, "label");
  Decoded text = decode(d, "5,abc,x,7,0");
  ASSERT_TRUE(text.error);
  EXPECT_EQ(text.error->kind, DecodeError::Kind::not_numeric);
  EXPECT_NE(text.error->message.find("'amount' (column 2) is 'abc'"), std::string::npos) << text.error->message;
}

TEST(RecordDecoderTest, BadSchemasAreRejectedUpFront) {
  SchemaConfig no_features = json_schema();
  no_features.features.clear();
  EXPECT_THROW(RecordDecoder{no_features}, InvalidArgument);
  SchemaConfig label_is_feature = json_schema();
  label_is_feature.features.push_back("label");
  EXPECT_THROW(RecordDecoder{label_is_feature}, InvalidArgument);
  SchemaConfig csv_without_column = csv_schema();
  csv_without_column.csv_columns = {"id", "amount", "label"};
  try {
    RecordDecoder{csv_without_column};
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("feature 'hour' is not among csv_columns"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_record_format("xml"), InvalidArgument);
}

}  // namespace
}  // namespace trib::stream
