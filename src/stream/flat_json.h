// A fast path for the JSON records a stream is made of: one flat object of numbers (and a few
// strings or booleans) per record. It reads such an object without building strings or a
// DOM, about five times faster than nlohmann's SAX parser, and declines everything else
// (nesting, escapes, nulls, syntax errors) so that RecordDecoder hands the record to
// nlohmann's parser, which is the reference: it decides every error and its message.
#pragma once

#include <string_view>
#include <vector>

#include "stream/record_decoder.h"

namespace trib::stream::detail {

// Fills values[slot] and seen[slot] for each key of `slots` found in `bytes`, and returns
// true; or returns false, having filled nothing reliable, when the record is not a plain flat
// object whose named fields are numbers or booleans.
bool scan_flat_object(std::string_view bytes, const SlotMap& slots, std::vector<double>& values,
                      std::vector<bool>& seen);

}  // namespace trib::stream::detail
