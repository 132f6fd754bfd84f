// Which parameter server holds which variable (or which rows of it). TensorFlow's old
// round-robin placement alternates variables across servers, so with weights and biases
// alternating, every weight matrix lands on one server: the hot spot the bank's lab report
// measured. Greedy placement by bytes avoids it; partitioning splits the big variables by
// rows across every server so that no single one dominates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trib/core/shape.h"

namespace trib::ps {

struct VariableInfo {
  std::string name;
  Shape shape;
  std::int64_t bytes() const { return shape.numel() * 4; }
  std::int64_t row_elements() const;  // elements per row (dim 0); the whole tensor for a scalar
  std::int64_t rows() const { return shape.rank() == 0 ? 1 : shape[0]; }
};

// Rows [row_begin, row_end) of one variable, held by one server.
struct Slice {
  std::string variable;
  int ps = 0;
  std::int64_t row_begin = 0, row_end = 0;
  std::int64_t elements = 0;  // (row_end - row_begin) * row_elements
  bool whole = true;          // the slice is the entire variable
  // "dense_0/w" for a whole variable, "dense_0/w@512" for rows from 512.
  std::string key() const;
};

// balanced: greedy, except that every variable above a twentieth of a server's fair share (the
// model's bytes over the servers) is split by rows over every server, whatever partition_bytes
// says: the whole variables left add at most one of them to a server's share, so max/mean stays
// at most 1.05 on any model.
enum class PlacementStrategy { round_robin, greedy, partitioned, balanced };
PlacementStrategy parse_placement(const std::string& name);

struct Placement {
  int num_ps = 1;
  std::vector<Slice> slices;  // deterministic order: variables in declaration order, rows ascending
  std::vector<std::int64_t> bytes_per_ps() const;
  double max_mean_ratio() const;  // 1.0 is perfectly even
  std::vector<Slice> slices_of(int ps) const;
  // The table printed at start: variable, shape, bytes, server; per-server totals; max/mean.
  std::string table(const std::vector<VariableInfo>& vars) const;
};

// Deterministic: every worker and server computes the same placement from the same list.
Placement place(const std::vector<VariableInfo>& vars, int num_ps, PlacementStrategy strategy,
                std::int64_t partition_bytes);

}  // namespace trib::ps
