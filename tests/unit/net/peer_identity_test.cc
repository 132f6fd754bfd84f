// How a peer is named in logs and errors: by role and index once it has them.
#include "trib/net/peer_identity.h"

#include <gtest/gtest.h>

namespace trib::net {
namespace {

TEST(PeerIdentity, NamesRoleIndexAndAddress) {
  EXPECT_EQ((PeerIdentity{"worker", 2, "10.0.0.5:4000"}.to_string()), "worker 2 at 10.0.0.5:4000");
}

// A member joining the coordinator has no index yet: it must not be called worker 0 (the
// coordinator's log once blamed worker 0 for another worker's dead link).
TEST(PeerIdentity, AMemberWithoutAnIndexIsNamedByRoleAlone) {
  EXPECT_EQ((PeerIdentity{"worker", -1, "10.0.0.5:4000"}.to_string()), "worker at 10.0.0.5:4000");
}

TEST(PeerIdentity, BeforeTheHandshakeOnlyTheAddressIsKnown) {
  EXPECT_EQ((PeerIdentity{"", 0, "10.0.0.5:4000"}.to_string()), "peer at 10.0.0.5:4000");
}

}  // namespace
}  // namespace trib::net
