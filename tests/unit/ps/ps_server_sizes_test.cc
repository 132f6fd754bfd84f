// Every size a request declares is checked against the server's slices before anything is
// read: malformed and oversized requests are refused with an error naming the problem, change
// nothing, and the server goes on serving.
#include <gtest/gtest.h>

#include "test_server.h"

namespace trib::ps {
namespace {

using testing::Request;
using Server = testing::TestServer;

// The refusal's message, or "" when the request was served.
std::string refusal(Server& s, net::Message m) {
  try {
    s.send(std::move(m));
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

Request push(int worker = 0, std::int64_t step = 0) { return Request(proto::Type::push, worker, step); }

// Regression: sync and averaging pushes added the server's element count of values from the
// pushed tensor without checking its size, reading past a short tensor's end.
TEST(PsServerSizes, ASyncPushShorterThanTheSlicesIsRefusedNotOverRead) {
  Server s(Mode::sync);
  std::string why = refusal(s, push().message(Tensor::full(Shape{1}, 1.0f)));
  EXPECT_NE(why.find("holds 1 values"), std::string::npos) << why;
  EXPECT_NE(why.find("needs 4"), std::string::npos) << why;
  EXPECT_NE(why.find("worker 0"), std::string::npos) << "names the sender: " << why;
  // Nothing was counted: the round still needs both workers' full pushes.
  s.push(0, 0, 1.0f);
  EXPECT_FALSE(s.pull(0, 1));
  s.push(1, 0, 3.0f);
  EXPECT_FLOAT_EQ(*s.pull(0, 1), -2.0f);
  EXPECT_EQ(s.server.stats().refused, 1u);
}

TEST(PsServerSizes, AnAveragingPushShorterThanTheSlicesIsRefused) {
  Server s(Mode::averaging);
  EXPECT_NE(refusal(s, push(0, 1).message(Tensor::full(Shape{3}, 1.0f))).find("needs 4"), std::string::npos);
  s.push(0, 1, 2.0f);
  s.push(1, 1, 4.0f);
  EXPECT_FLOAT_EQ(*s.pull(0, 1), 3.0f) << "the refused push took no part in the average";
}

TEST(PsServerSizes, APushLargerThanThePlacementGivesThisServerIsRefused) {
  for (Mode mode : {Mode::sync, Mode::async, Mode::averaging}) {
    Server s(mode);
    std::string why = refusal(s, push(0, 1).message(Tensor::full(Shape{5}, 1.0f)));
    EXPECT_NE(why.find("holds 5 values"), std::string::npos) << why;
  }
}

TEST(PsServerSizes, PushesWithoutFlatF32ValuesAreRefused) {
  Server s(Mode::async);
  EXPECT_NE(refusal(s, push().message()).find("flat f32"), std::string::npos);
  EXPECT_NE(refusal(s, push().message(Tensor::zeros(DType::i64, Shape{4}))).find("flat f32"), std::string::npos);
  EXPECT_NE(refusal(s, push().message(Tensor::zeros(DType::f32, Shape{2, 2}))).find("flat f32"), std::string::npos);
}

TEST(PsServerSizes, SparseRowsAreCheckedAgainstTheirSlice) {
  Server s(Mode::async, testing::dense_and_embedding());
  // Valid: w's 4 values, then 2 rows of emb (2 values each), ids 1 and 5.
  Request ok = push();
  ok.sparse = {{1, 0, 2}};
  ok.ids = {1, 5};
  EXPECT_EQ(refusal(s, ok.message(Tensor::full(Shape{8}, 1.0f))), "");

  Request more_rows = push();  // 7 rows of a 6-row slice
  more_rows.sparse = {{1, 0, 7}};
  more_rows.ids = {0, 1, 2, 3, 4, 5, 0};
  EXPECT_NE(refusal(s, more_rows.message(Tensor::full(Shape{18}, 1.0f))).find("sends 7 rows of 'emb'"),
            std::string::npos);

  Request bad_id = push();
  bad_id.sparse = {{1, 0, 1}};
  bad_id.ids = {6};
  EXPECT_NE(refusal(s, bad_id.message(Tensor::full(Shape{6}, 1.0f))).find("row 6 of 'emb', outside [0, 6)"),
            std::string::npos);

  Request no_slice = push();
  no_slice.sparse = {{2, 0, 1}};
  no_slice.ids = {0};
  EXPECT_NE(refusal(s, no_slice.message(Tensor::full(Shape{18}, 1.0f))).find("sparse slice 2"), std::string::npos);

  Request twice = push();  // the same slice twice in the table
  twice.sparse = {{1, 0, 1}, {1, 0, 1}};
  twice.ids = {0, 0};
  EXPECT_NE(refusal(s, twice.message(Tensor::full(Shape{8}, 1.0f))).find("must ascend"), std::string::npos);

  Request short_values = push();  // the rows' values run past the tensor
  short_values.sparse = {{1, 0, 3}};
  short_values.ids = {0, 1, 2};
  EXPECT_NE(refusal(s, short_values.message(Tensor::full(Shape{5}, 1.0f))).find("needs 10"), std::string::npos);

  EXPECT_EQ(s.server.stats().applied, 1u) << "only the valid push was applied";
  EXPECT_EQ(s.server.stats().refused, 5u);
}

TEST(PsServerSizes, SyncTakesNoSparseRows) {
  Server s(Mode::sync, testing::dense_and_embedding());
  Request r = push();
  r.sparse = {{1, 0, 1}};
  r.ids = {0};
  EXPECT_NE(refusal(s, r.message(Tensor::full(Shape{6}, 1.0f))).find("whole dense buffers"), std::string::npos);
}

TEST(PsServerSizes, MalformedBodiesAndForeignMethodsAreRefusedAndServingGoesOn) {
  Server s(Mode::async);
  EXPECT_NE(refusal(s, net::Message{proto::kPsMethod, "garbage", Tensor()}).find("wire version"), std::string::npos);
  EXPECT_NE(refusal(s, net::Message{proto::kPsMethod, "", Tensor()}).find("truncated"), std::string::npos);
  EXPECT_NE(refusal(s, net::Message{0x203, push().message().body, Tensor()}).find("not a PS request"),
            std::string::npos);
  Request unknown_worker = push(7);
  EXPECT_NE(refusal(s, unknown_worker.message(Tensor::full(Shape{4}, 1.0f))).find("unknown worker 7"),
            std::string::npos);
  Request nan_lr = push();
  nan_lr.lr = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(refusal(s, nan_lr.message(Tensor::full(Shape{4}, 1.0f))).find("learning rate"), std::string::npos);
  Request bad_init(proto::Type::init);
  EXPECT_NE(refusal(s, bad_init.message(Tensor::full(Shape{9}, 1.0f))).find("expected f32 of 4 elements"),
            std::string::npos);
  s.push(0, 0, 1.0f);
  EXPECT_FLOAT_EQ(*s.pull(0, -1), -1.0f) << "still serving";
  EXPECT_EQ(s.server.stats().refused, 6u);
}

TEST(PsServerSizes, TheLargestValidRequestFitsTheFrameBound) {
  Server s(Mode::async, testing::dense_and_embedding());
  Request all_rows = push();
  all_rows.sparse = {{1, 0, 6}};
  all_rows.ids = {0, 1, 2, 3, 4, 5};
  net::Message m = all_rows.message(Tensor::full(Shape{16}, 1.0f));
  const std::uint64_t frame = 8 + 8 + m.body.size() + m.tensor.nbytes();
  EXPECT_LE(frame, s.server.max_request_bytes());
  EXPECT_LT(s.server.max_request_bytes(), std::uint64_t{2} << 20) << "the slices and 1 MiB of text, not 1 GiB";
}

}  // namespace
}  // namespace trib::ps
