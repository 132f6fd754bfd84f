// The PS body codec: what it encodes decodes to the same fields, and every malformed body is
// refused with a message naming the field before anything is allocated for it.
#include "ps/ps_wire.h"

#include <gtest/gtest.h>

namespace trib::ps::proto {
namespace {

std::string refusal(std::string_view bytes) {
  try {
    decode(bytes);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

Body sparse_push() {
  Body b = make_body(Type::push);
  b.header.worker = 3;
  b.header.step = 1234567890123;
  b.header.version_seen = 42;
  set_lr(b.header, 0.125f);
  b.sparse = {{1, 0, 2}, {4, 0, 1}};
  b.ids = Tensor::from_vector(Shape{3}, std::vector<std::int64_t>{7, -1, 1ll << 40});
  return b;
}

TEST(PsWire, RoundTripsEveryField) {
  Body b = sparse_push();
  b.text = "tail";
  std::string bytes = encode(b);
  EXPECT_EQ(bytes.size(), kHeaderBytes + 2 * kSparseEntryBytes + 3 * 8 + 4);
  Body d = decode(bytes);
  EXPECT_EQ(d.type(), Type::push);
  EXPECT_EQ(d.header.worker, 3);
  EXPECT_EQ(d.header.step, 1234567890123);
  EXPECT_EQ(d.header.version_seen, 42);
  EXPECT_EQ(d.lr(), 0.125f);
  ASSERT_EQ(d.sparse.size(), 2u);
  EXPECT_EQ(d.sparse[1].slice, 4u);
  EXPECT_EQ(d.sparse[1].rows, 1);
  ASSERT_TRUE(d.ids.defined());
  EXPECT_EQ(d.ids.dtype(), DType::i64) << "ids travel as an i64 tensor";
  EXPECT_EQ(d.ids.data<std::int64_t>()[2], 1ll << 40);
  EXPECT_EQ(d.text, "tail");
}

TEST(PsWire, TheHeaderIsLittleEndianAtFixedOffsets) {
  Body b = make_body(Type::pull);
  b.header.worker = 0x01020304;
  b.header.step = 5;
  b.header.wait_ms = 0x0a0b0c0d;
  std::string bytes = encode(b);
  ASSERT_EQ(bytes.size(), kHeaderBytes);
  EXPECT_EQ(bytes[0], kWireVersion);
  EXPECT_EQ(bytes[1], static_cast<char>(Type::pull));
  EXPECT_EQ(bytes[4], 0x04);
  EXPECT_EQ(bytes[7], 0x01);
  EXPECT_EQ(bytes[8], 5);
  EXPECT_EQ(bytes[32], 0x0d);
  EXPECT_EQ(bytes[35], 0x0a);
  b.header.generation = 0x0102030405060708;
  bytes = encode(b);
  EXPECT_EQ(bytes[40], 0x08);
  EXPECT_EQ(bytes[47], 0x01);
  EXPECT_EQ(decode_header(bytes).generation, 0x0102030405060708);
  EXPECT_EQ(decode(bytes).header.generation, 0x0102030405060708);
}

TEST(PsWire, MalformedBodiesAreRefusedNamingTheField) {
  std::string good = encode(sparse_push());
  EXPECT_NE(refusal("").find("truncated at version"), std::string::npos);
  EXPECT_NE(refusal(good.substr(0, 20)).find("truncated at version"), std::string::npos) << refusal(good.substr(0, 20));
  std::string v = good;
  v[0] = 1;  // the version before generations were stamped
  EXPECT_NE(refusal(v).find("wire version 1"), std::string::npos);
  std::string t = good;
  t[1] = 9;
  EXPECT_NE(refusal(t).find("unknown PS message type 9"), std::string::npos);
  std::string f = good;
  f[3] = 1;
  EXPECT_NE(refusal(f).find("unknown flags"), std::string::npos);
  // Bytes 36..39 are a push's sequence number (strategy.ps_replicas); any other type must
  // leave them zero.
  std::string r = encode(make_body(Type::pull));
  r[36] = 1;
  EXPECT_NE(refusal(r).find("reserved"), std::string::npos) << refusal(r);
  std::string seq = good;
  seq[36] = 7;
  EXPECT_EQ(decode(seq).header.seq, 7u);
}

TEST(PsWire, DeclaredCountsAreCheckedAgainstTheBytesPresent) {
  std::string good = encode(sparse_push());
  // A table of 2^32 - 1 entries in a body of 88 bytes: refused before any allocation.
  std::string many = good;
  for (int i = 28; i < 32; ++i) many[i] = static_cast<char>(0xff);
  EXPECT_NE(refusal(many).find("claims 4294967295 sparse slices"), std::string::npos) << refusal(many);
  // An entry claiming more rows than the body could hold ids for.
  std::string rows = good;
  rows[kHeaderBytes + 8 + 7] = 0x10;  // rows of entry 0: 2^60 + 2
  EXPECT_NE(refusal(rows).find("claims"), std::string::npos);
  std::string negative = good;
  negative[kHeaderBytes + 8 + 7] = static_cast<char>(0x80);
  EXPECT_NE(refusal(negative).find("claims"), std::string::npos);
  // Ids cut short: the table names 3 rows, 2 ids follow.
  EXPECT_NE(refusal(good.substr(0, good.size() - 8)).find("names 3 rows but 16 bytes of ids follow"),
            std::string::npos);
  // Too much text.
  Body big = make_body(Type::save);
  big.text.assign(kMaxTextBytes + 1, 'x');
  EXPECT_NE(refusal(encode(big)).find("bytes of text"), std::string::npos);
}

TEST(PsWire, EncodeRefusesIdsThatDisagreeWithTheTable) {
  Body b = sparse_push();
  b.sparse[0].rows = 3;
  EXPECT_THROW(encode(b), InvalidArgument);
}

}  // namespace
}  // namespace trib::ps::proto
