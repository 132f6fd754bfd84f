#include "ps/push_layout.h"

#include "ps/slice_io.h"
#include "trib/core/error.h"

namespace trib::ps {

PushLayout dense_layout(const std::vector<Slice>& slices) {
  PushLayout layout;
  std::int64_t offset = 0;
  for (const Slice& s : slices) {
    layout.parts.push_back({false, offset, 0, 0});
    offset += s.elements;
  }
  return layout;
}

PushLayout check_push(const PushCheck& c, const proto::Body& body, const Tensor& values) {
  const std::vector<Slice>& slices = *c.slices;
  TRIB_CHECK(values.defined() && values.dtype() == DType::f32 && values.shape().rank() == 1, InvalidArgument,
             "ps {}: a push from worker {} must carry a flat f32 tensor, got {}", c.ps, c.worker,
             values.defined() ? values.spec_string() : "none");
  TRIB_CHECK(!c.dense_only || body.sparse.empty(), InvalidArgument,
             "ps {}: a push from worker {} carries {} sparse slices; this mode takes whole dense buffers", c.ps,
             c.worker, body.sparse.size());
  PushLayout layout;
  layout.parts.resize(slices.size());
  TRIB_CHECK(!body.ids.defined() || body.ids.dtype() == DType::i64, InvalidArgument,
             "ps {}: a push from worker {} carries row ids of {}, expected i64", c.ps, c.worker,
             body.ids.spec_string());
  const std::int64_t id_count = body.ids.defined() ? body.ids.numel() : 0;
  std::int64_t ids = 0;
  for (std::size_t k = 0; k < body.sparse.size(); ++k) {
    const proto::SparseEntry& e = body.sparse[k];
    TRIB_CHECK(e.slice < slices.size() && (k == 0 || e.slice > body.sparse[k - 1].slice), InvalidArgument,
               "ps {}: a push from worker {} names sparse slice {} (entry {}); this server holds {} slices and the "
               "table must ascend",
               c.ps, c.worker, e.slice, k, slices.size());
    const Slice& s = slices[e.slice];
    const VariableInfo& v = variable_info(*c.variables, s.variable);
    const std::int64_t slice_rows = s.row_end - s.row_begin;
    TRIB_CHECK(v.shape.rank() >= 1 && e.rows >= 0 && e.rows <= slice_rows, InvalidArgument,
               "ps {}: a push from worker {} sends {} rows of '{}', whose slice here has {} rows", c.ps, c.worker,
               e.rows, s.key(), v.shape.rank() >= 1 ? slice_rows : 0);
    TRIB_CHECK(ids + e.rows <= id_count, InvalidArgument,
               "ps {}: a push from worker {} names {} rows of '{}' but carries only {} ids in all", c.ps, c.worker,
               e.rows, s.key(), id_count);
    const std::int64_t* id = e.rows > 0 ? body.ids.data<std::int64_t>() + ids : nullptr;
    for (std::int64_t r = 0; r < e.rows; ++r)
      TRIB_CHECK(id[r] >= 0 && id[r] < slice_rows, InvalidArgument,
                 "ps {}: a push from worker {} names row {} of '{}', outside [0, {})", c.ps, c.worker, id[r],
                 s.key(), slice_rows);
    PushLayout::Part& p = layout.parts[e.slice];
    p.sparse = true;
    p.rows = e.rows;
    p.id_offset = ids;
    ids += e.rows;
  }
  // Dense slices first, then the sparse rows: every count is bounded by the slices, so
  // these sums stay within the server's own element count.
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < slices.size(); ++i)
    if (!layout.parts[i].sparse) layout.parts[i].offset = offset, offset += slices[i].elements;
  for (const proto::SparseEntry& e : body.sparse) {
    PushLayout::Part& p = layout.parts[e.slice];
    p.offset = offset;
    offset += p.rows * variable_info(*c.variables, slices[e.slice].variable).row_elements();
  }
  TRIB_CHECK(ids == id_count, InvalidArgument, "ps {}: a push from worker {} carries {} ids for {} sparse rows",
             c.ps, c.worker, id_count, ids);
  TRIB_CHECK(values.numel() == offset, InvalidArgument,
             "ps {}: a push from worker {} holds {} values; its layout ({} slices, {} of them sparse) needs {}",
             c.ps, c.worker, values.numel(), slices.size(), body.sparse.size(), offset);
  return layout;
}

}  // namespace trib::ps
