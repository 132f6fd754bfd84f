#include "net/wire_format.h"

#include <gtest/gtest.h>

namespace trib::net {
namespace {

TEST(WireFormat, HeaderIsLittleEndianAtDocumentedOffsets) {
  FrameHeader h;
  h.type = static_cast<std::uint8_t>(MessageType::request);
  h.flags = kFlagHasTensor;
  h.method = 0x01020304;
  h.body_length = 0x0a0b0c0d;
  h.tag = 0x1122334455667788;
  h.sequence = 42;
  h.payload_length = 0xFFFFFFFF;
  h.mac[0] = std::byte{0xab};
  HeaderBytes b = encode_header(h);
  EXPECT_EQ(b[0], std::byte{'T'});
  EXPECT_EQ(b[3], std::byte{'1'});
  EXPECT_EQ(b[4], std::byte{kWireVersion});
  EXPECT_EQ(b[5], std::byte{16});
  EXPECT_EQ(b[6], std::byte{1});
  EXPECT_EQ(b[8], std::byte{0x04});
  EXPECT_EQ(b[16], std::byte{0x88});
  EXPECT_EQ(b[23], std::byte{0x11});
  EXPECT_EQ(b[24], std::byte{42});
  EXPECT_EQ(b[32], std::byte{0xff});
  EXPECT_EQ(b[36], std::byte{0});
  EXPECT_EQ(b[40], std::byte{0xab});

  FrameHeader back = decode_header_fields(b);
  EXPECT_EQ(back.tag, h.tag);
  EXPECT_EQ(back.method, h.method);
  EXPECT_EQ(back.body_length, h.body_length);
  EXPECT_EQ(back.payload_length, h.payload_length);
  EXPECT_EQ(back.mac, h.mac);
}

TEST(WireFormat, KnownMessageTypes) {
  EXPECT_TRUE(is_known_message_type(1));
  EXPECT_TRUE(is_known_message_type(21));
  EXPECT_FALSE(is_known_message_type(0));
  EXPECT_FALSE(is_known_message_type(6));
  EXPECT_FALSE(is_known_message_type(99));
  EXPECT_TRUE(is_handshake_type(MessageType::proof));
  EXPECT_FALSE(is_handshake_type(MessageType::request));
}

}  // namespace
}  // namespace trib::net
