#include "trib/ps/data_claim.h"

#include "ps/ps_wire.h"
#include "trib/core/error.h"

namespace trib::ps {

std::string claim_data(net::Connection& server0, int worker, std::int64_t generation, const std::string& request,
                       std::uint32_t seq) {
  proto::Body b = proto::make_body(proto::Type::claim);
  b.header.worker = worker;
  b.header.generation = generation;
  b.header.seq = seq;
  b.text = request;
  net::Message r = server0.call(net::Message{proto::kPsMethod, proto::encode(b), Tensor()});
  TRIB_CHECK(r.method == proto::kPsMethod, InvalidArgument, "ps 0: a claim reply with method 0x{:x}", r.method);
  proto::Body body = proto::decode(r.body);
  TRIB_CHECK(body.type() == proto::Type::claim && (body.header.flags & proto::kFlagReply) != 0, InvalidArgument,
             "ps 0: a claim answered by a {} message", proto::type_name(body.type()));
  return body.text;
}

}  // namespace trib::ps
